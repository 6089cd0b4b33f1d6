"""The knowledge store in a PostgreSQL database: a page backend of tables shared by a team.

:class:`PostgreSQLKnowledgeStore` is :class:`~agentkernel.knowledgestore.pages_store.PagesStore`
over :class:`PostgreSQLPageBackend`, which keeps the tables of the SQLite store (``pages``,
``links``, ``log``, ``meta``) plus ``page_deletions`` (what was deleted, at which revision) and
``commits`` (the commits applied, so a commit sent again after its answer was lost applies
once). Each change is one transaction holding the store's advisory lock, so writers on every
machine queue and none loses an update; a page is written only if its row is still at the
revision the change was computed from (a page's change token is its revision), else the
protocol's retryable :class:`~agentkernel.errors.WriteConflictError` names the page.

Every write of a row takes the next value of one sequence (a trigger, which also takes the
lock and resolves names in the store's schema, so a row another tool writes is stamped the same
way whatever its ``search_path``, and revisions become visible in the order they were taken);
a poll is one indexed select of the rows and deletions above the newest revision it saw.
Search is the package's retrieval engine over the pages the store keeps current from those
polls (PostgreSQL's own text search was measured and not chosen: docs/knowledge-store.md).

Requires the ``postgres`` extra (``psycopg``), imported only by this module.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import logging
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

from typing_extensions import override

from agentkernel.errors import AKConfigError, WriteConflictError, missing_extra
from agentkernel.knowledgestore._memory import make_entry
from agentkernel.knowledgestore._sqlbackend import LINKS_TABLE, PAGE_COLUMNS, own_transaction
from agentkernel.knowledgestore.errors import StoreAccessError
from agentkernel.knowledgestore.model import PageType
from agentkernel.knowledgestore.pagebackend import Commit, LogEntry, PageBackend, PageRecord
from agentkernel.knowledgestore.pages_store import PagesStore

if TYPE_CHECKING:
    import psycopg

    from agentkernel.retrieval.embedders import Embedder

logger = logging.getLogger(__name__)

_T = TypeVar("_T")

STATEMENT_TIMEOUT_SECONDS = 30.0
"""The default bound on one statement (a write waiting for the store's lock included)."""

WRITE_LOCK_KEY = 0x616B_6B62  # "akkb"
"""The advisory lock every change of the store holds (``pg_advisory_xact_lock``): a session
that takes it holds every writer off, as a consistent copy may need."""

_CHUNK = 1000
"""Ids per ``= ANY(...)`` of a read."""

_SCHEMA = f"""
CREATE SEQUENCE IF NOT EXISTS page_revs;
CREATE TABLE IF NOT EXISTS pages ({PAGE_COLUMNS}
    author TEXT,
    rev BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS pages_by_rev ON pages (rev);
CREATE TABLE IF NOT EXISTS page_deletions (id TEXT PRIMARY KEY, rev BIGINT NOT NULL);
CREATE INDEX IF NOT EXISTS page_deletions_by_rev ON page_deletions (rev);{LINKS_TABLE}
CREATE TABLE IF NOT EXISTS log (
    seq BIGSERIAL PRIMARY KEY,
    date TEXT NOT NULL,
    operation TEXT NOT NULL,
    what TEXT NOT NULL,
    pages TEXT NOT NULL,
    author TEXT
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS commits (
    id TEXT PRIMARY KEY,
    tokens TEXT NOT NULL,
    at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE OR REPLACE FUNCTION pages_stamp() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
    PERFORM pg_advisory_xact_lock({WRITE_LOCK_KEY});
    NEW.rev := nextval('page_revs');
    RETURN NEW;
END $$;
CREATE OR REPLACE FUNCTION pages_deleted() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
    PERFORM pg_advisory_xact_lock({WRITE_LOCK_KEY});
    INSERT INTO page_deletions (id, rev) VALUES (OLD.id, nextval('page_revs'))
    ON CONFLICT (id) DO UPDATE SET rev = excluded.rev;
    RETURN OLD;
END $$;
DROP TRIGGER IF EXISTS pages_stamp ON pages;
CREATE TRIGGER pages_stamp BEFORE INSERT OR UPDATE ON pages
    FOR EACH ROW EXECUTE FUNCTION pages_stamp();
DROP TRIGGER IF EXISTS pages_deleted ON pages;
CREATE TRIGGER pages_deleted AFTER DELETE ON pages
    FOR EACH ROW EXECUTE FUNCTION pages_deleted()
"""

_COLUMNS = "id, type, slug, title, fields, content, rev"
_COMMITS_KEPT = "7 days"
"""How long a commit's id is remembered (a lost answer is sent again within seconds)."""


def _record(values: Sequence[Any]) -> PageRecord:
    page_id, page_type, slug, title, fields, content = values[:6]
    return PageRecord(page_id, page_type, slug, title, json.loads(fields), content)


def _label(url: str) -> str:
    """The database's name in messages: host, port and database, never a user or password."""
    parts = urlsplit(url)
    host = parts.hostname or "localhost"
    port = f":{parts.port}" if parts.port else ""
    return f"postgresql://{host}{port}{parts.path}"


def _conninfo(url: str) -> str:
    """The libpq URI of ``url`` (``postgresql+psycopg://`` as SQLAlchemy writes it, too)."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.lower().split("+")[0] not in ("postgresql", "postgres"):
        raise AKConfigError(f"A PostgreSQL store needs a postgresql:// URL, got {_label(url)!r}.")
    return f"postgresql://{rest}"


class PostgreSQLPageBackend(PageBackend):
    """The page backend of one PostgreSQL database (the tables in its ``search_path``)."""

    def __init__(self, url: str, *, statement_timeout: float = STATEMENT_TIMEOUT_SECONDS) -> None:
        """Remember where the database is; nothing is connected yet.

        Reading never creates nor changes a table: until the first write, a database without
        the store's tables reads as an empty store.

        Args:
            url: ``postgresql://user:password@host:port/database`` (libpq parameters such as
                ``?options=-csearch_path%3Dkb`` are passed on).
            statement_timeout: Seconds one statement may take (``0``: no bound).

        Raises:
            AKConfigError: Not a ``postgresql://`` URL.
            MissingExtraError: psycopg is not installed (the ``postgres`` extra).
        """
        try:
            import psycopg  # noqa: F401 - the SDK is needed from the first call on
        except ImportError as exc:
            raise missing_extra("psycopg", "postgres", feature="PostgreSQLKnowledgeStore") from exc
        self._conninfo = _conninfo(url)
        self.label = _label(url)
        self._timeout_ms = int(statement_timeout * 1000)
        self._conn: psycopg.Connection[Any] | None = None
        self._has_tables = False
        self._rev = -1  # the newest revision polled; -1: nothing polled yet
        self._polled: dict[str, tuple[PageRecord, str]] = {}  # rows the last poll selected
        self._in_transaction = False
        self._sent: list[str] = []  # the ids of the commits the open transaction applied
        self._transaction: psycopg.Connection[Any] | None = None  # the open transaction's
        self._pruned = False  # whether old commit ids were forgotten since this object opened

    @property
    def url(self) -> str:
        """The libpq URI the backend connects with (it may hold a password: never log it)."""
        return self._conninfo

    # -- the connection ------------------------------------------------------------------

    def _connection(self) -> psycopg.Connection[Any]:
        if self._conn is None or self._conn.closed:
            import psycopg

            try:
                conn = psycopg.connect(self._conninfo, autocommit=True, connect_timeout=10)
                conn.execute(f"SET statement_timeout = {self._timeout_ms}")
                conn.execute(f"SET idle_in_transaction_session_timeout = {self._timeout_ms}")
            except psycopg.Error as exc:
                raise self._error(exc) from exc
            self._conn = conn
        return self._conn

    def _error(self, exc: Exception) -> OSError:
        """The protocol's error for a database error (the connection is dropped when lost)."""
        import psycopg

        cause = " ".join(str(exc).split()) or type(exc).__name__
        if isinstance(
            exc, psycopg.errors.InsufficientPrivilege | psycopg.errors.ReadOnlySqlTransaction
        ):
            return StoreAccessError(
                self.label, None, f"the database role may not write ({cause})", writing=True
            )
        if isinstance(exc, psycopg.errors.QueryCanceled):
            return TimeoutError(f"a statement took too long ({cause})")
        if isinstance(exc, psycopg.OperationalError):
            self._drop()
            return ConnectionError(cause)
        return OSError(cause)

    def _drop(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._conn.close()
        self._conn = None

    @override
    def close(self) -> None:
        self._drop()

    def _tables(self, conn: psycopg.Connection[Any]) -> bool:
        """Whether the store's tables exist (looked up, never created, until they do)."""
        if not self._has_tables:
            found = conn.execute("SELECT to_regclass('pages') IS NOT NULL").fetchone()
            self._has_tables = bool(found and found[0])
        return self._has_tables

    # -- reading -------------------------------------------------------------------------

    def _reading(self, query: Callable[[psycopg.Connection[Any]], _T], empty: _T) -> _T:
        """Run a read (``empty`` before the tables exist), again if the connection had died.

        A connection that died between calls (a server restart, a pooler's idle timeout) is
        replaced once; never inside a change's transaction.
        """
        import psycopg

        for attempt in range(2):
            try:
                conn = self._connection()
                return query(conn) if self._tables(conn) else empty
            except psycopg.Error as exc:
                error = self._error(exc)
                if attempt or self._in_transaction or not isinstance(error, ConnectionError):
                    raise error from exc
        raise AssertionError("unreachable")  # pragma: no cover

    @override
    def poll(self) -> Mapping[str, str | None]:
        # one statement, one snapshot: rows and deletions above the newest revision seen
        rows: list[tuple[Any, ...]] = self._reading(
            lambda conn: conn.execute(
                f"SELECT {_COLUMNS} FROM pages WHERE rev > %(rev)s UNION ALL "
                "SELECT id, NULL, NULL, NULL, NULL, NULL, rev FROM page_deletions "
                "WHERE rev > %(rev)s AND %(rev)s >= 0 ORDER BY rev",
                {"rev": self._rev},
            ).fetchall(),
            [],
        )
        changed: dict[str, str | None] = {}
        self._polled = {}
        for values in rows:  # in revision order: the newest word on a page wins
            page_id, rev = values[0], int(values[-1])
            self._rev = max(self._rev, rev)
            if values[1] is None:
                changed[page_id] = None
                self._polled.pop(page_id, None)
            else:
                changed[page_id] = str(rev)
                self._polled[page_id] = (_record(values), str(rev))
        self._rev = max(self._rev, 0)
        return changed

    @override
    def read(self, page_ids: Sequence[str]) -> Mapping[str, tuple[PageRecord, str]]:
        found = {i: self._polled[i] for i in page_ids if i in self._polled}
        rest = [i for i in page_ids if i not in found]
        self._polled = {}

        def select(conn: psycopg.Connection[Any]) -> list[Any]:
            rows: list[tuple[Any, ...]] = []
            for start in range(0, len(rest), _CHUNK):
                part = rest[start : start + _CHUNK]
                query = f"SELECT {_COLUMNS} FROM pages WHERE id = ANY(%s)"
                rows += conn.execute(query, (part,)).fetchall()
            return rows

        selected: list[tuple[Any, ...]] = self._reading(select, []) if rest else []
        for values in selected:
            found[values[0]] = (_record(values), str(values[-1]))
        return found

    @override
    def recent_log(self, limit: int) -> builtins.list[LogEntry]:
        rows: list[tuple[Any, ...]] = self._reading(
            lambda conn: conn.execute(
                "SELECT date, operation, what, pages FROM log ORDER BY seq DESC LIMIT %s",
                (max(0, limit),),
            ).fetchall(),
            [],
        )
        return [LogEntry(d, op, what, tuple(json.loads(p))) for d, op, what, p in rows]

    @override
    def overview(self) -> str:
        found = self._reading(
            lambda conn: conn.execute("SELECT value FROM meta WHERE key = 'overview'").fetchone(),
            None,
        )
        return str(found[0]) if found else ""

    def author_of(self, page_id: str) -> str | None:
        """Who wrote the page's current version, as the commit named them (``None``: unknown).

        Args:
            page_id: ``type/slug``.
        """
        found = self._reading(
            lambda conn: conn.execute(
                "SELECT author FROM pages WHERE id = %s", (page_id,)
            ).fetchone(),
            None,
        )
        return None if found is None else found[0]

    # -- writing -------------------------------------------------------------------------

    @override
    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """One transaction holding the store's advisory lock: writers everywhere queue."""
        import psycopg

        conn, created = self._begin()
        self._in_transaction, self._transaction = True, conn
        self._sent = []
        try:
            yield
        except BaseException:
            self._in_transaction = False
            with contextlib.suppress(psycopg.Error):
                conn.execute("ROLLBACK")
            if created:
                self._has_tables = False  # the rollback undid the tables' creation
            raise
        self._in_transaction = False
        try:
            conn.execute("COMMIT")
        except psycopg.Error as exc:
            if created:
                self._has_tables = False
            if isinstance(exc, psycopg.OperationalError) and self._sent and self._landed():
                return  # the answer to COMMIT was lost, not the commit
            raise self._error(exc) from exc

    def _begin(self) -> tuple[psycopg.Connection[Any], bool]:
        """Open the transaction and take the lock (on a fresh connection if the old one died)."""
        import psycopg

        for attempt in range(2):
            conn = self._connection()
            try:
                conn.execute("BEGIN")
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK_KEY,))
                created = False
                if not self._tables(conn):
                    conn.execute(_SCHEMA)
                    self._has_tables = created = True
                if not self._pruned:
                    conn.execute(
                        f"DELETE FROM commits WHERE at < now() - interval '{_COMMITS_KEPT}'"
                    )
                    self._pruned = True
                return conn, created
            except psycopg.Error as exc:
                with contextlib.suppress(psycopg.Error):
                    conn.execute("ROLLBACK")
                self._has_tables = False
                error = self._error(exc)
                if attempt or not isinstance(error, ConnectionError):
                    raise error from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def _landed(self) -> bool:
        """Whether the commits sent in the transaction whose COMMIT went unanswered were kept."""
        self._drop()
        with contextlib.suppress(Exception):
            conn = self._connection()
            found = conn.execute(
                "SELECT count(*) FROM commits WHERE id = ANY(%s)", (self._sent,)
            ).fetchone()
            return bool(found and found[0] == len(self._sent))
        return False

    @override
    @own_transaction
    def commit(self, commit: Commit) -> Mapping[str, str]:
        import psycopg

        conn = self._conn
        if conn is None or conn.closed or conn is not self._transaction:  # lost mid-change
            raise ConnectionError(f"the connection to {self.label} was lost during the change")
        try:
            tokens = self._apply(conn, commit)
        except psycopg.Error as exc:
            raise self._error(exc) from exc
        self._sent.append(commit.id)
        return tokens

    def _apply(self, conn: psycopg.Connection[Any], commit: Commit) -> dict[str, str]:
        done = conn.execute("SELECT tokens FROM commits WHERE id = %s", (commit.id,)).fetchone()
        if done is not None:  # sent again: its answer was lost
            return dict(json.loads(done[0]))
        ids = [write.id for write in commit.pages]
        current = dict(
            conn.execute(
                "SELECT id, rev FROM pages WHERE id = ANY(%s) FOR UPDATE", (ids,)
            ).fetchall()
        )
        for write in commit.pages:
            rev = current.get(write.id)
            if (None if rev is None else str(rev)) != write.expected:
                raise WriteConflictError(f"{write.id} changed since it was read", write.id)
        tokens: dict[str, str] = {}
        for write in commit.pages:
            conn.execute("DELETE FROM links WHERE source = %s", (write.id,))
            if write.page is None:
                conn.execute("DELETE FROM pages WHERE id = %s", (write.id,))
            else:
                tokens[write.id] = self._put_row(conn, write.page, commit.author)
        if commit.log is not None:
            entry = commit.log
            conn.execute(
                "INSERT INTO log (date, operation, what, pages, author) "
                "VALUES (%s, %s, %s, %s, %s)",
                (entry.date, entry.operation, entry.what, json.dumps(list(entry.pages)),
                 commit.author),
            )  # fmt: skip
        if commit.overview is not None:
            conn.execute(
                "INSERT INTO meta (key, value) VALUES ('overview', %s) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (commit.overview,),
            )
        conn.execute(
            "INSERT INTO commits (id, tokens) VALUES (%s, %s)", (commit.id, json.dumps(tokens))
        )
        return tokens

    def _put_row(self, conn: psycopg.Connection[Any], page: PageRecord, author: str | None) -> str:
        """Write one page's row and its links; return the revision the trigger gave it."""
        entry = make_entry(page.id, page.type, page.slug, page.title, page.fields, page.content)
        info = entry.info
        stamped = conn.execute(
            "INSERT INTO pages (id, type, slug, title, fields, content, status, description, "
            "author) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (id) DO UPDATE SET "
            "title = excluded.title, fields = excluded.fields, content = excluded.content, "
            "status = excluded.status, description = excluded.description, "
            "author = excluded.author RETURNING rev",
            (page.id, page.type, page.slug, page.title, json.dumps(dict(page.fields)),
             page.content, info.status, info.description, author),
        ).fetchone()  # fmt: skip
        assert stamped is not None  # RETURNING gives the row
        if entry.links:
            with conn.cursor() as cursor:
                cursor.executemany(
                    "INSERT INTO links (source, target) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                    [(page.id, target) for target in entry.links],
                )
        return str(stamped[0])


class PostgreSQLKnowledgeStore(PagesStore):
    """A :class:`KnowledgeStore` in a PostgreSQL database, shared by many writers."""

    def __init__(
        self,
        url: str,
        page_types: Sequence[PageType] | None = None,
        *,
        embedder: Embedder | str | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        author: str | None = None,
        statement_timeout: float = STATEMENT_TIMEOUT_SECONDS,
    ) -> None:
        """Open the store; nothing is connected until the first call.

        Reading never creates nor changes a table: the first write creates the store's tables
        (a role that may create them in the schema), later writers need only row privileges.

        Args:
            url: ``postgresql://user:password@host:port/database``.
            page_types: Declared page types, besides the built-ins.
            embedder: Makes ``search()`` hybrid (see :class:`PagesStore`).
            cache_dir: The vector cache root (see :mod:`agentkernel.retrieval._vectorcache`).
            author: Who this store's changes are by, kept with each page and log entry.
            statement_timeout: Seconds one statement may take (``0``: no bound).

        Raises:
            AKConfigError: Not a ``postgresql://`` URL.
            KnowledgeStoreError: An invalid page type declaration.
        """
        super().__init__(
            PostgreSQLPageBackend(url, statement_timeout=statement_timeout),
            page_types,
            embedder=embedder,
            cache_dir=cache_dir,
            author=author,
        )
