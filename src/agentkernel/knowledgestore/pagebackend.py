"""The page-backend protocol: where a curated store keeps its pages, and nothing else.

A :class:`~agentkernel.knowledgestore.pages_store.PagesStore` is the whole curated store
(types, validation, links, the catalog, search, ``check``, the log's rules) over one
:class:`PageBackend`, which only keeps records: pages with change tokens, the operation log
and the overview. A new storage (a database, a service) is one class of five small methods (a
storage of markdown files adds what its files need through the optional ones);
:class:`~agentkernel.knowledgestore.memory_backend.InMemoryPageBackend` is the reference and
the test double, and :mod:`agentkernel.knowledgestore.testing` checks a backend through the store.

The guarantees a store gives are designed into the protocol, not added beside it:

* **compare-and-swap**: every page a :class:`Commit` writes names the token it was computed
  from (:attr:`PageWrite.expected`; ``None``: the page must not exist); a backend that finds
  another token raises :class:`~agentkernel.errors.WriteConflictError` and applies nothing, and
  the store computes the change again from a fresh poll;
* **all or none**: a commit (several pages, a log entry, the overview) is applied whole or not
  at all, even when the process is killed in between (a transaction in a database);
* **a retried commit applies once**: a commit carries an :attr:`Commit.id`; a backend that can
  lose an answer (a network) remembers the ids it applied and answers a commit it sees again
  with the tokens it gave, writing nothing;
* **who and which version**: a commit names its :attr:`Commit.author`, and a token names one
  version of a page, so a backend may keep every version and who wrote it.
"""

from __future__ import annotations

import builtins
import contextlib
import uuid
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from agentkernel.knowledgestore import _bundle
from agentkernel.knowledgestore.model import NewPage, UnreadableFile


@dataclass(frozen=True)
class PageRecord:
    """A page as a backend keeps it: plain values, links in ``content`` as ids.

    Attributes:
        id: ``type/slug``.
        type: The page type's name.
        slug: The page's slug.
        title: Its title.
        fields: Its frontmatter fields (``status``, ``tags``, ...), as text.
        content: Its markdown body, links to pages as ``[text](type/slug)``.
    """

    id: str
    type: str
    slug: str
    title: str
    fields: Mapping[str, str]
    content: str


@dataclass(frozen=True)
class PageWrite:
    """One page of a commit: written (or deleted) only if it is still at ``expected``.

    Attributes:
        id: ``type/slug``.
        page: The page's new values; ``None`` deletes it.
        expected: The token of the version the change was computed from; ``None``: the page
            must not exist yet.
    """

    id: str
    page: PageRecord | None
    expected: str | None


@dataclass(frozen=True)
class LogEntry:
    """One entry of the operation log.

    Attributes:
        date: ``YYYY-MM-DD`` (UTC).
        operation: ``ingest``, ``query``, ``update``...
        what: What was done, one line, links as ids.
        pages: The ids of the pages it touched.
    """

    date: str
    operation: str
    what: str
    pages: tuple[str, ...] = ()


def _new_commit_id() -> str:
    return uuid.uuid4().hex


@dataclass(frozen=True)
class Commit:
    """One change of the store, applied all or none.

    Attributes:
        pages: The pages it writes or deletes, each a compare-and-swap.
        log: A log entry to add (newest first when read back).
        overview: The overview's new content (links as ids); ``None`` leaves it.
        author: Who made the change, when the store knows (kept by backends that keep it).
        id: Unique per change; the same commit sent again (its answer was lost) applies once.
    """

    pages: tuple[PageWrite, ...] = ()
    log: LogEntry | None = None
    overview: str | None = None
    author: str | None = None
    id: str = field(default_factory=_new_commit_id)


class PageBackend(ABC):
    """Where a :class:`~agentkernel.knowledgestore.pages_store.PagesStore` keeps its records.

    One backend object serves one store (it may remember what it last told that store);
    several backend objects may share one storage, and each sees the others' commits at its
    next :meth:`poll`. The store calls a backend under its own thread lock, never two calls
    at once.
    """

    label: str = "pages"
    """The backend's name in messages: a database's name, a bucket's prefix (never a secret)."""

    @abstractmethod
    def poll(self) -> Mapping[str, str | None]:
        """Return what changed since this object's previous poll.

        Returns:
            The token of every page that may have changed (``None``: deleted), written by
            anyone; the first poll returns every page. Reporting a page that did not change
            costs a comparison, never a wrong answer.
        """

    @abstractmethod
    def read(self, page_ids: Sequence[str]) -> Mapping[str, tuple[PageRecord, str]]:
        """Return pages with their tokens; a page that doesn't exist is left out.

        Args:
            page_ids: The ids to read.
        """

    @abstractmethod
    def commit(self, commit: Commit) -> Mapping[str, str]:
        """Apply a commit, all or none (see the module).

        Args:
            commit: The change.

        Returns:
            The new token of each page it wrote.

        Raises:
            WriteConflictError: A page is not at the token the commit expects; nothing was
                applied.
            OSError: The storage failed; nothing was applied, or (an answer lost) the commit
                was applied and sending it again says so.
        """

    @abstractmethod
    def recent_log(self, limit: int) -> builtins.list[LogEntry]:
        """Return the latest ``limit`` log entries, newest first."""

    @abstractmethod
    def overview(self) -> str:
        """Return the overview (links as ids); ``""`` when there is none."""

    # -- optional: what a backend of files adds (the defaults are a database's) -----------

    def holds(self, page: NewPage) -> bool:
        """Whether a page already holds exactly what ``page`` asks to create.

        Such a page counts as created: a ``create_many`` sent again after its answer was
        lost succeeds. The default is ``False``: an existing id is refused.
        """
        return False

    def occupied(self, page_id: str) -> bool:
        """Whether something that is not a page sits where ``page_id`` would be kept.

        A create of that page is refused as existing: a backend never writes over what it
        can't read. The default is ``False``.
        """
        return False

    def file_of(self, where: str) -> str:
        """The file a page's content (``overview``: the overview's) is kept in.

        Relative ``.md`` links in content lead from it; ``""`` (the default) where no file
        is, as in a database: every such link leads nowhere.
        """
        return ""

    def is_listing(self, target: str) -> bool:
        """Whether a ``.md`` link's target is an existing ``index.md``, ``log.md`` or overview."""
        return False

    def file_links(self, content: str, where: str) -> builtins.list[tuple[str, str | None]]:
        """Judge the ``.md`` links of content about to be written to ``where``.

        Args:
            content: The content, links to pages as ids.
            where: The page id, or ``overview``.

        Returns:
            Each ``.md`` link as written, with the id of the page it names or ``None`` (it
            leads nowhere); links to an existing listing are left out. The default: each
            one leads nowhere.
        """
        return _bundle.file_link_pages(content, "", None, self.is_listing)

    def recheck(self, page_id: str) -> bool:
        """Look at one page's own storage before it is read (an edit in place shows up).

        Returns:
            Whether it changed (the next :meth:`poll` says how); ``False`` by default.
        """
        return False

    def unreadable(self) -> builtins.list[UnreadableFile]:
        """Return what lies among the pages that can't be read as one, with why.

        ``check()`` asks it first, so a backend may look at its storage afresh here.
        """
        return []

    def ignored(self) -> builtins.list[str]:
        """Return what the storage holds that is not served as pages (as of the last poll)."""
        return []

    # -- optional: writing -------------------------------------------------------------

    def writing(self) -> contextlib.AbstractContextManager[None]:
        """Hold the storage's write lock while a change is computed and committed.

        A backend whose writers queue (a database transaction, a lock file) returns its lock
        here: commits made inside are applied when it is released, and lose no race. The
        default is no lock: commits race and compare-and-swap decides.
        """
        return contextlib.nullcontext()

    def close(self) -> None:
        """Release what the backend holds open (a connection)."""
