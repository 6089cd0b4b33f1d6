"""The shipped stores against the exported conformance suite.

Real: the file store writes real files in a temporary folder; the bundle store the same files
through a real ``LocalDocumentStore`` and through a real ``S3DocumentStore`` talking to the moto
S3 API server on 127.0.0.1 (``tests/support/fixtures_s3.py``); the SQLite store a real database
file with FTS5; the PostgreSQL store a real PostgreSQL 15 server on 127.0.0.1
(``tests/support/fixtures_postgres.py``), each test in a schema of its own. Pages are removed
"behind the store's back" the way a person would: deleting the file or the object, or deleting
the row from another connection.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from agentkernel.knowledgestore import (
    BundleKnowledgeStore,
    FileKnowledgeStore,
    KnowledgeStore,
    PageType,
    SQLiteKnowledgeStore,
)
from agentkernel.knowledgestore.memory_backend import InMemoryPageBackend
from agentkernel.knowledgestore.pagebackend import Commit, PageWrite
from agentkernel.knowledgestore.pages_store import PagesStore
from agentkernel.knowledgestore.postgres_store import PostgreSQLKnowledgeStore
from agentkernel.knowledgestore.testing import KnowledgeStoreConformance
from agentkernel.storage.local import LocalDocumentStore


def _remove(store: KnowledgeStore, page_id: str) -> None:
    if isinstance(store, BundleKnowledgeStore):
        page_type, slug = page_id.split("/")
        folder = next(t.dir for t in store.types() if t.name == page_type)
        _, token = store.documents.read_versioned(f"{folder}/{slug}.md")
        store.documents.delete_if(f"{folder}/{slug}.md", token)
        return
    if isinstance(store, FileKnowledgeStore):
        page_type, slug = page_id.split("/")
        folder = next(t.dir for t in store.types() if t.name == page_type)
        (store.knowledge_dir / folder / f"{slug}.md").unlink()
        return
    if isinstance(store, PagesStore) and isinstance(store.backend, InMemoryPageBackend):
        other = InMemoryPageBackend(shares=store.backend)
        (_, token) = other.read([page_id])[page_id]
        other.commit(Commit(pages=(PageWrite(page_id, None, token),)))
        return
    if isinstance(store, PostgreSQLKnowledgeStore):
        import psycopg

        with psycopg.connect(store.backend.url, autocommit=True) as other:
            other.execute("DELETE FROM pages WHERE id = %s", (page_id,))
        return
    assert isinstance(store, SQLiteKnowledgeStore)
    with sqlite3.connect(store.path) as other:
        other.execute("DELETE FROM pages WHERE id = ?", (page_id,))


class TestShippedStores(KnowledgeStoreConformance):
    @pytest.fixture(params=["file", "sqlite", "bundle-local", "bundle-s3", "memory", "postgresql"])
    def make_store(
        self, request: pytest.FixtureRequest, tmp_path: Path
    ) -> Callable[..., KnowledgeStore]:
        if request.param == "bundle-s3":
            bucket = request.getfixturevalue("s3_bucket")
            endpoint = request.getfixturevalue("s3_endpoint")
        if request.param == "postgresql":
            server = request.getfixturevalue("postgres_server")
            url = server.schema_url(f"t{uuid.uuid4().hex[:12]}")

        def make(page_types: list[PageType] | None = None) -> KnowledgeStore:
            if request.param == "file":
                return FileKnowledgeStore(tmp_path / "knowledge", page_types)
            if request.param == "bundle-local":
                (tmp_path / "bundle").mkdir(exist_ok=True)
                return BundleKnowledgeStore(LocalDocumentStore(tmp_path / "bundle"), page_types)
            if request.param == "bundle-s3":
                from agentkernel.storage.s3 import S3DocumentStore

                documents = S3DocumentStore(bucket, "team/knowledge", endpoint_url=endpoint)
                return BundleKnowledgeStore(documents, page_types)
            if request.param == "postgresql":
                return PostgreSQLKnowledgeStore(url, page_types)
            if request.param == "memory":
                return PagesStore(InMemoryPageBackend(), page_types)
            return SQLiteKnowledgeStore(tmp_path / "knowledge.db", page_types)

        return make

    @pytest.fixture
    def remove_behind_store(self) -> Callable[[KnowledgeStore, str], None]:
        return _remove
