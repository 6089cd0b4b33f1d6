"""Readiness and background loading of an OKF bundle: what a server's probes read.

Real: bundles on disk in ``tmp_path`` through ``LocalDocumentStore``, the vector cache on disk,
and a deterministic word-count embedder (``tests/support/vocab_embedder.py``, a real
``Embedder`` that counts its calls). Nothing is mocked.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from agentkernel.knowledgebase import KnowledgeBuilder, LocalDocumentStore, OKFManager
from agentkernel.knowledgebase.errors import KnowledgeError
from agentkernel.knowledgebase.model import PROGRESS_LOGGER, READY, Readiness, Record
from tests.knowledgebase.okf.helpers import SMALL_BUNDLE, write_bundle
from tests.support.vocab_embedder import VocabularyEmbedder

VOCABULARY = ["orders", "revenue", "freshness"]


def test_a_lexical_bundle_is_ready_with_nothing_to_embed(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "kb", SMALL_BUNDLE)
    kb = OKFManager(LocalDocumentStore(root, writable=False), refresh_seconds=None)
    state = kb.readiness()
    assert state.ready and state.lexical_ready and state.vectors_ready
    assert state.warming == "" and state.vectors_total == 0
    assert state.describe() == "ready"


def test_a_hybrid_bundle_counts_its_vectors(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "kb", SMALL_BUNDLE)
    kb = OKFManager(
        LocalDocumentStore(root, writable=False),
        refresh_seconds=None,
        embedder=VocabularyEmbedder(VOCABULARY),
        cache_dir=tmp_path / "vectors",
    )
    kb.search("orders", 3)  # a search completes the vectors
    state = kb.readiness()
    concepts = len(kb.served_concepts())
    assert concepts > 0
    assert (state.vectors, state.vectors_total) == (concepts, concepts)
    assert state.vectors_ready and state.ready


def test_readiness_describes_a_step_under_way() -> None:
    state = Readiness(
        warming="vectors",
        done=120,
        total=2000,
        vectors=120,
        vectors_total=2000,
        vectors_ready=False,
    )
    assert state.ready
    assert state.describe() == "warming vectors: 120/2000 (6%); search is lexical until done"
    assert READY.ready and READY.describe() == "ready"


class GatedEmbedder(VocabularyEmbedder):
    """The word-count embedder, whose document batches wait for a gate (a slow model).

    A real ``Embedder``: it counts every call and embeds as its parent does, only later.
    """

    def __init__(self, vocabulary: list[str]) -> None:
        super().__init__(vocabulary)
        self.gate = threading.Event()
        self.waiting = threading.Event()
        self.texts = 0

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if len(texts) > 1:  # a batch of concept texts (a query is embedded alone)
            self.waiting.set()
            assert self.gate.wait(60), "the test never opened the gate"
        self.texts += len(texts)
        return super().embed(texts)


class GatedStore(LocalDocumentStore):
    """A local bundle whose listing waits for a gate (a slow bucket), or fails."""

    def __init__(self, root: Path, *, fail: bool = False) -> None:
        super().__init__(root, writable=False)
        self.gate = threading.Event()
        self.fail = fail

    def walk(self, prefix: str = ""):  # type: ignore[no-untyped-def]
        assert self.gate.wait(60), "the test never opened the gate"
        if self.fail:
            raise OSError("the bucket refused the listing")
        return super().walk(prefix)


def hybrid(root: Path, tmp_path: Path, embedder: VocabularyEmbedder, **options: Any) -> OKFManager:
    return OKFManager(
        options.pop("store", None) or LocalDocumentStore(root, writable=False),
        refresh_seconds=None,
        embedder=embedder,
        cache_dir=tmp_path / "vectors",
        **options,
    )


def wait_for(condition: Callable[[], bool]) -> None:
    """Wait (up to a minute) for a background thread to get somewhere; not a timing check."""
    deadline = time.monotonic() + 60
    while not condition():
        assert time.monotonic() < deadline, "the background load never got there"
        time.sleep(0.01)


def test_fetch_browse_and_the_schema_never_embed(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "kb", SMALL_BUNDLE)
    embedder = VocabularyEmbedder(VOCABULARY)
    kb = hybrid(root, tmp_path, embedder)
    assert kb.fetch(["tables/orders", "metrics/revenue"])
    assert kb.browse("") and kb.browse("tables")
    assert kb.schema()["search"].startswith("hybrid")  # a search will fill them first
    assert "by meaning and words" in kb.get_description()
    assert kb.served_concepts()
    assert embedder.calls == 0
    state = kb.readiness()
    assert state.lexical_ready and not state.vectors_ready and state.vectors == 0
    # the first search embeds every concept, then answers hybrid
    kb.search("orders", 3)
    assert embedder.calls > 0 and kb.answered_by.startswith("hybrid: lexical (BM25F) and dense")
    assert kb.readiness().vectors_ready


def test_a_search_while_the_vectors_are_built_answers_lexically_and_says_so(
    tmp_path: Path,
) -> None:
    root = write_bundle(tmp_path / "kb", SMALL_BUNDLE)
    embedder = GatedEmbedder(VOCABULARY)
    kb = hybrid(root, tmp_path, embedder, background=True)
    try:
        assert embedder.waiting.wait(60)  # the background fill is embedding the concepts
        state = kb.readiness()
        concepts = len(kb.served_concepts())
        assert (state.warming, state.lexical_ready, state.vectors_ready) == (
            "vectors",
            True,
            False,
        )
        assert (state.vectors, state.vectors_total) == (0, concepts)
        rows = kb.search("orders", 3)
        lexical = OKFManager(LocalDocumentStore(root, writable=False), refresh_seconds=None)
        assert [r["metadata"]["id"] for r in rows] == [
            r["metadata"]["id"] for r in lexical.search("orders", 3)
        ]
        said = f"lexical (BM25F) while the vectors are built (0/{concepts} so far)"
        assert kb.answered_by.startswith(said)
        tools = {t.__name__: t for t in KnowledgeBuilder([kb]).build(writable=False)}
        answer = tools["search_kb"](kb.backend_name, "orders", 3)
        assert answer.startswith(f"(search: {said}; hybrid once they are)\n")
        assert kb.schema()["search"].startswith(said)
        assert "search it lexically" in kb.get_description()
        assert embedder.texts == 0  # a lexical answer embeds nothing, not even the query
    finally:
        embedder.gate.set()
    wait_for(lambda: kb.readiness().vectors_ready)
    assert kb.readiness().warming == ""
    tools = {t.__name__: t for t in KnowledgeBuilder([kb]).build(writable=False)}
    answer = tools["search_kb"](kb.backend_name, "orders", 3)
    assert not answer.startswith("(search:")
    assert kb.answered_by.startswith("hybrid: lexical (BM25F) and dense")
    assert kb.schema()["search"].startswith("hybrid")


def test_a_background_load_serves_once_the_walk_ends(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "kb", SMALL_BUNDLE)
    store = GatedStore(root)
    kb = OKFManager(store, refresh_seconds=None, background=True)  # returns before the walk
    state = kb.readiness()
    assert (state.warming, state.lexical_ready, state.ready) == ("walk", False, False)
    answers: list[list[Record]] = []
    caller = threading.Thread(target=lambda: answers.append(kb.search("orders", 3)))
    caller.start()  # a call before the walk ends waits for it
    store.gate.set()
    caller.join(60)
    assert answers and answers[0][0]["metadata"]["id"] == "tables/orders"
    assert kb.readiness().ready and kb.readiness().warming == ""


def test_a_background_load_that_fails_says_why_and_every_call_refuses(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "kb", SMALL_BUNDLE)
    store = GatedStore(root, fail=True)
    kb = OKFManager(store, refresh_seconds=None, background=True)
    store.gate.set()
    wait_for(lambda: bool(kb.readiness().error))
    state = kb.readiness()
    assert not state.ready and "the bucket refused the listing" in state.error
    assert state.describe().startswith("failed: OSError: the bucket refused the listing")
    with pytest.raises(KnowledgeError, match="could not be loaded: OSError: the bucket refused"):
        kb.search("orders", 3)
    tools = {t.__name__: t for t in KnowledgeBuilder([kb]).build(writable=False)}
    assert "could not be loaded" in tools["fetch_kb"](kb.backend_name, "tables/orders")
    store.fail = False
    kb.reload()  # the store works again: the load is done again
    assert kb.readiness().ready and kb.fetch(["tables/orders"])


def test_the_fill_logs_progress_with_counts_rate_and_time_left(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentkernel.knowledgebase.okf import _warming as warming

    monkeypatch.setattr(warming, "PROGRESS_EVERY", 0.0)  # a line for every batch
    root = write_bundle(tmp_path / "kb", SMALL_BUNDLE)
    embedder = VocabularyEmbedder(VOCABULARY)
    with caplog.at_level(logging.INFO, logger=PROGRESS_LOGGER):
        kb = hybrid(root, tmp_path, embedder, background=True, name="warehouse")
        wait_for(lambda: kb.readiness().vectors_ready)
        kb.close()
    concepts = len(kb.served_concepts())
    lines = [r.getMessage() for r in caplog.records if r.name == PROGRESS_LOGGER]
    assert any(
        re.fullmatch(
            rf"warehouse: embedding concepts: {concepts}/{concepts} \(100%\), \d+/s, "
            r"about 0 s left",
            line,
        )
        for line in lines
    ), lines
    assert any(
        re.fullmatch(rf"warehouse: embedding concepts: {concepts} done in [\d.]+ s \(\d+/s\)", x)
        for x in lines
    ), lines


def test_readiness_between_two_steps_still_says_the_vectors_are_missing() -> None:
    state = Readiness(vectors=3, vectors_total=9, vectors_ready=False)
    assert state.ready
    assert state.describe() == "vectors: 3/9 held; search is lexical until done"
    assert Readiness(lexical_ready=False, vectors_ready=False).describe() == "loading"
