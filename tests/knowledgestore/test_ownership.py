"""FileKnowledgeStore in folders it didn't write, its check of file links, and leftover temp files.

Real: every test works on real files in a temporary folder; "someone else's bundle" is a copy
of the GA4 OKF bundle from ``../shared/data/okf-bundles`` or markdown written by hand, and a
"dead writer" is a real child process that has exited.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentkernel.knowledgestore import (
    FileKnowledgeStore,
    KnowledgeStoreError,
    PageLink,
    create_knowledge_tools,
)
from agentkernel.storage.fs import ABANDONED_AFTER_SECONDS, atomic_write, temp_name
from tests.support import okf_bundle


def _tree(folder: Path) -> dict[str, str]:
    """Every path under ``folder`` (hidden ones included) with its content's hash."""
    return {
        str(path.relative_to(folder)): (
            hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
        )
        for path in sorted(folder.rglob("*"))
    }


@pytest.fixture
def foreign(tmp_path: Path) -> Path:
    source = okf_bundle("ga4")
    target = tmp_path / "ga4"
    shutil.copytree(source, target)
    return target


def test_a_foreign_bundle_is_read_without_a_change_and_never_written(foreign: Path) -> None:
    before = _tree(foreign)
    store = FileKnowledgeStore(foreign)
    tools = {tool.__name__: tool for tool in create_knowledge_tools(store)}
    index = tools["knowledge_index"]()
    assert "The knowledge base is empty." not in index
    assert "13 markdown file(s)" in index and store.list() == []
    assert "tables/events_.md" in store.ignored_files()
    assert "index.md" not in store.ignored_files()
    store.check()
    store.search("users")
    store.recent_log()
    assert _tree(foreign) == before

    created = tools["knowledge_create"](
        type="concept", slug="x", title="X", content="A page about x."
    )
    assert "won't write in" in created and ".knowledgestore" in created
    assert "empty folder" in created
    with pytest.raises(KnowledgeStoreError, match=r"pages \(datasets/"):
        store.log("ingest", "Read the bundle")
    with pytest.raises(KnowledgeStoreError):
        store.write_overview("Overview.")
    assert _tree(foreign) == before  # not even the lock file


def test_handing_a_folder_over_with_the_marker_lets_the_store_write(foreign: Path) -> None:
    (foreign / ".knowledgestore").touch()
    store = FileKnowledgeStore(foreign)
    store.create("concept", "x", "X", "A page.")
    assert store.read("concept/x") is not None
    assert "concepts/x.md" in (foreign / "index.md").read_text(encoding="utf-8")


def test_a_new_or_empty_folder_is_claimed_by_the_first_write(tmp_path: Path) -> None:
    folder = tmp_path / "knowledge"
    store = FileKnowledgeStore(folder)
    assert store.list() == [] and store.check().clean and store.ignored_files() == []
    assert not folder.exists()  # reading created nothing
    store.create("concept", "tides", "Tides", "Water.")
    assert (folder / ".knowledgestore").is_file()
    (folder / "concepts" / "hand-written.md").write_text(
        "---\ntype: concept\ntitle: By hand\n---\nWritten by a person.\n", encoding="utf-8"
    )
    (folder / "notes").mkdir()
    (folder / "notes" / "todo.md").write_text("---\ntype: note\n---\nTo do.\n", encoding="utf-8")
    store.create("concept", "moon", "Moon", "See [by hand](concept/hand-written).")
    assert store.ignored_files() == ["notes/todo.md"]


def test_a_folder_of_an_earlier_version_is_claimed(tmp_path: Path) -> None:
    folder = tmp_path / "knowledge"
    FileKnowledgeStore(folder).create("concept", "tides", "Tides", "Water.")
    (folder / ".knowledgestore").unlink()  # as the store left folders before the marker
    FileKnowledgeStore(folder).create("concept", "moon", "Moon", "Rock.")
    assert (folder / ".knowledgestore").is_file()


def test_a_lock_file_alone_does_not_hand_a_bundle_over(foreign: Path) -> None:
    (foreign / ".knowledge.lock").touch()  # what a read of an earlier version left behind
    before = _tree(foreign)
    with pytest.raises(KnowledgeStoreError, match="won't write"):
        FileKnowledgeStore(foreign).create("concept", "x", "X", "A page.")
    assert _tree(foreign) == before


def test_check_reports_file_links_to_no_page_but_not_to_the_listings(tmp_path: Path) -> None:
    folder = tmp_path / "knowledge"
    store = FileKnowledgeStore(folder)
    store.create("concept", "tides", "Tides", "Water.")  # a write refuses these links
    page = folder / "concepts" / "tides.md"
    page.write_text(  # a person edits the file
        page.read_text("utf-8").replace(
            "Water.",
            "The [index](../index.md), the [log](../log.md), [missing](../concepts/gone.md), "
            "[notes](../notes/a.md), [outside](../../x.md) and [overview](../overview.md).",
        ),
        "utf-8",
    )
    report = store.check()
    assert report.broken_links == [
        PageLink("concept/tides", "concept/gone"),
        PageLink("concept/tides", "../log.md"),  # no log yet
        PageLink("concept/tides", "../notes/a.md"),
        PageLink("concept/tides", "../../x.md"),
        PageLink("concept/tides", "../overview.md"),
    ]
    store.log("ingest", "Read")
    store.write_overview("Start at [Tides](concept/tides).")
    assert store.check().broken_links == [
        PageLink("concept/tides", "concept/gone"),
        PageLink("concept/tides", "../notes/a.md"),
        PageLink("concept/tides", "../../x.md"),
    ]


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_the_next_write_removes_temp_files_of_dead_writers_only(tmp_path: Path) -> None:
    folder = tmp_path / "knowledge"
    store = FileKnowledgeStore(folder)
    store.create("concept", "tides", "Tides", "Water.")
    concepts = folder / "concepts"
    mine = temp_name("moon.md")
    dead = mine.replace(f"-{os.getpid()}-", f"-{_dead_pid()}-")
    live = mine.replace(f"-{os.getpid()}-", f"-{os.getppid()}-")
    other_host = ".moon.md~00000000-1-0123abcd.tmp"
    old_format = ".moon.md.4242.0123abcd.tmp"  # the names earlier versions gave
    old_format_with_host = ".moon.md.ak-00000000-1-0123abcd.tmp"
    for name in (dead, live, other_host, old_format, old_format_with_host):
        (concepts / name).write_text("half a page", encoding="utf-8")
    assert [i.id for i in store.list()] == ["concept/tides"]  # no scan reads them
    assert store.ignored_files() == []

    store.create("entity", "moon", "Moon", "Rock.")  # a write in another folder
    assert (concepts / dead).exists()
    store.edit("concept/tides", "Water.", "Sea water.")
    left = sorted(p.name for p in concepts.iterdir() if p.name.endswith(".tmp"))
    assert left == sorted([live, other_host, old_format, old_format_with_host])

    stale = time.time() - ABANDONED_AFTER_SECONDS - 60
    for name in (other_host, old_format, old_format_with_host):
        os.utime(concepts / name, (stale, stale))
    atomic_write(concepts / "tides.md", (concepts / "tides.md").read_text(encoding="utf-8"))
    assert sorted(p.name for p in concepts.iterdir() if p.name.endswith(".tmp")) == [live]
