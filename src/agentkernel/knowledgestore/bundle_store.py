"""The curated store over any ``DocumentStore``: one implementation, local or on S3.

:class:`BundlePagesStore` keeps the store's files (pages in their type folders with YAML
frontmatter, ``index.md``, ``log.md``, ``overview.md``; see :mod:`._stored`) in a
:class:`~agentkernel.storage.DocumentStore`. :class:`BundleKnowledgeStore` is it over a store
you pass (a :class:`~agentkernel.storage.local.LocalDocumentStore` folder, an S3 prefix
(:class:`~agentkernel.storage.s3.S3DocumentStore`), or your own);
:class:`~agentkernel.knowledgestore.file_store.FileKnowledgeStore` is it over a local folder
it owns.

Many writers (processes, pods, functions) can share one store. Every write is a
compare-and-swap on the file's token (:meth:`DocumentStore.write_if`: ``If-Match`` on the
ETag on S3, a check under a lock file locally): a change is computed from the page as read,
with its token, and written only if the page is still that version. A lost race is retried
from a fresh listing a few times, then answered with
:class:`~agentkernel.knowledgestore.errors.PageConflictError`, which names the page and is
retryable; nothing of the call is written then. So no acknowledged change is ever lost.
``index.md`` is derived from the pages and rewritten the same way after each change;
``log.md`` entries are prepended under the same rule. ``create_many`` writes each new page
only if no file is there yet, all or none even across a crash (a batch record before the pages,
see :mod:`._batches`); a call that fails undoes what it wrote, and one made again after its
answer was lost succeeds (pages holding exactly what it asks for count as created). On S3 each
write carries an id in the object's metadata, so a ``PUT`` whose answer was lost and that
botocore sent again is known as done (:meth:`S3DocumentStore.write_if`).

The store answers from an in-process catalog kept current by the store's change tokens
(:mod:`agentkernel.bundle.listing`): on a local folder, each call compares the folders'
tokens and re-reads only the files of a moved folder that are new or were replaced; on any
other store, reads answer from a listing at most ``refresh_seconds`` old, and every write and
every ``check`` lists the store afresh (one ``ListObjectsV2`` per thousand keys on S3).
Reading never writes. The store writes only where every markdown file is one of its pages or
listings, or sits where one of its pages would (see :meth:`BundlePagesStore._require_owned`;
:class:`FileKnowledgeStore` has its folder's marker instead, :mod:`._ownership`): a foreign
OKF bundle is read, and ``check()`` names what it cannot read, but never written; a page file
broken by hand is never written over and stops no other write.

Storage that fails is never taken for content (see :mod:`._faults`): a read the network cuts
short is made again, and while it keeps failing reads answer without that page and writes
are refused, naming it; a listing that fails (a bucket that is gone) is an error, never an
empty store; a write that fails (a full or read-only disk, an endpoint that is gone) raises
:class:`~agentkernel.knowledgestore.errors.StoreAccessError` naming the store and the page,
after taking back what the change had written.
"""

from __future__ import annotations

import builtins
import contextlib
import logging
from abc import abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from typing_extensions import override

from agentkernel.bundle import logfile
from agentkernel.bundle.listing import FolderListing, Listing, WalkListing
from agentkernel.errors import DocumentTooLargeError, WriteConflictError
from agentkernel.knowledgestore import (
    _bundle,
    _catalog,
    _faults,
    _flows,
    _ownership,
    _pages,
    _stored,
)
from agentkernel.knowledgestore._batched import BatchedPagesStore
from agentkernel.knowledgestore._cataloged import View
from agentkernel.knowledgestore._pagefiles import require_file_size
from agentkernel.knowledgestore._stored import Stored
from agentkernel.knowledgestore.errors import (
    KnowledgeStoreError,
    PageConflictError,
    StoreAccessError,
)
from agentkernel.knowledgestore.model import CheckReport, NewPage, PageType, is_slug
from agentkernel.storage.base import MAX_DOCUMENT_BYTES, oversized
from agentkernel.storage.local import LocalDocumentStore

if TYPE_CHECKING:
    import os

    from agentkernel.retrieval.embedders import Embedder
    from agentkernel.storage.base import DocumentStore, StoredFile

logger = logging.getLogger(__name__)

ATTEMPTS = 4
"""How many times a change is computed and written before a lost race is reported."""


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


class BundlePagesStore(BatchedPagesStore):
    """The curated store over the page files of a ``DocumentStore`` (see the module)."""

    # -- what a subclass supplies ----------------------------------------------------------

    @abstractmethod
    def _listing(self) -> Listing | None:
        """The listing of the store's files; ``None`` while there is nothing to list."""

    def _documents_to_write(self) -> DocumentStore:
        """The document store, ready for a write: by default, the one listed.

        Raises:
            KnowledgeStoreError: The store can't be written.
        """
        listing = self._listing()
        assert listing is not None  # a subclass whose location may be missing makes it here
        return listing.documents

    def _label(self) -> str:
        """The store's name in messages (never an absolute path): its documents' label."""
        listing = self._listing()
        assert listing is not None  # a subclass whose location may be missing names it itself
        return listing.documents.label

    def __repr__(self) -> str:
        # names the store by its label, not an absolute path: a repr can reach a tool's output
        return f"{type(self).__name__}({self._label()!r})"

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
        existing), and ``check()`` names it; it does not stop writes to the other pages,
        as on a folder the store owns.

        Raises:
            KnowledgeStoreError: There is some, named.
        """
        foreign = [rel for rel in self._ignored() if not self._in_page_place(rel)]
        _ownership.refuse_foreign(documents.label, foreign, marker=False)

    def _in_page_place(self, rel: str) -> bool:
        """Whether ``rel`` is where one of the store's pages would be kept."""
        place = self._place(rel)
        return place is not None and place[1] not in _pages.RESERVED_SLUGS

    # -- the catalog, kept current ---------------------------------------------------------

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

    @override
    def _refresh(self, *, fresh: bool = False, full: bool = False, own: bool = False) -> None:
        """Poll the listing and re-read the page files whose token changed.

        Args:
            fresh: A write or a check: the listing may not answer from a stale walk.
            full: Compare every file (a lost race is being retried).
            own: A write that knows of no change since the last poll but this store's own
                (see :meth:`Listing.poll`).
        """
        listing = self._listing()
        if listing is None:
            for rel in list(self._files):
                self._forget(rel)
            self._sync_root_ids()
            return
        try:
            changed = listing.poll(fresh=fresh, full=full, own=own)
        except OSError as exc:  # a bucket or endpoint that is gone is no empty store
            raise _faults.access_error(self._label(), None, exc, writing=False) from exc
        tokens = listing.tokens
        if self._unread:  # read again what the network failed to deliver last time
            seen = set(changed)
            changed = [*changed, *(rel for rel in self._unread if rel not in seen)]
        if listing.records or self._intents:
            changed = [*changed, *self._watch_batches(listing, changed)]
        for rel in changed:
            token = tokens.get(rel)
            place = self._place(rel) if token is not None and rel not in self._hidden else None
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
            raise _faults.access_error(self._label(), rel, failure, writing=False) from failure

    def _load(
        self,
        listing: Listing,
        rel: str,
        candidates: builtins.list[PageType],
        slug: str,
        token: str | None,
    ) -> None:
        """Read one page file (with the token of what was read) into the catalog.

        A read that fails on the network is retried a few times. A read that still fails
        (or fails otherwise: a denied read, an I/O error) leaves the catalog with what it had
        of the file, and the next call reads it again; it is never taken for a file the store
        can't read as a page: only content that doesn't parse is, until it changes.
        """
        documents = listing.documents
        stored: Stored | None = None
        label = self._label()
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
            logger.warning("Skipping %s in %s: %s", rel, self._label(), parsed)
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

    @override
    def check(self) -> CheckReport:
        with self._mutex:
            self._refresh(fresh=True)  # a check looks at the store as it is
            return super().check()

    @override
    def _revalidate(self, page_id: str) -> None:
        """Compare the page's own file (an edit made in place shows up at once locally).

        Raises:
            StoreAccessError: The page's file could not be read (the network failed).
        """
        self._require_read(page_id)
        stored = self._pages.get(page_id)
        listing = self._listing()
        if stored is None or listing is None or not listing.recheck(stored.rel):
            return
        token = listing.tokens.get(stored.rel)
        place = self._place(stored.rel)
        if token is None or place is None:
            self._forget(stored.rel)
        else:
            self._load(listing, stored.rel, place[0], place[1], token)
        self._sync_root_ids()

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
            raise _faults.access_error(self._label(), page_id, exc, writing=False) from exc

    @override
    def _markdown_files(self) -> builtins.list[str]:
        listing = self._listing()
        return listing.markdown if listing is not None else _NOTHING

    @override
    def _listing_exists(self, rel: str) -> bool:
        listing = self._listing()
        return listing is not None and rel in listing.tokens

    @override
    def _file_exists(self, rel: str) -> bool:
        return self._listing_exists(rel)

    @override
    def _read_text(self, name: str) -> str:
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
                logger.warning("Not reading %s in %s: %s", name, self._label(), exc.reason)
                return ""
        # the log is newest first: the entries asked for are at its top; a cut line is dropped
        head = documents.read_head(name, MAX_DOCUMENT_BYTES).decode("utf-8", "ignore")
        return head.rpartition("\n")[0]

    # -- writing -------------------------------------------------------------------------

    @contextlib.contextmanager
    def _writing(
        self, *, index: bool = False, subject: str | None = None
    ) -> Iterator[DocumentStore]:
        """Hold the thread lock for a change, in a location the store may write in.

        Args:
            index: The change rewrites ``index.md``: its content and token are read before
                the store is polled (see :meth:`_write_index`).
            subject: The page (or file) the change is about, named when storage fails.

        Yields:
            The document store to write in.

        Raises:
            KnowledgeStoreError: The location holds markdown the store cannot read as its
                pages, or the document store is read-only or offers no compare-and-swap.
            StoreAccessError: Storage failed (a full or read-only disk, a missing bucket,
                an endpoint that can't be reached); what the change wrote was taken back.
        """
        try:
            with self._writing_unguarded(index) as documents:
                yield documents
        except StoreAccessError as exc:
            cause = exc.__cause__
            if exc.page is None and subject is not None and isinstance(cause, OSError):
                # the store could not be listed: name the change that could not be made
                raise _faults.access_error(self._label(), subject, cause, writing=True) from cause
            raise
        except OSError as exc:
            raise _faults.access_error(self._label(), subject, exc, writing=True) from exc

    @contextlib.contextmanager
    def _writing_unguarded(self, index: bool) -> Iterator[DocumentStore]:
        """:meth:`_writing`, its storage errors raised as they are."""
        with self._mutex:
            documents = self._documents_to_write()
            if not documents.writable:
                raise KnowledgeStoreError(f"The knowledge store {self._label()!r} is read-only.")
            if not documents.compare_and_swap:
                raise KnowledgeStoreError(
                    f"The knowledge store can't write in {documents.label!r}: its "
                    "document store offers no compare-and-swap, so writers could lose changes."
                )
            serialised = self._serialised()
            if serialised is None:
                if index:
                    self._index_seen = self._read_index(documents)
                self._refresh(fresh=True, own=index and self._index_is_own())
                self._require_owned(documents)
                self._finish_abandoned_batches(documents)
                yield documents
                return
            if not self._owned():
                self._refresh(fresh=True)
                self._require_owned(documents)  # before the lock: a refused folder gets no file
            with serialised:
                if index:
                    self._index_seen = self._read_index(documents)
                self._refresh(fresh=True, own=index and self._index_is_own())
                self._finish_abandoned_batches(documents)
                yield documents

    def _index_is_own(self) -> bool:
        """Whether ``index.md`` still holds what this store wrote last (just checked).

        Every other writer that adds a page, or changes an index line, rewrites it: while it
        is this store's own, no such change was made since (one that did not touch the index
        is still met by the compare-and-swap of a write it concerns).
        """
        current, token = self._index_seen
        return current is None and token is not None and self._index_written is not None

    def _before(self, rel: str) -> object:
        listing = self._listing()
        return listing.before_write(rel) if listing is not None else None

    def _wrote(self, rel: str, token: str | None, before: object = None) -> None:
        listing = self._listing()
        if listing is not None:
            listing.wrote(rel, token, before)

    def _write_page(
        self, documents: DocumentStore, page: Stored, token: str | None, data: bytes | None = None
    ) -> None:
        """Write a page if its file is still at ``token``, and put it into the catalog.

        Args:
            documents: The document store.
            page: The page.
            token: The token of the file the change is based on; ``None``: a new file.
            data: The page rendered, when the caller has it already.
        """
        before = self._before(page.rel)
        if data is None:
            data = _stored.render_page(page).encode()
        written = documents.write_if(page.rel, data, token)
        self._files[page.rel] = (written.token, page)
        self._wrote(page.rel, written.token, before)
        self._put(page)
        self._sync_root_ids()

    def _retrying(self, what: str, attempt: Callable[[], None]) -> None:
        """Run ``attempt`` (compute from the catalog, write) until no other writer came first.

        The catalog is current when this is called (``_writing`` refreshed it); before each
        further attempt every file is compared again.

        Raises:
            PageConflictError: Every attempt lost its race.
        """
        for number in range(ATTEMPTS):
            try:
                if number:
                    self._refresh(fresh=True, full=True)
                attempt()
                return
            except WriteConflictError:
                logger.debug("lost a race for %s in %s; retrying", what, self._label())
        raise PageConflictError(what)

    @override
    def _change(self, page_id: str, change: Callable[[View], _flows.Changed]) -> None:
        changed_from: list[Stored] = []  # the page as it was before this change wrote it
        with self._writing(index=True, subject=page_id.strip()) as documents:

            def attempt() -> None:
                page = self._find(page_id)
                changed = change(lambda other: self._view(self._find(other)))
                body = self._links_map.to_disk(changed.content, page.rel)
                token = self._files[page.rel][0]
                updated = replace(page, title=changed.title, fields=changed.fields, body=body)
                require_file_size(updated)
                self._write_page(documents, updated, token)
                changed_from[:] = [page]

            self._retrying(page_id.strip(), attempt)
            try:
                self._write_index(documents)
            except OSError as exc:
                raise self._put_back(documents, changed_from[0], exc) from exc

    def _put_back(self, documents: DocumentStore, page: Stored, exc: OSError) -> Exception:
        """Write a changed page back as it was, after its change failed to finish.

        Returns:
            The error to raise: saying so when the page could not be put back.
        """
        try:
            self._write_page(documents, page, self._files[page.rel][0])
        except (OSError, WriteConflictError) as failed:
            logger.warning("could not put %s back in %s: %s", page.rel, self._label(), failed)
            kept = (
                "The page holds the change (index.md, which lists it, could not be updated; "
                "the next write brings it up to date)."
            )
            return _faults.access_error(self._label(), page.id, exc, writing=True, kept=kept)
        return exc

    def _read_index(self, documents: DocumentStore) -> tuple[bytes | None, str | None]:
        """``index.md``'s token, and its bytes unless this store wrote it last (still)."""
        listing = self._listing()
        written = self._index_written
        if (
            written is not None
            and listing is not None
            and not listing.recheck("index.md")
            and listing.tokens.get("index.md") == written[1]
        ):
            return None, written[1]  # what it holds is what this store wrote: not read
        try:
            return documents.read_versioned_bounded("index.md", MAX_DOCUMENT_BYTES)
        except FileNotFoundError:
            return None, None
        except DocumentTooLargeError as exc:  # not this store's index: rewritten, unread
            return b"", exc.token

    def _write_index(self, documents: DocumentStore) -> None:
        """Rewrite ``index.md`` from the pages as they are now, unless it says that already.

        The index's token is always read before the listing it is rendered from (the first
        time in :meth:`_writing`): a page another writer adds after that listing is followed
        by that writer's own rewrite of the index, which either comes first and moves the
        token (this write then fails and is redone from a fresh listing) or comes later from
        a listing that holds this writer's page too. A writer that keeps losing leaves the
        index to the writers that won (logged). When the index is still the one this store
        wrote last (its token says so) and no line of it changed since, nothing is read or
        written (an edit of a page's body leaves its line as it was).
        """
        current, token = self._index_seen
        version = self._disk_index.version
        for number in range(ATTEMPTS):
            if number:
                current, token = self._read_index(documents)
                self._refresh(fresh=True, full=True)
                version = self._disk_index.version
            written = self._index_written
            if written is not None and written == (version, token):
                return
            rendered = _stored.index_head() + self._disk_index.render().encode("utf-8")
            if current == rendered:
                return
            before = self._before("index.md")
            try:
                stored = _write_derived(documents, "index.md", rendered, token)
            except WriteConflictError:
                logger.debug("lost a race for index.md in %s; retrying", self._label())
                continue
            self._index_written = (version, stored.token)
            self._wrote("index.md", stored.token, before)
            return
        logger.warning("index.md of %s: other writers kept rewriting it", self)

    @override
    def create_many(self, pages: Sequence[NewPage]) -> builtins.list[str]:
        """Create pages, all or none, even when the process is killed in between.

        Several pages are written after a batch record (see :mod:`._batches`); one page
        needs none (its file is written at once, or not). A call that fails undoes what it
        wrote; a page already holding exactly what the call asks for counts as created (see
        :meth:`_new_pages`), so a call retried after a lost answer or a failure succeeds.
        """
        with self._writing(index=True, subject=_batch_name(pages)) as documents:
            valid = self._new_pages(pages)  # every page is a valid NewPage past this
            ids = [f"{self._registry.require(p.type).name}/{p.slug}" for p in pages]
            files = [_stored.render_page(stored).encode() for stored in valid]
            intent = self._begin_batch(documents, valid, files)
            written: list[Stored] = []
            try:
                for stored, data in zip(valid, files, strict=True):
                    self._write_page(documents, stored, None, data)
                    written.append(stored)
                self._write_index(documents)  # a page whose index failed is taken back too
            except BaseException as exc:
                unsure = list(zip(valid, files, strict=True))[len(written) :]
                left = self._fail_batch(documents, intent, written, unsure)
                if isinstance(exc, WriteConflictError) and len(written) < len(valid):
                    raise PageConflictError(valid[len(written)].id) from None
                if left and isinstance(exc, OSError) and not isinstance(exc, StoreAccessError):
                    kept = (
                        f"{', '.join(left)} could not be taken back yet (hidden from readers "
                        "until the next write takes them back)."
                        if intent is not None
                        else f"{', '.join(left)} could not be taken back and stay (not yet in "
                        "index.md; the next write lists them)."
                    )
                    raise _faults.access_error(
                        self._label(), _batch_name(pages), exc, writing=True, kept=kept
                    ) from exc
                raise
            self._end_batch(documents, intent, valid, files)
        return ids

    def _undo(self, documents: DocumentStore, written: builtins.list[Stored]) -> builtins.list[str]:
        """Remove the pages a failed ``create_many`` wrote (unless someone changed them).

        Returns:
            The ids of the pages that could not be removed (storage failed); they stay.
        """
        left: list[str] = []
        for stored in written:
            token = self._files[stored.rel][0]
            try:
                documents.delete_if(stored.rel, token)
            except (WriteConflictError, FileNotFoundError):
                pass
            except OSError as exc:
                logger.warning("could not take %s back in %s: %s", stored.rel, self._label(), exc)
                left.append(stored.id)
                continue
            self._forget(stored.rel)
            self._wrote(stored.rel, None)
        self._sync_root_ids()
        return left

    @override
    def log(self, operation: str, what: str, pages: Sequence[str] | None = None) -> None:
        op, text, ids = _catalog.clean_log_entry(operation, what, pages)
        with self._writing(subject="log.md") as documents:

            def attempt() -> None:
                rels = {i: self._pages[i].rel for i in ids if i in self._pages}
                entry = _stored.log_entry_line(self._links_map, rels, op, text, ids)
                try:
                    current, token = documents.read_versioned("log.md")
                except FileNotFoundError:
                    current, token = b"", None
                new = logfile.prepend(current.decode("utf-8"), entry, _pages.utc_today())
                before = self._before("log.md")
                stored = documents.write_if("log.md", new.encode("utf-8"), token)
                self._wrote("log.md", stored.token, before)

            self._retrying("log.md", attempt)

    @override
    def write_overview(self, content: str) -> None:
        content = _pages.normalize_content(content)
        with self._writing(subject="overview.md") as documents:

            def attempt() -> None:
                _pages.require_links_resolve(
                    content, self._exists, file_links=self._judge_links("overview")
                )
                listing = self._listing()
                token = listing.tokens.get("overview.md") if listing is not None else None
                body = self._links_map.to_disk(content, "overview.md")
                rendered = _stored.render_overview(body).encode("utf-8")
                _pages.require_page_size("The overview", len(rendered))
                before = self._before("overview.md")
                stored = documents.write_if("overview.md", rendered, token)
                self._wrote("overview.md", stored.token, before)

            self._retrying("overview.md", attempt)


_NOTHING: builtins.list[str] = []


def _batch_name(pages: Sequence[NewPage]) -> str:
    """Name a ``create_many`` batch in a message: its page, or its first pages."""
    ids = [f"{getattr(p, 'type', '?')}/{getattr(p, 'slug', '?')}" for p in pages]
    if len(ids) <= 3:
        return ", ".join(ids) or "no page"
    return f"{', '.join(ids[:3])} and {len(ids) - 3} more"


def _write_derived(
    documents: DocumentStore, path: str, data: bytes, token: str | None
) -> StoredFile:
    """``write_if`` for a file rebuilt from the others (``index.md``): locally, no disk wait."""
    if isinstance(documents, LocalDocumentStore):
        return documents.write_if(path, data, token, durable=False)
    return documents.write_if(path, data, token)


class BundleKnowledgeStore(BundlePagesStore):
    """A :class:`KnowledgeStore` over the page files of any ``DocumentStore``."""

    def __init__(
        self,
        documents: DocumentStore,
        page_types: Sequence[PageType] | None = None,
        *,
        embedder: Embedder | str | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        refresh_seconds: float = 1.0,
    ) -> None:
        """Open (lazily) the store on ``documents``; nothing is read or written yet.

        Args:
            documents: Where the files live; writes need one offering compare-and-swap
                (:attr:`DocumentStore.compare_and_swap`: the local and S3 stores do).
            page_types: Declared page types, besides the built-ins.
            embedder: Makes ``search()`` hybrid; ``None``: lexical only.
            cache_dir: The vector cache root.
            refresh_seconds: How old a listing reads may answer from: ``list``, ``read``,
                ``search``, ``index``, ``recent_log`` and ``overview`` see another writer's
                change within this many seconds (``0``: at once, one listing per call).
                Writes and ``check`` always list afresh; a store sees its own writes at once.
                A local folder's reads always compare its folders' tokens instead.

        Raises:
            KnowledgeStoreError: An invalid page type declaration.
        """
        self._init_page_files(page_types, embedder, cache_dir)
        self._the_listing = listing_of(documents, refresh_seconds)

    @property
    def documents(self) -> DocumentStore:
        """The document store the files live in."""
        return self._the_listing.documents

    @override
    def _listing(self) -> Listing:
        return self._the_listing
