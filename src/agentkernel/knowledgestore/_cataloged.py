"""What both built-in stores share: reads answered from the page catalog, and one-page changes.

``FileKnowledgeStore`` and ``SQLiteKnowledgeStore`` keep every page in a ``PageCatalog`` that
they refresh from their files or their database. Listing, search and the index read that
catalog the same way in both; edit, rewrite, supersede and retire differ only in how a page is
found and saved, which each store supplies through ``_change``.
"""

from __future__ import annotations

import builtins
import functools
import threading
from abc import abstractmethod
from collections.abc import Callable
from dataclasses import replace

from agentkernel.knowledgestore import _bundle, _flows, _pages
from agentkernel.knowledgestore._memory import PageCatalog
from agentkernel.knowledgestore.base import KnowledgeStore
from agentkernel.knowledgestore.model import (
    STATUS_RETIRED,
    FieldChanges,
    PageInfo,
    PageType,
    SearchHit,
)

View = Callable[[str], _flows.Page]
"""Looks a page up by id for a change; raises ``KnowledgeStoreError`` when there is none."""


class CatalogedStore(KnowledgeStore):
    """A :class:`KnowledgeStore` whose reads come from an in-memory :class:`PageCatalog`."""

    _registry: _pages.TypeRegistry
    _mutex: threading.RLock
    _catalog: PageCatalog

    @abstractmethod
    def _refresh(self) -> None:
        """Bring the catalog up to date with what other processes wrote (under ``_mutex``)."""

    @abstractmethod
    def _change(self, page_id: str, change: Callable[[View], _flows.Changed]) -> None:
        """Change one page under the store's write lock.

        Args:
            page_id: The page to change; it must exist.
            change: Computes the page's new values from the views it asks for.
        """

    def types(self) -> tuple[PageType, ...]:
        """Return the page types this store holds."""
        return self._registry.types

    def list(self) -> list[PageInfo]:
        """Return every page but the retired ones, by type, then slug."""
        with self._mutex:
            self._refresh()
            infos = [entry.info for entry in self._catalog.entries()]
            if not infos:
                self._note_empty()
        return [replace(i, fields=dict(i.fields)) for i in infos if i.status != STATUS_RETIRED]

    def _note_empty(self) -> None:
        """Say (in the log) why a listing is empty when the store's location is not.

        Called by :meth:`list` when there is no page; the default says nothing.
        """

    def search(self, query: str, limit: int = 10) -> builtins.list[SearchHit]:
        """Find pages by words in their title, aliases or content, best first.

        Args:
            query: Words to look for.
            limit: How many hits at most.

        Returns:
            The hits; retired pages are left out, superseded ones rank below current ones.

        Raises:
            KnowledgeStoreError: A bad limit, or a query that is not text or far too long.
        """
        limit = _pages.require_limit(limit)
        with self._mutex:
            self._refresh()
            return self._catalog.search(query, limit)

    def index(self) -> str:
        """Return the catalog, linked by id; ``""`` when there is no page."""
        with self._mutex:
            self._refresh()
            return self._catalog.index()

    def edit(
        self, page_id: str, old_text: str, new_text: str, fields: FieldChanges | None = None
    ) -> None:
        """Replace the one occurrence of ``old_text`` in a page.

        Args:
            page_id: ``type/slug``.
            old_text: Text as ``read()`` returned it; must occur exactly once.
            new_text: The replacement.
            fields: Field changes.

        Raises:
            KnowledgeStoreError: No such page, zero or several matches, or a link to nowhere.
        """
        judge = self._judge_links(page_id)
        self._change(
            page_id,
            lambda view: _flows.edited(
                view(page_id), old_text, new_text, fields, self._exists, judge
            ),
        )

    def rewrite(self, page_id: str, content: str, fields: FieldChanges | None = None) -> None:
        """Replace a page's whole content (a summary's ``ingested`` is stamped anew).

        Args:
            page_id: ``type/slug``.
            content: The new body.
            fields: Field changes.

        Raises:
            KnowledgeStoreError: No such page, or a link to nowhere.
        """
        judge = self._judge_links(page_id)
        self._change(
            page_id,
            lambda view: _flows.rewritten(view(page_id), content, fields, self._exists, judge),
        )

    def supersede(self, page_id: str, by: str, reason: str | None = None) -> None:
        """Mark a page superseded by another.

        Args:
            page_id: The outdated page.
            by: Its replacement.
            reason: Why, optionally.

        Raises:
            KnowledgeStoreError: Either page missing, the same page, or a retired page.
        """
        self._change(page_id, lambda view: _flows.superseded(view(page_id), view(by), reason))

    def retire(self, page_id: str, reason: str) -> None:
        """Retire a page: it leaves the listing, the index and the search, and is kept.

        Args:
            page_id: ``type/slug``.
            reason: Why.

        Raises:
            KnowledgeStoreError: No such page, no reason, or already retired.
        """
        why = _pages.require_reason(reason)
        self._change(page_id, lambda view: _flows.retired(view(page_id), why))

    @abstractmethod
    def _exists(self, page_id: str) -> bool:
        """Whether a page with this id exists (links are checked against it)."""

    def _file_links(self, content: str, page_id: str) -> builtins.list[tuple[str, str | None]]:
        """Judge the ``.md`` links of content written to a page (see ``_pages.FileLinks``).

        The default is a database's: no file is a page or a listing, so every ``.md`` link
        leads nowhere, as ``check()`` reports it.

        Args:
            content: The content, links to pages as ids.
            page_id: The page it is written to (``overview`` for the overview).

        Returns:
            Each ``.md`` link as written, with the page it names or ``None``.
        """
        return _bundle.file_link_pages(content, "", None, _no_listing)

    def _judge_links(self, page_id: str) -> _pages.FileLinks:
        """:meth:`_file_links` for content written to ``page_id``."""
        return functools.partial(self._file_links, page_id=page_id)


def _no_listing(_target: str) -> bool:
    return False
