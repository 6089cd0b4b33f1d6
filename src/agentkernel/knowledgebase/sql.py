"""``SQLManager``: any SQLAlchemy database served read-only to agents.

Requires the ``sql`` extra (SQLAlchemy 2 and ``sqlglot``) plus the database's own driver
(``psycopg`` for PostgreSQL, ``duckdb-engine`` for DuckDB; SQLite needs nothing)::

    from agentkernel.knowledgebase.sql import SQLManager

    kb = SQLManager("postgresql+psycopg://reader@db/warehouse", derives_schema=True)
    kb.query("SELECT name, status FROM clients WHERE status = 'active'")  # LIMIT 3 appended

The URL comes from the constructor, else from ``AGENTKERNEL_SQL_URL`` (read when the manager
is constructed, never at import).

Read-only is enforced twice. First every statement passes the same guard as Starburst (see
``agentkernel.knowledgebase._sqlguard``: one read-only statement, parsed in the database's
dialect; a SELECT without a LIMIT gets ``LIMIT <limit>``). Then the database session itself
is read-only, so a write that slipped past parsing (a function with side effects, say) is
refused by the database:

==============  ===========================================================================
database        how the session is made read-only
==============  ===========================================================================
PostgreSQL      ``SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY`` on connect
                (``default_transaction_read_only``), and every transaction starts as
                ``BEGIN READ ONLY`` with psycopg 3 and psycopg2 (the driver's ``read_only``
                setting, no extra round trip), so a session default changed and committed
                behind the manager's back still cannot write
MySQL/MariaDB   ``SET TRANSACTION READ ONLY`` before every transaction (not tested here)
SQLite          a file database is opened with ``mode=ro``; every connection runs
                ``PRAGMA query_only = ON``
DuckDB          the connection is opened ``read_only`` with ``enable_external_access``
                off (no file or network reads or writes from SQL)
==============  ===========================================================================

Every transaction is rolled back, never committed (once, when the connection goes back
to the pool, as SQLAlchemy does for any connection). Other dialects are refused at
construction unless ``enforce_session_read_only=False`` (then only the guard and the rollback
protect the data; a WARNING says so).

Rows come back as records (see ``agentkernel.knowledgebase._sqlrecords``). With
``derives_schema=True`` the manager describes itself from the database: its tables and views
with their columns, so ``get_schemas()`` needs no ``add_schema()`` call.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from agentkernel.errors import AKConfigError, missing_extra
from agentkernel.knowledgebase._sqlguard import (
    ACCEPTED,
    allowed_function_names,
    guard_statement,
)
from agentkernel.knowledgebase._sqlrecords import rows_to_records
from agentkernel.knowledgebase.base import KnowledgeBase
from agentkernel.knowledgebase.errors import SQLQueryError, SQLRefusedError
from agentkernel.knowledgebase.model import KnowledgeCapabilities, Record

try:
    import sqlalchemy as sa
    import sqlalchemy.exc as sa_exc
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise missing_extra("sqlalchemy", "sql", feature="SQLManager") from exc

__all__ = ["SQLManager", "SQLQueryError", "SQLRefusedError"]

logger = logging.getLogger(__name__)

ENV_URL = "AGENTKERNEL_SQL_URL"

# SQLAlchemy backend name -> sqlglot dialect
_SQLGLOT_DIALECTS = {
    "postgresql": "postgres",
    "sqlite": "sqlite",
    "duckdb": "duckdb",
    "mysql": "mysql",
    "mariadb": "mysql",
    "mssql": "tsql",
    "oracle": "oracle",
    "snowflake": "snowflake",
    "bigquery": "bigquery",
    "trino": "trino",
    "redshift": "redshift",
    "clickhouse": "clickhouse",
    "databricks": "databricks",
}
_ENFORCED = ("postgresql", "mysql", "mariadb", "sqlite", "duckdb")


class SQLManager(KnowledgeBase):
    """Read-only SQL over any SQLAlchemy URL (PostgreSQL, DuckDB, SQLite, ...)."""

    def __init__(
        self,
        url: str | sa.URL | None = None,
        *,
        name: str = "sql",
        description: str | None = None,
        derives_schema: bool = False,
        db_schema: str | None = None,
        max_rows: int = 1000,
        timeout_seconds: float | None = None,
        max_tables: int = 100,
        enforce_session_read_only: bool = True,
        allowed_functions: Iterable[str] = (),
        engine_options: Mapping[str, Any] | None = None,
    ) -> None:
        """Configure the backend and create its engine (connections open on first use).

        Args:
            url: A SQLAlchemy URL; else ``AGENTKERNEL_SQL_URL``.
            name: The backend name the tools use.
            description: What the agent reads to choose this backend.
            derives_schema: Describe tables and columns from the database in ``schema()``.
            db_schema: The database schema to describe (default: the connection's default).
            max_rows: Most rows returned for a statement carrying its own LIMIT.
            timeout_seconds: PostgreSQL only: cancel a statement running longer than this
                (``SET statement_timeout`` once per connection, when it is opened); ``None``
                leaves the server's setting.
            max_tables: Most tables described by the derived schema.
            enforce_session_read_only: Refuse a dialect whose sessions this manager cannot
                make read-only; ``False`` accepts it with a WARNING.
            allowed_functions: Functions the statement guard accepts besides the dialect's
                built-ins without side effects (``agentkernel.knowledgebase._sqlfunctions``):
                ``"fn"`` for an unqualified call, ``"schema.fn"`` for a qualified one. List
                only functions that change nothing and read no files.
            engine_options: Extra keyword arguments for ``sqlalchemy.create_engine``.

        Raises:
            AKConfigError: No URL, an unparsable URL, an in-memory database, a dialect
                without session-level read-only while ``enforce_session_read_only`` holds, or
                an invalid name in ``allowed_functions``.
        """
        super().__init__(
            capabilities=KnowledgeCapabilities(
                kinds=["structured"],
                query=True,
                query_language="sql",
                writable=False,
                derives_schema=derives_schema,
            ),
            name=name,
        )
        raw = url if url is not None else os.environ.get(ENV_URL, "")
        if not raw:
            raise AKConfigError(
                f"SQLManager '{name}' needs a database URL: pass url= or set {ENV_URL}."
            )
        try:
            self.url = sa.make_url(raw)
        except (sa_exc.ArgumentError, ValueError) as exc:
            raise AKConfigError(f"SQLManager '{name}': not a SQLAlchemy URL ({exc}).") from exc
        self.backend = self.url.get_backend_name()
        self.dialect = _SQLGLOT_DIALECTS.get(self.backend)
        self.description = description
        self.db_schema = db_schema
        self.max_rows = max_rows
        self.timeout_seconds = timeout_seconds
        self.max_tables = max_tables
        self.enforce_session_read_only = enforce_session_read_only
        self.allowed_functions = allowed_function_names(allowed_functions)
        self._engine_options = dict(engine_options or {})
        self._engine: sa.Engine | None = None
        self.connect()

    @property
    def backend_name(self) -> str:
        """The backend name used by the tools."""
        return self.name or "sql"

    @property
    def engine(self) -> sa.Engine:
        """The SQLAlchemy engine, created again after ``close()``."""
        if self._engine is None:
            self.connect()
        assert self._engine is not None
        return self._engine

    def connect(self, **kwargs: Any) -> None:
        """Create the engine with read-only sessions; no connection is opened yet.

        Args:
            **kwargs: Unused; accepted for the interface.

        Raises:
            AKConfigError: The database cannot be served read-only (see the class doc).
        """
        if self.backend not in _ENFORCED:
            if self.enforce_session_read_only:
                raise AKConfigError(
                    f"SQLManager '{self.backend_name}': cannot make a {self.backend} session "
                    "read-only; pass enforce_session_read_only=False to rely on the statement "
                    "guard and rollback alone."
                )
            logger.warning(
                "SQLManager %r: %s sessions are not read-only; only the statement guard and "
                "rollback protect the data",
                self.backend_name,
                self.backend,
            )
        if self.dialect is None:
            logger.warning(
                "SQLManager %r: no SQL dialect known for %s; statements are parsed as generic SQL",
                self.backend_name,
                self.backend,
            )
        url, options = self._read_only_url_and_options()
        self.close()
        self._engine = sa.create_engine(url, **options)
        if self.backend == "postgresql":
            sa.event.listen(self._engine, "connect", self._postgres_read_only_session)
        elif self.backend == "sqlite":
            sa.event.listen(self._engine, "connect", _sqlite_query_only)

    def get_description(self) -> str:
        """Say what this backend holds and that it is read-only SQL.

        Returns:
            The configured description, or one naming the database kind and name.
        """
        if self.description:
            return self.description
        database = self.url.database or ""
        return (
            f"Read-only SQL over a {self.backend} database"
            + (f" ({os.path.basename(database)})" if database else "")
            + f" ({ACCEPTED})."
        )

    def _derived_schema(self) -> dict[str, Any]:
        derived: dict[str, Any] = {"engine": self.backend, "read_only": True}
        if self.dialect:
            derived["sql_dialect"] = self.dialect
        derived["statements"] = ACCEPTED
        if self.capabilities.derives_schema:
            derived["tables"] = self._describe_tables()
        return derived

    def query(self, statement: str, limit: int = 3, **kwargs: Any) -> list[Record]:
        """Run one read-only SQL statement in the database's dialect.

        Args:
            statement: SELECT, WITH ... SELECT, VALUES, SHOW, DESCRIBE or EXPLAIN.
            limit: Appended as ``LIMIT <limit>`` to a SELECT that carries none; the most
                rows returned for statements that take no LIMIT.
            **kwargs: ``params``: a mapping bound to ``:name`` placeholders.

        Returns:
            One record per row (see ``agentkernel.knowledgebase._sqlrecords``).

        Raises:
            SQLRefusedError: The statement is not exactly one read-only statement.
            SQLQueryError: The database reported an error or could not be reached.
        """
        guarded = guard_statement(
            statement, dialect=self.dialect, limit=limit, allowed_functions=self.allowed_functions
        )
        params = kwargs.get("params")
        if params is not None and not isinstance(params, Mapping):
            raise SQLQueryError("params must be a mapping of :name placeholders to values.")
        cap = limit if guarded.limit_appended or not guarded.has_own_limit else self.max_rows
        columns, rows = self._run(guarded.sql, params, cap)
        return rows_to_records(columns, rows, source=self._source_label())

    def close(self) -> None:
        """Dispose of the engine's connections; the next query creates a new engine."""
        engine, self._engine = self._engine, None
        if engine is not None:
            engine.dispose()

    # -- internals -----------------------------------------------------------------------

    def _run(
        self, sql: str, params: Mapping[str, Any] | None = None, cap: int | None = None
    ) -> tuple[list[str], list[Sequence[Any]]]:
        """Execute SQL in a read-only transaction that is always rolled back.

        This is the path below the guard: it does not parse. Tests call it directly to show
        that the database session itself refuses writes. The transaction is rolled back
        exactly once, when the connection goes back to the pool (SQLAlchemy's reset on
        return), whether the statement succeeded or failed.

        A statement without parameters (every statement an agent sends) goes straight to
        the pooled DB-API connection: the pool still applies the read-only connect
        listeners, pre-ping and the rollback, and the SQLAlchemy ``Connection``/``Result``
        layers, which would add about half the cost of a local query, are skipped. The
        statement is executed without a parameter collection, so a ``%`` in a literal is
        never taken for a placeholder. With ``params``, SQLAlchemy binds ``:name``.
        """
        if params:
            return self._run_bound(sql, params, cap)
        engine = self.engine
        dbapi = engine.dialect.loaded_dbapi
        try:
            connection = engine.raw_connection()
        except sa_exc.DBAPIError as exc:
            raise self._query_error(exc) from exc
        try:
            cursor = connection.cursor()
            try:
                if self.backend in ("mysql", "mariadb"):
                    cursor.execute("SET TRANSACTION READ ONLY")
                cursor.execute(sql)
                if cursor.description is None:
                    return [], []
                columns = [str(column[0]) for column in cursor.description]
                rows = cursor.fetchmany(cap) if cap else cursor.fetchall()
                return columns, [tuple(row) for row in rows]
            finally:
                cursor.close()
        except dbapi.Error as exc:
            interface_error = getattr(dbapi, "InterfaceError", None)  # not in every DB-API
            lost = (
                interface_error is not None and isinstance(exc, interface_error)
            ) or engine.dialect.is_disconnect(exc, connection.dbapi_connection, None)
            if lost:
                connection.invalidate(exc)
                raise SQLQueryError(
                    f"Could not reach the {self.backend} database: {_first_line(exc)}"
                ) from exc
            raise SQLQueryError(
                f"The {self.backend} database rejected the query: {_first_line(exc)}"
            ) from exc
        finally:
            connection.close()  # back to the pool, which rolls the transaction back

    def _run_bound(
        self, sql: str, params: Mapping[str, Any], cap: int | None
    ) -> tuple[list[str], list[Sequence[Any]]]:
        """``_run`` for a statement with ``:name`` parameters, bound by SQLAlchemy."""
        try:
            with self.engine.connect() as conn:  # closing it rolls the transaction back
                if self.backend in ("mysql", "mariadb"):
                    conn.exec_driver_sql("SET TRANSACTION READ ONLY")
                result = conn.execute(sa.text(sql), dict(params))
                if not result.returns_rows:
                    return [], []
                columns = list(result.keys())
                rows = result.fetchmany(cap) if cap else result.fetchall()
                return columns, [tuple(row) for row in rows]
        except sa_exc.SQLAlchemyError as exc:
            raise self._query_error(exc) from exc

    def _query_error(self, exc: sa_exc.SQLAlchemyError) -> SQLQueryError:
        if isinstance(exc, sa_exc.DBAPIError):
            detail = _first_line(exc.orig) if exc.orig is not None else _first_line(exc)
            if exc.connection_invalidated or isinstance(exc, sa_exc.InterfaceError):
                return SQLQueryError(f"Could not reach the {self.backend} database: {detail}")
            return SQLQueryError(f"The {self.backend} database rejected the query: {detail}")
        return SQLQueryError(f"The {self.backend} query failed: {_first_line(exc)}")

    def _read_only_url_and_options(self) -> tuple[sa.URL, dict[str, Any]]:
        url, options = self.url, dict(self._engine_options)
        database = url.database or ""
        in_memory = database in ("", ":memory:") or "mode=memory" in str(url.query)
        if self.backend in ("sqlite", "duckdb") and in_memory:
            raise AKConfigError(
                f"SQLManager '{self.backend_name}': an in-memory {self.backend} database starts "
                "empty and cannot be opened read-only; give the path of a database file."
            )
        if self.backend == "sqlite" and not database.startswith("file:"):
            url = url.set(
                database=f"file:{database}", query={**url.query, "mode": "ro", "uri": "true"}
            )
        elif self.backend == "sqlite":
            url = url.set(query={**url.query, "mode": "ro", "uri": "true"})
        if self.backend == "duckdb":
            connect_args = dict(options.get("connect_args", {}))
            config = dict(connect_args.get("config", {}))
            config.setdefault("enable_external_access", False)
            connect_args.update(read_only=True, config=config)
            options["connect_args"] = connect_args
        return url, options

    def _describe_tables(self) -> dict[str, list[str]]:
        inspector = sa.inspect(self.engine)
        try:
            names = list(inspector.get_table_names(schema=self.db_schema))
            names += list(inspector.get_view_names(schema=self.db_schema))
        except sa_exc.SQLAlchemyError as exc:
            raise SQLQueryError(f"Could not list the tables: {_first_line(exc)}") from exc
        tables: dict[str, list[str]] = {}
        for table in sorted(set(names))[: self.max_tables]:
            try:
                columns = [
                    f"{c['name']} {c['type']}"
                    for c in inspector.get_columns(table, schema=self.db_schema)
                ]
            except (sa_exc.SQLAlchemyError, NotImplementedError):
                columns = self._information_schema_columns(table)
            tables[table] = columns
        return tables

    def _information_schema_columns(self, table: str) -> list[str]:
        sql = (
            "SELECT column_name, data_type FROM information_schema.columns "
            "WHERE table_name = :table"
            + (" AND table_schema = :schema" if self.db_schema else "")
            + " ORDER BY ordinal_position"
        )
        params = {"table": table, **({"schema": self.db_schema} if self.db_schema else {})}
        _, rows = self._run(sql, params)
        return [f"{name} {kind}" for name, kind in rows]

    def _source_label(self) -> str:
        database = os.path.basename(self.url.database or "") or self.backend
        return f"{self.backend_name}:{self.backend}:{database}"

    def _postgres_read_only_session(self, dbapi_connection: Any, _record: Any) -> None:
        """Make a new PostgreSQL connection read-only for its whole life (``connect`` event).

        The session default makes every transaction read-only; the driver's own setting
        (psycopg 3 ``read_only``, psycopg2 ``readonly``) makes it begin every transaction
        with ``BEGIN READ ONLY`` as well, in the round trip that begins it anyway. The
        statement timeout is set here once instead of before every statement.
        """
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
            if self.timeout_seconds:
                millis = max(1, int(self.timeout_seconds * 1000))
                cursor.execute(f"SET statement_timeout = {millis}")
        finally:
            cursor.close()
        dbapi_connection.commit()
        for attribute in ("read_only", "readonly"):  # psycopg 3, psycopg2 / asyncpg adapter
            if hasattr(dbapi_connection, attribute):
                setattr(dbapi_connection, attribute, True)
                break


def _sqlite_query_only(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("PRAGMA query_only = ON")
    finally:
        cursor.close()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
