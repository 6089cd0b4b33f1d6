"""How ``SQLManager`` sets up and limits a database session, per database.

PostgreSQL: the role check, read-only transactions, the time limits and the ``search_path``
pinned to ``pg_catalog`` first (:func:`postgres_session`). SQLite: query-only, schema
distrust, no extensions, and a cap on the length of any string or blob
(:func:`sqlite_locked_down`). DuckDB: the configuration it is opened with
(``DUCKDB_CONFIG``). And the time limit of one statement where the server has none of its
own (:class:`Deadline`).
"""

from __future__ import annotations

import logging
import os
import socket
import sqlite3
import time
from collections.abc import Callable, Mapping
from typing import Any

from agentkernel.errors import AKConfigError
from agentkernel.knowledgebase import _limits
from agentkernel.knowledgebase.errors import SQLQueryError

logger = logging.getLogger(__name__)

PRIVILEGED_ROLES = ("pg_read_server_files", "pg_write_server_files", "pg_execute_server_program")
PRIVILEGE_CHECK = (
    "SELECT r.rolsuper, ARRAY(SELECT g.rolname::text FROM pg_roles g WHERE g.rolname IN ("
    + ", ".join(f"'{role}'" for role in PRIVILEGED_ROLES)
    + ") AND pg_has_role(current_user, g.oid, 'MEMBER') ORDER BY 1) "
    "FROM pg_roles r WHERE r.rolname = current_user"
)
READ_ONLY_ROLE_SQL = """\
CREATE ROLE kb_reader LOGIN PASSWORD '...';
GRANT CONNECT ON DATABASE <database> TO kb_reader;
GRANT USAGE ON SCHEMA public TO kb_reader;
GRANT SELECT ON ALL TABLES IN SCHEMA public TO kb_reader;
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT ON TABLES TO kb_reader;
ALTER ROLE kb_reader SET default_transaction_read_only = on;"""
# pg_catalog first: of two functions with the same arguments, the built-in is the one called
PIN_SEARCH_PATH = (
    "SELECT pg_catalog.set_config('search_path', pg_catalog.concat_ws(', ', 'pg_catalog', "
    "NULLIF(pg_catalog.current_setting('search_path'), '')), false)"
)
PG_GRACE_SECONDS = 0.5  # after the deadline's cancel, before the connection is dropped
SQLITE_STEPS = 1000  # SQLite VM instructions between two looks at the deadline
SQLITE_MAX_LENGTH = 16_000_000  # bytes of one string or blob SQLite may build (SQLITE_LIMIT_LENGTH)
DUCKDB_CONFIG = {
    "enable_external_access": False,
    "lock_configuration": True,
    "allow_community_extensions": False,
    "autoload_known_extensions": False,
    "autoinstall_known_extensions": False,
    "python_enable_replacements": False,  # FROM name never reads a Python variable
}


def privileged_message(name: str, user: str, superuser: bool, roles: list[str]) -> str:
    """Why a PostgreSQL connection was refused, with the SQL that creates a read-only role.

    Args:
        name: The manager's backend name.
        user: The role it connected as.
        superuser: The role is a superuser.
        roles: The privileged roles it is a member of.

    Returns:
        The message.
    """
    what = "a superuser" if superuser else "a member of " + ", ".join(roles)
    return (
        f"SQLManager '{name}' refused to connect as '{user}': it is {what}, "
        "so it could read or write the server's files or run programs whatever the "
        "statement guard decides. Connect as a read-only role, created by an "
        f"administrator with:\n{READ_ONLY_ROLE_SQL}\n"
        "or pass allow_privileged_role=True to connect as this role anyway."
    )


def postgres_session(
    dbapi_connection: Any,
    *,
    timeout_seconds: float | None,
    allow_privileged_role: bool,
    refusal: Callable[[bool, list[str]], str],
) -> None:
    """Check and set up a new PostgreSQL connection for its whole life (``connect`` event).

    The role is checked first (see ``SQLManager``). The session default makes every
    transaction read-only; the driver's own setting (psycopg 3 ``read_only``, psycopg2
    ``readonly``) makes it begin every transaction with ``BEGIN READ ONLY`` as well, in the
    round trip that begins it anyway. The time limits are set here once instead of before
    every statement, and ``pg_catalog`` is put first on the ``search_path``.

    Args:
        dbapi_connection: The new driver connection.
        timeout_seconds: The statement time limit, or ``None``.
        allow_privileged_role: Accept a role that may read server files or run programs.
        refusal: Words the refusal from (superuser, privileged roles held).

    Raises:
        SQLQueryError: The role may read or write server files or run programs and
            ``allow_privileged_role`` is false; the connection is closed.
    """
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute(PRIVILEGE_CHECK)
        superuser, roles = cursor.fetchone() or (False, [])
        if (superuser or roles) and not allow_privileged_role:
            cursor.close()
            dbapi_connection.close()
            raise SQLQueryError(refusal(bool(superuser), list(roles)))
        settings = ["SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY", PIN_SEARCH_PATH]
        if timeout_seconds:
            millis = max(1, int(timeout_seconds * 1000))
            settings += [
                f"SET statement_timeout = {millis}",
                f"SET idle_in_transaction_session_timeout = {millis}",
            ]
        info = getattr(dbapi_connection, "info", None)  # psycopg 3; psycopg2 has it direct
        version = getattr(info, "server_version", 0) or getattr(
            dbapi_connection, "server_version", 0
        )
        if int(version or 0) >= 140000:
            settings.append("SET client_connection_check_interval = 1000")
        # committed in the same round trip: the session's own idle_in_transaction timeout
        # (as short as timeout_seconds) must not end it between the settings and the commit
        cursor.execute("; ".join([*settings, "COMMIT"]))
    finally:
        if not dbapi_connection.closed:
            cursor.close()
    dbapi_connection.commit()  # nothing left to commit with psycopg 3; psycopg2 tracks its own
    for attribute in ("read_only", "readonly"):  # psycopg 3, psycopg2 / asyncpg adapter
        if hasattr(dbapi_connection, attribute):
            setattr(dbapi_connection, attribute, True)
            break


class Deadline:
    """The time limit of one statement where the server has none of its own.

    SQLite: a progress handler aborts the statement once the deadline has passed (it is
    stepped in this thread, so the handler sees every fetch as well). DuckDB: the shared
    watchdog calls the connection's ``interrupt()``. PostgreSQL: the watchdog cancels what
    the connection runs (besides the server's own ``statement_timeout`` per statement), and
    ``PG_GRACE_SECONDS`` later, if the server has not answered (a backend inside one long
    function call, building a 300 MB ``string_agg`` say, sees the cancel only when it is
    done), shuts the connection's socket down, so the waiting call fails at once and the
    connection is dropped; the backend ends when it next looks at its client. Others: the
    server's own limit. ``fired`` says whether this deadline stopped the statement, for the
    error message.
    """

    def __init__(self, backend: str, dbapi_connection: Any, seconds: float | None) -> None:
        self.backend, self.connection, self.seconds = backend, dbapi_connection, seconds
        self.fired = False
        self._cancel: Callable[[], None] | None = None
        self._cut: Callable[[], None] | None = None

    def __enter__(self) -> Deadline:
        if not self.seconds:
            return self
        if self.backend == "sqlite":
            end = time.monotonic() + self.seconds

            def past_deadline() -> bool:
                self.fired = time.monotonic() > end
                return self.fired

            self.connection.set_progress_handler(past_deadline, SQLITE_STEPS)
        elif self.backend in ("duckdb", "postgresql"):
            # PostgreSQL: statement_timeout stops each statement; this stops the whole
            # read (the check, the probe, every FETCH) at the deadline
            self._cancel = _limits.at_deadline(self.seconds, self._interrupt)
            if self.backend == "postgresql":
                self._cut = _limits.at_deadline(self.seconds + PG_GRACE_SECONDS, self._shutdown)
        return self

    def __exit__(self, *_exc: object) -> None:
        if self._cancel is not None:
            self._cancel()
        if self._cut is not None:
            self._cut()
        elif self.seconds and self.backend == "sqlite":
            self.connection.set_progress_handler(None, 0)

    def _shutdown(self) -> None:
        """Shut the PostgreSQL connection's socket down (the descriptor stays open)."""
        self.fired = True
        try:
            fileno = self.connection.fileno()
            with socket.socket(fileno=os.dup(fileno)) as sock:
                sock.shutdown(socket.SHUT_RDWR)
        except (OSError, ValueError, AttributeError):  # closed meanwhile: nothing to stop
            logger.debug("shutting a PostgreSQL socket down failed", exc_info=True)
        else:
            logger.warning("PostgreSQL connection dropped: no answer after the deadline")

    def _interrupt(self) -> None:
        self.fired = True
        if self.backend == "postgresql":
            self.connection.cancel()  # psycopg 3 and psycopg2
        else:
            self.connection.interrupt()


def run_statements(dbapi_connection: Any, *statements: str, fetch: bool = False) -> list[Any]:
    """Run statements on a fresh cursor of a DBAPI connection, closed whatever happens.

    Args:
        dbapi_connection: The driver's connection.
        *statements: SQL run in order.
        fetch: Return the rows of the last statement.

    Returns:
        Those rows; ``[]`` without ``fetch``.
    """
    cursor = dbapi_connection.cursor()
    try:
        for statement in statements:
            cursor.execute(statement)
        return list(cursor.fetchall()) if fetch else []
    finally:
        cursor.close()


def sqlite_locked_down(dbapi_connection: Any, _record: Any) -> None:
    """Make a new SQLite connection query-only, schema-distrusting, without extensions."""
    run_statements(dbapi_connection, "PRAGMA query_only = ON", "PRAGMA trusted_schema = OFF")
    if hasattr(dbapi_connection, "enable_load_extension"):  # absent in some Python builds
        dbapi_connection.enable_load_extension(False)
    if hasattr(dbapi_connection, "setlimit"):  # Python 3.11 and later
        dbapi_connection.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, SQLITE_MAX_LENGTH)


def statement_timeout(exc: BaseException) -> bool:
    """Whether PostgreSQL cancelled the statement for its ``statement_timeout``."""
    code = getattr(exc, "sqlstate", None) or getattr(exc, "pgcode", None)
    return code == "57014" and "statement timeout" in str(exc)


def first_line(exc: BaseException) -> str:
    """The first line of an error's text, or its type's name."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def scrub_path(text: str, backend: str, database: str) -> str:
    """An error's text with a SQLite or DuckDB file's path shown as its name only.

    Args:
        text: The error's text.
        backend: The SQLAlchemy backend name.
        database: The URL's database part (a path, or ``file:path?...``).

    Returns:
        The text without the file's absolute path or its folder.
    """
    if backend not in ("sqlite", "duckdb") or not database:
        return text
    if database.startswith("file:"):
        database = database[len("file:") :].partition("?")[0]
    full = os.path.abspath(database)
    for path in sorted({full, database, os.path.dirname(full)}, key=len, reverse=True):
        if path and path != os.sep:
            text = text.replace(path, os.path.basename(path) or "database")
    return text


def read_only_url_and_options(
    url: Any, engine_options: Mapping[str, Any], backend: str, name: str
) -> tuple[Any, dict[str, Any]]:
    """The SQLAlchemy URL and engine options that open a SQLite or DuckDB file read-only.

    Args:
        url: The ``sqlalchemy.URL`` the user gave.
        engine_options: The user's ``engine_options``.
        backend: The SQLAlchemy backend name.
        name: The manager's name, for the message.

    Returns:
        The URL (SQLite: ``file:...?mode=ro``) and options (DuckDB: ``read_only`` and
        ``DUCKDB_CONFIG`` under the user's own ``config``); other backends' unchanged.

    Raises:
        AKConfigError: An in-memory SQLite or DuckDB database (it starts empty).
    """
    options = dict(engine_options)
    database = url.database or ""
    in_memory = database in ("", ":memory:") or "mode=memory" in str(url.query)
    if backend in ("sqlite", "duckdb") and in_memory:
        raise AKConfigError(
            f"SQLManager '{name}': an in-memory {backend} database starts "
            "empty and cannot be opened read-only; give the path of a database file."
        )
    if backend == "sqlite" and not database.startswith("file:"):
        url = url.set(database=f"file:{database}", query={**url.query, "mode": "ro", "uri": "true"})
    elif backend == "sqlite":
        url = url.set(query={**url.query, "mode": "ro", "uri": "true"})
    if backend == "duckdb":
        connect_args = dict(options.get("connect_args", {}))
        config = {**DUCKDB_CONFIG, **connect_args.get("config", {})}
        connect_args.update(read_only=True, config=config)
        options["connect_args"] = connect_args
    return url, options
