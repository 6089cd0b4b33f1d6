"""A disk that fills up under the store: a clear error, the old state, and a retry that works.

Real: a 2 MiB tmpfs mounted for the test (:mod:`tests.support.tmpfs`, as root), filled with
a real file until a chosen number of blocks is free; the store is a ``FileKnowledgeStore``
in a folder on it, writing through the real file system calls.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentkernel.knowledgestore import FileKnowledgeStore, KnowledgeStoreError
from tests.support.tmpfs import fill, mounted_tmpfs

_ABSOLUTE_PATH = re.compile(r"(^|[\s'\"(])/[\w.-]")
PAGES = 60
# titles long enough that index.md needs several blocks while a page needs one
_TITLE = "Tide {0} of the almanac, which says which way the water turns and when " * 6


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    with mounted_tmpfs(tmp_path / "disk") as mounted:
        yield mounted


@pytest.fixture
def store(disk: Path) -> FileKnowledgeStore:
    store = FileKnowledgeStore(disk / "knowledge")
    for number in range(PAGES):
        title = _TITLE.format(number).strip()
        store.create("concept", f"tide-{number}", title, f"The water turns, {number}.")
    assert (disk / "knowledge" / "index.md").stat().st_size > 5 * 4096
    return store


def _tree(folder: Path) -> dict[str, str]:
    """Every visible file under ``folder`` with its content's hash."""
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and not any(part.startswith(".") for part in path.parts[-1:])
    }


def _says_what_and_where(error: KnowledgeStoreError, page: str, disk: Path) -> None:
    message = str(error)
    assert "'knowledge'" in message and page in message, message
    assert "disk is full" in message, message
    assert str(disk) not in message and not _ABSOLUTE_PATH.search(message), message


def _ids(store: FileKnowledgeStore) -> set[str]:
    return {page.id for page in store.list()}


def test_a_create_whose_index_fills_the_disk_leaves_no_page_and_its_retry_works(
    store: FileKnowledgeStore, disk: Path
) -> None:
    folder = disk / "knowledge"
    acknowledged = _ids(store)
    filler = fill(disk, leave_blocks=2)  # room for the page, not for the index after it
    before = _tree(folder)

    with pytest.raises(KnowledgeStoreError) as full:
        store.create("concept", "neap-tide", "Neap tide", "The smallest [tides](concept/tide-1).")
    _says_what_and_where(full.value, "concept/neap-tide", disk)
    assert _tree(folder) == before  # the page written first was taken back
    assert store.read("concept/neap-tide") is None
    assert _ids(store) == acknowledged

    filler.unlink()
    # the same call again: not refused as "already exists"
    assert store.create(
        "concept", "neap-tide", "Neap tide", "The smallest [tides](concept/tide-1)."
    )
    assert _ids(FileKnowledgeStore(folder)) == acknowledged | {"concept/neap-tide"}
    assert "concepts/neap-tide.md" in (folder / "index.md").read_text(encoding="utf-8")


def test_a_change_whose_index_fills_the_disk_is_put_back(
    store: FileKnowledgeStore, disk: Path
) -> None:
    folder = disk / "knowledge"
    page_before = store.read("concept/tide-3")
    assert page_before is not None
    filler = fill(disk, leave_blocks=2)
    before = _tree(folder)

    # a new title changes the page's line in index.md, which no longer fits
    with pytest.raises(KnowledgeStoreError) as full:
        store.rewrite("concept/tide-3", "Rewritten.", {"title": "Third tide"})
    _says_what_and_where(full.value, "concept/tide-3", disk)
    assert _tree(folder) == before
    assert store.read("concept/tide-3") == page_before
    assert FileKnowledgeStore(folder).read("concept/tide-3") == page_before

    filler.unlink()
    store.rewrite("concept/tide-3", "Rewritten.", {"title": "Third tide"})
    assert FileKnowledgeStore(folder).read("concept/tide-3").title == "Third tide"  # type: ignore[union-attr]


def test_a_log_entry_on_a_full_disk_is_refused_whole(store: FileKnowledgeStore, disk: Path) -> None:
    folder = disk / "knowledge"
    store.log("ingest", "Read the almanac", ["concept/tide-1"])
    filler = fill(disk, leave_blocks=0)
    before = _tree(folder)

    with pytest.raises(KnowledgeStoreError) as full:
        store.log("ingest", "Read the tide tables", ["concept/tide-2"])
    _says_what_and_where(full.value, "log.md", disk)
    assert _tree(folder) == before
    assert not [p for p in folder.rglob(".*.tmp")]  # no temporary file left behind

    filler.unlink()
    store.log("ingest", "Read the tide tables", ["concept/tide-2"])
    newest, older = store.recent_log(2)
    assert "Read the tide tables" in newest and "Read the almanac" in older
