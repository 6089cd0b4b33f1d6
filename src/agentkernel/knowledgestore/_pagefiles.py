"""What both markdown stores share: the catalog of page files, and every read over it.

:class:`~agentkernel.knowledgestore.file_store.FileKnowledgeStore` (a local folder, with
its own change tokens) and :class:`~agentkernel.knowledgestore.bundle_store.BundleKnowledgeStore`
(any ``DocumentStore``) keep the same files (see :mod:`._stored`). They differ in how they
find out what changed and how they write; what a page file means once read, how reads are
answered, what ``check()`` reports and which files are not pages is this class's.
"""

from __future__ import annotations

import builtins
import itertools
import logging
import posixpath
import threading
from abc import abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from agentkernel.bundle import logfile
from agentkernel.knowledgestore import _bundle, _catalog, _flows, _ownership, _pages, _stored
from agentkernel.knowledgestore._batches import Intent
from agentkernel.knowledgestore._cataloged import CatalogedStore
from agentkernel.knowledgestore._memory import Entry, PageCatalog, make_entry, semantic_index
from agentkernel.knowledgestore._stored import Stored
from agentkernel.knowledgestore.errors import KnowledgeStoreError
from agentkernel.knowledgestore.model import (
    CheckReport,
    KnowledgePage,
    NewPage,
    PageInfo,
    PageType,
    UnreadableFile,
    linked_ids,
)

if TYPE_CHECKING:
    import os

    from agentkernel.retrieval.embedders import Embedder

logger = logging.getLogger(__name__)


class PageFilesStore(CatalogedStore):
    """A :class:`CatalogedStore` over page files in the bundle layout (see :mod:`._stored`)."""

    def _init_page_files(
        self,
        page_types: Sequence[PageType] | None,
        embedder: Embedder | str | None,
        cache_dir: str | os.PathLike[str] | None,
    ) -> None:
        """Set up the empty catalog (a subclass's ``__init__`` calls it first).

        Args:
            page_types: Declared page types, besides the built-ins.
            embedder: Makes ``search()`` hybrid; ``None``: lexical only.
            cache_dir: The vector cache root.

        Raises:
            KnowledgeStoreError: An invalid page type declaration.
        """
        self._registry = _pages.TypeRegistry(page_types)
        self._page_dirs = {t.dir for t in self._registry.types if t.dir}
        self._mutex = threading.RLock()
        self._links_map = _bundle.LinkMap(self._registry)
        self._pages: dict[str, Stored] = {}
        self._catalog = PageCatalog(self._registry, semantic_index(embedder, cache_dir))
        self._disk_index = _catalog.IndexLines(self._registry, lambda i: self._pages[i.id].rel)
        self._root_pages_changed = False
        self._pages_version = 0  # moves whenever a page is put or dropped
        self._ignored_cache: tuple[builtins.list[str], int, builtins.list[str]] | None = None
        self._why: dict[str, str] = {}  # a file in a page's place that is no page -> why
        # a page file whose read failed on the network -> the error: read again next call
        self._unread: dict[str, OSError] = {}
        self._dir_types = {t.dir: [t] for t in self._registry.types if t.dir}
        self._root_types = [t for t in self._registry.types if not t.dir]
        self._files: dict[str, tuple[str, Stored | None]] = {}  # rel -> (token, page)
        self._index_seen: tuple[bytes | None, str | None] = (None, None)
        # what this store last wrote to index.md: (the index lines' version, its token)
        self._index_written: tuple[int, str] | None = None
        # batches in progress or interrupted (see ``_batches``): record name -> intent
        self._intents: dict[str, Intent | None] = {}
        self._record_names: builtins.list[str] = []
        self._hidden: set[str] = set()  # page files of incomplete batches: not served
        self._own_batch: str | None = None  # the record of the batch this store is writing
        # record name -> (the tokens of its files when last judged, complete then)
        self._judged: dict[str, tuple[tuple[str | None, ...], bool]] = {}

    def _new_pages(self, pages: Sequence[NewPage]) -> builtins.list[Stored]:
        """Validate a ``create_many`` batch and lay each page out as its file will hold it.

        A page that exists already and holds exactly what this call asks for (its title,
        fields and content; the store's own stamps aside) is taken as created: a call retried
        after its answer was lost, or after it failed past its writes, succeeds. It is left
        out of what is returned (nothing to write).

        Raises:
            KnowledgeStoreError: The first problem with any page.
        """
        pages = list(pages)
        to_write = [page for page in pages if not self._holds(page)]
        if pages and not to_write:
            return []
        laid_out = []
        valid = _pages.validate_new_pages(to_write, self._registry, self._exists, self._file_links)
        for page in valid:
            rel = _bundle.rel_of(page.page_type, page.slug)
            body = self._links_map.to_disk(page.content, rel)
            stored = Stored(page.id, page.page_type, page.slug, rel, page.title, page.fields, body)
            require_file_size(stored)
            laid_out.append(stored)
        return laid_out

    def _holds(self, page: object) -> bool:
        """Whether an existing page holds exactly what ``page`` (a ``NewPage``) would write.

        The page as it would be written is read back the way its file is read, and compared
        with the existing one: title, content and fields, the store's stamps (``updated``,
        ``ingested``) aside.
        """
        if not isinstance(page, NewPage) or not isinstance(page.slug, str):
            return False
        page_type = self._registry.get(page.type) if isinstance(page.type, str) else None
        existing = self._pages.get(f"{page.type}/{page.slug}") if page_type else None
        if page_type is None or existing is None or not isinstance(page.content, str):
            return False
        try:
            title, fields = _pages.apply_field_changes(
                _pages.require_title(page.title), {}, page.fields
            )
        except KnowledgeStoreError:
            return False
        body = self._links_map.to_disk(_pages.normalize_content(page.content), existing.rel)
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

    def _file_links(self, content: str, page_id: str) -> builtins.list[tuple[str, str | None]]:
        """Judge ``.md`` links as ``check()`` does, from the file the content goes to."""
        page_id = page_id.strip()
        if page_id == "overview":
            rel = "overview.md"
        else:
            rel = _bundle.rel_of(*self._registry.require_id(page_id))
        return _bundle.file_link_pages(content, rel, self._links_map, self._reaches_a_listing)

    def _exists(self, page_id: str) -> bool:
        """Whether a page exists, or a file already sits where it would be written."""
        if page_id in self._pages:
            return True
        try:
            page_type, slug = self._registry.require_id(page_id)
        except KnowledgeStoreError:
            return False
        return self._file_exists(_bundle.rel_of(page_type, slug))

    @abstractmethod
    def _file_exists(self, rel: str) -> bool:
        """Whether a file is at the bundle-relative path ``rel``."""

    @abstractmethod
    def _revalidate(self, page_id: str) -> None:
        """Re-read one page's file if it changed since it was read (under ``_mutex``)."""

    @abstractmethod
    def _read_text(self, name: str) -> str:
        """Return one of the store's own files (``log.md``, ...) as text; ``""`` when absent."""

    @abstractmethod
    def _markdown_files(self) -> builtins.list[str]:
        """Return every visible markdown file of the location, bundle-relative, in order.

        The same list object while nothing changed (callers never change it).
        """

    @abstractmethod
    def _listing_exists(self, rel: str) -> bool:
        """Whether the bundle-relative file ``rel`` exists (asked for listing files only)."""

    def _put(self, stored: Stored) -> None:
        self._pages_version += 1
        self._pages[stored.id] = stored
        self._catalog.put(self._entry(stored))
        self._disk_index.put(self._info(stored.id))
        if not stored.page_type.dir:
            self._root_pages_changed = True

    def _unput(self, stored: Stored) -> None:
        if self._pages.get(stored.id) is not stored:
            return
        del self._pages[stored.id]
        self._pages_version += 1
        self._catalog.drop(stored.id)
        self._disk_index.drop(stored.id)
        if not stored.page_type.dir:
            self._root_pages_changed = True

    def _entry(self, stored: Stored) -> Entry:
        content = self._links_map.from_disk(stored.body, stored.rel)
        return make_entry(
            stored.id, stored.page_type.name, stored.slug, stored.title, stored.fields, content
        )

    def _sync_root_ids(self) -> None:
        """Links to pages kept at the root read by their frontmatter type: convert anew."""
        if not self._root_pages_changed:
            return
        self._root_pages_changed = False
        root_ids = {p.slug: p.id for p in self._pages.values() if not p.page_type.dir}
        if root_ids == self._links_map.root_ids:
            return
        self._links_map.root_ids = root_ids
        for stored in list(self._pages.values()):
            self._catalog.put(self._entry(stored))
            self._disk_index.put(self._info(stored.id))

    def _info(self, page_id: str) -> PageInfo:
        entry = self._catalog.get(page_id)
        assert entry is not None  # every stored page is in the catalog
        return entry.info

    def _find(self, page_id: str) -> Stored:
        return _flows.require_page(self._registry, page_id, self._pages.get)

    def _view(self, page: Stored) -> _flows.Page:
        entry = self._catalog.get(page.id)
        assert entry is not None
        return _flows.Page(page.id, page.page_type.name, page.title, page.fields, entry.content)

    def read(self, page_id: str) -> KnowledgePage | None:
        if not isinstance(page_id, str):
            return None
        page_id = page_id.strip()
        with self._mutex:
            self._refresh()
            self._revalidate(page_id)
            entry = self._catalog.get(page_id)
            if entry is None:
                return None
            linked_from = self._catalog.linked_from(page_id)
        info = entry.info
        return KnowledgePage(
            **{**vars(info), "fields": dict(info.fields)},
            content=entry.content,
            linked_from=linked_from,
        )

    def recent_log(self, limit: int = 10) -> builtins.list[str]:
        limit = _pages.require_limit(limit)
        with self._mutex:
            self._refresh()
            entries = [
                _stored.log_entry_for_tools(self._links_map, date, line)
                for date, line in itertools.islice(logfile.lines(self._read_text("log.md")), limit)
            ]
        return entries

    def check(self) -> CheckReport:
        """Report broken links, orphans, links to retired pages and unreadable files.

        Nothing is written. The catalog is brought up to date the way every call does it
        (see the store's module docstring), so a check costs what changed and what it
        reports. A broken link is a link to a page id that does not exist, or a relative
        ``.md`` link that leads to no page (a link to an existing ``index.md``, ``log.md`` or
        ``overview.md`` is fine). An unreadable file is a markdown file beside the pages
        that the store cannot read as one of its pages, named with why.
        """
        with self._mutex:
            self._refresh()
            overview = self._links_map.from_disk(self._overview_body(), "overview.md")
            report = self._catalog.check(
                linked_ids(overview),
                self._page_file_targets,
                self._reaches_a_listing,
                _bundle.dangling_file_links(overview, "overview.md", self._reaches_a_listing),
            )
            unreadable = [
                UnreadableFile(
                    rel, self._why.get(rel) or _ownership.why_not_a_page(rel, self._page_dirs)
                )
                for rel in self._ignored()
            ]
        return replace(report, unreadable_files=unreadable) if unreadable else report

    def _page_file_targets(self, entry: Entry) -> builtins.list[tuple[str, str]]:
        return _bundle.file_link_targets(entry.content, self._pages[entry.info.id].rel)

    def _reaches_a_listing(self, target: str) -> bool:
        """Whether a bundle-relative path is an existing ``index.md``, ``log.md`` or overview."""
        name = posixpath.basename(target)
        return name in _bundle.LISTING_FILES and self._listing_exists(target)

    def ignored_files(self) -> builtins.list[str]:
        """Return the markdown files in the folder that are not pages of this store.

        Files another tool wrote (an OKF bundle's concepts, notes), files that fail to parse,
        and files of a type the store doesn't hold: the store doesn't serve them and never
        writes over them. The root's ``index.md``, ``log.md`` and ``overview.md`` are not
        listed. Hidden files and folders are skipped.

        Returns:
            Bundle-relative paths, in folder order.
        """
        with self._mutex:
            self._refresh()
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
        return (served | self._hidden).__contains__

    def _note_empty(self) -> None:
        ignored = self._ignored()
        if ignored:
            logger.warning(
                "%s holds %d markdown file(s) that are not its pages (%s%s); check() says why",
                self,
                len(ignored),
                ", ".join(ignored[:5]),
                ", ..." if len(ignored) > 5 else "",
            )

    def overview(self) -> str:
        """Return the overview (``""`` if none yet), links as ids."""
        with self._mutex:
            self._refresh()
            return self._links_map.from_disk(self._overview_body(), "overview.md")

    def _overview_body(self) -> str:
        return _stored.overview_body(self._read_text("overview.md"))


def require_file_size(page: Stored) -> None:
    """Refuse a page whose file would be larger than the size bound (nothing is written).

    Raises:
        KnowledgeStoreError: It would be.
    """
    if not _pages.surely_within_bound(page.title, page.body, *page.fields, *page.fields.values()):
        size = len(_stored.render_page(page).encode("utf-8"))
        _pages.require_page_size(repr(page.id), size)
