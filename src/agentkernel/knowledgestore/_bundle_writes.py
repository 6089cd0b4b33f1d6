"""The writing part of the bundle backend: page files, ``index.md``, ``log.md``, the overview.

:class:`BundleWrites` applies the commits of a
:class:`~agentkernel.knowledgestore._bundle_backend.BundlePageBackend` (see its module for the
rules): each file a compare-and-swap on its token, ``index.md`` rewritten after the pages
from the lines the backend keeps (rendered by the bundle core's one renderer), a batch of new
pages all or none (:mod:`._batched`), and what a failed change wrote taken back.
"""

from __future__ import annotations

import builtins
import contextlib
import logging
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from agentkernel.bundle import logfile
from agentkernel.errors import DocumentTooLargeError, WriteConflictError
from agentkernel.knowledgestore import _bundle, _faults, _pages, _stored
from agentkernel.knowledgestore._stored import Stored
from agentkernel.knowledgestore.errors import (
    KnowledgeStoreError,
    PageConflictError,
    StoreAccessError,
)
from agentkernel.knowledgestore.model import NewPage
from agentkernel.knowledgestore.pagebackend import Commit, LogEntry, PageWrite
from agentkernel.storage.base import MAX_DOCUMENT_BYTES
from agentkernel.storage.local import LocalDocumentStore

if TYPE_CHECKING:
    from agentkernel.knowledgestore._bundle_backend import BundlePageBackend
    from agentkernel.storage.base import DocumentStore, StoredFile

logger = logging.getLogger(__name__)

ATTEMPTS = 4
"""How many times ``index.md`` is rewritten before other writers are left to it."""


class BundleWrites:
    """The writes of one bundle backend, while it holds its location (see the module)."""

    def __init__(self, backend: BundlePageBackend) -> None:
        """Write for ``backend``.

        Args:
            backend: The backend whose pages and listing the writes keep current.
        """
        self._backend = backend
        self._documents: DocumentStore | None = None
        self.index_seen: tuple[bytes | None, str | None] = (None, None)
        """``index.md``'s bytes (``None``: this backend's own) and token, read before listing."""
        # what this backend last wrote to index.md: (the index lines' version, its token)
        self._index_written: tuple[int, str] | None = None

    @property
    def writing(self) -> bool:
        """Whether the backend holds its location for a change now."""
        return self._documents is not None

    @contextlib.contextmanager
    def holding(self, documents: DocumentStore) -> Iterator[None]:
        """Write in ``documents`` until the block ends."""
        self._documents = documents
        try:
            yield
        finally:
            self._documents = None

    def subject(self, commit: Commit) -> str:
        """What a commit changes, for a message: its pages, ``log.md`` or ``overview.md``."""
        if commit.pages:
            return _batch_name([write.id for write in commit.pages])
        return "log.md" if commit.log is not None else "overview.md"

    def apply(self, commit: Commit) -> Mapping[str, str]:
        """Apply a commit (in the location :meth:`holding` names)."""
        documents = self._documents
        assert documents is not None  # BundlePageBackend.commit holds it
        if commit.pages and all(write.expected is None for write in commit.pages):
            return self._create(documents, commit.pages)
        if commit.pages:
            (write,) = commit.pages  # the store changes one page per commit
            return self._change(documents, write)
        if commit.log is not None:
            self._append_log(documents, commit.log)
        if commit.overview is not None:
            self._write_overview(documents, commit.overview)
        if commit.log is None and commit.overview is None:
            # pages asked for again, all there: in case what failed was the index write
            self.write_index(documents)
        return {}

    # -- pages -----------------------------------------------------------------------------

    def holds(self, page: NewPage) -> bool:
        """Whether an existing page holds exactly what ``page`` would write (created already).

        The page as it would be written is read back the way its file is read, and compared
        with the existing one: title, content and fields, the store's stamps (``updated``,
        ``ingested``) aside.
        """
        backend = self._backend
        if not isinstance(page, NewPage) or not isinstance(page.slug, str):
            return False
        page_type = backend._registry.get(page.type) if isinstance(page.type, str) else None
        existing = backend._pages.get(f"{page.type}/{page.slug}") if page_type else None
        if page_type is None or existing is None or not isinstance(page.content, str):
            return False
        try:
            title, fields = _pages.apply_field_changes(
                _pages.require_title(page.title), {}, page.fields
            )
        except KnowledgeStoreError:
            return False
        body = backend._links_map.to_disk(_pages.normalize_content(page.content), existing.rel)
        wanted = Stored(existing.id, page_type, page.slug, existing.rel, title, fields, body)
        again = _stored.parse_page(page_type, page.slug, existing.rel, _stored.render_page(wanted))
        if not isinstance(again, Stored):
            return False

        def own(stored: Stored) -> dict[str, str]:
            return {k: v for k, v in stored.fields.items() if k not in _pages.STORE_FIELDS}

        return (again.title, again.body, own(again)) == (
            existing.title,
            existing.body,
            own(existing),
        )

    def _create(self, documents: DocumentStore, writes: Sequence[PageWrite]) -> dict[str, str]:
        """Create pages, all or none, even when the process is killed in between.

        Several pages are written after a batch record (see :mod:`._batches`); one page
        needs none (its file is written at once, or not). A call that fails undoes what it
        wrote.
        """
        backend = self._backend
        valid: list[Stored] = []
        for write in writes:
            page = write.page
            assert page is not None  # new pages
            page_type = backend._registry.require(page.type)
            rel = _bundle.rel_of(page_type, page.slug)
            body = backend._links_map.to_disk(page.content, rel)
            stored = Stored(page.id, page_type, page.slug, rel, page.title, dict(page.fields), body)
            require_file_size(stored)
            valid.append(stored)
        files = [_stored.render_page(stored).encode() for stored in valid]
        batches = backend._batches
        intent = batches.begin(backend._listing(), documents, valid, files)
        written: list[Stored] = []
        try:
            for stored, data in zip(valid, files, strict=True):
                self._write_page(documents, stored, None, data)
                written.append(stored)
            self.write_index(documents)  # a page whose index failed is taken back too
        except BaseException as exc:
            unsure = list(zip(valid, files, strict=True))[len(written) :]
            left = batches.fail(documents, intent, written, unsure, self._undo, self.write_index)
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
                name = _batch_name([stored.id for stored in valid])
                raise _faults.access_error(
                    backend.label, name, exc, writing=True, kept=kept
                ) from exc
            raise
        batches.end(documents, intent, valid, files, self._undo, self.write_index)
        return {stored.id: backend._token_of(stored) for stored in valid}

    def _change(self, documents: DocumentStore, write: PageWrite) -> dict[str, str]:
        """Write one changed page if its file is still the version read, then the index."""
        backend = self._backend
        page = backend._pages.get(write.id)
        token = (write.expected or "").rpartition("@")[0]
        if page is None or write.page is None or backend._files[page.rel][0] != token:
            raise WriteConflictError(f"{write.id} changed since it was read", write.id)
        record = write.page
        body = backend._links_map.to_disk(record.content, page.rel)
        updated = replace(page, title=record.title, fields=dict(record.fields), body=body)
        require_file_size(updated)
        self._write_page(documents, updated, token)
        try:
            self.write_index(documents)
        except OSError as exc:
            raise self._put_back(documents, page, exc) from exc
        return {write.id: backend._token_of(updated)}

    def _write_page(
        self, documents: DocumentStore, page: Stored, token: str | None, data: bytes | None = None
    ) -> None:
        """Write a page if its file is still at ``token`` (``None``: a new file), and keep it."""
        backend = self._backend
        before = self._before(page.rel)
        if data is None:
            data = _stored.render_page(page).encode()
        written = documents.write_if(page.rel, data, token)
        backend._files[page.rel] = (written.token, page)
        self.wrote(page.rel, written.token, before)
        backend._put(page)
        backend._sync_root_ids()

    def _put_back(self, documents: DocumentStore, page: Stored, exc: OSError) -> Exception:
        """Write a changed page back as it was, after its change failed to finish.

        Returns:
            The error to raise: saying so when the page could not be put back.
        """
        backend = self._backend
        try:
            self._write_page(documents, page, backend._files[page.rel][0])
        except (OSError, WriteConflictError) as failed:
            logger.warning("could not put %s back in %s: %s", page.rel, backend.label, failed)
            kept = (
                "The page holds the change (index.md, which lists it, could not be updated; "
                "the next write brings it up to date)."
            )
            return _faults.access_error(backend.label, page.id, exc, writing=True, kept=kept)
        return exc

    def _undo(self, documents: DocumentStore, written: builtins.list[Stored]) -> builtins.list[str]:
        """Remove the pages a failed ``create_many`` wrote (unless someone changed them).

        Returns:
            The ids of the pages that could not be removed (storage failed); they stay.
        """
        backend = self._backend
        left: list[str] = []
        for stored in written:
            token = backend._files[stored.rel][0]
            try:
                documents.delete_if(stored.rel, token)
            except (WriteConflictError, FileNotFoundError):
                pass
            except OSError as exc:
                logger.warning("could not take %s back in %s: %s", stored.rel, backend.label, exc)
                left.append(stored.id)
                continue
            backend._forget(stored.rel)
            self.wrote(stored.rel, None)
        backend._sync_root_ids()
        return left

    # -- index.md ------------------------------------------------------------------------

    def index_is_own(self) -> bool:
        """Whether ``index.md`` still holds what this backend wrote last (just checked).

        Every other writer that adds a page, or changes an index line, rewrites it: while it
        is this backend's own, no such change was made since (one that did not touch the
        index is still met by the compare-and-swap of a write it concerns).
        """
        current, token = self.index_seen
        return current is None and token is not None and self._index_written is not None

    def read_index(self, documents: DocumentStore) -> tuple[bytes | None, str | None]:
        """``index.md``'s token, and its bytes unless this backend wrote it last (still)."""
        listing = self._backend._listing()
        written = self._index_written
        if (
            written is not None
            and listing is not None
            and not listing.recheck("index.md")
            and listing.tokens.get("index.md") == written[1]
        ):
            return None, written[1]  # what it holds is what this backend wrote: not read
        try:
            return documents.read_versioned_bounded("index.md", MAX_DOCUMENT_BYTES)
        except FileNotFoundError:
            return None, None
        except DocumentTooLargeError as exc:  # not this store's index: rewritten, unread
            return b"", exc.token

    def write_index(self, documents: DocumentStore) -> None:
        """Rewrite ``index.md`` from the pages as they are now, unless it says that already.

        The index's token is always read before the listing it is rendered from (the first
        time in ``writing()``): a page another writer adds after that listing is followed
        by that writer's own rewrite of the index, which either comes first and moves the
        token (this write then fails and is redone from a fresh listing) or comes later from
        a listing that holds this writer's page too. A writer that keeps losing leaves the
        index to the writers that won (logged). When the index is still the one this backend
        wrote last (its token says so) and no line of it changed since, nothing is read or
        written (an edit of a page's body leaves its line as it was).
        """
        backend = self._backend
        lines = backend._disk_index
        current, token = self.index_seen
        version = lines.version
        for number in range(ATTEMPTS):
            if number:
                current, token = self.read_index(documents)
                backend._refresh(fresh=True, full=True)
                version = lines.version
            written = self._index_written
            if written is not None and written == (version, token):
                return
            rendered = _stored.index_head() + lines.render().encode("utf-8")
            if current == rendered:
                return
            before = self._before("index.md")
            try:
                stored = _write_derived(documents, "index.md", rendered, token)
            except WriteConflictError:
                logger.debug("lost a race for index.md in %s; retrying", backend.label)
                continue
            self._index_written = (version, stored.token)
            self.wrote("index.md", stored.token, before)
            return
        logger.warning("index.md of %s: other writers kept rewriting it", backend)

    # -- log.md and overview.md ------------------------------------------------------------

    def _append_log(self, documents: DocumentStore, entry: LogEntry) -> None:
        backend = self._backend
        rels = {i: backend._pages[i].rel for i in entry.pages if i in backend._pages}
        line = _stored.log_entry_line(
            backend._links_map, rels, entry.operation, entry.what, list(entry.pages)
        )
        try:
            current, token = documents.read_versioned("log.md")
        except FileNotFoundError:
            current, token = b"", None
        new = logfile.prepend(current.decode("utf-8"), line, entry.date)
        before = self._before("log.md")
        stored = documents.write_if("log.md", new.encode("utf-8"), token)
        self.wrote("log.md", stored.token, before)

    def _write_overview(self, documents: DocumentStore, content: str) -> None:
        backend = self._backend
        listing = backend._listing()
        token = listing.tokens.get("overview.md") if listing is not None else None
        body = backend._links_map.to_disk(content, "overview.md")
        rendered = _stored.render_overview(body).encode("utf-8")
        _pages.require_page_size("The overview", len(rendered))
        before = self._before("overview.md")
        stored = documents.write_if("overview.md", rendered, token)
        self.wrote("overview.md", stored.token, before)

    # -- the listing, told of this backend's writes ---------------------------------------

    def _before(self, rel: str) -> object:
        listing = self._backend._listing()
        return listing.before_write(rel) if listing is not None else None

    def wrote(self, rel: str, token: str | None, before: object = None) -> None:
        """Tell the listing of this backend's own write (``token``) or removal (``None``)."""
        listing = self._backend._listing()
        if listing is not None:
            listing.wrote(rel, token, before)


def require_file_size(page: Stored) -> None:
    """Refuse a page whose file would be larger than the size bound (nothing is written).

    Raises:
        KnowledgeStoreError: It would be.
    """
    if not _pages.surely_within_bound(page.title, page.body, *page.fields, *page.fields.values()):
        size = len(_stored.render_page(page).encode("utf-8"))
        _pages.require_page_size(repr(page.id), size)


def _batch_name(ids: Sequence[str]) -> str:
    """Name a batch of pages in a message: its page, or its first pages."""
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
