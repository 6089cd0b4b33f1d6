"""One view interface: every ``OKFManager`` operation alike over the walk and the bundle index.

Real: bundles on disk in ``tmp_path``, ``LocalDocumentStore``, the Lance bundle index built by
the real indexer (the ``lancedb`` extra; the index cases skip without it), the vector cache on
disk, and a deterministic word-count embedder (``tests/support/vocab_embedder.py``, a real
``Embedder``: no model to download) chosen so that the dense ranking disagrees with the
lexical one. Nothing is mocked.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agentkernel.knowledgebase import LocalDocumentStore, OKFManager
from agentkernel.knowledgebase.model import Record
from agentkernel.knowledgebase.testing import assert_backend_contract
from tests.knowledgebase.okf.helpers import SMALL_BUNDLE, concept, write_bundle
from tests.support import require_extra
from tests.support.vocab_embedder import VocabularyEmbedder

MODES = ["walk", "index"]
VOCABULARY = ["orders", "butter", "cream", "churn"]

# "Orders" is the title the query names exactly; its text is about something else, so the
# dense side ranks it last and its BM25 is the lowest: only the title rule keeps it first.
TITLE_BUNDLE: dict[str, str | bytes] = {
    "tables/orders.md": concept(
        "Table",
        "Orders",
        "Butter churning log",
        "Butter, cream and churn times; butter by the churn.\n",
    ),
    **{
        f"facts/order_fact_{i}.md": concept(
            "Metric",
            f"Fact {i}",
            "Orders placed, orders shipped, orders returned",
            "Orders orders orders: every orders figure.\n" * (i + 1),
        )
        for i in range(6)
    },
}


def manager(
    root: Path, mode: str, tmp_path: Path, embedder: VocabularyEmbedder | None = None
) -> OKFManager:
    """A manager over ``root`` in a mode; the index is built first in index mode."""
    store = LocalDocumentStore(root, writable=True)
    cache = tmp_path / "vectors"
    if mode == "walk":
        return OKFManager(store, refresh_seconds=None, embedder=embedder, cache_dir=cache)
    require_extra("lancedb", "lancedb")
    from agentkernel.knowledgebase.okf.bundleindex.indexer import index_bundle

    index = str(tmp_path / "kb.lance")
    index_bundle(store, index, embedder=embedder, cache_dir=cache)
    return OKFManager(store, refresh_seconds=None, index=index, embedder=embedder, cache_dir=cache)


def ids(records: list[Record]) -> list[str]:
    return [str(r["metadata"]["id"]) for r in records]


@pytest.mark.parametrize("mode", MODES)
def test_hybrid_search_keeps_the_exact_title_first(mode: str, tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "bundle", TITLE_BUNDLE)
    embedder = VocabularyEmbedder(VOCABULARY)
    lexical = manager(root, mode, tmp_path / "lexical")
    assert ids(lexical.search("orders", 3))[0] == "tables/orders"  # the title rule
    hybrid = manager(root, mode, tmp_path / "hybrid", embedder)
    assert hybrid.schema()["search"].startswith("hybrid")
    found = ids(hybrid.search("orders", 3))
    assert found[0] == "tables/orders"
    assert len(found) == 3
    # the dense side ranks it last of all: fusion alone would drop it from the top
    assert hybrid.semantic is not None
    dense = hybrid.semantic.search("orders", 10) if mode == "walk" else None
    if dense is not None:
        assert dense[-1][0] == "tables/orders"


@pytest.mark.parametrize("mode", MODES)
def test_served_concepts_in_both_modes(mode: str, tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "bundle", SMALL_BUNDLE)
    walked = manager(root, "walk", tmp_path / "w")
    kb = manager(root, mode, tmp_path / "m")
    served = {c.id: (c.title, c.type, c.token) for c in kb.served_concepts()}
    assert served
    assert served == {c.id: (c.title, c.type, c.token) for c in walked.served_concepts()}


@pytest.mark.parametrize("mode", MODES)
def test_a_write_is_served_alike_in_both_modes(mode: str, tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "bundle", SMALL_BUNDLE)
    kb = manager(root, mode, tmp_path / "m")
    [cid] = kb.write([{"text": "Quarterly churn\nwhy customers leave", "metadata": {}}])
    assert cid in {c.id for c in kb.served_concepts()}
    assert ids(kb.search("quarterly churn", 1)) == [cid]
    assert ids(kb.fetch([cid])) == [cid]
    assert cid in ids(kb.browse("generated"))
    assert kb.schema()["concepts"] == len(kb.served_concepts())


@pytest.mark.parametrize("mode", MODES)
def test_the_backend_contract_holds_in_both_modes(mode: str, tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "bundle", SMALL_BUNDLE)
    kb = manager(root, mode, tmp_path / "m")
    assert_backend_contract(kb, search_query="orders", browse_path="tables")
    assert_backend_contract(
        kb,
        search_query="customer",
        browse_path="",
        sample_write=[{"text": "Contract note\nwritten by the contract check", "metadata": {}}],
    )
    assert ids(kb.search("contract note", 1)) == ["generated/contract-note"]
