"""The knowledge store over a folder of markdown files, written as an OKF bundle.

Layout::

    knowledge/
      index.md            the catalog (OKF index format), rewritten after every change
      log.md              the operation log (OKF log format: date groups, newest first)
      overview.md         the living synthesis (type: overview)
      summaries/<slug>.md one folder per page type
      concepts/<slug>.md
      .knowledge.lock     serialises writers across processes
      .knowledgestore     marks the folder as the store's (written with its first write)

Every page has YAML frontmatter with its ``type`` and ``title``, so the folder is an
OKF-conformant bundle that ``OKFManager`` can serve read-only to other agents. Links between
pages are stored as relative file paths (``../concepts/bowline.md``), which OKF readers and
people follow, and are returned as ids (``concept/bowline``). Every file is written atomically
(temporary file, then rename), and every change happens under the lock file, so two processes
writing different pages at once lose nothing.

Reading never writes: ``list``, ``read``, ``search``, ``index``, ``recent_log``, ``check`` and
``overview`` change no byte and create no file, not even the lock. The store writes only in a
folder it owns (see :mod:`agentkernel.knowledgestore._ownership`): opening a folder that holds
an OKF bundle or notes it didn't write is safe; such files are not served as pages
(:meth:`FileKnowledgeStore.ignored_files` names them) and every write is refused there with a
message saying what to do.
"""

from __future__ import annotations

import builtins
import contextlib
import itertools
import logging
import os
import posixpath
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from agentkernel.knowledgebase.okf import frontmatter
from agentkernel.knowledgestore import _bundle, _catalog, _flows, _ownership, _pages
from agentkernel.knowledgestore._fs import atomic_write, locked
from agentkernel.knowledgestore.base import KnowledgeStore
from agentkernel.knowledgestore.errors import KnowledgeStoreError
from agentkernel.knowledgestore.model import (
    STATUS_RETIRED,
    CheckReport,
    FieldChanges,
    KnowledgePage,
    NewPage,
    PageInfo,
    PageType,
    SearchHit,
    is_slug,
    linked_ids,
)
from agentkernel.knowledgestore.search import Searchable, rank

logger = logging.getLogger(__name__)

LOCK_FILE = _ownership.LEGACY_LOCK_FILE
_OKF_VERSION = "0.2"


@dataclass
class _Stored:
    """A page as read from disk: its body keeps links as relative file paths."""

    id: str
    page_type: PageType
    slug: str
    rel: str
    title: str
    fields: dict[str, str]
    body: str
    converted: tuple[int, str, list[str]] | None = field(default=None, init=False)
    described: tuple[int, PageInfo] | None = field(default=None, init=False)


def _as_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ", ".join(_as_text(v) for v in value)
    if isinstance(value, dict):
        return frontmatter.dump_yaml(value).strip()
    return "" if value is None else str(value)


class FileKnowledgeStore(KnowledgeStore):
    """A :class:`KnowledgeStore` over the markdown files of one folder (an OKF bundle)."""

    def __init__(
        self, knowledge_dir: str | os.PathLike[str], page_types: Sequence[PageType] | None = None
    ) -> None:
        """Open (lazily) the store in ``knowledge_dir``; nothing is read or written yet.

        Args:
            knowledge_dir: The folder; created on the first write.
            page_types: Declared page types, besides the built-ins.

        Raises:
            KnowledgeStoreError: An invalid page type declaration.
        """
        self._root = Path(knowledge_dir)
        self._registry = _pages.TypeRegistry(page_types)
        self._dir_types = {t.dir: t for t in self._registry.types if t.dir}
        self._root_types = [t for t in self._registry.types if not t.dir]
        self._mutex = threading.RLock()
        self._cache: dict[str, tuple[tuple[int, int, int], _Stored | None]] = {}
        self._links_map = _bundle.LinkMap(self._registry)
        self._root_generation = 0

    @property
    def knowledge_dir(self) -> Path:
        """The folder the store keeps its files in."""
        return self._root

    def __repr__(self) -> str:
        return f"FileKnowledgeStore({str(self._root)!r})"

    # -- reading -------------------------------------------------------------------------

    def _parse(self, page_type: PageType, slug: str, rel: str, text: str) -> _Stored | None:
        try:
            meta, body = frontmatter.parse(text)
        except frontmatter.FrontmatterError as exc:
            logger.warning("Skipping %s in %s: %s", rel, self._root, exc)
            return None
        if not page_type.dir and meta.get("type") != page_type.name:
            return None
        title = _as_text(meta.get("title")).strip()
        if not title:
            heading = re.search(r"^#\s+(.+)$", body, flags=re.MULTILINE)
            title = heading.group(1).strip() if heading else slug
        fields = {str(k): _as_text(v) for k, v in meta.items() if k not in ("type", "title")}
        body = _pages.normalize_content(body)
        return _Stored(f"{page_type.name}/{slug}", page_type, slug, rel, title, fields, body)

    def _scan(self) -> dict[str, _Stored]:
        """Every page on disk, by id, reading only the files that changed since last time."""
        pages: dict[str, _Stored] = {}
        seen: set[str] = set()
        folders = [(t.dir, [t]) for t in self._dir_types.values()]
        if self._root_types:
            folders.append(("", self._root_types))
        for folder, candidates in folders:
            try:
                entries = list(os.scandir(self._root / folder))
            except (FileNotFoundError, NotADirectoryError):
                continue
            for entry in entries:
                name = entry.name
                slug = name[:-3]
                if not name.endswith(".md") or not is_slug(slug) or not entry.is_file():
                    continue
                if not folder and slug in _pages.RESERVED_ROOT_SLUGS:
                    continue
                rel = f"{folder}/{name}" if folder else name
                seen.add(rel)
                info = entry.stat()
                token = (info.st_ino, info.st_mtime_ns, info.st_size)
                cached = self._cache.get(rel)
                if cached is not None and cached[0] == token:
                    stored = cached[1]
                else:
                    stored = None
                    try:
                        text = Path(entry.path).read_text(encoding="utf-8")
                    except (OSError, UnicodeDecodeError) as exc:
                        logger.warning("Skipping %s in %s: %s", rel, self._root, exc)
                        continue
                    for page_type in candidates:
                        stored = self._parse(page_type, slug, rel, text)
                        if stored is not None:
                            break
                    self._cache[rel] = (token, stored)
                if stored is not None and stored.id not in pages:
                    pages[stored.id] = stored
        for rel in set(self._cache) - seen:
            del self._cache[rel]
        self._update_root_ids(pages)
        return pages

    def _update_root_ids(self, pages: dict[str, _Stored]) -> None:
        root_ids = {p.slug: p.id for p in pages.values() if not p.page_type.dir}
        if root_ids != self._links_map.root_ids:
            self._links_map.root_ids = root_ids
            self._root_generation += 1

    def _converted(self, page: _Stored) -> tuple[int, str, list[str]]:
        if page.converted is None or page.converted[0] != self._root_generation:
            content = self._links_map.from_disk(page.body, page.rel)
            page.converted = (self._root_generation, content, linked_ids(content))
        return page.converted

    def _content(self, page: _Stored) -> str:
        """The page's content with links as ids (cached until the file changes)."""
        return self._converted(page)[1]

    def _links(self, page: _Stored) -> list[str]:
        """The ids the page links to (cached until the file changes)."""
        return self._converted(page)[2]

    def _info(self, page: _Stored) -> PageInfo:
        if page.described is None or page.described[0] != self._root_generation:
            page.described = (self._root_generation, self._describe(page))
        return page.described[1]

    def _describe(self, page: _Stored) -> PageInfo:
        return PageInfo(
            id=page.id,
            type=page.page_type.name,
            slug=page.slug,
            title=page.title,
            description=_pages.description_of(page.fields, self._content(page)),
            status=_pages.status_of(page.fields),
            fields=dict(page.fields),
        )

    def _ordered(self, pages: dict[str, _Stored]) -> list[_Stored]:
        order = {t.name: i for i, t in enumerate(self._registry.types)}
        return sorted(pages.values(), key=lambda p: (order[p.page_type.name], p.slug))

    def _find(self, page_id: str, pages: dict[str, _Stored]) -> _Stored:
        return _flows.require_page(self._registry, page_id, pages.get)

    def _view(self, page: _Stored) -> _flows.Page:
        return _flows.Page(
            page.id, page.page_type.name, page.title, page.fields, self._content(page)
        )

    def _save_changed(
        self, page: _Stored, changed: _flows.Changed, pages: dict[str, _Stored]
    ) -> None:
        """Save a page's new values and rewrite the index."""
        body = self._links_map.to_disk(changed.content, page.rel)
        self._save(replace(page, title=changed.title, fields=changed.fields, body=body), pages)
        self._write_index(pages)

    def types(self) -> tuple[PageType, ...]:
        """Return the page types this store holds."""
        return self._registry.types

    def list(self) -> list[PageInfo]:
        """Return every page but the retired ones, by type, then slug."""
        with self._mutex:
            pages = self._scan()
            infos = [self._info(p) for p in self._ordered(pages)]
        return [replace(i, fields=dict(i.fields)) for i in infos if i.status != STATUS_RETIRED]

    def read(self, page_id: str) -> KnowledgePage | None:
        """Return a page with the pages linking to it, or ``None``.

        Args:
            page_id: ``type/slug``.

        Returns:
            The page, retired ones included.
        """
        with self._mutex:
            pages = self._scan()
            page = pages.get(page_id.strip()) if isinstance(page_id, str) else None
            if page is None:
                return None
            linked_from = [
                other.id
                for other in self._ordered(pages)
                if other.id != page.id and page.id in self._links(other)
            ]
            info = self._info(page)
            content = self._content(page)
        fields = dict(info.fields)
        return KnowledgePage(
            **{**vars(info), "fields": fields}, content=content, linked_from=linked_from
        )

    def search(self, query: str, limit: int = 10) -> builtins.list[SearchHit]:
        """Find pages by words in their title, aliases or content, best first.

        Args:
            query: Words to look for.
            limit: How many hits at most.

        Returns:
            The hits; retired pages are left out.
        """
        limit = _pages.require_limit(limit)
        with self._mutex:
            pages = self._scan()
            docs = []
            for page in pages.values():
                if _pages.status_of(page.fields) == STATUS_RETIRED:
                    continue
                content = self._content(page)
                docs.append(
                    Searchable(page.id, page.page_type.name, page.title, content, page.fields)
                )
        return rank(query, docs, limit)

    def index(self) -> str:
        """Return the catalog, linked by id; ``""`` when there is no page."""
        with self._mutex:
            pages = self._scan()
            infos = [self._info(p) for p in self._ordered(pages)]
        return _catalog.render_index(self._registry, infos, lambda info: info.id)

    def recent_log(self, limit: int = 10) -> builtins.list[str]:
        """Return the latest log entries, newest first.

        Args:
            limit: How many at most.

        Returns:
            Entries as ``## [date] operation | what`` (and ``- pages: ...``).
        """
        limit = _pages.require_limit(limit)
        with self._mutex:
            self._scan()
            entries = [
                self._log_entry(date, line)
                for date, line in itertools.islice(
                    _bundle.log_lines(self._read_text("log.md")), limit
                )
            ]
        return entries

    def _log_entry(self, date: str, line: str) -> str:
        parts = _bundle.split_log_line(line)
        if parts is None:
            return f"## [{date}] {self._links_map.from_disk(line[2:], 'log.md')}"
        op, what, items = parts
        ids: list[str] = []
        for item in items:
            converted = self._links_map.from_disk(item, "log.md")
            ids.extend(linked_ids(converted) or [item])
        what = self._links_map.from_disk(what, "log.md")
        return _catalog.format_log_entry(date, op, what, ids)

    def check(self) -> CheckReport:
        """Report broken links, orphans and links to retired pages; nothing is written.

        A broken link is a link to a page id that does not exist, or a relative ``.md`` link
        that leads to no page (a link to an existing ``index.md``, ``log.md`` or ``overview.md``
        is fine).
        """
        with self._mutex:
            pages = self._scan()
            sources = [
                _catalog.LinkSource(
                    p.id,
                    p.page_type.name,
                    _pages.status_of(p.fields),
                    self._links(p),
                    self._file_links(self._content(p), p.rel),
                )
                for p in pages.values()
            ]
            overview = self._links_map.from_disk(self._overview_body(), "overview.md")
            overview_files = self._file_links(overview, "overview.md")
        return _catalog.compute_check(sources, linked_ids(overview), overview_files)

    def _file_links(self, content: str, rel: str) -> builtins.list[str]:
        """The ``.md`` links left in ``content`` (links as ids) that reach no page."""

        def reaches_a_listing(target: str) -> bool:
            name = posixpath.basename(target)
            return name in _bundle.LISTING_FILES and (self._root / target).is_file()

        return _bundle.dangling_file_links(content, rel, reaches_a_listing)

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
            served = {page.rel for page in self._scan().values()}
        served.update(_bundle.LISTING_FILES)
        return [rel for rel in _ownership.markdown_files(self._root) if rel not in served]

    def overview(self) -> str:
        """Return the overview (``""`` if none yet), links as ids."""
        with self._mutex:
            self._scan()
            return self._links_map.from_disk(self._overview_body(), "overview.md")

    def _read_text(self, name: str) -> str:
        try:
            return (self._root / name).read_text(encoding="utf-8")
        except FileNotFoundError:
            return ""

    def _overview_body(self) -> str:
        text = self._read_text("overview.md")
        parts = frontmatter.split(text)
        return _pages.normalize_content(parts[1] if parts is not None else text)

    # -- writing -------------------------------------------------------------------------

    def _in_layout(self, rel: str) -> bool:
        folder, _, name = rel.rpartition("/")
        return not folder or (folder in self._dir_types and is_slug(name[:-3]))

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """Hold the thread and process locks for a change, in a folder the store owns.

        Raises:
            KnowledgeStoreError: The folder holds files the store didn't write.
        """
        with self._mutex:
            # Checked before the lock file is created: a refused folder gets no new file.
            unclaimed = _ownership.require_owned(self._root, self._in_layout)
            with locked(self._root / LOCK_FILE):
                if unclaimed:
                    _ownership.claim(self._root, atomic_write)
                yield

    def _exists(self, pages: dict[str, _Stored]) -> Callable[[str], bool]:
        def exists(page_id: str) -> bool:
            if page_id in pages:
                return True
            page_type, slug = self._registry.require_id(page_id)
            return (self._root / _bundle.rel_of(page_type, slug)).exists()

        def safe(page_id: str) -> bool:
            try:
                return exists(page_id)
            except KnowledgeStoreError:
                return False

        return safe

    def _render(self, page: _Stored) -> str:
        meta: dict[str, Any] = {"type": page.page_type.name, "title": page.title, **page.fields}
        return frontmatter.render(meta, f"\n{page.body}\n")

    def _save(self, page: _Stored, pages: dict[str, _Stored]) -> None:
        """Write a page and update ``pages`` and the cache, so no re-read is needed."""
        path = self._root / page.rel
        atomic_write(path, self._render(page))
        info = path.stat()
        self._cache[page.rel] = ((info.st_ino, info.st_mtime_ns, info.st_size), page)
        pages[page.id] = page
        self._update_root_ids(pages)

    def _write_index(self, pages: dict[str, _Stored]) -> None:
        infos = [self._info(p) for p in self._ordered(pages)]
        body = _catalog.render_index(self._registry, infos, lambda info: pages[info.id].rel)
        text = frontmatter.render({"okf_version": _OKF_VERSION}, body)
        atomic_write(self._root / "index.md", text, durable=False)

    def create_many(self, pages: Sequence[NewPage]) -> builtins.list[str]:
        """Create several pages, links among them allowed: all of them, or none.

        Args:
            pages: The pages.

        Returns:
            Their ids.

        Raises:
            KnowledgeStoreError: The first problem found; nothing is written then.
        """
        with self._writing():
            current = self._scan()
            valid = _pages.validate_new_pages(list(pages), self._registry, self._exists(current))
            written: list[Path] = []
            try:
                for page in valid:
                    rel = _bundle.rel_of(page.page_type, page.slug)
                    body = self._links_map.to_disk(page.content, rel)
                    stored = _Stored(
                        page.id, page.page_type, page.slug, rel, page.title, page.fields, body
                    )
                    written.append(self._root / rel)
                    self._save(stored, current)
            except BaseException:
                for path in written:
                    path.unlink(missing_ok=True)
                self._scan()
                raise
            self._write_index(current)
        return [page.id for page in valid]

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
        with self._writing():
            pages = self._scan()
            page = self._find(page_id, pages)
            view = self._view(page)
            changed = _flows.edited(view, old_text, new_text, fields, self._exists(pages))
            self._save_changed(page, changed, pages)

    def rewrite(self, page_id: str, content: str, fields: FieldChanges | None = None) -> None:
        """Replace a page's whole content (a summary's ``ingested`` is stamped anew).

        Args:
            page_id: ``type/slug``.
            content: The new body.
            fields: Field changes.

        Raises:
            KnowledgeStoreError: No such page, or a link to nowhere.
        """
        with self._writing():
            pages = self._scan()
            page = self._find(page_id, pages)
            changed = _flows.rewritten(self._view(page), content, fields, self._exists(pages))
            self._save_changed(page, changed, pages)

    def supersede(self, page_id: str, by: str, reason: str | None = None) -> None:
        """Mark a page superseded by another.

        Args:
            page_id: The outdated page.
            by: Its replacement.
            reason: Why, optionally.

        Raises:
            KnowledgeStoreError: Either page missing, the same page, or a retired page.
        """
        with self._writing():
            pages = self._scan()
            page = self._find(page_id, pages)
            replacement = self._find(by, pages)
            changed = _flows.superseded(self._view(page), self._view(replacement), reason)
            self._save_changed(page, changed, pages)

    def retire(self, page_id: str, reason: str) -> None:
        """Retire a page: it leaves the listing, the index and the search, and is kept.

        Args:
            page_id: ``type/slug``.
            reason: Why.

        Raises:
            KnowledgeStoreError: No such page, no reason, or already retired.
        """
        why = _pages.require_reason(reason)
        with self._writing():
            pages = self._scan()
            page = self._find(page_id, pages)
            changed = _flows.retired(self._view(page), why)
            self._save_changed(page, changed, pages)

    def log(self, operation: str, what: str, pages: Sequence[str] | None = None) -> None:
        """Add an entry at the top of ``log.md``, under today's date.

        Args:
            operation: The operation.
            what: What was done, in one line.
            pages: The ids of the pages it touched.

        Raises:
            KnowledgeStoreError: An empty operation or description, or a page that is no id.
        """
        op, text, ids = _catalog.clean_log_entry(operation, what, pages)
        with self._writing():
            current = self._scan()
            entry = f"* **{op}**: {self._links_map.to_disk(text, 'log.md')}"
            if ids:
                listed = [f"[{i}]({current[i].rel})" if i in current else i for i in ids]
                entry += _bundle.LOG_PAGES + ", ".join(listed)
            text = _bundle.prepend_log(self._read_text("log.md"), entry, _pages.utc_today())
            atomic_write(self._root / "log.md", text)

    def write_overview(self, content: str) -> None:
        """Replace ``overview.md``.

        Args:
            content: Markdown; its links must resolve.

        Raises:
            KnowledgeStoreError: A link to a page that does not exist.
        """
        content = _pages.normalize_content(content)
        with self._writing():
            pages = self._scan()
            _pages.require_links_resolve(content, self._exists(pages))
            meta = {"type": "overview", "title": "Overview", "updated": _pages.utc_today()}
            body = self._links_map.to_disk(content, "overview.md")
            atomic_write(self._root / "overview.md", frontmatter.render(meta, f"\n{body}\n"))


def create_file_knowledge_store(
    knowledge_dir: str | os.PathLike[str], page_types: Sequence[PageType] | None = None
) -> FileKnowledgeStore:
    """Create the knowledge store over the markdown files of ``knowledge_dir``.

    Args:
        knowledge_dir: The folder (created on the first write).
        page_types: Declared page types, besides the built-ins.

    Returns:
        The store.
    """
    return FileKnowledgeStore(knowledge_dir, page_types)
