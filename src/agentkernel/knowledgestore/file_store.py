"""The knowledge store over a folder of markdown files, written as an OKF bundle.

Layout::

    knowledge/
      index.md            the catalog (OKF index format), rewritten when a change alters it
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

The store answers from an in-memory catalog (:class:`~._memory.PageCatalog`), kept current by
change tokens the way the OKF manifest is: each call compares every type folder's
``(inode, mtime)`` with the last one seen (a page written through any store is renamed into
its folder, which moves the folder's mtime) and re-reads only the files of a moved folder
whose ``(inode, mtime, size)`` changed. ``read`` also checks its page's own file, and every
few seconds a call compares every file, so an edit made in place by a person shows up too.
"""

from __future__ import annotations

import builtins
import contextlib
import logging
import math
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from typing_extensions import override

from agentkernel.knowledgestore import _bundle, _catalog, _flows, _ownership, _pages, _stored
from agentkernel.knowledgestore._cataloged import View
from agentkernel.knowledgestore._pagefiles import PageFilesStore
from agentkernel.knowledgestore._stored import Stored
from agentkernel.knowledgestore.model import (
    NewPage,
    PageType,
    is_slug,
)
from agentkernel.storage._fs import atomic_write, locked

if TYPE_CHECKING:
    from agentkernel.retrieval.embedders import Embedder

logger = logging.getLogger(__name__)

LOCK_FILE = _ownership.LEGACY_LOCK_FILE
_FULL_SWEEP_SECONDS = 5.0  # how stale an in-place edit by hand may be; renames show at once
_TIDY_SECONDS = 60.0  # how often a page folder nobody else wrote in is tidied anyway

_FileToken = tuple[int, int, int]  # (inode, mtime_ns, size)
_FolderToken = tuple[int, int, int] | None  # (device, inode, mtime_ns); None: no folder


def _folder_token(path: Path) -> _FolderToken:
    try:
        info = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return info.st_dev, info.st_ino, info.st_mtime_ns


class FileKnowledgeStore(PageFilesStore):
    """A :class:`KnowledgeStore` over the markdown files of one folder (an OKF bundle)."""

    def __init__(
        self,
        knowledge_dir: str | os.PathLike[str],
        page_types: Sequence[PageType] | None = None,
        *,
        embedder: Embedder | str | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        """Open (lazily) the store in ``knowledge_dir``; nothing is read or written yet.

        Args:
            knowledge_dir: The folder; created on the first write.
            page_types: Declared page types, besides the built-ins.
            embedder: Makes ``search()`` hybrid (lexical and dense scores fused): an
                :class:`~agentkernel.retrieval.Embedder`, or a name, model folder or endpoint
                URL. ``None``: lexical only, and no embedding code is imported.
            cache_dir: The vector cache root (see :mod:`agentkernel.retrieval.vectorcache`).

        Raises:
            KnowledgeStoreError: An invalid page type declaration.
        """
        self._root = Path(knowledge_dir)
        self._init_page_files(page_types, embedder, cache_dir)
        root_types = [t for t in self._registry.types if not t.dir]
        self._folders: list[tuple[str, list[PageType]]] = [
            (t.dir, [t]) for t in self._registry.types if t.dir
        ]
        if root_types:
            self._folders.append(("", root_types))
        self._files: dict[str, dict[str, tuple[_FileToken, Stored | None]]] = {}
        # what this store last wrote to index.md: (the index's version, the file's token)
        self._index_written: tuple[int, _FileToken] | None = None
        self._folder_tokens: dict[str, _FolderToken] = {}
        self._next_sweep = -math.inf
        self._tidied: dict[str, float] = {}  # page folder -> when this store last tidied it
        self._written: set[str] = set()  # page folders written since the last settle
        self._listing = _ownership.MarkdownListing(self._root)

    @property
    def knowledge_dir(self) -> Path:
        """The folder the store keeps its files in."""
        return self._root

    def __repr__(self) -> str:
        return f"FileKnowledgeStore({str(self._root)!r})"

    # -- the catalog, kept current ---------------------------------------------------------

    def _refresh(self) -> None:
        """Bring the catalog up to date with the folder, re-reading only what changed.

        Only the files of folders whose token moved are compared, and every file once the
        last full sweep is ``_FULL_SWEEP_SECONDS`` old (an edit made in place moves no token).
        """
        full = time.monotonic() >= self._next_sweep
        for folder, candidates in self._folders:
            # the token is taken before the sweep: a change during it moves the token again
            token = _folder_token(self._root / folder)
            moved = folder not in self._folder_tokens or token != self._folder_tokens[folder]
            if moved:
                # someone else wrote there: a temporary file they left may need removing
                self._tidied.pop(folder, None)
            if full or moved:
                self._sweep(folder, candidates)
                self._folder_tokens[folder] = token
        if full:  # counted from the end of the sweep, however long loading took
            self._next_sweep = time.monotonic() + _FULL_SWEEP_SECONDS
        self._sync_root_ids()

    def _sweep(self, folder: str, candidates: list[PageType]) -> None:
        """Compare a folder's page files with what the catalog holds, and catch up."""
        known = self._files.setdefault(folder, {})
        try:
            entries = list(os.scandir(self._root / folder))
        except (FileNotFoundError, NotADirectoryError):
            entries = []
        seen: set[str] = set()
        for entry in entries:
            name = entry.name
            slug = name[:-3]
            if not name.endswith(".md") or not is_slug(slug):
                continue
            if not folder and slug in _pages.RESERVED_ROOT_SLUGS:
                continue
            try:
                if not entry.is_file():
                    continue
                info = entry.stat()
            except OSError:
                continue
            rel = f"{folder}/{name}" if folder else name
            seen.add(rel)
            token = (info.st_ino, info.st_mtime_ns, info.st_size)
            last = known.get(rel)
            if last is None or last[0] != token:
                self._load(folder, rel, slug, candidates, token)
        for rel in [r for r in known if r not in seen]:
            self._forget(folder, rel)

    def _load(
        self, folder: str, rel: str, slug: str, candidates: list[PageType], token: _FileToken
    ) -> None:
        """Read one page file and put what it holds into the catalog."""
        stored: Stored | None = None
        try:
            text = (self._root / rel).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            logger.warning("Skipping %s in %s: %s", rel, self._root, exc)
            self._why[rel] = f"it can't be read ({type(exc).__name__})"
        else:
            parsed = _stored.parse_as_any(candidates, slug, rel, text)
            if isinstance(parsed, str):
                logger.warning("Skipping %s in %s: %s", rel, self._root, parsed)
                self._why[rel] = parsed
            else:
                stored = parsed
                self._why.pop(rel, None)
        known = self._files.setdefault(folder, {})
        last = known.get(rel)
        known[rel] = (token, stored)
        dropped = last[1] if last is not None else None
        if dropped is not None and (stored is None or stored.id != dropped.id):
            self._unput(dropped)
        if stored is not None:
            self._put(stored)

    def _forget(self, folder: str, rel: str) -> None:
        """Drop a page file that is gone."""
        last = self._files.get(folder, {}).pop(rel, None)
        self._why.pop(rel, None)
        if last is not None and last[1] is not None:
            self._unput(last[1])

    @override
    def _revalidate(self, page_id: str) -> None:
        """Re-read one page's file if it changed in place since it was read."""
        stored = self._pages.get(page_id)
        if stored is None:
            return
        folder = stored.page_type.dir
        try:
            info = (self._root / stored.rel).stat()
        except OSError:
            self._forget(folder, stored.rel)
            return
        token = (info.st_ino, info.st_mtime_ns, info.st_size)
        if self._files[folder][stored.rel][0] != token:
            candidates = next(c for f, c in self._folders if f == folder)
            self._load(folder, stored.rel, stored.slug, candidates, token)
            self._sync_root_ids()

    def _settle(self) -> None:
        """Take the tokens of the folders this store just wrote in (under the lock).

        Only those: a change someone made by hand in another folder meanwhile still moves
        that folder's token away from the one recorded.
        """
        for folder in self._written | {""}:
            if folder in self._folder_tokens:
                self._folder_tokens[folder] = _folder_token(self._root / folder)
        self._written.clear()

    def _change(self, page_id: str, change: Callable[[View], _flows.Changed]) -> None:
        with self._writing():
            page = self._find(page_id)
            # the page file may have been edited in place since the last refresh
            self._revalidate(page.id)
            page = self._find(page_id)
            self._save_changed(page, change(lambda other: self._view(self._find(other))))

    @override
    def _markdown_files(self) -> builtins.list[str]:
        return self._listing.files()

    @override
    def _listing_exists(self, rel: str) -> bool:
        return (self._root / rel).is_file()

    @override
    def _read_text(self, name: str) -> str:
        try:
            return (self._root / name).read_text(encoding="utf-8")
        except FileNotFoundError:
            return ""

    # -- writing -------------------------------------------------------------------------

    def _in_layout(self, rel: str) -> bool:
        folder, _, name = rel.rpartition("/")
        return not folder or (folder in self._page_dirs and is_slug(name[:-3]))

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """Hold the thread and process locks for a change, in a folder the store owns.

        The catalog is brought up to date under the lock, so the change starts from every
        earlier writer's.

        Raises:
            KnowledgeStoreError: The folder holds files the store didn't write.
        """
        with self._mutex:
            # Checked before the lock file is created: a refused folder gets no new file.
            unclaimed = False
            if not (self._root / _ownership.MARKER_FILE).is_file():
                self._refresh()  # which files are pages decides whether the folder is adoptable
                unclaimed = _ownership.require_owned(
                    self._root, self._in_layout, self._recogniser()
                )
            with locked(self._root / LOCK_FILE):
                if unclaimed:
                    _ownership.claim(self._root, atomic_write)
                self._refresh()
                yield

    @override
    def _file_exists(self, rel: str) -> bool:
        return (self._root / rel).exists()

    def _save(self, page: Stored) -> None:
        """Write a page and put it into the catalog, so no re-read is needed.

        Leftover temporary files can only appear in a folder through another writer, which
        moves the folder's token: the folder is tidied (a scan of every entry) then, and
        every minute, not at every write.
        """
        path = self._root / page.rel
        folder = page.page_type.dir
        now = time.monotonic()
        tidy = now - self._tidied.get(folder, -math.inf) > _TIDY_SECONDS
        self._written.add(folder)
        atomic_write(path, _stored.render_page(page), tidy=tidy)
        if tidy:
            self._tidied[folder] = now
        info = path.stat()
        token = (info.st_ino, info.st_mtime_ns, info.st_size)
        self._files.setdefault(page.page_type.dir, {})[page.rel] = (token, page)
        self._put(page)
        self._sync_root_ids()

    def _save_changed(self, page: Stored, changed: _flows.Changed) -> None:
        """Save a page's new values and rewrite the index."""
        body = self._links_map.to_disk(changed.content, page.rel)
        self._save(replace(page, title=changed.title, fields=changed.fields, body=body))
        self._write_index()
        self._settle()

    def _write_index(self) -> None:
        """Rewrite ``index.md`` (under the lock), unless it already says what it would say.

        The file is left as it is when this store wrote it last (its token says nobody has
        replaced it since) and no index line changed since then: an edit of a page's body
        leaves its line as it was. Otherwise the whole file is written anew, from lines
        kept rendered and encoded (see :class:`~._catalog.IndexLines`).
        """
        path = self._root / "index.md"
        version = self._disk_index.version
        if self._index_written is not None and self._index_written[0] == version:
            try:
                info = path.stat()
            except OSError:
                pass
            else:
                if self._index_written[1] == (info.st_ino, info.st_mtime_ns, info.st_size):
                    return
        self._index_written = None  # a failed write below leaves no claim
        chunks = [_stored.index_head(), *self._disk_index.encoded_chunks()]
        info = atomic_write(path, chunks, durable=False)
        self._index_written = (version, (info.st_ino, info.st_mtime_ns, info.st_size))

    @override
    def create_many(self, pages: Sequence[NewPage]) -> builtins.list[str]:
        with self._writing():
            valid = self._new_pages(pages)
            written: list[Stored] = []
            try:
                for stored in valid:
                    written.append(stored)
                    self._save(stored)
            except BaseException:
                for stored in written:
                    (self._root / stored.rel).unlink(missing_ok=True)
                    self._forget(stored.page_type.dir, stored.rel)
                self._sync_root_ids()
                self._settle()
                raise
            self._write_index()
            self._settle()
        return [page.id for page in valid]

    @override
    def log(self, operation: str, what: str, pages: Sequence[str] | None = None) -> None:
        op, text, ids = _catalog.clean_log_entry(operation, what, pages)
        with self._writing():
            rels = {i: self._pages[i].rel for i in ids if i in self._pages}
            entry = _stored.log_entry_line(self._links_map, rels, op, text, ids)
            text = _bundle.prepend_log(self._read_text("log.md"), entry, _pages.utc_today())
            atomic_write(self._root / "log.md", text)
            self._settle()

    @override
    def write_overview(self, content: str) -> None:
        content = _pages.normalize_content(content)
        with self._writing():
            _pages.require_links_resolve(content, self._exists)
            body = self._links_map.to_disk(content, "overview.md")
            atomic_write(self._root / "overview.md", _stored.render_overview(body))
            self._settle()


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
