"""A curated knowledge store: typed pages, validated links, supersede and retire, check.

The agent reaches it only through the ``knowledge_*`` tools (:func:`create_knowledge_tools`,
or the MCP server of :func:`create_knowledge_server`), which work on a
:class:`KnowledgeStore`, never on files: :class:`FileKnowledgeStore` keeps pages as markdown
files (an OKF bundle) in a local folder, :class:`BundleKnowledgeStore` the same files in any
``DocumentStore`` (S3 included, shared by many writers), :class:`SQLiteKnowledgeStore` in
SQLite, :class:`PostgreSQLKnowledgeStore` in PostgreSQL (the ``postgres`` extra), and your
own storage plugs in as a :class:`PageBackend` under a :class:`PagesStore`
(:class:`InMemoryPageBackend` is the reference and a test double; run
:mod:`agentkernel.knowledgestore.testing` against it).

Public names resolve lazily (PEP 562): importing this package costs one module import, and
only ``create_knowledge_server`` pulls in the optional ``mcp`` SDK, when it is touched.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentkernel import _lazy_exports

if TYPE_CHECKING:
    from agentkernel.knowledgestore.base import KnowledgeStore
    from agentkernel.knowledgestore.bundle_store import BundleKnowledgeStore
    from agentkernel.knowledgestore.errors import (
        KnowledgeStoreError,
        PageConflictError,
        StoreAccessError,
    )
    from agentkernel.knowledgestore.file_store import (
        FileKnowledgeStore,
        create_file_knowledge_store,
    )
    from agentkernel.knowledgestore.memory_backend import InMemoryPageBackend
    from agentkernel.knowledgestore.model import (
        BUILT_IN_PAGE_TYPES,
        CheckReport,
        FieldChanges,
        KnowledgePage,
        NewPage,
        PageInfo,
        PageLink,
        PageType,
        SearchHit,
        UnreadableFile,
        is_slug,
        linked_ids,
        parse_id,
    )
    from agentkernel.knowledgestore.pagebackend import (
        Commit,
        LogEntry,
        PageBackend,
        PageRecord,
        PageWrite,
    )
    from agentkernel.knowledgestore.pages_store import PagesStore
    from agentkernel.knowledgestore.postgres_store import PostgreSQLKnowledgeStore
    from agentkernel.knowledgestore.sqlite_store import SQLiteKnowledgeStore
    from agentkernel.knowledgestore.tools import create_knowledge_tools
    from agentkernel.mcp.store import create_knowledge_server, serve_knowledge_store

# module -> the public names it defines, imported on first access
_HOMES: dict[str, tuple[str, ...]] = {
    "agentkernel.knowledgestore.base": ("KnowledgeStore",),
    "agentkernel.knowledgestore.bundle_store": ("BundleKnowledgeStore",),
    "agentkernel.knowledgestore.errors": (
        "KnowledgeStoreError",
        "PageConflictError",
        "StoreAccessError",
    ),
    "agentkernel.knowledgestore.memory_backend": ("InMemoryPageBackend",),
    "agentkernel.knowledgestore.pagebackend": (
        "Commit",
        "LogEntry",
        "PageBackend",
        "PageRecord",
        "PageWrite",
    ),
    "agentkernel.knowledgestore.pages_store": ("PagesStore",),
    "agentkernel.knowledgestore.file_store": ("FileKnowledgeStore", "create_file_knowledge_store"),
    "agentkernel.knowledgestore.sqlite_store": ("SQLiteKnowledgeStore",),
    "agentkernel.knowledgestore.postgres_store": ("PostgreSQLKnowledgeStore",),
    "agentkernel.knowledgestore.tools": ("create_knowledge_tools",),
    "agentkernel.mcp.store": ("create_knowledge_server", "serve_knowledge_store"),
    "agentkernel.knowledgestore.model": (
        "BUILT_IN_PAGE_TYPES",
        "CheckReport",
        "FieldChanges",
        "KnowledgePage",
        "NewPage",
        "PageInfo",
        "PageLink",
        "PageType",
        "SearchHit",
        "UnreadableFile",
        "is_slug",
        "linked_ids",
        "parse_id",
    ),
}

__all__ = [
    "BUILT_IN_PAGE_TYPES",
    "BundleKnowledgeStore",
    "CheckReport",
    "Commit",
    "FieldChanges",
    "FileKnowledgeStore",
    "InMemoryPageBackend",
    "KnowledgePage",
    "KnowledgeStore",
    "KnowledgeStoreError",
    "LogEntry",
    "NewPage",
    "PageBackend",
    "PageConflictError",
    "PageInfo",
    "PageLink",
    "PageRecord",
    "PageType",
    "PageWrite",
    "PagesStore",
    "PostgreSQLKnowledgeStore",
    "SQLiteKnowledgeStore",
    "SearchHit",
    "StoreAccessError",
    "UnreadableFile",
    "create_file_knowledge_store",
    "create_knowledge_server",
    "create_knowledge_tools",
    "is_slug",
    "linked_ids",
    "parse_id",
    "serve_knowledge_store",
]


__getattr__, __dir__ = _lazy_exports(__name__, _HOMES)
