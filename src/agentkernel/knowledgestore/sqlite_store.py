"""The knowledge store in one SQLite database: a page backend of tables.

:class:`SQLiteKnowledgeStore` is :class:`~agentkernel.knowledgestore.pages_store.PagesStore`
over :class:`SQLitePageBackend`, which keeps ``pages`` (fields as JSON), ``links`` (who links
to whom, rebuilt with each write, for other tools reading the database), ``log`` and ``meta``
(the overview). A change is one transaction (``BEGIN IMMEDIATE``, the backend's
:meth:`~SQLitePageBackend.writing`), so writers in several processes queue and none loses a
race; its pages are written only if their revision is still the one the change was computed
from (a page's change token is its revision).

Each transaction stamps the rows it changes with the next revision (``pages.rev``); a poll
first asks SQLite whether another connection committed since (``PRAGMA data_version``, no
table read) and, only then, selects the rows of newer revisions (and every row when their
count says a row was deleted or written behind the store).
"""

from __future__ import annotations

import builtins
import contextlib
import hashlib
import json
import os
import sqlite3
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from typing_extensions import override

from agentkernel.errors import WriteConflictError
from agentkernel.knowledgestore._memory import make_entry
from agentkernel.knowledgestore._sqlbackend import LINKS_TABLE, PAGE_COLUMNS, own_transaction
from agentkernel.knowledgestore.errors import KnowledgeStoreError
from agentkernel.knowledgestore.model import PageType
from agentkernel.knowledgestore.pagebackend import Commit, LogEntry, PageBackend, PageRecord
from agentkernel.knowledgestore.pages_store import PagesStore

if TYPE_CHECKING:
    from agentkernel.retrieval.embedders import Embedder

_SETUP_SECONDS = 30.0
"""How long opening waits for another process that is setting the database up."""

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS pages ({PAGE_COLUMNS}
    rev INTEGER NOT NULL DEFAULT 0
);{LINKS_TABLE}
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


_CHUNK = 500
"""Ids per ``IN (...)`` of a read (below SQLite's bound on a statement's variables)."""


def _record(values: Sequence[Any]) -> PageRecord:
    page_id, page_type, slug, title, fields, content = values[:6]
    return PageRecord(page_id, page_type, slug, title, json.loads(fields), content)


def _token(values: Sequence[Any], revisions: bool) -> str:
    """A row's change token: its revision, or (an older database has none) its digest."""
    if revisions:
        return str(values[-1])
    return "h" + hashlib.sha1(json.dumps(list(values[:6])).encode("utf-8")).hexdigest()


class SQLitePageBackend(PageBackend):
    """The page backend of one SQLite database file (or ``":memory:"``)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        """Open the database if it holds the store; reading never creates nor changes it.

        Args:
            path: The database file, or ``":memory:"``.

        Raises:
            KnowledgeStoreError: A file that is no SQLite database.
        """
        self._path = os.fspath(path)
        self.label = self._path
        self._conn: sqlite3.Connection | None = None
        self._blank: sqlite3.Connection | None = None
        self._rev = -1  # the newest revision polled; -1: nothing polled yet
        self._known: dict[str, str] = {}  # page id -> token, as last told
        self._polled: dict[str, tuple[PageRecord, str]] = {}  # rows the last poll selected
        self._seen: tuple[sqlite3.Connection, int] | None = None  # (connection, data_version)
        self._pending: dict[str, str | None] = {}  # tokens written by the open transaction
        self._revised: sqlite3.Connection | None = None  # the connection known to have revs
        self._in_transaction = False
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

    @property
    def path(self) -> str:
        """The database file (or ``":memory:"``)."""
        return self._path

    @override
    def close(self) -> None:
        for db in (self._conn, self._blank):
            if db is not None:
                db.close()

    # -- reading -------------------------------------------------------------------------

    @override
    def poll(self) -> Mapping[str, str | None]:
        db = self._db
        (version,) = db.execute("PRAGMA data_version").fetchone()
        full = False
        if self._seen is not None and self._seen[0] is not db:
            full = True  # the file appeared (another process created it): start over
        elif self._seen == (db, version):
            return {}
        revisions = _has_revisions(db)
        changed: dict[str, str | None] = {}
        self._polled = {}
        if revisions and self._seen is not None and not full:
            changed = self._select(db, f"{_SELECT} WHERE rev > ?", (self._rev,), revisions)
            (count,) = db.execute("SELECT COUNT(*) FROM pages").fetchone()
            # a row deleted, or added at an old revision, behind the store: compare them all
            full = count != len(self._known)
        if full or not revisions or self._seen is None:
            select = _SELECT if revisions else _SELECT.replace(", rev FROM", ", 0 FROM")
            changed = self._select(db, select, (), revisions)
            changed.update((i, None) for i in self._known if i not in changed)
            self._known = {i: t for i, t in changed.items() if t is not None}
        self._rev = max(self._rev, 0)
        self._seen = (db, version)
        return changed

    def _select(
        self, db: sqlite3.Connection, query: str, arguments: tuple[Any, ...], revisions: bool
    ) -> dict[str, str | None]:
        """Run a select of whole rows; keep them for :meth:`read` and return their tokens."""
        tokens: dict[str, str | None] = {}
        for values in db.execute(query, arguments):
            token = _token(values, revisions)
            self._polled[values[0]] = (_record(values), token)
            self._known[values[0]] = tokens[values[0]] = token
            if revisions:
                self._rev = max(self._rev, values[-1])
        return tokens

    @override
    def read(self, page_ids: Sequence[str]) -> Mapping[str, tuple[PageRecord, str]]:
        found = {i: self._polled[i] for i in page_ids if i in self._polled}
        rest = [i for i in page_ids if i not in found]
        db = self._db
        revisions = _has_revisions(db) if rest else True
        select = _SELECT if revisions else _SELECT.replace(", rev FROM", ", 0 FROM")
        for start in range(0, len(rest), _CHUNK):
            part = rest[start : start + _CHUNK]
            marks = ", ".join("?" * len(part))
            for values in db.execute(f"{select} WHERE id IN ({marks})", part):
                found[values[0]] = (_record(values), _token(values, revisions))
        self._polled = {}
        return found

    @override
    def recent_log(self, limit: int) -> builtins.list[LogEntry]:
        rows = self._db.execute(
            "SELECT date, operation, what, pages FROM log ORDER BY seq DESC LIMIT ?", (limit,)
        ).fetchall()
        return [LogEntry(d, op, what, tuple(json.loads(p))) for d, op, what, p in rows]

    @override
    def overview(self) -> str:
        found = self._db.execute("SELECT value FROM meta WHERE key = 'overview'").fetchone()
        return str(found[0]) if found else ""

    # -- writing -------------------------------------------------------------------------

    @override
    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """One transaction (``BEGIN IMMEDIATE``): commits inside apply when it ends."""
        if self._conn is None:
            self._conn = self._open(self._path)
        db = self._conn
        db.execute("BEGIN IMMEDIATE")
        self._pending.clear()
        self._in_transaction = True
        before = self._rev
        try:
            if self._revised is not db:
                _add_revisions(db)
                self._revised = db
            self._rev = before = max(self._rev, _deleted_rev(db))
            yield
        except BaseException:
            db.execute("ROLLBACK")
            self._pending.clear()
            self._rev = before  # the revision was not used; the next writer takes it
            raise
        finally:
            self._in_transaction = False
        db.execute("COMMIT")
        for page_id, token in self._pending.items():
            if token is None:
                self._known.pop(page_id, None)
            else:
                self._known[page_id] = token
        self._pending.clear()

    @override
    @own_transaction
    def commit(self, commit: Commit) -> Mapping[str, str]:
        db = self._conn
        assert db is not None  # writing() opened it
        for write in commit.pages:
            found = db.execute("SELECT rev FROM pages WHERE id = ?", (write.id,)).fetchone()
            if (None if found is None else str(found[0])) != write.expected:
                raise WriteConflictError(f"{write.id} changed since it was read", write.id)
        if commit.pages and not self._pending:
            self._rev += 1  # one revision per transaction
        tokens: dict[str, str] = {}
        for write in commit.pages:
            if write.page is None:
                db.execute("DELETE FROM pages WHERE id = ?", (write.id,))
                db.execute("DELETE FROM links WHERE source = ?", (write.id,))
                self._pending[write.id] = None
            else:
                self._put_row(db, write.page, new=write.expected is None)
                tokens[write.id] = self._pending[write.id] = str(self._rev)
        if commit.log is not None:
            entry = commit.log
            db.execute(
                "INSERT INTO log (date, operation, what, pages) VALUES (?, ?, ?, ?)",
                (entry.date, entry.operation, entry.what, json.dumps(list(entry.pages))),
            )
        if commit.overview is not None:
            db.execute(
                "INSERT INTO meta (key, value) VALUES ('overview', ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (commit.overview,),
            )
        return tokens

    def _put_row(self, db: sqlite3.Connection, page: PageRecord, *, new: bool) -> None:
        """Write one page's row (and its links) at the transaction's revision."""
        entry = make_entry(page.id, page.type, page.slug, page.title, page.fields, page.content)
        info = entry.info
        values = (
            page.title,
            json.dumps(dict(page.fields)),
            page.content,
            info.status,
            info.description,
            self._rev,
            page.id,
        )
        if new:
            db.execute(
                "INSERT INTO pages "
                "(type, slug, title, fields, content, status, description, rev, id) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (page.type, page.slug, *values),
            )
        else:
            db.execute(
                "UPDATE pages SET title = ?, fields = ?, content = ?, status = ?, description = ?, "
                "rev = ? WHERE id = ?",
                values,
            )
        db.execute("DELETE FROM links WHERE source = ?", (page.id,))
        db.executemany(
            "INSERT INTO links (source, target) VALUES (?, ?)",
            [(page.id, target) for target in entry.links],
        )


class SQLiteKnowledgeStore(PagesStore):
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
            cache_dir: The vector cache root (see :mod:`agentkernel.retrieval._vectorcache`).

        Raises:
            KnowledgeStoreError: An invalid page type declaration, a file that is no SQLite
                database, or a SQLite without FTS5.
        """
        super().__init__(
            SQLitePageBackend(path), page_types, embedder=embedder, cache_dir=cache_dir
        )

    def __repr__(self) -> str:
        return f"SQLiteKnowledgeStore({self.path!r})"

    @property
    def path(self) -> str:
        """The database file (or ``":memory:"``)."""
        backend = self._backend
        assert isinstance(backend, SQLitePageBackend)
        return backend.path
