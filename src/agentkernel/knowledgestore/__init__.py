"""A curated knowledge store: typed pages, validated links, supersede and retire, check.

The agent reaches it only through the ``knowledge_*`` tools (:func:`create_knowledge_tools`,
or the MCP server of :func:`create_knowledge_server`), which work on a
:class:`KnowledgeStore`, never on files: :class:`FileKnowledgeStore` keeps pages as markdown
files (an OKF bundle), :class:`SQLiteKnowledgeStore` in SQLite, and your own store plugs in
the same way (run :mod:`agentkernel.knowledgestore.testing` against it).

Public names resolve lazily (PEP 562): importing this package costs one module import, and
only ``create_knowledge_server`` pulls in the optional ``mcp`` SDK, when it is touched.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentkernel import _lazy_exports

if TYPE_CHECKING:
    from agentkernel.knowledgestore.base import KnowledgeStore
    from agentkernel.knowledgestore.errors import KnowledgeStoreError
    from agentkernel.knowledgestore.file_store import (
        FileKnowledgeStore,
        create_file_knowledge_store,
    )
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
        is_slug,
        linked_ids,
        parse_id,
    )
    from agentkernel.knowledgestore.server import create_knowledge_server, serve_knowledge_store
    from agentkernel.knowledgestore.sqlite_store import SQLiteKnowledgeStore
    from agentkernel.knowledgestore.tools import create_knowledge_tools

_MODEL = "agentkernel.knowledgestore.model"
# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    "KnowledgeStore": "agentkernel.knowledgestore.base",
    "KnowledgeStoreError": "agentkernel.knowledgestore.errors",
    "FileKnowledgeStore": "agentkernel.knowledgestore.file_store",
    "create_file_knowledge_store": "agentkernel.knowledgestore.file_store",
    "SQLiteKnowledgeStore": "agentkernel.knowledgestore.sqlite_store",
    "create_knowledge_tools": "agentkernel.knowledgestore.tools",
    "create_knowledge_server": "agentkernel.knowledgestore.server",
    "serve_knowledge_store": "agentkernel.knowledgestore.server",
    "BUILT_IN_PAGE_TYPES": _MODEL,
    "CheckReport": _MODEL,
    "FieldChanges": _MODEL,
    "KnowledgePage": _MODEL,
    "NewPage": _MODEL,
    "PageInfo": _MODEL,
    "PageLink": _MODEL,
    "PageType": _MODEL,
    "SearchHit": _MODEL,
    "is_slug": _MODEL,
    "linked_ids": _MODEL,
    "parse_id": _MODEL,
}

__all__ = [
    "BUILT_IN_PAGE_TYPES",
    "CheckReport",
    "FieldChanges",
    "FileKnowledgeStore",
    "KnowledgePage",
    "KnowledgeStore",
    "KnowledgeStoreError",
    "NewPage",
    "PageInfo",
    "PageLink",
    "PageType",
    "SQLiteKnowledgeStore",
    "SearchHit",
    "create_file_knowledge_store",
    "create_knowledge_server",
    "create_knowledge_tools",
    "is_slug",
    "linked_ids",
    "parse_id",
    "serve_knowledge_store",
]


__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS)
