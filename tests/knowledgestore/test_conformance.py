"""Both shipped stores against the exported conformance suite.

Real: the file store writes real files in a temporary folder; the SQLite store a real
database file with FTS5. Pages are removed "behind the store's back" the way a person would:
deleting the file, or deleting the row from another connection.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from agentkernel.knowledgestore import (
    FileKnowledgeStore,
    KnowledgeStore,
    PageType,
    SQLiteKnowledgeStore,
)
from agentkernel.knowledgestore.testing import KnowledgeStoreConformance


def _remove(store: KnowledgeStore, page_id: str) -> None:
    if isinstance(store, FileKnowledgeStore):
        page_type, slug = page_id.split("/")
        folder = next(t.dir for t in store.types() if t.name == page_type)
        (store.knowledge_dir / folder / f"{slug}.md").unlink()
        return
    assert isinstance(store, SQLiteKnowledgeStore)
    with sqlite3.connect(store.path) as other:
        other.execute("DELETE FROM pages WHERE id = ?", (page_id,))


class TestShippedStores(KnowledgeStoreConformance):
    @pytest.fixture(params=["file", "sqlite"])
    def make_store(
        self, request: pytest.FixtureRequest, tmp_path: Path
    ) -> Callable[..., KnowledgeStore]:
        def make(page_types: list[PageType] | None = None) -> KnowledgeStore:
            if request.param == "file":
                return FileKnowledgeStore(tmp_path / "knowledge", page_types)
            return SQLiteKnowledgeStore(tmp_path / "knowledge.db", page_types)

        return make

    @pytest.fixture
    def remove_behind_store(self) -> Callable[[KnowledgeStore, str], None]:
        return _remove
