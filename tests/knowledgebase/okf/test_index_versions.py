"""A pod serves only fully indexed versions (issue 24): a refresh waits for the indexes.

Real: a bundle on disk, the indexer writing a Lance dataset in a tmp folder (and in a moto S3
server, read through the node cache); the run that
commits rows without folding them into the indexes is the indexer with its fold held back,
then folded by Lance's own ``optimize()``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support import require_extra

require_extra("lancedb", "lancedb")

from agentkernel.knowledgebase import OKFManager  # noqa: E402
from agentkernel.knowledgebase.okf._lanceview import (  # noqa: E402
    INDEXING_GRACE_SECONDS,
    INDEXING_RETRY_SECONDS,
)
from agentkernel.knowledgebase.okf.bundleindex import indexer  # noqa: E402
from agentkernel.knowledgebase.okf.bundleindex.lancesdk import open_dataset  # noqa: E402
from agentkernel.knowledgebase.okf.bundleindex.opener import fully_indexed  # noqa: E402
from agentkernel.storage.local import LocalDocumentStore  # noqa: E402
from tests.knowledgebase.okf.helpers import SMALL_BUNDLE, Clock, concept, write_bundle  # noqa: E402
from tests.knowledgebase.okf.test_bundleindex_processes import note  # noqa: E402
from tests.knowledgebase.okf.test_index_nodecache import indexed, open_pod  # noqa: E402, F401

QUERIES = ("orders", "fresh orders note", "customer", "note")


def ids(kb: OKFManager, query: str) -> list[str]:
    return [row["metadata"]["id"] for row in kb.search(query, 10)]


def unfolded_run(store: LocalDocumentStore, index: str, monkeypatch: pytest.MonkeyPatch) -> int:
    """Run the indexer without its fold into the indexes; return the version it committed."""
    with monkeypatch.context() as patch:
        patch.setattr(indexer, "_refresh_indexes", lambda table: None)
        stats = indexer.index_bundle(store, index)
    assert stats.committed
    assert not fully_indexed(open_dataset(index, {}))  # the new fragment is not indexed
    return stats.version


def pod_before_an_unfolded_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clock: Clock, refresh: float | None
) -> tuple[OKFManager, LocalDocumentStore, str, dict[str, list[str]], int]:
    """A pod serving an indexed small bundle, then a run that leaves its rows unfolded.

    Returns:
        The pod, the store, the index, the pod's answers before the run, the run's version.
    """
    index = str(tmp_path / "kb.lance")
    root = write_bundle(tmp_path / "b", SMALL_BUNDLE)
    store = LocalDocumentStore(root, writable=False)
    indexer.index_bundle(store, index)
    kb = OKFManager(store, index=index, refresh_seconds=refresh, clock=clock)
    before = {q: ids(kb, q) for q in QUERIES}
    (root / "notes").mkdir()
    (root / "notes/fresh.md").write_text(concept("Note", "Fresh orders note"))
    return kb, store, index, before, unfolded_run(store, index, monkeypatch)


def fold(index: str) -> int:
    table = indexer.open_table(index, {})
    table.optimize()
    assert fully_indexed(open_dataset(index, {}))
    return int(table.version)


def test_a_refresh_waits_for_the_new_version_to_be_indexed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock()
    kb, store, index, before, unindexed = pod_before_an_unfolded_run(
        tmp_path, monkeypatch, clock, 300
    )
    served = kb.schema()["index"]["version"]
    assert unindexed > served

    clock.advance(301)  # the refresh finds the new version, not indexed: it stays
    assert {q: ids(kb, q) for q in QUERIES} == before
    assert kb.schema()["index"]["version"] == served
    # a first open takes the newest fully indexed version, and serves the same
    fresh = OKFManager(store, index=index, refresh_seconds=None)
    assert fresh.schema()["index"]["version"] == served
    assert {q: ids(fresh, q) for q in QUERIES} == before

    clock.advance(INDEXING_RETRY_SECONDS)  # tried again soon, not 300 s later
    assert ids(kb, "orders") == before["orders"]
    assert kb.schema()["index"]["version"] == served
    folded = fold(index)
    clock.advance(INDEXING_RETRY_SECONDS)
    moved = {q: ids(kb, q) for q in QUERIES}
    assert kb.schema()["index"]["version"] == folded
    assert moved["fresh orders note"][0] == "notes/fresh"
    # the same results as a pod that opened the indexed version first
    assert moved == {q: ids(OKFManager(store, index=index), q) for q in QUERIES}
    clock.advance(INDEXING_RETRY_SECONDS)  # back to the interval: nothing is waiting
    kb.search("orders", 3)
    assert kb.last_refresh is not None
    seen = kb.last_refresh
    clock.advance(INDEXING_RETRY_SECONDS)
    kb.search("orders", 3)
    assert kb.last_refresh is seen


def test_a_version_never_indexed_is_served_after_the_grace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock()
    kb, _, _, before, unindexed = pod_before_an_unfolded_run(tmp_path, monkeypatch, clock, 60)
    served = kb.schema()["index"]["version"]
    clock.advance(61)  # e.g. its indexer was killed before the fold
    assert ids(kb, "orders") == before["orders"]
    assert kb.schema()["index"]["version"] == served
    clock.advance(INDEXING_GRACE_SECONDS)
    assert ids(kb, "fresh orders note")[0] == "notes/fresh"  # slower, still correct
    assert kb.schema()["index"]["version"] == unindexed


def test_an_explicit_reload_serves_the_newest_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb, _, _, _, unindexed = pod_before_an_unfolded_run(tmp_path, monkeypatch, Clock(), None)
    kb.reload()  # asked for: the newest, indexed or not
    assert kb.schema()["index"]["version"] == unindexed
    assert ids(kb, "fresh orders note")[0] == "notes/fresh"


def test_the_next_run_folds_what_a_killed_run_left_unfolded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, store, index, _, unindexed = pod_before_an_unfolded_run(tmp_path, monkeypatch, Clock(), None)
    stats = indexer.index_bundle(store, index)  # nothing changed in the bundle
    assert not stats.committed and stats.reads == 0
    assert stats.version > unindexed
    assert fully_indexed(open_dataset(index, {}))


def test_pods_on_a_node_cache_wait_for_the_indexes_too(
    indexed: dict[str, Any],  # noqa: F811  (the fixture)
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    clock, root = Clock(), indexed["root"]
    kb = open_pod(indexed, clock)
    served = kb.schema()["index"]["version"]
    before = ids(kb, "changed")
    for i in range(0, 300, 100):
        (root / f"notes/n{i:05d}.md").write_text(note(i, "changed"))
    store = LocalDocumentStore(root, writable=False)
    with monkeypatch.context() as patch:
        patch.setattr(indexer, "_refresh_indexes", lambda table: None)
        stats = indexer.index_bundle(store, indexed["uri"], storage_options=indexed["direct"])
    assert stats.committed
    clock.advance(61)
    assert ids(kb, "changed") == before
    assert kb.schema()["index"]["version"] == served
    # a pod starting on another node takes the newest fully indexed version
    other = open_pod(indexed, node_cache=str(tmp_path / "other-node"))
    assert other.schema()["index"]["version"] == served
    table = indexer.open_table(indexed["uri"], indexed["direct"])
    table.optimize()
    clock.advance(INDEXING_RETRY_SECONDS)
    assert ids(kb, "changed")[0] == "notes/n00000"
    assert kb.schema()["index"]["version"] == int(table.version)
