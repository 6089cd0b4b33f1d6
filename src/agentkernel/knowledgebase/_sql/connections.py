"""How ``SQLManager`` runs a statement on a pooled connection: under the limits, errors translated.

A statement without parameters (every statement an agent sends) runs on a DB-API cursor
(:meth:`SQLConnections.cursor`); one with ``:name`` parameters through SQLAlchemy
(:meth:`SQLConnections.bound`). Both run under the statement's time limit
(:class:`~agentkernel.knowledgebase._sql.sessions.Deadline`), after the server's own check of
what an accepted query's names resolve to (PostgreSQL), and both turn a driver's error into a
``SQLQueryError`` whose text names no local path. The connection goes back to the pool at the
end, which rolls its transaction back.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
import sqlalchemy.exc as sa_exc

from agentkernel.knowledgebase import _limits
from agentkernel.knowledgebase._sql.guard import GuardedStatement
from agentkernel.knowledgebase._sql.pg_resolve import PostgresResolver
from agentkernel.knowledgebase._sql.sessions import (
    Deadline,
    first_line,
    scrub_path,
    statement_timeout,
)
from agentkernel.knowledgebase.errors import SQLQueryError

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SQLConnections:
    """Cursors and bound statements on one engine's pool, under one time limit.

    Attributes:
        engine: Returns the engine (created again after the manager's ``close()``).
        backend: SQLAlchemy's backend name (``postgresql``, ``sqlite``, ...).
        database: The database named by the URL (scrubbed from error messages).
        timeout_seconds: Seconds a statement may run, or ``None`` for no limit.
        resolver: The server's check of what a query's names resolve to (PostgreSQL).
        timeout_message: The message of a statement stopped by the time limit.
    """

    engine: Callable[[], sa.Engine]
    backend: str
    database: str
    timeout_seconds: float | None
    resolver: PostgresResolver | None
    timeout_message: Callable[[], str]

    @contextlib.contextmanager
    def cursor(
        self,
        name: str | Callable[[list[Any]], str | None] | None = None,
        check: GuardedStatement | None = None,
        described: list[Any] | None = None,
    ) -> Iterator[Any]:
        """A DB-API cursor on a pooled connection, under the time limit, errors translated.

        Statements without parameters (every statement an agent sends) go straight to the
        pooled DB-API connection: the pool still applies the connect listeners (read-only
        session, limits, the privilege check), pre-ping and the rollback when the
        connection goes back, and the SQLAlchemy ``Connection``/``Result`` layers, which
        would add about half the cost of a local query, are skipped. The statement is
        executed without a parameter collection, so a ``%`` in a literal is never taken for
        a placeholder. ``name`` opens a server-side cursor (PostgreSQL), or decides it from
        the columns the check described. ``check``: the
        accepted statement whose calls the server resolves, checked first (PostgreSQL);
        ``described`` receives its columns when the check described them (psycopg 3).
        """
        engine = self.engine()
        dbapi = engine.dialect.loaded_dbapi
        try:
            connection = engine.raw_connection()
        except sa_exc.DBAPIError as exc:
            raise self.query_error(exc) from exc
        deadline = Deadline(self.backend, connection.dbapi_connection, self.timeout_seconds)
        try:
            with deadline:
                if check is not None and check.query and self.resolver is not None:
                    columns = self.resolver.check(connection.dbapi_connection, check.query)
                    if described is not None and columns and check.query == check.sql:
                        described.extend(columns)
                if callable(name):
                    name = name(described or [])
                cursor = connection.cursor(name) if name else connection.cursor()
                try:
                    if self.backend in ("mysql", "mariadb"):
                        cursor.execute("SET TRANSACTION READ ONLY")
                    yield cursor
                finally:
                    try:
                        cursor.close()  # a server-side cursor: CLOSE, the rest is never sent
                    except dbapi.Error:
                        logger.debug("closing a %s cursor failed", self.backend, exc_info=True)
        except _limits.DeadlinePassed as exc:
            raise SQLQueryError(self.timeout_message()) from exc
        except dbapi.Error as exc:
            interface_error = getattr(dbapi, "InterfaceError", None)  # not in every DB-API
            lost = (
                interface_error is not None and isinstance(exc, interface_error)
            ) or engine.dialect.is_disconnect(exc, connection.dbapi_connection, None)
            if lost:
                connection.invalidate(exc)
                if deadline.fired:  # the deadline dropped the connection
                    raise SQLQueryError(self.timeout_message()) from exc
                raise SQLQueryError(
                    f"Could not reach the {self.backend} database: {self.scrub(exc)}"
                ) from exc
            if deadline.fired or statement_timeout(exc):
                raise SQLQueryError(self.timeout_message()) from exc
            raise SQLQueryError(
                f"The {self.backend} database rejected the query: {self.scrub(exc)}"
            ) from exc
        finally:
            connection.close()  # back to the pool, which rolls the transaction back

    def scrub(self, exc: BaseException) -> str:
        return scrub_path(first_line(exc), self.backend, self.database)

    def run_bound(
        self, sql: str, params: Mapping[str, Any], cap: int | None
    ) -> tuple[list[str], list[Sequence[Any]]]:
        """``_run`` for a statement with ``:name`` parameters, bound by SQLAlchemy."""
        with self.bound(sql, params) as result:
            if not result.returns_rows:
                return [], []
            rows = result.fetchmany(cap) if cap else result.fetchall()
            return list(result.keys()), [tuple(row) for row in rows]

    @contextlib.contextmanager
    def bound(
        self, sql: str, params: Mapping[str, Any], *, stream: bool = False, check: str = ""
    ) -> Iterator[Any]:
        """The SQLAlchemy result of a statement with ``:name`` parameters, under the limits.

        ``stream`` reads it through a server-side cursor (PostgreSQL). ``check``: the query
        whose calls the server resolves, checked first with its parameters written as
        literals (PostgreSQL). Closing the connection at the end rolls the transaction back.
        """
        deadline: Deadline | None = None
        try:
            with self.engine().connect() as conn:
                if stream:
                    conn = conn.execution_options(stream_results=True)
                if self.backend in ("mysql", "mariadb"):
                    conn.exec_driver_sql("SET TRANSACTION READ ONLY")
                dbapi_connection = conn.connection.dbapi_connection
                deadline = Deadline(self.backend, dbapi_connection, self.timeout_seconds)
                with deadline:
                    if check and self.resolver is not None:
                        self.resolver.check(dbapi_connection, self.with_literals(check, params))
                    yield conn.execute(sa.text(sql), dict(params))
        except sa_exc.SQLAlchemyError as exc:
            if (deadline is not None and deadline.fired) or statement_timeout(
                getattr(exc, "orig", None) or exc
            ):
                raise SQLQueryError(self.timeout_message()) from exc
            raise self.query_error(exc) from exc

    def with_literals(self, sql: str, params: Mapping[str, Any]) -> str:
        """``sql`` with its ``:name`` parameters written as literals, for the server's check."""
        try:
            statement = sa.text(sql).bindparams(**dict(params))
            return str(
                statement.compile(
                    dialect=self.engine().dialect, compile_kwargs={"literal_binds": True}
                )
            )
        except (sa_exc.SQLAlchemyError, TypeError, ValueError) as exc:
            raise SQLQueryError(
                f"A parameter cannot be checked as PostgreSQL resolves it: {first_line(exc)}"
            ) from exc

    def query_error(self, exc: sa_exc.SQLAlchemyError) -> SQLQueryError:
        if isinstance(exc, sa_exc.DBAPIError):
            detail = self.scrub(exc.orig) if exc.orig is not None else self.scrub(exc)
            if exc.connection_invalidated or isinstance(exc, sa_exc.InterfaceError):
                return SQLQueryError(f"Could not reach the {self.backend} database: {detail}")
            return SQLQueryError(f"The {self.backend} database rejected the query: {detail}")
        return SQLQueryError(f"The {self.backend} query failed: {first_line(exc)}")
