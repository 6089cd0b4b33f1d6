"""A folder listing: the store's own run of creates lists no folder again; others' changes show."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from agentkernel.bundle import listing
from agentkernel.knowledgestore.file_store import FileKnowledgeStore


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The folders listed from now on (no full sweep comes due during a test)."""
    monkeypatch.setattr(listing, "FULL_SWEEP_SECONDS", 3600.0)
    calls: list[str] = []
    real = listing._raw

    def raw(path: str) -> dict[str, int] | None:
        calls.append(path)
        return real(path)

    monkeypatch.setattr(listing, "_raw", raw)
    return calls


def _store(root: Path) -> FileKnowledgeStore:
    store = FileKnowledgeStore(root)
    store.create("concept", "seed", "Seed", "The first page.")
    store.create("concept", "second", "Second", "The second page.")
    return store


def test_a_run_of_own_creates_lists_no_folder_again(tmp_path: Path, counted: list[str]) -> None:
    store = _store(tmp_path / "kb")
    counted.clear()
    for number in range(20):
        store.create("concept", f"page-{number}", f"Page {number}", "A page.")
    assert counted == []
    assert len(store.list()) == 22


def test_another_writers_create_is_seen_by_the_next_create(
    tmp_path: Path, counted: list[str]
) -> None:
    store = _store(tmp_path / "kb")
    FileKnowledgeStore(tmp_path / "kb").create("concept", "theirs", "Theirs", "Another writer's.")
    store.create("concept", "mine", "Mine", "This store's.")
    index = (tmp_path / "kb" / "index.md").read_text(encoding="utf-8")
    assert "(concepts/theirs.md)" in index and "(concepts/mine.md)" in index
    assert counted  # the other writer's index.md moved: the folders were listed again


def test_a_page_copied_in_by_hand_right_after_a_create_is_read(tmp_path: Path) -> None:
    store = _store(tmp_path / "kb")
    concepts = tmp_path / "kb" / "concepts"
    shutil.copy(concepts / "seed.md", concepts / "copy.md")  # within the same clock tick, likely
    page = store.read("concept/copy")
    assert page is not None and page.title == "Seed"
