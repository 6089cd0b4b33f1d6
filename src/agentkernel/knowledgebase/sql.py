"""``SQLManager``: any SQLAlchemy database served read-only to agents.

Requires the ``sql`` extra (SQLAlchemy 2 and ``sqlglot``) plus the database's own driver
(``psycopg`` for PostgreSQL, ``duckdb-engine`` for DuckDB; SQLite needs nothing)::

    from agentkernel.knowledgebase.sql import SQLManager

    kb = SQLManager("postgresql+psycopg://reader@db/warehouse", derives_schema=True)
    kb.query("SELECT name, status FROM clients WHERE status = 'active'")  # LIMIT 3 appended

The URL comes from the constructor, else from ``AGENTKERNEL_SQL_URL`` (read when the manager
is constructed, never at import).

Read-only is enforced twice. First every statement passes the same guard as Starburst (see
``agentkernel.knowledgebase._sql.guard``: one read-only statement, parsed in the database's
dialect, calling only functions on the dialect's allow-list or in ``allowed_functions``; a
SELECT without a LIMIT gets ``LIMIT <limit>``). Then the database session itself is
read-only, so a write that slipped past parsing is refused by the database: PostgreSQL by
``default_transaction_read_only`` set on connect and ``BEGIN READ ONLY`` (the driver's
``read_only`` setting); MySQL/MariaDB by ``SET TRANSACTION READ ONLY`` (not tested here);
SQLite by ``mode=ro`` and ``PRAGMA query_only``; DuckDB by ``read_only`` with
``enable_external_access`` off. A second judge asks the database what an accepted query's
names resolve to and refuses a user's function or operator (``_sql.pg_resolve``,
``_sql.duckdb_resolve``). Least privilege is checked when a PostgreSQL connection opens
(``_sql.sessions``): a superuser or a member of the file and program roles is refused unless
``allow_privileged_role=True``.

Limits (``agentkernel.knowledgebase._limits``, what they guarantee in ``docs/sql.md``): every
statement is stopped after ``timeout_seconds`` (default 30 s) where its work runs
(PostgreSQL's ``statement_timeout`` and a client cancel; SQLite's progress handler; DuckDB's
``interrupt()``, then the kill of its process), rows are read in batches (a server-side
cursor on PostgreSQL unless the result is small by construction, ``bounded.small``) and
cut at a row cap and at ``max_result_bytes`` (default 1 MB of record text), long values are
cut in the database (``_sql.bounded``), and a notice says what was cut. DuckDB runs in a
process of its own (``_sql.duckdb_process``, started on the first query), whose memory may
grow only ``worker_memory_mb`` above its idle state and which is killed and started again
when a query overruns its limit.

Every transaction is rolled back, never committed. Other dialects are refused at
construction unless ``enforce_session_read_only=False`` (then only the guard and the rollback
protect the data; a WARNING says so).

Rows come back as records (see ``agentkernel.knowledgebase._sql.records``). With
``derives_schema=True`` the manager describes itself from the database: its tables and views
with their columns, so ``get_schemas()`` needs no ``add_schema()`` call.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from agentkernel.errors import AKConfigError, missing_extra
from agentkernel.knowledgebase import _limits
from agentkernel.knowledgebase.errors import SQLQueryError, SQLRefusedError
from agentkernel.knowledgebase.model import Record

try:
    import sqlalchemy as sa
    import sqlalchemy.exc as sa_exc
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise missing_extra("sqlalchemy", "sql", feature="SQLManager") from exc

from agentkernel.knowledgebase._sql import bounded
from agentkernel.knowledgebase._sql.backend import SQLBackend
from agentkernel.knowledgebase._sql.connections import SQLConnections
from agentkernel.knowledgebase._sql.describe import describe_tables
from agentkernel.knowledgebase._sql.duckdb_process import (
    DEFAULT_MEMORY_MB,
    DuckDBProcess,
    WorkerTimeout,
    compiled,
)
from agentkernel.knowledgebase._sql.guard import ACCEPTED, GuardedStatement
from agentkernel.knowledgebase._sql.pg_resolve import PostgresResolver
from agentkernel.knowledgebase._sql.records import row_to_record
from agentkernel.knowledgebase._sql.sessions import (
    READ_ONLY_ROLE_SQL,
    postgres_session,
    privileged_message,
    read_only_url_and_options,
    scrub_path,
    sqlite_locked_down,
)

__all__ = ["READ_ONLY_ROLE_SQL", "SQLManager", "SQLQueryError", "SQLRefusedError"]

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
_CUT_VALUES = ("postgresql", "duckdb", "sqlite")  # long values cut in the database


class SQLManager(SQLBackend):
    """Read-only SQL over any SQLAlchemy URL (PostgreSQL, DuckDB, SQLite, ...)."""

    _server_time_limit = "the server's statement_timeout"

    def __init__(
        self,
        url: str | sa.URL | None = None,
        *,
        name: str = "sql",
        description: str | None = None,
        derives_schema: bool = False,
        db_schema: str | None = None,
        max_rows: int = 1000,
        timeout_seconds: float | None = _limits.DEFAULT_TIMEOUT_SECONDS,
        max_result_bytes: int | None = _limits.DEFAULT_MAX_RESULT_BYTES,
        max_tables: int = 100,
        enforce_session_read_only: bool = True,
        allowed_functions: Iterable[str] = (),
        allow_privileged_role: bool = False,
        engine_options: Mapping[str, Any] | None = None,
        worker_memory_mb: int | None = DEFAULT_MEMORY_MB,
    ) -> None:
        """Configure the backend and create its engine (connections open on first use).

        Args:
            url: A SQLAlchemy URL; else ``AGENTKERNEL_SQL_URL``.
            name: The backend name the tools use.
            description: What the agent reads to choose this backend.
            derives_schema: Describe tables and columns from the database in ``schema()``.
            db_schema: The database schema to describe (default: the connection's default).
            max_rows: Most rows returned for a statement carrying its own LIMIT.
            timeout_seconds: Stop a statement running longer than this, where it runs
                (see the class doc); ``None`` turns the limit off.
            max_result_bytes: Most bytes of record text a result carries; the rows after
                are not read, and a notice says so. ``None`` turns the cap off.
            max_tables: Most tables described by the derived schema.
            enforce_session_read_only: Refuse a dialect whose sessions this manager cannot
                make read-only; ``False`` accepts it with a WARNING.
            allowed_functions: Functions the statement guard accepts besides the dialect's
                built-ins without side effects (``agentkernel.knowledgebase._sql.functions``):
                ``"fn"`` for an unqualified call, ``"schema.fn"`` for a qualified one. List
                only functions that change nothing and read no files.
            allow_privileged_role: Connect even as a PostgreSQL role that may read or
                write server files or run programs (a superuser, say).
            engine_options: Extra keyword arguments for ``sqlalchemy.create_engine``.
            worker_memory_mb: DuckDB: how far the memory of the process that runs the
                queries may grow above its idle state (``None``: no bound).

        Raises:
            AKConfigError: No URL, an unparsable URL or one whose dialect or driver is not
                installed, an in-memory database, a dialect without session-level read-only
                while ``enforce_session_read_only`` holds, a limit that is not a positive
                number, or an invalid name in ``allowed_functions``.
        """
        super().__init__(
            name,
            max_rows,
            timeout_seconds,
            max_result_bytes,
            allowed_functions,
            derives_schema=derives_schema,
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
        self.max_tables = max_tables
        self.enforce_session_read_only = enforce_session_read_only
        self.allow_privileged_role = allow_privileged_role
        self._engine_options = dict(engine_options or {})
        self._engine: sa.Engine | None = None
        self._resolver = (
            PostgresResolver(self.allowed_functions) if self.backend == "postgresql" else None
        )
        self._connections = SQLConnections(
            lambda: self.engine,
            self.backend,
            self.url.database or "",
            self.timeout_seconds,
            self._resolver,
            self._timeout_message,
        )
        self.worker_memory_mb = worker_memory_mb
        self._worker: DuckDBProcess | None = None
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
        url, options = read_only_url_and_options(
            self.url, self._engine_options, self.backend, self.backend_name
        )
        self.close()
        try:
            self._engine = sa.create_engine(url, **options)
        except (sa_exc.NoSuchModuleError, ImportError) as exc:  # a dialect or driver not here
            raise AKConfigError(
                f"SQLManager '{self.backend_name}': cannot load the SQLAlchemy dialect or "
                f"driver for {self.url.drivername!r} ({exc}); install it or fix the URL."
            ) from exc
        if self.backend == "postgresql":
            sa.event.listen(self._engine, "connect", self._postgres_session)
        elif self.backend == "sqlite":
            sa.event.listen(self._engine, "connect", sqlite_locked_down)
        elif self.backend == "duckdb":  # queries run in a process of their own
            config = dict(options.get("connect_args", {}).get("config", {}))
            self._worker = DuckDBProcess(
                self.url.database or "",
                config,
                self.allowed_functions,
                self.worker_memory_mb,
                lambda text: scrub_path(text, self.backend, self.url.database or ""),
            )

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
            derived["tables"] = describe_tables(
                None if self._worker else self.engine, self._run, self.db_schema, self.max_tables
            )
        return derived

    def _parameters(self, params: Any) -> Mapping[str, Any] | None:
        if params is not None and not isinstance(params, Mapping):
            raise SQLQueryError("params must be a mapping of :name placeholders to values.")
        return params

    def _execute(
        self, guarded: GuardedStatement, params: Mapping[str, Any] | None, cap: int, row_cap: str
    ) -> list[Record]:
        if self._worker is not None:
            return self._worker_read(guarded, params, cap, row_cap)
        if params:
            stream = self.backend == "postgresql" and guarded.kind in ("select", "values")
            with self._connections.bound(
                guarded.sql, params, stream=stream, check=guarded.query
            ) as result:
                if not result.returns_rows:
                    return []
                keys, deadline = list(result.keys()), self._deadline_at()
                return self._records(keys, result.fetchmany, cap, row_cap, None, deadline)
        return self._read(guarded, cap, row_cap)

    def close(self) -> None:
        """Dispose of the engine's connections (and DuckDB's process); the next query opens anew."""
        engine, self._engine = self._engine, None
        if engine is not None:
            engine.dispose()
        worker, self._worker = self._worker, None
        if worker is not None:
            worker.stop()

    def _worker_read(
        self, guarded: GuardedStatement, params: Mapping[str, Any] | None, cap: int, row_cap: str
    ) -> list[Record]:
        """Run an accepted statement in DuckDB's own process (``_sql.duckdb_process``)."""
        worker = self._worker
        if worker is None:  # closed meanwhile
            self.connect()
            worker = self._worker
        assert worker is not None
        worker.start()  # a new process's start-up is not the query's time
        deadline = self._deadline_at()
        sql, values = compiled(self.engine.dialect, guarded.sql, params)
        query_kind = guarded.kind in ("select", "values")
        try:
            return worker.read(
                deadline,
                (sql, values, guarded.query),
                self.max_result_bytes if query_kind else None,
                cap + 1 if query_kind else None,
                (cap, row_cap, self._source_label()),
            )
        except (WorkerTimeout, _limits.DeadlinePassed) as exc:
            raise SQLQueryError(self._timeout_message()) from exc

    # -- internals -----------------------------------------------------------------------

    def _run(
        self, sql: str, params: Mapping[str, Any] | None = None, cap: int | None = None
    ) -> tuple[list[str], list[Sequence[Any]]]:
        """Execute SQL in a read-only transaction that is always rolled back.

        This is the path below the guard: it does not parse. Tests call it directly to show
        that the database session itself refuses writes. With ``params``, SQLAlchemy binds
        ``:name``. The time limit applies; the byte cap does not (see ``query``).
        """
        if self._worker is not None:
            sql, values = compiled(self.engine.dialect, sql, params)
            self._worker.start()
            try:
                columns, rows = self._worker.request(self._deadline_at(), "run", sql, values, cap)
            except WorkerTimeout as exc:
                raise SQLQueryError(self._timeout_message()) from exc
            return columns, [tuple(row) for row in rows]
        if params:
            return self._connections.run_bound(sql, params, cap)
        with self._connections.cursor() as cursor:
            cursor.execute(sql)
            if cursor.description is None:
                return [], []
            columns = [str(column[0]) for column in cursor.description]
            rows = cursor.fetchmany(cap) if cap else cursor.fetchall()
            return columns, [tuple(row) for row in rows]

    def _read(self, guarded: GuardedStatement, cap: int, row_cap: str) -> list[Record]:
        """Run an accepted statement and read its rows in batches, up to the caps.

        A query on PostgreSQL goes through a server-side cursor, so the server sends only
        the rows read; SQLite steps rows as they are fetched (DuckDB runs in a process of its
        own, ``_worker_read``). A query's long values are cut where the database computes
        them (``_sql.bounded``).
        """
        query_kind = guarded.kind in ("select", "values")
        server_side = self.backend == "postgresql" and query_kind

        def cursor_name(columns: list[Any]) -> str | None:  # server-side unless small
            small = guarded.limit_appended and bounded.small(cap, self.max_result_bytes, columns)
            return "ak_result" if server_side and not small else None

        described: list[Any] = []  # the query's columns, when the check described them
        with self._connections.cursor(
            name=cursor_name, check=guarded, described=described
        ) as cursor:
            deadline = self._deadline_at()  # for reading; the session's own limits run already
            shape = None
            if query_kind and self.max_result_bytes and self.backend in _CUT_VALUES:
                shape = self._shape(cursor, guarded.sql, described)
                shape = shape if shape is not None and any(shape.cut) else None  # all fixed
            if shape is not None:
                cursor.execute(bounded.wrapped_sql(self.backend, guarded.sql, shape))
            else:
                cursor.execute(guarded.sql)
            if cursor.description is None:
                return []
            columns = shape.names if shape else [str(column[0]) for column in cursor.description]
            return self._records(columns, cursor.fetchmany, cap, row_cap, shape, deadline)

    def _shape(self, cursor: Any, sql: str, described: list[Any]) -> bounded.Shape | None:
        """The columns of a query, as the check described them, else read without a row.

        A named cursor runs one statement only: it probes on a plain one.
        """
        probe = bounded.probe_sql(sql)
        if described:
            description = described
        elif getattr(cursor, "name", None):  # a server-side cursor runs one statement only
            with cursor.connection.cursor() as plain:
                plain.execute(probe)
                description = plain.description
        else:
            cursor.execute(probe)
            description = cursor.description
            cursor.fetchall()
        if not description:
            return None
        assert self.max_result_bytes is not None
        return bounded.shape_of(self.backend, description, self.max_result_bytes)

    def _records(
        self,
        columns: list[str],
        fetchmany: Callable[[int], Sequence[Any]],
        cap: int,
        row_cap: str,
        shape: bounded.Shape | None = None,
        deadline: float | None = None,
    ) -> list[Record]:
        source = self._source_label()

        def to_record(row: Any, number: int) -> Record:
            if shape is None:
                return row_to_record(columns, row, number, source)
            values, cut = bounded.rejoin(shape, row)
            record = row_to_record(columns, values, number, source)
            if cut:
                record["metadata"]["values_cut"] = cut
            return record

        return _limits.take_rows(
            fetchmany,
            to_record,
            max_rows=cap,
            max_bytes=self.max_result_bytes,
            row_cap=row_cap,
            deadline=deadline,
        )

    def _source_label(self) -> str:
        database = os.path.basename(self.url.database or "") or self.backend
        return f"{self.backend_name}:{self.backend}:{database}"

    def _postgres_session(self, dbapi_connection: Any, _record: Any) -> None:
        """Set up a new PostgreSQL connection (``connect`` event; see ``_sql.sessions``)."""
        postgres_session(
            dbapi_connection,
            timeout_seconds=self.timeout_seconds,
            allow_privileged_role=self.allow_privileged_role,
            refusal=functools.partial(
                privileged_message, self.backend_name, self.url.username or "the connecting role"
            ),
        )
