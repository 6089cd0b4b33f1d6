"""Real processes write into one store at the same time, or die mid-write; nothing is lost.

Real: Python processes (``tests.knowledgestore._writer``), each with its own store object on
the same folder (file store), database file (SQLite store) or PostgreSQL database (a real
PostgreSQL 15 server on 127.0.0.1, a schema per test): two creating and logging 200
pages each, three editing one page, and writers killed with ``SIGKILL`` mid-write (one stopped
between writing its temporary file and renaming it, one killed at an arbitrary point of a
stream of large pages).
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from subprocess import Popen
from typing import Any

import pytest

from agentkernel.knowledgestore import FileKnowledgeStore, KnowledgeStore
from tests.knowledgestore._writer import open_kind
from tests.support import REPO

ROOT = REPO
COUNT = 200
WRITER = "tests.knowledgestore._writer"


def _writer(kind: str, path: Path, prefix: str, count: int, mode: str = "create") -> Popen:
    return subprocess.Popen(
        [sys.executable, "-m", WRITER, kind, str(path), prefix, str(count), mode],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait(writers: list[Popen]) -> None:
    for writer in writers:
        _, errors = writer.communicate(timeout=600)
        assert writer.returncode == 0, errors


def _temp_files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.name.endswith(".tmp")]


def _open(kind: str, path: Path) -> KnowledgeStore:
    return open_kind(kind, path)


def _location(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> Any:
    """Where a store of ``kind`` lives: a folder, a SQLite file, or a PostgreSQL URL."""
    if kind == "postgresql":
        server = request.getfixturevalue("postgres_server")
        return server.schema_url(f"t{uuid.uuid4().hex[:12]}")
    return tmp_path / ("knowledge" if kind == "file" else "knowledge.db")


@pytest.mark.parametrize("kind", ["file", "sqlite", "postgresql"])
def test_two_processes_creating_200_pages_each_lose_nothing(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    path = _location(kind, tmp_path, request)
    writers = [_writer(kind, path, prefix, COUNT) for prefix in ("alpha", "beta")]
    _wait(writers)

    store = _open(kind, path)
    expected = {f"concept/{p}-{n}" for p in ("alpha", "beta") for n in range(COUNT)}
    assert {info.id for info in store.list()} == expected
    index_ids = set(re.findall(r"\]\((concept/[a-z0-9-]+)\)", store.index()))
    assert index_ids == expected
    entries = store.recent_log(1000)
    assert len(entries) == 2 * COUNT
    logged = {line.removeprefix("- pages: ") for e in entries for line in e.splitlines()[1:]}
    assert logged == expected
    for prefix in ("alpha", "beta"):  # each writer's own entries stay newest first
        numbers = [
            int(m)
            for e in entries
            for m in re.findall(rf"\| Created {prefix} (\d+)$", e.splitlines()[0])
        ]
        assert numbers == sorted(numbers, reverse=True)
    if isinstance(store, FileKnowledgeStore):
        on_disk = set(
            re.findall(r"\]\(concepts/([a-z0-9-]+)\.md\)", (path / "index.md").read_text())
        )
        assert {f"concept/{slug}" for slug in on_disk} == expected
        assert not list(path.rglob("*.tmp"))
    store.close()


@pytest.mark.parametrize("kind", ["file", "sqlite", "postgresql"])
def test_three_processes_editing_one_page_lose_no_edit(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    path = _location(kind, tmp_path, request)
    store = _open(kind, path)
    store.create("concept", "shared", "Shared", "Edits:\nEND.")
    editors = [_writer(kind, path, prefix, 40, "edit") for prefix in ("alpha", "beta", "gamma")]
    _wait(editors)
    page = store.read("concept/shared")
    assert page is not None
    lines = page.content.splitlines()
    assert lines[0] == "Edits:" and lines[-1] == "END." and len(lines) == 2 + 3 * 40
    for prefix in ("alpha", "beta", "gamma"):
        assert [line for line in lines if line.startswith(prefix)] == [
            f"{prefix} {n}." for n in range(40)
        ]
    if kind == "file":
        assert _temp_files(path) == []
    store.close()


def test_a_writer_killed_between_temp_file_and_rename_leaves_nothing_after_the_next_write(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "knowledge"
    store = FileKnowledgeStore(folder)
    store.create("concept", "tides", "Tides", "Water.")
    before = (folder / "index.md").read_text(encoding="utf-8")
    writer = _writer("file", folder, "victim", 1, "hang")
    assert writer.stdout is not None
    line = writer.stdout.readline()
    temp = Path(line.removeprefix("temp ").strip())
    assert temp.parent == folder / "concepts" and temp.is_file(), line
    writer.send_signal(signal.SIGKILL)
    writer.wait(timeout=60)

    assert [info.id for info in store.list()] == ["concept/tides"]  # the half-write is unseen
    assert (folder / "index.md").read_text(encoding="utf-8") == before
    assert _temp_files(folder) == [temp]  # reading removed nothing either
    store.create("concept", "moon", "Moon", "Rock.")  # the next write in that folder
    assert _temp_files(folder) == []
    assert [info.id for info in store.list()] == ["concept/moon", "concept/tides"]
    writer.communicate()


def test_the_next_write_never_removes_a_live_writers_temp_file(tmp_path: Path) -> None:
    folder = tmp_path / "knowledge"
    store = FileKnowledgeStore(folder)
    store.create("concept", "tides", "Tides", "Water.")
    target = folder / "concepts" / "notes.txt"
    writer = _writer("file", target, "live", 1, "hang-raw")
    assert writer.stdout is not None
    temp = Path(writer.stdout.readline().removeprefix("temp ").strip())
    assert temp.is_file()
    store.create("concept", "moon", "Moon", "Rock.")  # a write in the same folder meanwhile
    assert temp.is_file()
    _, errors = writer.communicate("go\n", timeout=60)
    assert writer.returncode == 0, errors
    assert target.read_text(encoding="utf-8") == "Written by live.\n"
    assert _temp_files(folder) == []


@pytest.mark.parametrize("kind", ["file", "sqlite", "postgresql"])
def test_a_writer_killed_mid_stream_loses_no_acknowledged_page(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    path = _location(kind, tmp_path, request)
    writer = _writer(kind, path, "stream", 10_000, "stream")
    assert writer.stdout is not None
    acknowledged = [writer.stdout.readline().strip() for _ in range(5)]
    writer.send_signal(signal.SIGKILL)  # somewhere in the writes after the fifth
    rest, _ = writer.communicate(timeout=60)
    acknowledged += rest.split()
    store = _open(kind, path)
    listed = {info.id for info in store.list()}
    assert set(acknowledged) <= listed
    assert len(listed) <= len(acknowledged) + 1  # at most the page being written when killed
    store.create("entity", "after", "After", "Written after the kill.")
    store.create("concept", "after", "After", "Written after the kill.")
    if kind == "file":
        assert _temp_files(path) == []
        index = (path / "index.md").read_text(encoding="utf-8")
        assert all(f"concepts/{page_id.split('/')[1]}.md" in index for page_id in listed)
    store.close()


def test_index_md_after_another_processs_creates_holds_every_page(tmp_path: Path) -> None:
    folder = tmp_path / "knowledge"
    store = FileKnowledgeStore(folder)
    store.create("concept", "shared", "Shared", "Edits:\nEND.")
    _wait([_writer("file", folder, "other", 30)])
    _wait([_writer("file", folder, "mine", 3, "edit")])  # body edits: no index line changes
    store.edit("concept/shared", "END.", "Mine.\nEND.")  # neither does this one
    on_disk = re.findall(r"\]\(concepts/([a-z0-9-]+)\.md\)", (folder / "index.md").read_text())
    assert sorted(on_disk) == sorted(["shared", *(f"other-{n}" for n in range(30))])
    assert store.index().count("\n* [") == 31
    store.close()
