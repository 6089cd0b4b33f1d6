"""What every read-only SQL backend shares, whatever its database: the guard in front of it.

``SQLManager`` (SQLAlchemy) and ``StarburstManager`` (Trino) subclass :class:`SQLBackend`.
It declares ``query`` (SQL) and not ``writable``, checks the limit settings, runs every
statement through :func:`~agentkernel.knowledgebase._sql.guard.guard_statement` in the
backend's dialect, picks the row cap (the caller's ``limit``, or ``max_rows`` for a statement
carrying its own LIMIT) and words the time-limit message. The subclass binds parameters and
executes the accepted statement.
"""

from __future__ import annotations

import time
from abc import abstractmethod
from collections.abc import Iterable
from typing import Any

from agentkernel.knowledgebase._limits import check_limits
from agentkernel.knowledgebase._sql.guard import (
    GuardedStatement,
    allowed_function_names,
    guard_statement,
)
from agentkernel.knowledgebase.base import KnowledgeBase
from agentkernel.knowledgebase.model import KnowledgeCapabilities, Record


class SQLBackend(KnowledgeBase):
    """A read-only SQL knowledge base: the guard, the row cap and the time-limit message.

    Attributes:
        dialect: The ``sqlglot`` dialect statements are parsed in; ``None`` for generic SQL.
        max_rows: The most rows returned for a statement carrying its own LIMIT.
        timeout_seconds: Seconds a statement may run, or ``None`` for no limit.
        max_result_bytes: Bytes of record text a result may carry, or ``None`` for no cap.
        allowed_functions: Functions the guard accepts besides the dialect's built-ins.
        paramstyle: How ``params`` bind (the DB-API's names): ``named`` (a mapping for
            ``:name``) or ``qmark`` (a list for ``?``, in order).
    """

    dialect: str | None = None
    paramstyle: str = "named"
    # what stops a statement when timeout_seconds is None, for the message
    _server_time_limit = "the server's time limit"

    def __init__(
        self,
        name: str,
        max_rows: int,
        timeout_seconds: float | None,
        max_result_bytes: int | None,
        allowed_functions: Iterable[str],
        *,
        derives_schema: bool = False,
    ) -> None:
        """Declare read-only SQL and check the settings every SQL backend takes.

        Args:
            name: The backend name the tools use.
            max_rows: The most rows returned for a statement carrying its own LIMIT.
            timeout_seconds: Seconds a statement may run, or ``None`` for no limit.
            max_result_bytes: Bytes of record text a result may carry, or ``None``.
            allowed_functions: Function names the guard accepts besides the built-ins.
            derives_schema: ``schema()`` describes the database without ``add_schema()``.

        Raises:
            AKConfigError: A limit that is not a positive number, or an invalid name in
                ``allowed_functions``.
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
        self.max_rows = max_rows
        self.timeout_seconds, self.max_result_bytes = check_limits(
            f"{type(self).__name__} '{name}'", timeout_seconds, max_result_bytes
        )
        self.allowed_functions = allowed_function_names(allowed_functions)

    def query(self, statement: str, limit: int = 3, **kwargs: Any) -> list[Record]:
        """Run one read-only SQL statement in the backend's dialect.

        Args:
            statement: SELECT, WITH ... SELECT, VALUES, SHOW, DESCRIBE or EXPLAIN.
            limit: Appended as ``LIMIT <limit>`` to a SELECT that carries none; the most
                rows returned for statements that take no LIMIT.
            **kwargs: ``params``: values for the statement's placeholders (a mapping for
                ``:name`` with ``SQLManager``, a list for ``?`` with ``StarburstManager``).

        Returns:
            One record per row (see ``agentkernel.knowledgebase._sql.records``).

        Raises:
            SQLRefusedError: The statement is not exactly one read-only statement.
            SQLQueryError: The database reported an error, refused the credentials, or could
                not be reached; or ``params`` is not what the placeholders take.
        """
        guarded = guard_statement(
            statement, dialect=self.dialect, limit=limit, allowed_functions=self.allowed_functions
        )
        params = self._parameters(kwargs.get("params"))
        if guarded.limit_appended or not guarded.has_own_limit:
            return self._execute(guarded, params, limit, f"limit={limit}")
        return self._execute(guarded, params, self.max_rows, f"max_rows={self.max_rows}")

    @abstractmethod
    def _parameters(self, params: Any) -> Any:
        """``params`` as the driver binds them, or ``None``; raise ``SQLQueryError`` if unusable."""

    @abstractmethod
    def _execute(
        self, guarded: GuardedStatement, params: Any, cap: int, row_cap: str
    ) -> list[Record]:
        """Run an accepted statement and read at most ``cap`` rows (``row_cap`` names the cap)."""

    def _deadline_at(self) -> float | None:
        """The ``time.monotonic()`` time the limit ends at, counted from now, or ``None``."""
        return time.monotonic() + self.timeout_seconds if self.timeout_seconds else None

    def _timeout_message(self) -> str:
        limit = (
            f"timeout_seconds={self.timeout_seconds:g}"
            if self.timeout_seconds
            else self._server_time_limit
        )
        return (
            f"The statement was stopped after {limit}; "
            "ask for less (a narrower WHERE, fewer joins, a LIMIT)."
        )
