"""Two real processes write different pages into one store at the same time; nothing is lost.

Real: two Python processes, each creating and logging 200 pages through its own store object
on the same folder (file store) or database file (SQLite store).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from agentkernel.knowledgestore import FileKnowledgeStore, KnowledgeStore, SQLiteKnowledgeStore

ROOT = Path(__file__).resolve().parents[2]
COUNT = 200
WRITER = "tests.knowledgestore._writer"


@pytest.mark.parametrize("kind", ["file", "sqlite"])
def test_two_processes_creating_200_pages_each_lose_nothing(kind: str, tmp_path: Path) -> None:
    path = tmp_path / ("knowledge" if kind == "file" else "knowledge.db")
    if kind == "sqlite":
        SQLiteKnowledgeStore(path).close()  # create the schema before the race
    writers = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.knowledgestore._writer",
                kind,
                str(path),
                prefix,
                str(COUNT),
            ],
            cwd=ROOT,
            stderr=subprocess.PIPE,
            text=True,
        )
        for prefix in ("alpha", "beta")
    ]
    for writer in writers:
        _, errors = writer.communicate(timeout=600)
        assert writer.returncode == 0, errors

    store: KnowledgeStore = (
        FileKnowledgeStore(path) if kind == "file" else SQLiteKnowledgeStore(path)
    )
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
