"""The ``KnowledgeStore`` contract: curated, typed pages behind one interface.

The knowledge tools work on a store, never on files, so the storage can change (markdown
files, SQLite, a vector database) without touching the tools or the prompt. Every store keeps
these rules, and :mod:`agentkernel.knowledgestore.testing` checks them:

* ids are ``type/slug``; links in content are ``[text](type/slug)`` and are returned that way;
* links must resolve: ``create``, ``create_many``, ``edit``, ``rewrite`` and ``write_overview``
  refuse a link to a page that does not exist;
* pages are never deleted or renamed; ``supersede`` and ``retire`` mark them, and a retired
  page leaves ``list()``, ``index()`` and ``search()`` but ``read()`` still returns it;
* ``edit`` replaces exactly one occurrence;
* a summary's ``ingested`` is the store's, set on create and rewrite;
* a page's type is a label: a store holds any declared type;
* reading changes nothing: ``types``, ``list``, ``read``, ``search``, ``index``,
  ``recent_log``, ``check``, ``overview`` and ``ignored_files`` write no byte and create no
  file; only the writing methods do;
* ``check`` reports a ``.md`` file link that leads to no page as a broken link.

Refusals raise :class:`~agentkernel.knowledgestore.errors.KnowledgeStoreError`.
"""

from __future__ import annotations

import builtins
from abc import ABC, abstractmethod
from collections.abc import Sequence

from agentkernel.knowledgestore.model import (
    CheckReport,
    FieldChanges,
    KnowledgePage,
    NewPage,
    PageInfo,
    PageType,
    SearchHit,
)


class KnowledgeStore(ABC):
    """Where curated knowledge lives, as pages addressed by ``type/slug``.

    Subclass it for your own storage and run the conformance suite of
    :mod:`agentkernel.knowledgestore.testing` against it.
    """

    @abstractmethod
    def types(self) -> tuple[PageType, ...]:
        """Return the page types this store holds, the built-ins and the declared ones."""

    @abstractmethod
    def list(self) -> list[PageInfo]:
        """Return every page but the retired ones."""

    @abstractmethod
    def read(self, page_id: str) -> KnowledgePage | None:
        """Return a page, retired ones included.

        Args:
            page_id: ``type/slug``.

        Returns:
            The page with ``linked_from`` (the pages linking to it), or ``None`` when there is
            no such page (or ``page_id`` is not an id).
        """

    def create(
        self,
        type: str,
        slug: str,
        title: str,
        content: str,
        fields: FieldChanges | None = None,
    ) -> str:
        """Create one page.

        Args:
            type: The page type's name.
            slug: Lowercase words joined by hyphens; the id becomes ``type/slug``.
            title: The page's title.
            content: Its markdown body, links as ids, each to an existing page.
            fields: Frontmatter fields to set (``None`` values are ignored).

        Returns:
            The new page's id.

        Raises:
            KnowledgeStoreError: Unknown type, invalid slug, an id that exists, or a link to
                a page that does not exist.
        """
        return self.create_many([NewPage(type, slug, title, content, fields)])[0]

    @abstractmethod
    def create_many(self, pages: Sequence[NewPage]) -> builtins.list[str]:
        """Create several pages whose links may point to each other: all of them, or none.

        Args:
            pages: The pages.

        Returns:
            Their ids, in order.

        Raises:
            KnowledgeStoreError: The first problem with any page; nothing is created then.
        """

    @abstractmethod
    def edit(
        self, page_id: str, old_text: str, new_text: str, fields: FieldChanges | None = None
    ) -> None:
        """Replace the one occurrence of ``old_text`` in a page's content.

        Args:
            page_id: ``type/slug``.
            old_text: Text as ``read()`` returned it (links as ids); must occur exactly once.
            new_text: Its replacement; its links must resolve.
            fields: Frontmatter fields to set or remove.

        Raises:
            KnowledgeStoreError: No such page, ``old_text`` found zero or several times, or a
                link to nowhere.
        """

    @abstractmethod
    def rewrite(self, page_id: str, content: str, fields: FieldChanges | None = None) -> None:
        """Replace a page's whole content, keeping its id (a summary's ``ingested`` is reset).

        Args:
            page_id: ``type/slug``.
            content: The new body; its links must resolve.
            fields: Frontmatter fields to set or remove.

        Raises:
            KnowledgeStoreError: No such page, or a link to nowhere.
        """

    @abstractmethod
    def supersede(self, page_id: str, by: str, reason: str | None = None) -> None:
        """Mark a page superseded by another, with a notice at its top.

        Args:
            page_id: The page that is out of date.
            by: The page that replaces it.
            reason: Why, optionally.

        Raises:
            KnowledgeStoreError: Either page missing, the same page, or a retired page.
        """

    @abstractmethod
    def retire(self, page_id: str, reason: str) -> None:
        """Take a page out of the listing, the index and the search; it is kept and readable.

        Args:
            page_id: ``type/slug``.
            reason: Why, in one sentence.

        Raises:
            KnowledgeStoreError: No such page, no reason, or already retired.
        """

    @abstractmethod
    def search(self, query: str, limit: int = 10) -> builtins.list[SearchHit]:
        """Find pages by the words of ``query`` in their title, aliases or content.

        Args:
            query: Words to look for (case and accents are ignored).
            limit: How many hits at most.

        Returns:
            Hits, best first: a page whose title says what the query says, then one whose
            alias does, then by relevance (title above aliases above body); a superseded page
            below a current one that matches as well; retired pages left out.
        """

    @abstractmethod
    def index(self) -> str:
        """Return the catalog: every page but the retired ones, by section, linked by id."""

    @abstractmethod
    def log(self, operation: str, what: str, pages: Sequence[str] | None = None) -> None:
        """Add an entry to the operation log, dated today (UTC).

        Args:
            operation: ``ingest``, ``query``, ``lint``, ``update``...
            what: What was done, in one line.
            pages: The ids of the pages it touched.

        Raises:
            KnowledgeStoreError: An empty operation or description, or a page that is no id.
        """

    def recent_log(self, limit: int = 10) -> builtins.list[str]:
        """Return the latest log entries, newest first (optional).

        Each entry reads ``## [YYYY-MM-DD] operation | what``, followed by
        ``- pages: a, b`` when it names pages.

        Args:
            limit: How many entries at most.

        Returns:
            The entries.

        Raises:
            NotImplementedError: The store cannot show its log.
        """
        raise NotImplementedError(f"{type(self).__name__} can't show its log")

    def ignored_files(self) -> builtins.list[str]:
        """Return what the store's location holds that it doesn't serve as pages (optional).

        A store over a folder names the files it leaves alone there (another tool's OKF
        bundle, notes), so that ``knowledge_index`` can say so instead of "empty".

        Returns:
            Their paths, relative to the store's location; ``[]`` by default.
        """
        return []

    @abstractmethod
    def check(self) -> CheckReport:
        """Return the mechanical problems: broken links, orphans, links to retired pages.

        Reading only: a check changes nothing in the store.
        """

    @abstractmethod
    def overview(self) -> str:
        """Return the overview, a living synthesis of the whole knowledge base (``""`` if none)."""

    @abstractmethod
    def write_overview(self, content: str) -> None:
        """Replace the overview.

        Args:
            content: Markdown; its links must resolve.

        Raises:
            KnowledgeStoreError: A link to a page that does not exist.
        """

    def close(self) -> None:
        """Release what the store holds open (a database connection, say)."""
