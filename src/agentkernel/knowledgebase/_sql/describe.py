"""The tables and columns ``SQLManager`` describes itself with (``derives_schema=True``).

Through SQLAlchemy's inspector where the database runs in this process, through
``information_schema`` queries where it does not (DuckDB runs in a process of its own,
``_sql.duckdb_process``) or where the inspector cannot list a table's columns.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import sqlalchemy as sa
import sqlalchemy.exc as sa_exc

from agentkernel.knowledgebase._sql.sessions import first_line
from agentkernel.knowledgebase.errors import SQLQueryError

Run = Callable[[str, Mapping[str, Any] | None], tuple[list[str], list[Sequence[Any]]]]


def describe_tables(
    engine: sa.Engine | None, run: Run, db_schema: str | None, max_tables: int
) -> dict[str, list[str]]:
    """Each table's and view's columns as ``"name type"``, the first ``max_tables`` by name.

    Args:
        engine: The engine to inspect, or ``None`` to ask ``information_schema`` only.
        run: Runs one statement with ``:name`` parameters (``SQLManager._run``).
        db_schema: The schema described, or ``None`` for the connection's default.
        max_tables: The most tables described.

    Returns:
        Table name to its columns.

    Raises:
        SQLQueryError: The tables could not be listed.
    """
    if engine is None:
        _, rows = run(
            "SELECT DISTINCT table_name FROM information_schema.tables WHERE table_schema = "
            + ("CAST(:schema AS VARCHAR)" if db_schema else "current_schema()"),
            {"schema": db_schema} if db_schema else None,
        )
        names = sorted(str(name) for (name,) in rows)[:max_tables]
        return {name: _columns(run, name, db_schema) for name in names}
    inspector = sa.inspect(engine)
    try:
        listed = list(inspector.get_table_names(schema=db_schema))
        listed += list(inspector.get_view_names(schema=db_schema))
    except sa_exc.SQLAlchemyError as exc:
        raise SQLQueryError(f"Could not list the tables: {first_line(exc)}") from exc
    tables: dict[str, list[str]] = {}
    for table in sorted(set(listed))[:max_tables]:
        try:
            columns = [
                f"{c['name']} {c['type']}" for c in inspector.get_columns(table, schema=db_schema)
            ]
        except (sa_exc.SQLAlchemyError, NotImplementedError):
            columns = _columns(run, table, db_schema)
        tables[table] = columns
    return tables


def _columns(run: Run, table: str, db_schema: str | None) -> list[str]:
    sql = (
        "SELECT column_name, data_type FROM information_schema.columns "
        "WHERE table_name = :table"
        + (" AND table_schema = :schema" if db_schema else "")
        + " ORDER BY ordinal_position"
    )
    params = {"table": table, **({"schema": db_schema} if db_schema else {})}
    _, rows = run(sql, params)
    return [f"{name} {kind}" for name, kind in rows]
