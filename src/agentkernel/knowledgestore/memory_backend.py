"""A page backend in memory: the reference :class:`PageBackend`, and a test double for yours.

``PagesStore(InMemoryPageBackend())`` is a whole curated store that keeps nothing on disk, for
tests of code that uses a store. Two backends made with ``shares=`` see the same pages, as two
processes see one database, so tests can play "another writer". It keeps every version of
every page with its author (:meth:`InMemoryPageBackend.history`), as a backend may.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from typing_extensions import override

from agentkernel.errors import WriteConflictError
from agentkernel.knowledgestore.pagebackend import Commit, LogEntry, PageBackend, PageRecord


@dataclass
class _Shelf:
    """What backends sharing one storage share."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    pages: dict[str, tuple[PageRecord, str]] = field(default_factory=dict)
    changed_at: dict[str, int] = field(default_factory=dict)  # id -> commit number
    versions: dict[str, list[tuple[PageRecord | None, str | None]]] = field(default_factory=dict)
    log: list[LogEntry] = field(default_factory=list)
    overview: str = ""
    applied: dict[str, dict[str, str]] = field(default_factory=dict)  # commit id -> tokens
    number: int = 0


class InMemoryPageBackend(PageBackend):
    """Pages, log and overview in a Python dict (gone with the process)."""

    label = "memory"

    def __init__(self, *, shares: InMemoryPageBackend | None = None) -> None:
        """Start empty, or on the storage of another backend.

        Args:
            shares: Another in-memory backend whose pages this one sees and writes.
        """
        self._shelf: _Shelf = shares._shelf if shares is not None else _Shelf()
        self._seen = -1  # the commit number of the last poll; -1: never polled

    @override
    def poll(self) -> Mapping[str, str | None]:
        with self._shelf.lock:
            shelf, seen = self._shelf, self._seen
            self._seen = shelf.number
            changed = (i for i, number in shelf.changed_at.items() if number > seen)
            return {i: shelf.pages[i][1] if i in shelf.pages else None for i in changed}

    @override
    def read(self, page_ids: Sequence[str]) -> Mapping[str, tuple[PageRecord, str]]:
        with self._shelf.lock:
            pages = self._shelf.pages
            return {i: pages[i] for i in page_ids if i in pages}

    @override
    def commit(self, commit: Commit) -> Mapping[str, str]:
        with self._shelf.lock:
            shelf = self._shelf
            if commit.id in shelf.applied:  # sent again: its answer was lost
                return dict(shelf.applied[commit.id])
            for write in commit.pages:
                current = shelf.pages.get(write.id)
                if (current[1] if current else None) != write.expected:
                    raise WriteConflictError(f"{write.id} changed since it was read", write.id)
            shelf.number += 1
            tokens: dict[str, str] = {}
            for write in commit.pages:
                shelf.changed_at[write.id] = shelf.number
                kept = shelf.versions.setdefault(write.id, [])
                if write.page is None:
                    shelf.pages.pop(write.id, None)
                    kept.append((None, commit.author))
                    continue
                tokens[write.id] = f"{shelf.number}"
                shelf.pages[write.id] = (write.page, tokens[write.id])
                kept.append((write.page, commit.author))
            if commit.log is not None:
                shelf.log.append(commit.log)
            if commit.overview is not None:
                shelf.overview = commit.overview
            shelf.applied[commit.id] = tokens
            return dict(tokens)

    @override
    def recent_log(self, limit: int) -> builtins.list[LogEntry]:
        with self._shelf.lock:
            return self._shelf.log[::-1][:limit]

    @override
    def overview(self) -> str:
        with self._shelf.lock:
            return self._shelf.overview

    def history(self, page_id: str) -> builtins.list[tuple[PageRecord | None, str | None]]:
        """Return every version of a page, oldest first, with who wrote it.

        Args:
            page_id: ``type/slug``.

        Returns:
            ``(page, author)`` per commit that wrote it; ``page`` is ``None`` for a deletion.
        """
        with self._shelf.lock:
            return list(self._shelf.versions.get(page_id, []))
