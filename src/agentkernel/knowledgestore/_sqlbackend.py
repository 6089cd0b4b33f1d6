"""What the SQL page backends (SQLite, PostgreSQL) share.

The tables a page is kept in, and a commit sent outside ``writing()`` running in a transaction
of its own. Each backend's schema adds what is its own (revisions, authors, sequences) around
the tables.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Mapping
from typing import Protocol, TypeVar

from agentkernel.knowledgestore.pagebackend import Commit


class _Transactional(Protocol):
    _in_transaction: bool

    def writing(self) -> contextlib.AbstractContextManager[None]: ...


_Backend = TypeVar("_Backend", bound=_Transactional)
_Commit = Callable[[_Backend, Commit], Mapping[str, str]]


def own_transaction(commit: _Commit[_Backend]) -> _Commit[_Backend]:
    """Make a backend's ``commit`` run in a ``writing()`` of its own when called outside one.

    Args:
        commit: The backend's ``commit``, which applies a commit inside a transaction.

    Returns:
        The ``commit`` callers use.
    """

    @functools.wraps(commit)
    def committed(backend: _Backend, change: Commit) -> Mapping[str, str]:
        if backend._in_transaction:
            return commit(backend, change)
        with backend.writing():
            return commit(backend, change)

    return committed


PAGE_COLUMNS = """
    id TEXT PRIMARY KEY,
    type TEXT NOT NULL,
    slug TEXT NOT NULL,
    title TEXT NOT NULL,
    fields TEXT NOT NULL,
    content TEXT NOT NULL,
    status TEXT NOT NULL,
    description TEXT NOT NULL,"""
"""The columns of the ``pages`` table every SQL backend has (a backend appends its own)."""

LINKS_TABLE = """
CREATE TABLE IF NOT EXISTS links (
    source TEXT NOT NULL,
    target TEXT NOT NULL,
    PRIMARY KEY (source, target)
);
CREATE INDEX IF NOT EXISTS links_by_target ON links (target);"""
"""The ``links`` table (one row per link from a page to another) and its index on targets."""
