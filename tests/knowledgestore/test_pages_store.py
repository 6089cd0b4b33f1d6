"""The composed store over the page-backend protocol: the guarantees the protocol carries.

Real: the store, its catalog and the in-memory backend (the reference backend, no double of
anything else); the shipped stores write real files and a real SQLite database in a temporary
folder. "Another writer" is a second backend sharing the first one's pages; "the
network" losing an answer is a backend subclass whose ``commit`` applies, then raises the
``ConnectionError`` a cut connection raises.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from agentkernel.errors import WriteConflictError
from agentkernel.knowledgestore import (
    BundleKnowledgeStore,
    FileKnowledgeStore,
    KnowledgeStore,
    KnowledgeStoreError,
    NewPage,
    PageConflictError,
    SQLiteKnowledgeStore,
)
from agentkernel.knowledgestore.memory_backend import InMemoryPageBackend
from agentkernel.knowledgestore.pagebackend import Commit, PageBackend, PageRecord, PageWrite
from agentkernel.knowledgestore.pages_store import PagesStore
from agentkernel.storage.local import LocalDocumentStore


class _LosesAnswers(InMemoryPageBackend):
    """Applies each of the first ``lost`` commits, then loses its answer."""

    def __init__(self, lost: int) -> None:
        super().__init__()
        self.lost = lost
        self.sent: list[str] = []

    def commit(self, commit: Commit) -> Mapping[str, str]:
        self.sent.append(commit.id)
        tokens = super().commit(commit)
        if self.lost:
            self.lost -= 1
            raise ConnectionError("connection reset by peer")
        return tokens


def test_a_commit_whose_answer_was_lost_is_sent_again_and_applies_once() -> None:
    backend = _LosesAnswers(lost=2)
    store = PagesStore(backend)
    store.create("concept", "tides", "Tides", "Water rises.")
    store.log("ingest", "Read the tables", ["concept/tides"])
    assert len(set(backend.sent)) == 2 and len(backend.sent) == 4  # each sent twice, one id
    assert len(store.recent_log(10)) == 1  # the log entry applied once
    assert [p.id for p in store.list()] == ["concept/tides"]
    assert len(backend.history("concept/tides")) == 1


def test_a_commit_that_keeps_failing_is_a_store_access_error_and_changes_nothing() -> None:
    class _Down(InMemoryPageBackend):
        def commit(self, commit: Commit) -> Mapping[str, str]:
            raise ConnectionError("endpoint unreachable")

    store = PagesStore(_Down())
    with pytest.raises(KnowledgeStoreError) as failed:
        store.create("concept", "tides", "Tides", "Water rises.")
    assert isinstance(failed.value, OSError) and "concept/tides" in str(failed.value)
    assert store.list() == []


def test_a_change_that_lost_its_race_is_computed_again_from_the_winner() -> None:
    backend = InMemoryPageBackend()
    store = PagesStore(backend)
    store.create("concept", "tides", "Tides", "Water rises. Twice a day.")
    other = PagesStore(InMemoryPageBackend(shares=backend))

    class _Racing(InMemoryPageBackend):
        raced = False

        def commit(self, commit: Commit) -> Mapping[str, str]:
            if not self.raced:  # another writer commits between our poll and our commit
                self.raced = True
                other.edit("concept/tides", "Twice", "Two times")
            return super().commit(commit)

    racing = PagesStore(_Racing(shares=backend))
    racing.edit("concept/tides", "rises", "climbs")
    page = store.read("concept/tides")
    assert page is not None and page.content == "Water climbs. Two times a day."


def test_a_race_lost_every_time_is_a_page_conflict_and_writes_nothing() -> None:
    class _AlwaysBehind(InMemoryPageBackend):
        def commit(self, commit: Commit) -> Mapping[str, str]:
            raise WriteConflictError("changed", commit.pages[0].id)

    store = PagesStore(_AlwaysBehind())
    with pytest.raises(PageConflictError):
        store.create("concept", "tides", "Tides", "Water.")
    assert store.list() == []


def test_each_commit_carries_the_stores_author_and_every_version_is_kept() -> None:
    backend = InMemoryPageBackend()
    store = PagesStore(backend, author="ana")
    store.create("concept", "tides", "Tides", "Water rises.")
    PagesStore(InMemoryPageBackend(shares=backend), author="ben").edit(
        "concept/tides", "rises", "falls"
    )
    versions = backend.history("concept/tides")
    assert [(page.content if page else None, who) for page, who in versions] == [
        ("Water rises.", "ana"),
        ("Water falls.", "ben"),
    ]
    page = store.read("concept/tides")  # the first store sees the other's version
    assert page is not None and page.content == "Water falls."


def test_a_batch_is_one_commit_all_or_none() -> None:
    backend = InMemoryPageBackend()
    other = InMemoryPageBackend(shares=backend)
    store = PagesStore(backend)
    store.list()
    taken = PageRecord("entity", "entity", "moon", "Moon", {}, "Taken first.")
    other.commit(Commit(pages=(PageWrite("entity/moon", taken, None),)))

    class _Stale(InMemoryPageBackend):  # polls nothing: computes from what it knew
        def poll(self) -> Mapping[str, str | None]:
            return {}

    stale = PagesStore(_Stale(shares=backend))
    with pytest.raises(PageConflictError):
        stale.create_many(
            [NewPage("concept", "tides", "Tides", "Water."), NewPage("entity", "moon", "Moon", "")]
        )
    assert store.read("concept/tides") is None  # the other page of the batch: not written


@pytest.mark.parametrize(
    "store_class", [FileKnowledgeStore, BundleKnowledgeStore, SQLiteKnowledgeStore, PagesStore]
)
def test_every_curated_store_is_the_composed_store_at_most_two_levels_down(
    store_class: type[KnowledgeStore],
) -> None:
    """A store is ``PagesStore`` over a backend: no level between it and the protocol."""
    chain = store_class.__mro__
    assert PagesStore in chain and chain.index(KnowledgeStore) <= 2
    assert chain[chain.index(PagesStore) + 1] is KnowledgeStore


def test_each_shipped_store_keeps_its_records_in_a_page_backend(tmp_path: Path) -> None:
    """The shipped stores' writes go through their backend's one ``commit``, counted."""
    (tmp_path / "bundle").mkdir()
    stores: list[PagesStore] = [
        FileKnowledgeStore(tmp_path / "files"),
        BundleKnowledgeStore(LocalDocumentStore(tmp_path / "bundle")),
        SQLiteKnowledgeStore(tmp_path / "k.db"),
        PagesStore(InMemoryPageBackend()),
    ]
    for store in stores:
        assert isinstance(store.backend, PageBackend)
        commits: list[Commit] = []
        original = store.backend.commit

        def counting(commit: Commit, original: Any = original, commits: Any = commits) -> Any:
            commits.append(commit)
            return original(commit)

        store.backend.commit = counting  # type: ignore[method-assign]
        store.create_many(
            [NewPage("entity", "moon", "Moon", "Round."), NewPage("concept", "sea", "Sea", "")]
        )
        store.edit("entity/moon", "Round", "Quite round")
        store.log("update", "Edited the moon", ["entity/moon"])
        assert [len(c.pages) for c in commits] == [2, 1, 0] and commits[2].log is not None
        store.close()
