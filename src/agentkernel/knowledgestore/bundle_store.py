"""The knowledge store over any ``DocumentStore``: the file store's layout, local or on S3.

:class:`BundleKnowledgeStore` keeps exactly the files
:class:`~agentkernel.knowledgestore.file_store.FileKnowledgeStore` keeps (pages in their type
folders with YAML frontmatter, ``index.md``, ``log.md``, ``overview.md``; see
:mod:`._stored`), in a :class:`~agentkernel.storage.DocumentStore`: a
:class:`~agentkernel.storage.local.LocalDocumentStore` folder, an S3 prefix
(:class:`~agentkernel.storage.s3.S3DocumentStore`), or your own.

Many writers (processes, pods, functions) can share one store. Every write is a
compare-and-swap on the file's token (:meth:`DocumentStore.write_if`: ``If-Match`` on the
ETag on S3, a check under a lock file locally): a change is computed from the page as read,
with its token, and written only if the page is still that version. A lost race is retried
from a fresh read a few times, then answered with
:class:`~agentkernel.knowledgestore.errors.PageConflictError`, which names the page and is
retryable; nothing of the call is written then. So no acknowledged change is ever lost.
``index.md`` is derived from the pages and rewritten the same way after each change;
``log.md`` entries are prepended under the same rule. ``create_many`` writes each new page
only if no file is there yet and removes the ones it wrote when a later one fails.

Reads answer from a listing at most ``refresh_seconds`` old (one walk; one ``ListObjectsV2``
per thousand keys on S3), re-reading only the files whose token changed; every write and
every ``check`` lists the store afresh first. Reading never writes. The store writes only where
every markdown file is one of its pages or listings (see :mod:`._ownership`): a foreign OKF
bundle is read, and ``check()`` names what it cannot read, but never written.
"""

from __future__ import annotations

import builtins
import contextlib
import logging
import math
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from typing_extensions import override

from agentkernel.errors import WriteConflictError
from agentkernel.knowledgestore import _bundle, _catalog, _flows, _ownership, _pages, _stored
from agentkernel.knowledgestore._cataloged import View
from agentkernel.knowledgestore._pagefiles import PageFilesStore
from agentkernel.knowledgestore._stored import Stored
from agentkernel.knowledgestore.errors import KnowledgeStoreError, PageConflictError
from agentkernel.knowledgestore.model import CheckReport, NewPage, PageType, is_slug

if TYPE_CHECKING:
    import os

    from agentkernel.retrieval.embedders import Embedder
    from agentkernel.storage.base import DocumentStore

logger = logging.getLogger(__name__)

ATTEMPTS = 4
"""How many times a change is computed and written before a lost race is reported."""


class BundleKnowledgeStore(PageFilesStore):
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

        Raises:
            KnowledgeStoreError: An invalid page type declaration.
        """
        self._documents = documents
        self._init_page_files(page_types, embedder, cache_dir)
        self._dir_types = {t.dir: [t] for t in self._registry.types if t.dir}
        self._root_types = [t for t in self._registry.types if not t.dir]
        self._files: dict[str, tuple[str, Stored | None]] = {}  # rel -> (token, page)
        self._markdown: list[str] = []  # every markdown file the last walk saw
        self._tokens: dict[str, str] = {}  # every file the last walk saw -> its token
        self._refresh_seconds = refresh_seconds
        self._listed_at = -math.inf  # when the last listing started (monotonic)
        self._index_seen: tuple[bytes | None, str | None] = (None, None)

    @property
    def documents(self) -> DocumentStore:
        """The document store the files live in."""
        return self._documents

    def __repr__(self) -> str:
        return f"BundleKnowledgeStore({self._documents.label!r})"

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
    def _refresh(self) -> None:
        """List the store (unless the last listing is recent) and re-read what changed."""
        now = time.monotonic()
        if now - self._listed_at < self._refresh_seconds:
            return
        self._listed_at = now
        try:
            listed = {f.path: f.token for f in self._documents.walk("")}
        except FileNotFoundError:
            listed = {}
        self._tokens = listed
        self._markdown = sorted(p for p in listed if p.endswith(".md"))
        for rel in self._markdown:
            place = self._place(rel)
            if place is None:
                continue
            last = self._files.get(rel)
            if last is None or last[0] != listed[rel]:
                self._load(rel, place[0], place[1], listed[rel])
        for rel in [r for r in self._files if r not in listed]:
            self._forget(rel)
        self._sync_root_ids()

    def _load(self, rel: str, candidates: builtins.list[PageType], slug: str, token: str) -> None:
        """Read one page file (with the token of what was read) into the catalog."""
        stored: Stored | None = None
        try:
            if self._documents.compare_and_swap:
                data, token = self._documents.read_versioned(rel)
            else:
                data = self._documents.read(rel)
            parsed = _stored.parse_as_any(candidates, slug, rel, data.decode("utf-8"))
        except FileNotFoundError:
            self._forget(rel)
            return
        except (OSError, UnicodeDecodeError) as exc:
            parsed = f"it can't be read ({type(exc).__name__})"
        if isinstance(parsed, str):
            logger.warning("Skipping %s in %s: %s", rel, self._documents.label, parsed)
            self._why[rel] = parsed
        else:
            stored = parsed
            self._why.pop(rel, None)
        last = self._files.get(rel)
        self._files[rel] = (token, stored)
        dropped = last[1] if last is not None else None
        if dropped is not None and (stored is None or stored.id != dropped.id):
            self._unput(dropped)
        if stored is not None:
            self._put(stored)

    def _forget(self, rel: str) -> None:
        last = self._files.pop(rel, None)
        self._why.pop(rel, None)
        if last is not None and last[1] is not None:
            self._unput(last[1])

    def _relist(self) -> None:
        """List the store now, however recent the last listing is."""
        self._listed_at = -math.inf
        self._refresh()

    @override
    def check(self) -> CheckReport:
        with self._mutex:
            self._listed_at = -math.inf  # a check always looks at the store as it is
            return super().check()

    @override
    def _revalidate(self, page_id: str) -> None:
        """Nothing to do: every call lists the store, which compares every file's token."""

    @override
    def _markdown_files(self) -> builtins.list[str]:
        return self._markdown

    @override
    def _listing_exists(self, rel: str) -> bool:
        return rel in self._tokens

    @override
    def _read_text(self, name: str) -> str:
        try:
            return self._documents.read(name).decode("utf-8")
        except FileNotFoundError:
            return ""

    # -- writing -------------------------------------------------------------------------

    @contextlib.contextmanager
    def _writing(self, *, index: bool = False) -> Iterator[None]:
        """Hold the thread lock for a change, in a location the store may write in.

        Args:
            index: The change rewrites ``index.md``: its content and token are read before
                the store is listed (see :meth:`_write_index`).

        Raises:
            KnowledgeStoreError: The location holds markdown the store cannot read as its
                pages, or the document store is read-only or offers no compare-and-swap.
        """
        with self._mutex:
            if not self._documents.writable:
                raise KnowledgeStoreError(
                    f"The knowledge store {self._documents.label!r} is read-only."
                )
            if not self._documents.compare_and_swap:
                raise KnowledgeStoreError(
                    f"The knowledge store can't write in {self._documents.label!r}: its "
                    "document store offers no compare-and-swap, so writers could lose changes."
                )
            if index:
                self._index_seen = self._read_index()
            self._relist()
            recognised = self._recogniser()
            foreign = [rel for rel in self._markdown if not recognised(rel)]
            _ownership.refuse_foreign(self._documents.label, foreign, marker=False)
            yield

    def _write_page(self, page: Stored, token: str | None) -> None:
        """Write a page if its file is still at ``token``, and put it into the catalog."""
        written = self._documents.write_if(page.rel, _stored.render_page(page).encode(), token)
        self._files[page.rel] = (written.token, page)
        self._tokens[page.rel] = written.token
        self._put(page)
        self._sync_root_ids()

    def _retrying(self, what: str, attempt: Callable[[], None]) -> None:
        """Run ``attempt`` (compute from the catalog, write) until no other writer came first.

        The catalog is current when this is called (``_writing`` refreshed it); before each
        further attempt it is refreshed again.

        Raises:
            PageConflictError: Every attempt lost its race.
        """
        for number in range(ATTEMPTS):
            try:
                if number:
                    self._relist()
                attempt()
                return
            except WriteConflictError:
                logger.debug("lost a race for %s in %s; retrying", what, self._documents.label)
        raise PageConflictError(what)

    @override
    def _change(self, page_id: str, change: Callable[[View], _flows.Changed]) -> None:
        with self._writing(index=True):

            def attempt() -> None:
                page = self._find(page_id)
                changed = change(lambda other: self._view(self._find(other)))
                body = self._links_map.to_disk(changed.content, page.rel)
                token = self._files[page.rel][0]
                updated = replace(page, title=changed.title, fields=changed.fields, body=body)
                self._write_page(updated, token)

            self._retrying(page_id.strip(), attempt)
            self._write_index()

    def _read_index(self) -> tuple[bytes | None, str | None]:
        try:
            return self._documents.read_versioned("index.md")
        except FileNotFoundError:
            return None, None

    def _write_index(self) -> None:
        """Rewrite ``index.md`` from the pages as they are now, unless it says that already.

        The index's token is always read before the listing it is rendered from (the first
        time in :meth:`_writing`): a page another writer adds after that listing is followed
        by that writer's own rewrite of the index, which either comes first and moves the
        token (this write then fails and is redone from a fresh listing) or comes later from
        a listing that holds this writer's page too. A writer that keeps losing leaves the
        index to the writers that won (logged).
        """
        current, token = self._index_seen
        for number in range(ATTEMPTS):
            if number:
                current, token = self._read_index()
                self._relist()
            rendered = b"".join([_stored.index_head(), *self._disk_index.encoded_chunks()])
            if current == rendered:
                return
            try:
                self._documents.write_if("index.md", rendered, token)
                return
            except WriteConflictError:
                logger.debug("lost a race for index.md in %s; retrying", self._documents.label)
        logger.warning("index.md of %s: other writers kept rewriting it", self)

    @override
    def _file_exists(self, rel: str) -> bool:
        return rel in self._tokens

    @override
    def create_many(self, pages: Sequence[NewPage]) -> builtins.list[str]:
        with self._writing(index=True):
            valid = self._new_pages(pages)
            written: list[Stored] = []
            try:
                for stored in valid:
                    self._write_page(stored, None)
                    written.append(stored)
            except BaseException as exc:
                self._undo(written)
                if isinstance(exc, WriteConflictError):
                    raise PageConflictError(valid[len(written)].id) from None
                raise
            self._write_index()
        return [page.id for page in valid]

    def _undo(self, written: builtins.list[Stored]) -> None:
        """Remove the pages a failed ``create_many`` wrote (unless someone changed them)."""
        for stored in written:
            token = self._files[stored.rel][0]
            with contextlib.suppress(WriteConflictError, FileNotFoundError):
                self._documents.delete_if(stored.rel, token)
            self._forget(stored.rel)
            self._tokens.pop(stored.rel, None)
        self._sync_root_ids()

    @override
    def log(self, operation: str, what: str, pages: Sequence[str] | None = None) -> None:
        op, text, ids = _catalog.clean_log_entry(operation, what, pages)
        with self._writing():

            def attempt() -> None:
                rels = {i: self._pages[i].rel for i in ids if i in self._pages}
                entry = _stored.log_entry_line(self._links_map, rels, op, text, ids)
                try:
                    current, token = self._documents.read_versioned("log.md")
                except FileNotFoundError:
                    current, token = b"", None
                new = _bundle.prepend_log(current.decode("utf-8"), entry, _pages.utc_today())
                self._documents.write_if("log.md", new.encode("utf-8"), token)

            self._retrying("log.md", attempt)

    @override
    def write_overview(self, content: str) -> None:
        content = _pages.normalize_content(content)
        with self._writing():

            def attempt() -> None:
                _pages.require_links_resolve(content, self._exists)
                token = self._tokens.get("overview.md")
                body = self._links_map.to_disk(content, "overview.md")
                rendered = _stored.render_overview(body).encode("utf-8")
                self._documents.write_if("overview.md", rendered, token)

            self._retrying("overview.md", attempt)
