"""The curated store composed of a page backend and the parts every store shares.

:class:`PagesStore` is a whole :class:`~agentkernel.knowledgestore.base.KnowledgeStore` over
one :class:`~agentkernel.knowledgestore.pagebackend.PageBackend`. Each part does one job:

* the types and the validation of what a caller asks (:mod:`._pages`: ids, slugs, fields,
  links that must resolve, the size bound);
* the changes themselves (:mod:`._flows`: edit, rewrite, supersede, retire);
* the catalog every read answers from (:class:`._memory.PageCatalog`: listing, backlinks,
  the index, ``check``, search), kept current by the backend's :meth:`~PageBackend.poll`;
* the log's rules (:func:`._catalog.clean_log_entry`, :func:`._catalog.format_log_entry`).

A write computes a :class:`~agentkernel.knowledgestore.pagebackend.Commit` from the catalog
(with the token of each page it changes) inside the backend's :meth:`~PageBackend.writing`,
sends it, and on a lost race computes it again from a fresh poll; a commit whose answer was
lost to a passing network failure is sent again as it was (the backend applies it once).
"""

from __future__ import annotations

import builtins
import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from agentkernel.errors import WriteConflictError
from agentkernel.knowledgestore import _bundle, _catalog, _faults, _flows, _pages, _stored
from agentkernel.knowledgestore._memory import Entry, PageCatalog, make_entry, semantic_index
from agentkernel.knowledgestore.base import KnowledgeStore
from agentkernel.knowledgestore.errors import (
    KnowledgeStoreError,
    PageConflictError,
    StoreAccessError,
)
from agentkernel.knowledgestore.model import (
    STATUS_RETIRED,
    CheckReport,
    FieldChanges,
    KnowledgePage,
    NewPage,
    PageInfo,
    PageType,
    SearchHit,
    linked_ids,
)
from agentkernel.knowledgestore.pagebackend import (
    Commit,
    LogEntry,
    PageBackend,
    PageRecord,
    PageWrite,
)

if TYPE_CHECKING:
    import os

    from agentkernel.retrieval.embedders import Embedder

logger = logging.getLogger(__name__)

ATTEMPTS = 4
"""How many times a change is computed and committed before a lost race is reported."""

_SEND_ATTEMPTS = 3
"""How many times a commit is sent while the network fails in passing."""


class PagesStore(KnowledgeStore):
    """A :class:`KnowledgeStore` over a :class:`PageBackend` (see the module)."""

    def __init__(
        self,
        backend: PageBackend,
        page_types: Sequence[PageType] | None = None,
        *,
        embedder: Embedder | str | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        author: str | None = None,
    ) -> None:
        """Open the store on ``backend``; nothing is read yet.

        Args:
            backend: Where the pages are kept.
            page_types: Declared page types, besides the built-ins.
            embedder: Makes ``search()`` hybrid (lexical and dense scores fused): an
                :class:`~agentkernel.retrieval.Embedder`, or a name, model folder or endpoint
                URL. ``None``: lexical only, and no embedding code is imported.
            cache_dir: The vector cache root (see :mod:`agentkernel.retrieval._vectorcache`).
            author: Who this store's changes are by, passed with each commit.

        Raises:
            KnowledgeStoreError: An invalid page type declaration.
        """
        self._backend = backend
        self._registry = _pages.TypeRegistry(page_types)
        self._catalog = PageCatalog(self._registry, semantic_index(embedder, cache_dir))
        self._tokens: dict[str, str] = {}  # page id -> the token of the version cataloged
        self._mutex = threading.RLock()
        self._author = author

    @property
    def backend(self) -> PageBackend:
        """The backend the pages are kept in."""
        return self._backend

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._backend.label!r})"

    def close(self) -> None:
        """Close the backend."""
        with self._mutex:
            self._backend.close()

    # -- the catalog, kept current -------------------------------------------------------

    def _refresh(self) -> None:
        """Bring the catalog up to date with what the backend says changed (under the lock)."""
        changed = self._backend.poll()
        if not changed:
            return
        stale: list[str] = []
        for page_id, token in changed.items():
            if token is None:
                self._forget(page_id)
            elif self._tokens.get(page_id) != token:
                stale.append(page_id)
        if not stale:
            return
        found = self._backend.read(stale)
        for page_id in stale:
            if page_id in found:
                record, token = found[page_id]
                self._keep(record, token)
            else:
                self._forget(page_id)

    def _keep(self, record: PageRecord, token: str) -> None:
        known = self._catalog.get(record.id)
        if known is None or (known.info.title, known.info.fields, known.content) != (
            record.title,
            record.fields,
            record.content,
        ):
            self._catalog.put(_entry(record))
        self._tokens[record.id] = token

    def _forget(self, page_id: str) -> None:
        self._tokens.pop(page_id, None)
        self._catalog.drop(page_id)

    def _exists(self, page_id: str) -> bool:
        return page_id in self._catalog or self._backend.occupied(page_id)

    def _file_links(self, content: str, page_id: str) -> builtins.list[tuple[str, str | None]]:
        return self._backend.file_links(content, page_id.strip())

    def _file_links_of(self, page_id: str) -> _pages.FileLinks:
        return lambda content: self._file_links(content, page_id)

    def _find(self, page_id: str) -> Entry:
        return _flows.require_page(self._registry, page_id, self._catalog.get)

    # -- reading -------------------------------------------------------------------------

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
        """Say (in the log) why a listing is empty when the backend's storage is not."""
        ignored = self._backend.ignored()
        if ignored:
            logger.warning(
                "%s holds %d markdown file(s) that are not its pages (%s%s); check() says why",
                self,
                len(ignored),
                ", ".join(ignored[:5]),
                ", ..." if len(ignored) > 5 else "",
            )

    def ignored_files(self) -> builtins.list[str]:
        """Return what the store's location holds that it doesn't serve as pages.

        Files another tool wrote (an OKF bundle's concepts, notes), files that fail to parse,
        and files of a type the store doesn't hold: the store doesn't serve them and never
        writes over them. The root's ``index.md``, ``log.md`` and ``overview.md`` are not
        listed. Hidden files and folders are skipped.

        Returns:
            Their paths, relative to the location, in order; ``[]`` over a database.
        """
        with self._mutex:
            self._refresh()
            return self._backend.ignored()

    def read(self, page_id: str) -> KnowledgePage | None:
        """Return a page (retired ones included) with the pages linking to it, or ``None``."""
        if not isinstance(page_id, str):
            return None
        with self._mutex:
            self._refresh()
            if self._backend.recheck(page_id.strip()):
                self._refresh()
            entry = self._catalog.get(page_id.strip())
            if entry is None:
                return None
            linked_from = self._catalog.linked_from(entry.info.id)
        info = entry.info
        return KnowledgePage(
            **{**vars(info), "fields": dict(info.fields)},
            content=entry.content,
            linked_from=linked_from,
        )

    def search(self, query: str, limit: int = 10) -> builtins.list[SearchHit]:
        """Find pages by words in their title, aliases or content, best first.

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

    def check(self) -> CheckReport:
        """Report broken links, orphans, links to retired pages and unreadable files.

        Nothing is written. A broken link is a link to a page id that does not exist, or a
        relative ``.md`` link that leads to no page (one to an existing ``index.md``,
        ``log.md`` or ``overview.md`` is fine). An unreadable file is one among the pages
        that the backend cannot read as a page, named with why.
        """
        backend = self._backend
        with self._mutex:
            unreadable = backend.unreadable()
            self._refresh()
            overview = backend.overview()
            report = self._catalog.check(
                linked_ids(overview),
                lambda entry: _bundle.file_link_targets(
                    entry.content, backend.file_of(entry.info.id)
                ),
                backend.is_listing,
                _bundle.dangling_file_links(
                    overview, backend.file_of("overview"), backend.is_listing
                ),
            )
        return replace(report, unreadable_files=unreadable) if unreadable else report

    def overview(self) -> str:
        """Return the overview (``""`` if none yet)."""
        with self._mutex:
            self._refresh()
            return self._backend.overview()

    def recent_log(self, limit: int = 10) -> builtins.list[str]:
        """Return the latest log entries, newest first.

        Each reads ``## [YYYY-MM-DD] operation | what``, then ``- pages: a, b`` when it
        names pages (an entry the backend can't split is shown as it reads).
        """
        limit = _pages.require_limit(limit)
        with self._mutex:
            self._refresh()
            entries = self._backend.recent_log(limit)
        return [
            _catalog.format_log_entry(e.date, e.operation, e.what, e.pages)
            if e.operation
            else f"## [{e.date}] {e.what}"
            for e in entries
        ]

    # -- writing -------------------------------------------------------------------------

    def create_many(self, pages: Sequence[NewPage]) -> builtins.list[str]:
        """Create pages whose links may point to each other: all of them, or none."""
        pages = list(pages)

        def build() -> Commit:
            to_write = [page for page in pages if not self._backend.holds(page)]
            if pages and not to_write:  # sent again after its answer was lost: done
                return self._commit_of([])
            valid = _pages.validate_new_pages(
                to_write, self._registry, self._exists, self._file_links
            )
            records = [
                PageRecord(p.id, p.page_type.name, p.slug, p.title, p.fields, p.content)
                for p in valid
            ]
            for record in records:
                _require_size(self._registry, record)
            return self._commit_of(PageWrite(r.id, r, None) for r in records)

        self._commit(_batch_name(pages), build)
        return [f"{self._registry.require(p.type).name}/{p.slug}" for p in pages]

    def edit(
        self, page_id: str, old_text: str, new_text: str, fields: FieldChanges | None = None
    ) -> None:
        """Replace the one occurrence of ``old_text`` in a page.

        Raises:
            KnowledgeStoreError: No such page, zero or several matches, or a link to nowhere.
        """
        self._change(
            page_id,
            lambda view: _flows.edited(
                view(page_id),
                old_text,
                new_text,
                fields,
                self._exists,
                self._file_links_of(page_id),
            ),
        )

    def rewrite(self, page_id: str, content: str, fields: FieldChanges | None = None) -> None:
        """Replace a page's whole content (a summary's ``ingested`` is stamped anew).

        Raises:
            KnowledgeStoreError: No such page, or a link to nowhere.
        """
        self._change(
            page_id,
            lambda view: _flows.rewritten(
                view(page_id), content, fields, self._exists, self._file_links_of(page_id)
            ),
        )

    def supersede(self, page_id: str, by: str, reason: str | None = None) -> None:
        """Mark a page superseded by another.

        Raises:
            KnowledgeStoreError: Either page missing, the same page, or a retired page.
        """
        self._change(page_id, lambda view: _flows.superseded(view(page_id), view(by), reason))

    def retire(self, page_id: str, reason: str) -> None:
        """Retire a page: it leaves the listing, the index and the search, and is kept.

        Raises:
            KnowledgeStoreError: No such page, no reason, or already retired.
        """
        why = _pages.require_reason(reason)
        self._change(page_id, lambda view: _flows.retired(view(page_id), why))

    def log(self, operation: str, what: str, pages: Sequence[str] | None = None) -> None:
        """Add an entry to the operation log, dated today (UTC)."""
        op, text, ids = _catalog.clean_log_entry(operation, what, pages)
        entry = LogEntry(_pages.utc_today(), op, text, tuple(ids))
        self._commit("log.md", lambda: Commit(log=entry, author=self._author))

    def write_overview(self, content: str) -> None:
        """Replace the overview; its links must resolve."""
        content = _pages.normalize_content(content)
        _pages.require_page_size("The overview", len(content.encode("utf-8")))

        def build() -> Commit:
            _pages.require_links_resolve(
                content, self._exists, file_links=self._file_links_of("overview")
            )
            return Commit(overview=content, author=self._author)

        self._commit("overview.md", build)

    def _change(
        self, page_id: str, change: Callable[[Callable[[str], PageRecord]], _flows.Changed]
    ) -> None:
        """Change one page: compute its new values from the catalog, commit them."""

        def build() -> Commit:
            entry = self._find(page_id)
            changed = change(lambda other: _view(self._find(other)))
            info = entry.info
            record = PageRecord(
                info.id, info.type, info.slug, changed.title, changed.fields, changed.content
            )
            _require_size(self._registry, record)
            return self._commit_of([PageWrite(info.id, record, self._tokens[info.id])])

        self._commit(page_id.strip() if isinstance(page_id, str) else "?", build)

    def _commit_of(self, writes: Iterable[PageWrite]) -> Commit:
        return Commit(pages=tuple(writes), author=self._author)

    def _commit(self, what: str, build: Callable[[], Commit]) -> Commit:
        """Compute a commit from the catalog and send it, again while another writer came first.

        Args:
            what: The page (or part) the change is about, named when it fails.
            build: Computes the commit from the catalog as it is (refusals raise here).

        Returns:
            The commit applied.

        Raises:
            PageConflictError: Every attempt lost its race.
            StoreAccessError: The storage failed; nothing of the change was applied.
        """
        with self._mutex:
            for _ in range(ATTEMPTS):
                try:
                    with self._backend.writing():
                        self._refresh()
                        commit = build()
                        tokens = self._send(what, commit)
                except WriteConflictError:
                    logger.debug("lost a race for %s in %s; retrying", what, self)
                    continue
                except StoreAccessError as exc:
                    cause = exc.__cause__
                    if exc.page is None and isinstance(cause, OSError):
                        # the storage could not be listed: name the change that was not made
                        raise self._failed(what, cause) from cause
                    raise
                except KnowledgeStoreError:
                    raise
                except OSError as exc:
                    raise self._failed(what, exc) from exc
                for write in commit.pages:
                    if write.page is None:
                        self._forget(write.id)
                    else:
                        self._keep(write.page, tokens[write.id])
                return commit
        raise PageConflictError(what)

    def _failed(self, what: str, exc: OSError) -> StoreAccessError:
        return _faults.access_error(self._backend.label, what, exc, writing=True)

    def _send(self, what: str, commit: Commit) -> dict[str, str]:
        """Send a commit, the same one again while the network fails in passing."""
        for attempt in range(_SEND_ATTEMPTS):
            try:
                return dict(self._backend.commit(commit))
            except (WriteConflictError, KnowledgeStoreError):
                raise
            except OSError as exc:
                if attempt + 1 == _SEND_ATTEMPTS or not _faults.is_transient(exc):
                    raise self._failed(what, exc) from exc
                logger.info("sending %s to %s failed (%s); again", what, self, exc)
        raise AssertionError("unreachable")  # pragma: no cover


def _entry(record: PageRecord) -> Entry:
    return make_entry(
        record.id, record.type, record.slug, record.title, record.fields, record.content
    )


def _view(entry: Entry) -> PageRecord:
    info = entry.info
    return PageRecord(info.id, info.type, info.slug, info.title, info.fields, entry.content)


def _require_size(registry: _pages.TypeRegistry, record: PageRecord) -> None:
    """Refuse a page larger than the bound, measured as a markdown file would hold it."""
    fields = record.fields
    if _pages.surely_within_bound(record.title, record.content, *fields, *fields.values()):
        return
    page_type = registry.get(record.type) or PageType(record.type, "", "", "")
    as_file = _stored.Stored(
        record.id, page_type, record.slug, "", record.title, dict(fields), record.content
    )
    _pages.require_page_size(repr(record.id), len(_stored.render_page(as_file).encode("utf-8")))


def _batch_name(pages: Sequence[NewPage]) -> str:
    """Name a ``create_many`` batch in a message: its page, or its first pages."""
    ids = [f"{getattr(p, 'type', '?')}/{getattr(p, 'slug', '?')}" for p in pages]
    if len(ids) <= 3:
        return ", ".join(ids) or "no page"
    return f"{', '.join(ids[:3])} and {len(ids) - 3} more"
