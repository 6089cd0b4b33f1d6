"""A disk turned read-only under an open store: a clear error, every page kept, reads go on.

Real: a tmpfs mounted for the test (:mod:`tests.support.tmpfs`, as root) and remounted
read-only while a ``FileKnowledgeStore`` (and a ``BundleKnowledgeStore`` over a
``LocalDocumentStore``) has it open, then read-write again.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agentkernel.knowledgestore import (
    BundleKnowledgeStore,
    FileKnowledgeStore,
    KnowledgeStoreError,
)
from agentkernel.knowledgestore.pages_store import PagesStore
from agentkernel.storage.local import LocalDocumentStore
from tests.support.tmpfs import mounted_tmpfs, remount

_ABSOLUTE_PATH = re.compile(r"(^|[\s'\"(])/[\w.-]")


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    with mounted_tmpfs(tmp_path / "disk") as mounted:
        yield mounted
        remount(mounted, read_only=False)


def _tree(folder: Path) -> dict[str, str]:
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def _file_store(folder: Path) -> PagesStore:
    return FileKnowledgeStore(folder)


def _bundle_store(folder: Path) -> PagesStore:
    folder.mkdir(parents=True, exist_ok=True)
    return BundleKnowledgeStore(LocalDocumentStore(folder))


@pytest.mark.parametrize("open_store", [_file_store, _bundle_store], ids=["file", "bundle"])
def test_a_store_opened_before_its_disk_turned_read_only_says_so_and_keeps_every_page(
    disk: Path, open_store: Callable[[Path], PagesStore]
) -> None:
    folder = disk / "knowledge"
    store = open_store(folder)
    store.create("concept", "tides", "Tides", "The sea rises and falls.")
    store.create("concept", "moon", "Moon", "Pulls the [tides](concept/tides).")
    store.log("ingest", "Read the almanac", ["concept/moon"])
    before = _tree(folder)

    remount(disk, read_only=True)
    writes: list[tuple[str, Callable[[], object]]] = [
        ("concept/neap-tide", lambda: store.create("concept", "neap-tide", "Neap", "Small tides.")),
        ("concept/tides", lambda: store.edit("concept/tides", "rises", "rises slowly")),
        ("log.md", lambda: store.log("ingest", "Read the tide tables")),
        ("overview.md", lambda: store.write_overview("The [tides](concept/tides).")),
    ]
    for page, write in writes:
        with pytest.raises(KnowledgeStoreError) as refused:
            write()
        message = str(refused.value)
        assert "'knowledge'" in message and page in message, message
        assert "read-only" in message, message
        assert str(disk) not in message and not _ABSOLUTE_PATH.search(message), message
    assert _tree(folder) == before
    assert {page.id for page in store.list()} == {"concept/moon", "concept/tides"}
    assert store.search("sea", 5)[0].id == "concept/tides"

    remount(disk, read_only=False)
    assert store.create("concept", "neap-tide", "Neap", "Small [tides](concept/tides).")
    store.edit("concept/tides", "rises", "rises slowly")
    assert "rises slowly" in open_store(folder).read("concept/tides").content  # type: ignore[union-attr]
    assert {page.id for page in open_store(folder).list()} == {
        "concept/moon",
        "concept/neap-tide",
        "concept/tides",
    }
