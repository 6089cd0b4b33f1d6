"""OKFManager on the two third-party OKF bundles in ../shared/data/okf-bundles, read in place.

Real: the bundles (written by another project's producer), the LocalDocumentStore reading
them read-only, the manager and the tool layer.
"""

from __future__ import annotations

import pytest

from agentkernel.knowledgebase import KnowledgeBuilder, OKFManager
from agentkernel.knowledgebase.testing import assert_backend_contract
from agentkernel.storage.local import LocalDocumentStore
from tests.support import okf_bundle

EXPECTED = {
    "crypto_bitcoin": (9, {"BigQuery Table": 4, "Reference": 4, "BigQuery Dataset": 1}, 6),
    "ga4": (9, {"Reference": 7, "BigQuery Table": 1, "BigQuery Dataset": 1}, 5),
}


@pytest.fixture(params=sorted(EXPECTED))
def real(request: pytest.FixtureRequest) -> tuple[str, OKFManager]:
    name = request.param
    store = LocalDocumentStore(okf_bundle(name), writable=False)
    return name, OKFManager(store, name=name, refresh_seconds=None)


def test_counts_types_and_no_diagnostics(real: tuple[str, OKFManager]) -> None:
    name, kb = real
    concepts, types, reserved = EXPECTED[name]
    schema = kb.schema()
    assert schema["concepts"] == concepts
    assert schema["types"] == types
    assert schema["reserved_file_count"] == reserved
    assert schema["namespaces"] == ["datasets", "references", "tables"]
    assert schema["diagnostics"] == 0 and kb.diagnostics == []
    assert schema["capabilities"]["writable"] is False


def test_every_link_resolves(real: tuple[str, OKFManager]) -> None:
    _, kb = real
    ids = [r["metadata"]["id"] for r in kb.search("table dataset reference metric join", 100)]
    assert len(ids) == EXPECTED[real[0]][0]
    total = 0
    for record in kb.fetch(ids):
        metadata = record["metadata"]
        assert metadata["broken_links"] == []
        linked = kb.fetch(metadata["links"])
        assert [r["metadata"]["id"] for r in linked] == metadata["links"]
        total += len(metadata["links"])
    assert total > 5


def test_browse_follows_index_files(real: tuple[str, OKFManager]) -> None:
    name, kb = real
    root = kb.browse("")
    assert root[0]["metadata"]["kind"] == "index"
    assert root[0]["text"] == (okf_bundle(name) / "index.md").read_text(encoding="utf-8")
    for sub in ("datasets/index.md", "tables/index.md", "references/"):
        rows = kb.browse(sub)
        assert rows and rows[0]["metadata"]["kind"] == "index"


def test_known_item_search(real: tuple[str, OKFManager]) -> None:
    name, kb = real
    query, expected = {
        "crypto_bitcoin": (
            "duplicate transactions across blocks",
            "references/metrics/duplicate_transactions",
        ),
        "ga4": ("users who completed a purchase", "references/metrics/purchasers"),
    }[name]
    assert kb.search(query, 1)[0]["metadata"]["id"] == expected


def test_contract_and_tools(real: tuple[str, OKFManager]) -> None:
    name, kb = real
    assert_backend_contract(kb, search_query="transactions users", browse_path="tables")
    tools = {t.__name__: t for t in KnowledgeBuilder([kb]).build(writable=False)}
    assert "[tables/" in tools["search_kb"](name, "table", 9)
    assert "read-only" not in tools["get_all_kb_descriptions"]()
