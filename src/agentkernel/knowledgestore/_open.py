"""Open a curated store from a command line's path: a knowledge folder or a SQLite file."""

from __future__ import annotations

import logging
from pathlib import Path

from agentkernel.knowledgestore.base import KnowledgeStore

logger = logging.getLogger(__name__)


def open_store(path: str | Path, *, sqlite: bool) -> KnowledgeStore:
    """Open the store both serving commands serve, saying what a folder will not serve.

    Args:
        path: The knowledge folder, or with ``sqlite`` the database file.
        sqlite: Open a :class:`SQLiteKnowledgeStore` instead of a folder.

    Returns:
        The opened store.
    """
    if sqlite:
        from agentkernel.knowledgestore.sqlite_store import SQLiteKnowledgeStore

        return SQLiteKnowledgeStore(path)
    from agentkernel.knowledgestore.file_store import FileKnowledgeStore

    store = FileKnowledgeStore(path)
    ignored = store.ignored_files()
    if ignored:
        logger.warning(
            "%s holds %d markdown file(s) that are not this store's pages (e.g. %s): they are "
            "not served, and the store never writes over them.",
            path,
            len(ignored),
            ignored[0],
        )
    return store
