"""The page backend over the markdown files of any ``DocumentStore``, local or on S3.

:class:`BundlePageBackend` keeps a curated store's records as an OKF bundle (pages in their
type folders with YAML frontmatter, ``index.md``, ``log.md``, ``overview.md``; see
:mod:`._stored`) in a :class:`~agentkernel.storage.DocumentStore`: under
:class:`~agentkernel.knowledgestore.bundle_store.BundleKnowledgeStore` a store you pass (S3
included), under :class:`~agentkernel.knowledgestore.file_store.FileKnowledgeStore` a folder
it owns. Many writers can share one: every write is a compare-and-swap on the file's token
(``If-Match`` on S3, a check under a lock file locally), and :mod:`._bundle_writes` says how
pages, ``index.md``, ``log.md`` and batches are written (all or none across a crash: a batch
record first, :mod:`._batched`).

The backend follows the storage through its change tokens (:mod:`agentkernel.bundle.listing`):
locally, each poll compares the folders' tokens and re-reads only the files of a moved folder
that are new or were replaced; elsewhere, reads answer from a listing at most
``refresh_seconds`` old, and every write and ``check`` lists afresh. Reading never writes. It
writes only where every markdown file is one of its pages or listings, or sits where one of its
pages would (:meth:`BundlePageBackend._require_owned`): a foreign bundle is read, and
``check()`` names what it cannot read, but never written; a page file broken by hand is never
written over and stops no other write. Storage that fails is never taken for content
(:mod:`._faults`): a read the network cuts short is made again, and while it keeps failing
reads answer without that page and writes are refused, naming it; a listing that fails is an
error, never an empty store; a write that fails raises
:class:`~agentkernel.knowledgestore.errors.StoreAccessError` after taking back what it wrote.
"""

from __future__ import annotations

import builtins
import contextlib
import itertools
import logging
import posixpath
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from typing_extensions import override

from agentkernel.bundle import logfile
from agentkernel.bundle.listing import FolderListing, Listing, WalkListing
from agentkernel.errors import DocumentTooLargeError, WriteConflictError
from agentkernel.knowledgestore import _bundle, _faults, _ownership, _pages, _stored
from agentkernel.knowledgestore._batched import Batches
from agentkernel.knowledgestore._bundle_writes import BundleWrites
from agentkernel.knowledgestore._catalog import IndexLines
from agentkernel.knowledgestore._memory import make_entry
from agentkernel.knowledgestore._stored import Stored
from agentkernel.knowledgestore.errors import KnowledgeStoreError, StoreAccessError
from agentkernel.knowledgestore.model import (
    NewPage,
    PageInfo,
    PageType,
    UnreadableFile,
    is_slug,
)
from agentkernel.knowledgestore.pagebackend import Commit, LogEntry, PageBackend, PageRecord
from agentkernel.storage.base import MAX_DOCUMENT_BYTES, oversized
from agentkernel.storage.local import LocalDocumentStore

if TYPE_CHECKING:
    from agentkernel.storage.base import DocumentStore

logger = logging.getLogger(__name__)

_NOTHING: builtins.list[str] = []


def listing_of(documents: DocumentStore, refresh_seconds: float) -> Listing:
    """The cheapest way to keep up with ``documents``: folder tokens locally, else a walk.

    Args:
        documents: The store.
        refresh_seconds: How old a walk reads may answer from (not a local folder's).

    Returns:
        The listing, empty until its first poll.
    """
    if type(documents) is LocalDocumentStore:
        return FolderListing(documents)
    return WalkListing(documents, refresh_seconds)


class BundlePageBackend(PageBackend):
    """The records of a curated store as the page files of a ``DocumentStore``."""

    def __init__(
        self,
        documents: DocumentStore | None,
        page_types: Sequence[PageType] | None = None,
        *,
        refresh_seconds: float = 1.0,
        label: str | None = None,
    ) -> None:
        """Open (lazily) on ``documents``; nothing is read or written yet.

        Args:
            documents: Where the files live (``None``: a subclass lists them itself).
            page_types: Declared page types, besides the built-ins (the store's).
            refresh_seconds: How old a listing reads may answer from (see
                :class:`~agentkernel.knowledgestore.bundle_store.BundleKnowledgeStore`).
            label: The name in messages; by default the documents' label.

        Raises:
            KnowledgeStoreError: An invalid page type declaration.
        """
        self._registry = _pages.TypeRegistry(page_types)
        self._the_listing = (
            listing_of(documents, refresh_seconds) if documents is not None else None
        )
        self.label = label or (documents.label if documents is not None else "bundle")
        self._page_dirs = {t.dir for t in self._registry.types if t.dir}
        self._dir_types = {t.dir: [t] for t in self._registry.types if t.dir}
        self._root_types = [t for t in self._registry.types if not t.dir]
        self._links_map = _bundle.LinkMap(self._registry)
        self._pages: dict[str, Stored] = {}
        self._files: dict[str, tuple[str, Stored | None]] = {}  # rel -> (token, page)
        self._disk_index = IndexLines(self._registry, lambda i: self._pages[i.id].rel)
        self._batches = Batches(self.label)
        self._writes = BundleWrites(self)
        self._root_pages_changed = False
        self._root_generation = 0  # moves when links to root pages read differently
        self._pages_version = 0  # moves whenever a page is put or dropped
        self._ignored_cache: tuple[builtins.list[str], int, builtins.list[str]] | None = None
        self._why: dict[str, str] = {}  # a file in a page's place that is no page -> why
        # a page file whose read failed on the network -> the error: read again next call
        self._unread: dict[str, OSError] = {}
        self._changed: dict[str, str | None] = {}  # page id -> token, until the next poll
        self._fresh: dict[str, PageRecord] = {}  # pages put since the last read
        self._listed_for_write = False  # writing() just listed: the poll inside lists not
        self._full_next = False  # a race was lost: the next listing compares every file

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.label!r})"

    # -- what a subclass may change --------------------------------------------------------

    def _listing(self) -> Listing | None:
        """The listing of the store's files; ``None`` while there is nothing to list."""
        return self._the_listing

    def _documents_to_write(self) -> DocumentStore:
        """The document store, ready for a write: by default, the one listed."""
        listing = self._listing()
        assert listing is not None  # a subclass whose location may be missing makes it here
        return listing.documents

    def _serialised(self) -> contextlib.AbstractContextManager[None] | None:
        """A lock every writer of the location takes for a whole change; ``None``: none.

        Without one, writers race and the compare-and-swap decides (a lost race is retried).
        """
        return None

    def _owned(self) -> bool:
        """Whether the location is known to be the store's without looking at its files."""
        return False

    def _require_owned(self, documents: DocumentStore) -> None:
        """Refuse to write where markdown lies that is not in the store's own layout.

        Without a marker (see :mod:`._ownership`) the files say whose the location is. A
        markdown file outside the layout (another folder, a name that is no page slug) says
        it holds someone else's bundle, whose ``index.md`` and ``log.md`` a write would
        replace: refused. A file in a page's place that does not parse (a frontmatter broken
        by hand) is not served and never written over (a create of its page is refused as
        existing), and ``check()`` names it; it does not stop writes to the other pages.

        Raises:
            KnowledgeStoreError: There is some, named.
        """
        foreign = [rel for rel in self._ignored() if not self._in_page_place(rel)]
        _ownership.refuse_foreign(documents.label, foreign, marker=False)

    def _in_page_place(self, rel: str) -> bool:
        """Whether ``rel`` is where one of the store's pages would be kept."""
        place = self._place(rel)
        return place is not None and place[1] not in _pages.RESERVED_SLUGS

    # -- the protocol: reading -------------------------------------------------------------

    @override
    def poll(self) -> Mapping[str, str | None]:
        if self._listed_for_write:
            self._listed_for_write = False
        else:
            self._refresh(full=self._full_next)
        changed, self._changed = self._changed, {}
        # the records put since are read next, for the pages the store doesn't have yet
        self._fresh = {i: self._fresh[i] for i in changed if i in self._fresh}
        return changed

    @override
    def read(self, page_ids: Sequence[str]) -> Mapping[str, tuple[PageRecord, str]]:
        found: dict[str, tuple[PageRecord, str]] = {}
        for page_id in page_ids:
            stored = self._pages.get(page_id)
            if stored is not None:
                record = self._fresh.pop(page_id, None) or self._record(stored)
                found[page_id] = (record, self._token_of(stored))
        return found

    @override
    def recent_log(self, limit: int) -> builtins.list[LogEntry]:
        text = self._read_text("log.md")
        entries = itertools.islice(logfile.lines(text), limit)
        return [_stored.log_entry(self._links_map, date, line) for date, line in entries]

    @override
    def overview(self) -> str:
        return self._links_map.from_disk(self._overview_body(), "overview.md")

    def _overview_body(self) -> str:
        return _stored.overview_body(self._read_text("overview.md"))

    @override
    def holds(self, page: NewPage) -> bool:
        return self._writes.holds(page)

    @override
    def occupied(self, page_id: str) -> bool:
        try:
            page_type, slug = self._registry.require_id(page_id)
        except KnowledgeStoreError:
            return False
        return self._listing_exists(_bundle.rel_of(page_type, slug))

    @override
    def file_of(self, where: str) -> str:
        stored = self._pages.get(where)
        if stored is not None:
            return stored.rel
        if where == "overview":
            return "overview.md"
        return _bundle.rel_of(*self._registry.require_id(where))

    @override
    def is_listing(self, target: str) -> bool:
        """Whether a bundle-relative path is an existing ``index.md``, ``log.md`` or overview."""
        name = posixpath.basename(target)
        return name in _bundle.LISTING_FILES and self._listing_exists(target)

    @override
    def file_links(self, content: str, where: str) -> builtins.list[tuple[str, str | None]]:
        """Judge ``.md`` links as ``check()`` does, from the file the content goes to."""
        return _bundle.file_link_pages(
            content, self.file_of(where), self._links_map, self.is_listing
        )

    @override
    def recheck(self, page_id: str) -> bool:
        """Compare the page's own file (an edit made in place shows up at once locally).

        Raises:
            StoreAccessError: The page's file could not be read (the network failed).
        """
        self._require_read(page_id)
        stored = self._pages.get(page_id)
        listing = self._listing()
        if stored is None or listing is None or not listing.recheck(stored.rel):
            return False
        token = listing.tokens.get(stored.rel)
        place = self._place(stored.rel)
        if token is None or place is None:
            self._forget(stored.rel)
        else:
            self._load(listing, stored.rel, place[0], place[1], token)
        self._sync_root_ids()
        return True

    def _require_read(self, page_id: str) -> None:
        """Refuse to answer for a page whose file could not be read (rather than say "none")."""
        if not self._unread:
            return
        try:
            page_type, slug = self._registry.require_id(page_id)
        except KnowledgeStoreError:
            return
        rel = _bundle.rel_of(page_type, slug)
        exc = self._unread.get(rel)
        if exc is not None:
            raise _faults.access_error(self.label, page_id, exc, writing=False) from exc

    @override
    def unreadable(self) -> builtins.list[UnreadableFile]:
        self._refresh(fresh=True)  # a check looks at the store as it is
        return [
            UnreadableFile(
                rel, self._why.get(rel) or _ownership.why_not_a_page(rel, self._page_dirs)
            )
            for rel in self._ignored()
        ]

    @override
    def ignored(self) -> builtins.list[str]:
        return self._ignored()

    def _ignored(self) -> builtins.list[str]:
        files = self._markdown_files()
        cached = self._ignored_cache
        # the cache holds the list it was made from, so ``is`` can't meet a recycled id
        if cached is None or cached[0] is not files or cached[1] != self._pages_version:
            recognised = self._recogniser()
            cached = (files, self._pages_version, [rel for rel in files if not recognised(rel)])
            self._ignored_cache = cached
        return list(cached[2])

    def _recogniser(self) -> Callable[[str], bool]:
        """Tell whether a markdown file is one of this store's pages or listings (as of now)."""
        served = {page.rel for page in self._pages.values()} | _bundle.LISTING_FILES
        return (served | self._batches.hidden).__contains__

    def _markdown_files(self) -> builtins.list[str]:
        listing = self._listing()
        return listing.markdown if listing is not None else _NOTHING

    def _listing_exists(self, rel: str) -> bool:
        listing = self._listing()
        return listing is not None and rel in listing.tokens

    def _read_text(self, name: str) -> str:
        """Return one of the store's own files (``log.md``, ...) as text; ``""`` when absent."""
        listing = self._listing()
        if listing is None:
            return ""
        documents = listing.documents
        try:
            return documents.read_bounded(name, MAX_DOCUMENT_BYTES).decode("utf-8")
        except FileNotFoundError:
            return ""
        except DocumentTooLargeError as exc:
            if name != "log.md":
                logger.warning("Not reading %s in %s: %s", name, self.label, exc.reason)
                return ""
        # the log is newest first: the entries asked for are at its top; a cut line is dropped
        head = documents.read_head(name, MAX_DOCUMENT_BYTES).decode("utf-8", "ignore")
        return head.rpartition("\n")[0]

    # -- the pages, kept current -----------------------------------------------------------

    def _record(self, stored: Stored) -> PageRecord:
        content = self._links_map.from_disk(stored.body, stored.rel)
        return PageRecord(
            stored.id, stored.page_type.name, stored.slug, stored.title, stored.fields, content
        )

    def _token_of(self, stored: Stored) -> str:
        """A page's token: its file's, and how links to root pages read (see ``_sync_root_ids``)."""
        return f"{self._files[stored.rel][0]}@{self._root_generation}"

    def _put(self, stored: Stored) -> None:
        self._pages_version += 1
        self._pages[stored.id] = stored
        record = self._record(stored)
        self._fresh[stored.id] = record
        self._disk_index.put(_info(record))
        self._changed[stored.id] = self._token_of(stored)
        if not stored.page_type.dir:
            self._root_pages_changed = True

    def _unput(self, stored: Stored) -> None:
        if self._pages.get(stored.id) is not stored:
            return
        del self._pages[stored.id]
        self._pages_version += 1
        self._fresh.pop(stored.id, None)
        self._disk_index.drop(stored.id)
        self._changed[stored.id] = None
        if not stored.page_type.dir:
            self._root_pages_changed = True

    def _sync_root_ids(self) -> None:
        """Links to pages kept at the root read by their frontmatter type: convert anew."""
        if not self._root_pages_changed:
            return
        self._root_pages_changed = False
        root_ids = {p.slug: p.id for p in self._pages.values() if not p.page_type.dir}
        if root_ids == self._links_map.root_ids:
            return
        self._links_map.root_ids = root_ids
        self._root_generation += 1
        for stored in list(self._pages.values()):
            self._put(stored)
        self._root_pages_changed = False

    def _place(self, rel: str) -> tuple[builtins.list[PageType], str] | None:
        """The types a markdown file's place allows and its slug; ``None``: no page's place."""
        folder, _, name = rel.rpartition("/")
        slug = name[:-3]
        if not name.endswith(".md") or not is_slug(slug):
            return None
        if not folder:
            if slug in _pages.RESERVED_ROOT_SLUGS or not self._root_types:
                return None
            return self._root_types, slug
        candidates = self._dir_types.get(folder)
        return (candidates, slug) if candidates else None

    def _refresh(self, *, fresh: bool = False, full: bool = False, own: bool = False) -> None:
        """Poll the listing and re-read the page files whose token changed.

        Args:
            fresh: A write or a check: the listing may not answer from a stale walk.
            full: Compare every file (a lost race is being retried).
            own: A write that knows of no change since the last poll but this store's own
                (see :meth:`Listing.poll`).
        """
        self._full_next = False
        listing = self._listing()
        if listing is None:
            for rel in list(self._files):
                self._forget(rel)
            self._sync_root_ids()
            return
        try:
            changed = listing.poll(fresh=fresh, full=full, own=own)
        except OSError as exc:  # a bucket or endpoint that is gone is no empty store
            raise _faults.access_error(self.label, None, exc, writing=False) from exc
        tokens = listing.tokens
        if self._unread:  # read again what the network failed to deliver last time
            seen = set(changed)
            changed = [*changed, *(rel for rel in self._unread if rel not in seen)]
        if listing.records or self._batches.any:
            moved = self._batches.watch(listing, changed)
            if moved:
                self._pages_version += 1  # what is ignored changes too
            changed = [*changed, *moved]
        hidden = self._batches.hidden
        for rel in changed:
            token = tokens.get(rel)
            place = self._place(rel) if token is not None and rel not in hidden else None
            if place is None:
                self._forget(rel)
                continue
            last = self._files.get(rel)
            if last is None or last[0] != token or rel in self._unread:
                self._load(listing, rel, place[0], place[1], token)
        self._sync_root_ids()
        passing = {rel: exc for rel, exc in self._unread.items() if _faults.is_transient(exc)}
        if fresh and passing:
            # a write (or a check) must see every page: the index it rewrites lists them all;
            # a file that can't be read for itself (denied) is one bad file, which blocks none
            rel, failure = min(passing.items())
            raise _faults.access_error(self.label, rel, failure, writing=False) from failure

    def _load(
        self,
        listing: Listing,
        rel: str,
        candidates: builtins.list[PageType],
        slug: str,
        token: str | None,
    ) -> None:
        """Read one page file (with the token of what was read).

        A read that fails on the network is retried a few times. A read that still fails
        (or fails otherwise: a denied read, an I/O error) leaves what was known of the file,
        and the next call reads it again; it is never taken for a file the store can't read
        as a page: only content that doesn't parse is, until it changes.
        """
        documents = listing.documents
        stored: Stored | None = None
        label = self.label
        listed = listing.size(rel)
        parsed: Stored | str
        try:
            if listed is not None and listed > MAX_DOCUMENT_BYTES:  # refused unread
                parsed = oversized(listed, MAX_DOCUMENT_BYTES)
            elif documents.compare_and_swap:
                data, token = _faults.read_retrying(
                    lambda: documents.read_versioned_bounded(rel, MAX_DOCUMENT_BYTES), rel, label
                )
                parsed = _stored.parse_as_any(candidates, slug, rel, data.decode("utf-8"))
            else:
                data = _faults.read_retrying(
                    lambda: documents.read_bounded(rel, MAX_DOCUMENT_BYTES), rel, label
                )
                parsed = _stored.parse_as_any(candidates, slug, rel, data.decode("utf-8"))
        except FileNotFoundError:
            self._forget(rel)
            return
        except DocumentTooLargeError as exc:  # its content: refused until it changes
            parsed, token = exc.reason, exc.token or token
        except OSError as exc:  # the way to the file failed, not its content
            logger.warning(
                "Could not read %s in %s (%s); read again at the next call", rel, label, exc
            )
            self._unread[rel] = exc
            return
        except UnicodeDecodeError as exc:
            parsed = f"it can't be read ({type(exc).__name__})"
        self._unread.pop(rel, None)
        if isinstance(parsed, str):
            logger.warning("Skipping %s in %s: %s", rel, label, parsed)
            self._why[rel] = parsed
        else:
            stored = parsed
            self._why.pop(rel, None)
        last = self._files.get(rel)
        self._files[rel] = (token or "", stored)
        dropped = last[1] if last is not None else None
        if dropped is not None and (stored is None or stored.id != dropped.id):
            self._unput(dropped)
        if stored is not None:
            self._put(stored)

    def _forget(self, rel: str) -> None:
        last = self._files.pop(rel, None)
        self._why.pop(rel, None)
        self._unread.pop(rel, None)
        if last is not None and last[1] is not None:
            self._unput(last[1])

    # -- the protocol: writing -------------------------------------------------------------

    @override
    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """Hold the location for a change: its lock, if it has one; listed afresh.

        Raises:
            KnowledgeStoreError: The location holds markdown the store cannot read as its
                pages, or the document store is read-only or offers no compare-and-swap.
            OSError: Storage failed (the store names the change that was not made).
        """
        documents = self._documents_to_write()
        if not documents.writable:
            raise KnowledgeStoreError(f"The knowledge store {self.label!r} is read-only.")
        if not documents.compare_and_swap:
            raise KnowledgeStoreError(
                f"The knowledge store can't write in {documents.label!r}: its "
                "document store offers no compare-and-swap, so writers could lose changes."
            )
        serialised = self._serialised()
        if serialised is None:
            self._list_for_write(documents)
            self._require_owned(documents)
            with self._writes.holding(documents):
                yield
            return
        if not self._owned():
            self._refresh(fresh=True)
            self._require_owned(documents)  # before the lock: a refused folder gets no file
        with serialised:
            self._list_for_write(documents)
            with self._writes.holding(documents):
                yield

    def _list_for_write(self, documents: DocumentStore) -> None:
        """Read the index's token, then list afresh; finish batches of writers gone."""
        writes = self._writes
        writes.index_seen = writes.read_index(documents)
        self._refresh(fresh=True, full=self._full_next, own=writes.index_is_own())
        if self._batches.finish_abandoned(documents, lambda rel: writes.wrote(rel, None)):
            writes.index_seen = writes.read_index(documents)
            self._refresh(fresh=True, full=True)
            writes.write_index(documents)
            writes.index_seen = writes.read_index(documents)
        self._listed_for_write = True

    @override
    def commit(self, commit: Commit) -> Mapping[str, str]:
        """Apply a commit the store made: new pages, one changed page, a log entry or the overview.

        Raises:
            WriteConflictError: A page or file changed since it was read (the next poll
                compares every file).
            StoreAccessError: Storage failed; what the change wrote was taken back.
        """
        if not self._writes.writing:
            with self.writing():
                return self.commit(commit)
        try:
            return self._writes.apply(commit)
        except WriteConflictError:
            self._full_next = True
            raise
        except StoreAccessError:
            raise
        except OSError as exc:
            subject = self._writes.subject(commit)
            raise _faults.access_error(self.label, subject, exc, writing=True) from exc


def _info(record: PageRecord) -> PageInfo:
    """A page's index line's values (description and status worked out from the record)."""
    return make_entry(
        record.id, record.type, record.slug, record.title, record.fields, record.content
    ).info
