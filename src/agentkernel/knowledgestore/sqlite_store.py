"""The knowledge store in one SQLite database.

The same interface and rules as the file store, kept in tables: ``pages`` (fields as JSON),
``links`` (who links to whom, rebuilt with each write), ``log`` and ``meta`` (the overview).
Every change is one transaction (``BEGIN IMMEDIATE``), so concurrent writers from several
processes are serialised by SQLite.

Listing, the index, the check and search answer from an in-memory catalog
(:class:`~._memory.PageCatalog`, searched with the shared retrieval engine, so a query ranks
pages the same way in every store). Each write stamps the rows it changes with the next
revision (``pages.rev``); a call first asks SQLite whether another connection committed since
(``PRAGMA data_version``, no table read) and, only then, loads the rows with a newer revision.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from typing_extensions import override

from agentkernel.knowledgestore import _bundle, _catalog, _flows, _pages, _stored
from agentkernel.knowledgestore._cataloged import CatalogedStore, View
from agentkernel.knowledgestore._memory import Entry, PageCatalog, make_entry, semantic_index
from agentkernel.knowledgestore.errors import KnowledgeStoreError
from agentkernel.knowledgestore.model import (
    CheckReport,
    KnowledgePage,
    NewPage,
    PageInfo,
    PageType,
    linked_ids,
    parse_id,
)

if TYPE_CHECKING:
    from agentkernel.retrieval.embedders import Embedder

_SETUP_SECONDS = 30.0
"""How long opening waits for another process that is setting the database up."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS pages (
    id TEXT PRIMARY KEY,
    type TEXT NOT NULL,
    slug TEXT NOT NULL,
    title TEXT NOT NULL,
    fields TEXT NOT NULL,
    content TEXT NOT NULL,
    status TEXT NOT NULL,
    description TEXT NOT NULL,
    rev INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS links (
    source TEXT NOT NULL,
    target TEXT NOT NULL,
    PRIMARY KEY (source, target)
);
CREATE INDEX IF NOT EXISTS links_by_target ON links (target);
CREATE TABLE IF NOT EXISTS log (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    date TEXT NOT NULL,
    operation TEXT NOT NULL,
    what TEXT NOT NULL,
    pages TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
_SELECT = "SELECT id, type, slug, title, fields, content, description, rev FROM pages"


@dataclass(frozen=True)
class _Row:
    id: str
    type: str
    slug: str
    title: str
    fields: dict[str, str]
    content: str
    description: str = ""

    @property
    def status(self) -> str:
        return _pages.status_of(self.fields)

    def entry(self) -> Entry:
        return make_entry(self.id, self.type, self.slug, self.title, self.fields, self.content)


def _has_revisions(db: sqlite3.Connection) -> bool:
    """Whether the pages carry revisions (a database from before them has none)."""
    return any(row[1] == "rev" for row in db.execute("PRAGMA table_info(pages)"))


_NEXT_REV = (
    "MAX(COALESCE((SELECT MAX(rev) FROM pages), 0), "
    "COALESCE((SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'deleted_rev'), 0)) + 1"
)
# a deleted row's revision is remembered, so that a row written next never takes it again
# (a catalog that held the deleted row would not look for a revision it has seen)
_REVISION_TRIGGERS = f"""
CREATE INDEX IF NOT EXISTS pages_by_rev ON pages (rev);
DROP TRIGGER IF EXISTS pages_rev_on_insert;
DROP TRIGGER IF EXISTS pages_rev_on_update;
CREATE TRIGGER IF NOT EXISTS pages_rev_on_delete AFTER DELETE ON pages
BEGIN INSERT OR REPLACE INTO meta (key, value) VALUES ('deleted_rev', MAX(OLD.rev, \
COALESCE((SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'deleted_rev'), 0))); END;
CREATE TRIGGER IF NOT EXISTS pages_rev_on_insert_2 AFTER INSERT ON pages WHEN NEW.rev = 0
BEGIN UPDATE pages SET rev = {_NEXT_REV} WHERE id = NEW.id; END;
CREATE TRIGGER IF NOT EXISTS pages_rev_on_update_2 AFTER UPDATE ON pages WHEN NEW.rev <= OLD.rev
BEGIN UPDATE pages SET rev = {_NEXT_REV} WHERE id = NEW.id; END;
"""


def _add_revisions(db: sqlite3.Connection) -> None:
    """Make every change to a page take a new revision, inside a write transaction.

    An older database's pages get revisions (all 0). The triggers give a row written without
    one (another tool's ``INSERT`` or ``UPDATE``) the next revision, so the catalogs of every
    store on the database load it; only a deleted row needs the count to be noticed. No
    revision is used twice, even the one of a deleted row.
    """
    if not _has_revisions(db):
        db.execute("ALTER TABLE pages ADD COLUMN rev INTEGER NOT NULL DEFAULT 0")
    for statement in _REVISION_TRIGGERS.strip().split(";\n"):
        db.execute(statement)


def _deleted_rev(db: sqlite3.Connection) -> int:
    """The newest revision a deleted row held: no write may take it again."""
    found = db.execute("SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'deleted_rev'")
    row = found.fetchone()
    return int(row[0]) if row else 0


def _in_a_database(_target: str) -> bool:
    """Whether a ``.md`` link reaches a listing file: in a database, it never does."""
    return False


def _view(row: _Row) -> _flows.Page:
    return _flows.Page(row.id, row.type, row.title, row.fields, row.content)


class SQLiteKnowledgeStore(CatalogedStore):
    """A :class:`KnowledgeStore` in a SQLite database file (or ``":memory:"``)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        page_types: Sequence[PageType] | None = None,
        *,
        embedder: Embedder | str | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        """Open the database; a missing one is created (with its tables) by the first write.

        Reading never creates nor changes the file: until the first write, a store whose file
        doesn't exist yet (or holds no store tables) reads as empty.

        Args:
            path: The database file, or ``":memory:"``.
            page_types: Declared page types, besides the built-ins.
            embedder: Makes ``search()`` hybrid (lexical and dense scores fused): an
                :class:`~agentkernel.retrieval.Embedder`, or a name, model folder or endpoint
                URL. ``None``: lexical only, and no embedding code is imported.
            cache_dir: The vector cache root (see :mod:`agentkernel.retrieval.vectorcache`).

        Raises:
            KnowledgeStoreError: An invalid page type declaration, a file that is no SQLite
                database, or a SQLite without FTS5.
        """
        self._registry = _pages.TypeRegistry(page_types)
        self._path = os.fspath(path)
        self._mutex = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self._blank: sqlite3.Connection | None = None
        self._catalog = PageCatalog(self._registry, semantic_index(embedder, cache_dir))
        self._rev = -1  # the newest revision the catalog holds; -1: nothing loaded yet
        self._seen: tuple[sqlite3.Connection, int] | None = None  # (connection, data_version)
        self._pending: dict[str, _Row] = {}  # rows written by the open transaction
        self._revised: sqlite3.Connection | None = None  # the connection known to have revs
        if self._path == ":memory:" or self._holds_store():
            self._conn = self._open(self._path)

    def _open(self, path: str) -> sqlite3.Connection:
        """Connect to ``path``, creating the tables when missing (a write)."""
        db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30.0)
        deadline = time.monotonic() + _SETUP_SECONDS
        while True:
            try:
                if path != ":memory:":
                    db.execute("PRAGMA journal_mode=WAL")
                db.executescript(_SCHEMA)
                return db
            except sqlite3.DatabaseError as exc:
                # Two processes creating the database at once: the switch to WAL can fail
                # SQLITE_BUSY at once, without SQLite's busy wait; the setup is idempotent.
                busy = getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_BUSY
                if busy and time.monotonic() < deadline:
                    time.sleep(0.02)
                    continue
                db.close()
                message = f"Can't set up the knowledge database {path}: {exc}"
                raise KnowledgeStoreError(message) from exc

    def _holds_store(self) -> bool:
        """Whether the file exists and holds the store's tables; looked up without writing."""
        if not os.path.isfile(self._path):
            return False
        try:
            with contextlib.closing(sqlite3.connect(self._path, timeout=30.0)) as db:
                found = db.execute(
                    "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'pages'"
                ).fetchone()
        except sqlite3.DatabaseError as exc:
            raise KnowledgeStoreError(
                f"Can't open the knowledge database {self._path}: {exc}"
            ) from exc
        return found is not None

    @property
    def _db(self) -> sqlite3.Connection:
        """The connection reads use: the file once it holds the store, else an empty stand-in."""
        if self._conn is None and self._holds_store():
            self._conn = self._open(self._path)
        if self._conn is not None:
            return self._conn
        if self._blank is None:
            self._blank = self._open(":memory:")
        return self._blank

    def __repr__(self) -> str:
        return f"SQLiteKnowledgeStore({self._path!r})"

    @property
    def path(self) -> str:
        """The database file (or ``":memory:"``)."""
        return self._path

    def close(self) -> None:
        """Close the database connection."""
        with self._mutex:
            for db in (self._conn, self._blank):
                if db is not None:
                    db.close()

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._mutex:
            if self._conn is None:
                self._conn = self._open(self._path)
            db = self._conn
            db.execute("BEGIN IMMEDIATE")
            self._pending.clear()
            before = self._rev
            try:
                # holding the write lock, catch up with every earlier commit first, so that
                # this transaction's revision follows everything the catalog holds
                if self._revised is not db:
                    _add_revisions(db)
                    self._revised = db
                self._refresh()
                self._rev = max(self._rev, _deleted_rev(db))
                before = self._rev
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                self._pending.clear()
                self._rev = before  # the revision was not used; the next writer takes it
                raise
            db.execute("COMMIT")
            for row in self._pending.values():
                self._catalog.put(row.entry())
            self._pending.clear()

    def _refresh(self, *, full: bool = False) -> None:
        """Load the rows other connections changed since the catalog last caught up.

        Args:
            full: Compare every row, for changes made without the store (a row deleted or
                edited by hand), not only the rows of newer revisions.
        """
        db = self._db
        (version,) = db.execute("PRAGMA data_version").fetchone()
        if self._seen is not None and self._seen[0] is not db:
            full = True  # the file appeared (another process created it): start over
        elif self._seen == (db, version) and not full:
            return
        revisions = _has_revisions(db)
        if not full and revisions:
            self._apply(db.execute(f"{_SELECT} WHERE rev > ?", (self._rev,)))
            (count,) = db.execute("SELECT COUNT(*) FROM pages").fetchone()
            # a row deleted, or added at an old revision, behind the store: compare them all
            full = count != len(self._catalog)
        if full or not revisions:
            select = _SELECT if revisions else _SELECT.replace(", rev FROM", ", 0 FROM")
            present = self._apply(db.execute(select))
            for page_id in [i for i in self._catalog.ids() if i not in present]:
                self._catalog.drop(page_id)
        self._rev = max(self._rev, 0)
        self._seen = (db, version)

    def _apply(self, rows: Iterable[Sequence[Any]]) -> set[str]:
        """Put the rows that differ from the catalog into it; return every id seen."""
        seen: set[str] = set()
        for values in rows:
            row = self._row(values[:-1])
            seen.add(row.id)
            known = self._catalog.get(row.id)
            if known is None or (known.info.title, known.info.fields, known.content) != (
                row.title,
                row.fields,
                row.content,
            ):
                self._catalog.put(row.entry())
            self._rev = max(self._rev, values[-1])
        return seen

    # -- rows ----------------------------------------------------------------------------

    @staticmethod
    def _row(values: Sequence[Any]) -> _Row:
        page_id, page_type, slug, title, fields, content, description = values
        return _Row(page_id, page_type, slug, title, json.loads(fields), content, description)

    def _get(self, page_id: str) -> _Row | None:
        found = self._db.execute(
            "SELECT id, type, slug, title, fields, content, description FROM pages WHERE id = ?",
            (page_id,),
        ).fetchone()
        return self._row(found) if found else None

    def _find(self, page_id: str) -> _Row:
        return _flows.require_page(self._registry, page_id, self._get)

    def _put_changed(self, db: sqlite3.Connection, row: _Row, changed: _flows.Changed) -> None:
        """Store a page's new values."""
        new = replace(row, title=changed.title, fields=changed.fields, content=changed.content)
        self._put(db, new, new=False)

    def _change(self, page_id: str, change: Callable[[View], _flows.Changed]) -> None:
        with self._write() as db:
            row = self._find(page_id)
            self._put_changed(db, row, change(lambda other: _view(self._find(other))))

    def _exists(self, page_id: str) -> bool:
        return self._get(page_id) is not None

    def _put(self, db: sqlite3.Connection, row: _Row, *, new: bool) -> None:
        # measured as the markdown stores keep a page: the same bound in every store
        if not _pages.surely_within_bound(
            row.title, row.content, *row.fields, *row.fields.values()
        ):
            page_type = self._registry.get(row.type) or PageType(row.type, "", "", "")
            as_file = _stored.Stored(
                row.id, page_type, row.slug, "", row.title, row.fields, row.content
            )
            size = len(_stored.render_page(as_file).encode("utf-8"))
            _pages.require_page_size(repr(row.id), size)
        entry = row.entry()
        if not self._pending:
            self._rev += 1  # one revision per transaction
        info = entry.info
        values = (
            row.title,
            json.dumps(row.fields),
            row.content,
            info.status,
            info.description,
            self._rev,
            row.id,
        )
        if new:
            db.execute(
                "INSERT INTO pages "
                "(type, slug, title, fields, content, status, description, rev, id) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (row.type, row.slug, *values),
            )
        else:
            db.execute(
                "UPDATE pages SET title = ?, fields = ?, content = ?, status = ?, description = ?, "
                "rev = ? WHERE id = ?",
                values,
            )
        db.execute("DELETE FROM links WHERE source = ?", (row.id,))
        db.executemany(
            "INSERT INTO links (source, target) VALUES (?, ?)",
            [(row.id, target) for target in entry.links],
        )
        self._pending[row.id] = replace(row, description=info.description)

    def _info(self, row: _Row) -> PageInfo:
        return PageInfo(
            id=row.id,
            type=row.type,
            slug=row.slug,
            title=row.title,
            description=row.description,
            status=row.status,
            fields=dict(row.fields),
        )

    # -- reading -------------------------------------------------------------------------

    @override
    def read(self, page_id: str) -> KnowledgePage | None:
        if not isinstance(page_id, str) or parse_id(page_id) is None:
            return None
        with self._mutex:
            row = self._get(page_id.strip())
            if row is None:
                return None
            sources = [
                source
                for (source,) in self._db.execute(
                    "SELECT source FROM links WHERE target = ? AND source != ?", (row.id, row.id)
                )
            ]
        linked_from = sorted(sources, key=self._catalog.order)
        return KnowledgePage(**vars(self._info(row)), content=row.content, linked_from=linked_from)

    @override
    def recent_log(self, limit: int = 10) -> builtins.list[str]:
        limit = _pages.require_limit(limit)
        with self._mutex:
            rows = self._db.execute(
                "SELECT date, operation, what, pages FROM log ORDER BY seq DESC LIMIT ?", (limit,)
            ).fetchall()
        return [_catalog.format_log_entry(d, op, what, json.loads(p)) for d, op, what, p in rows]

    def check(self) -> CheckReport:
        """Report broken links (``.md`` file links included), orphans and links to retired pages."""
        with self._mutex:
            self._refresh()
            overview = self.overview()
            return self._catalog.check(
                linked_ids(overview),
                lambda entry: _bundle.file_link_targets(entry.content, ""),
                _in_a_database,
                _bundle.dangling_file_links(overview, "", _in_a_database),
            )

    def overview(self) -> str:
        """Return the overview (``""`` if none yet)."""
        with self._mutex:
            found = self._db.execute("SELECT value FROM meta WHERE key = 'overview'").fetchone()
        return str(found[0]) if found else ""

    # -- writing -------------------------------------------------------------------------

    @override
    def create_many(self, pages: Sequence[NewPage]) -> builtins.list[str]:
        with self._write() as db:
            valid = _pages.validate_new_pages(
                list(pages), self._registry, self._exists, self._file_links
            )
            for page in valid:
                row = _Row(
                    page.id, page.page_type.name, page.slug, page.title, page.fields, page.content
                )
                self._put(db, row, new=True)
        return [page.id for page in valid]

    @override
    def log(self, operation: str, what: str, pages: Sequence[str] | None = None) -> None:
        op, text, ids = _catalog.clean_log_entry(operation, what, pages)
        with self._write() as db:
            db.execute(
                "INSERT INTO log (date, operation, what, pages) VALUES (?, ?, ?, ?)",
                (_pages.utc_today(), op, text, json.dumps(ids)),
            )

    @override
    def write_overview(self, content: str) -> None:
        content = _pages.normalize_content(content)
        _pages.require_page_size("The overview", len(content.encode("utf-8")))
        with self._write() as db:
            _pages.require_links_resolve(
                content, self._exists, file_links=self._judge_links("overview")
            )
            db.execute(
                "INSERT INTO meta (key, value) VALUES ('overview', ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (content,),
            )
