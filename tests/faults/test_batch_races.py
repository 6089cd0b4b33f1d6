"""Races around a batch's record: who may finish a batch, and what its own writer acknowledges.

Real: ``BundleKnowledgeStore`` objects over real ``LocalDocumentStore`` folders (no lock file:
writers race and compare-and-swap decides, as on S3). What another writer, a lost answer or a
denied read does at one exact moment is played through a ``LocalDocumentStore`` subclass that
runs the real store's method and then acts (removes the batch's record as a finishing writer
would, or raises as a connection whose answer was lost); every file is the real store's.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from agentkernel.knowledgestore import BundleKnowledgeStore, NewPage, PageConflictError
from agentkernel.knowledgestore._batches import ABANDONED_SECONDS, Intent
from agentkernel.storage.base import MAX_RECORD_BYTES, RECORDS_FOLDER, StoredFile
from agentkernel.storage.fs import host_tag
from agentkernel.storage.local import LocalDocumentStore

BATCH = [
    NewPage(type="concept", slug="moon", title="Moon", content="The moon pulls the sea."),
    NewPage(type="concept", slug="sea", title="Sea", content="The sea answers the moon."),
]
IDS = ["concept/moon", "concept/sea"]


class _Acting(LocalDocumentStore):
    """The real folder store; after a chosen write lands, ``act`` plays what happens next."""

    def __init__(self, root: Path, act: Callable[[LocalDocumentStore, str], None]) -> None:
        super().__init__(root, writable=True)
        self.act = act

    def write_if(
        self, path: str, data: bytes, token: str | None, *, durable: bool = True
    ) -> StoredFile:
        stored = super().write_if(path, data, token, durable=durable)
        self.act(self, path)
        return stored


def _fresh(folder: Path) -> BundleKnowledgeStore:
    return BundleKnowledgeStore(LocalDocumentStore(folder, writable=True))


def _seeded(tmp_path: Path) -> Path:
    folder = tmp_path / "kb"
    folder.mkdir()
    _fresh(folder).create("concept", "tides", "Tides", "The sea rises and falls.")
    return folder


def test_a_batch_whose_record_another_writer_took_is_not_acknowledged(tmp_path: Path) -> None:
    folder = _seeded(tmp_path)

    def take_the_record(documents: LocalDocumentStore, path: str) -> None:
        if path == "concepts/sea.md":  # the batch's last page landed: another writer takes it
            for name in documents._records():
                documents._delete_record(name)

    store = BundleKnowledgeStore(_Acting(folder, take_the_record))
    with pytest.raises(PageConflictError):
        store.create_many(BATCH)
    reader = _fresh(folder)
    assert [reader.read(i) for i in IDS] == [None, None]  # none of it: it was never answered
    assert reader.create_many(BATCH) == IDS  # and the caller's retry succeeds
    assert {p.id for p in _fresh(folder).list()} == {"concept/tides", *IDS}


def test_a_page_whose_answer_was_lost_is_taken_back_with_its_failed_batch(tmp_path: Path) -> None:
    folder = _seeded(tmp_path)

    def lose_the_answer(documents: LocalDocumentStore, path: str) -> None:
        if path == "concepts/sea.md":  # stored, but the caller hears a failure
            raise ConnectionResetError("the answer was lost")

    store = BundleKnowledgeStore(_Acting(folder, lose_the_answer))
    with pytest.raises(OSError):
        store.create_many(BATCH)
    assert not (folder / "concepts" / "moon.md").exists()
    assert not (folder / "concepts" / "sea.md").exists()  # landed, yet taken back: none
    assert not (folder / RECORDS_FOLDER).exists() or not list((folder / RECORDS_FOLDER).iterdir())
    assert _fresh(folder).create_many(BATCH) == IDS


def _record_of(folder: Path, *, host: str, pid: int, at: float) -> None:
    records = folder / RECORDS_FOLDER
    records.mkdir(exist_ok=True)
    body = {"host": host, "pid": pid, "at": at, "pages": [["concepts/tides.md", "0" * 64]]}
    (records / "0123456789abcdef.json").write_text(json.dumps(body))


def test_a_live_batch_of_this_host_is_never_taken_and_a_dead_ones_is(tmp_path: Path) -> None:
    now = time.time()
    mine = Intent("a.json", host_tag(), os.getpid(), now - 10 * ABANDONED_SECONDS, ())
    assert not mine.abandoned(now)  # a store of this very process may be writing it
    dead = Intent("b.json", host_tag(), 2**22 + 12345, now, ())
    assert dead.abandoned(now)
    remote = Intent("c.json", "0badf00d", 1, now - 5, ())
    assert not remote.abandoned(now)
    assert Intent("d.json", "0badf00d", 1, now - 2 * ABANDONED_SECONDS, ()).abandoned(now)
    future = Intent("e.json", "0badf00d", 1, now + 100 * ABANDONED_SECONDS, ())
    assert future.abandoned(now)  # a record from the future is nobody's batch in progress


def test_a_record_dated_in_the_future_hides_a_page_only_until_the_next_write(
    tmp_path: Path,
) -> None:
    folder = _seeded(tmp_path)
    _record_of(folder, host="0badf00d", pid=1, at=time.time() + 10**9)
    store = _fresh(folder)
    store.create("concept", "neap", "Neap tide", "Small tides.")  # a write finishes it
    assert {p.id for p in _fresh(folder).list()} == {"concept/tides", "concept/neap"}


def test_an_oversized_record_is_ignored_not_read_whole(tmp_path: Path) -> None:
    folder = _seeded(tmp_path)
    records = folder / RECORDS_FOLDER
    records.mkdir()
    with (records / "0123456789abcdef.json").open("wb") as planted:
        planted.write(b'{"pages": [' + b" " * (MAX_RECORD_BYTES * 4) + b"]}")
    store = _fresh(folder)
    assert [p.id for p in store.list()] == ["concept/tides"]
    store.create("concept", "neap", "Neap tide", "Small tides.")
    assert {p.id for p in _fresh(folder).list()} == {"concept/tides", "concept/neap"}


def test_a_page_that_cannot_be_read_for_itself_blocks_no_write(tmp_path: Path) -> None:
    folder = _seeded(tmp_path)

    class _Denying(LocalDocumentStore):
        # root reads every file whatever its mode: the denial is played here
        def read_versioned_bounded(self, path: str, max_bytes: int) -> tuple[bytes, str]:
            if path == "concepts/tides.md":
                raise PermissionError(13, "Permission denied")
            return super().read_versioned_bounded(path, max_bytes)

    store = BundleKnowledgeStore(_Denying(folder, writable=True))
    store.create("concept", "neap", "Neap tide", "Small tides.")
    assert (folder / "concepts" / "neap.md").is_file()
