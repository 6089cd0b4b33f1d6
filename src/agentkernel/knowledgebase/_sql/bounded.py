"""Values cut where the database computes them, so no huge value reaches Python whole.

``max_result_bytes`` caps the record text of a result, but a driver hands over a row with
each of its values whole: one 700 MB blob would be read, converted and kept before any cap
applied. So ``SQLManager`` runs every SELECT and VALUES as::

    WITH ak_result(c1, ..., cn) AS (<the statement>)
    SELECT <c1 or NULL when long>, <c1 cut when long>, ... FROM ak_result

(``AS MATERIALIZED`` on PostgreSQL, so each row is built once; on DuckDB a subquery
``FROM (<the statement>) AS ak_result(c1, ...)``, which it plans faster than a CTE).

The column count (and on PostgreSQL and DuckDB the column types) come from a first look at
``SELECT * FROM (<the statement>) AS ak_probe LIMIT 0``, which reads no row. A column of a
fixed-size type (numbers, dates, booleans, ...) passes as it is; any other column is split
in two: the value itself when its text is at most ``per_value`` bytes (its type kept, so
JSON stays JSON), else NULL, and beside it the first ``per_value`` characters of its text
when it is longer (on PostgreSQL the text comes from ``format('%s', value)``, the type's
own output function, never a cast a user created). :func:`rejoin` puts each row back in the
statement's own shape and says which values were cut. ``per_value`` is the byte cap shared
by the columns, so one row's text stays near the cap, and a batch of rows near a few times
it.

Some values are built whole inside the database before any cut: SQLite refuses to build a
string or blob longer than ``sessions.SQLITE_MAX_LENGTH`` (an error, not a cut), PostgreSQL
builds it in the server's memory (stopped by ``statement_timeout``), DuckDB in the process's
own memory (see ``docs/sql.md``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

MIN_PER_VALUE = 256  # bytes a value may keep however many columns share the cap
SMALL_RESULT_BYTES = 16 * 2**20  # a result read without a server-side cursor (``small``)
ROW_OVERHEAD_BYTES = 4096  # markers and fixed-size values of one row, generously

# Types whose values have a small fixed size: never cut (PostgreSQL says so by typlen > 0).
_DUCKDB_FIXED = frozenset(
    {
        "BOOLEAN", "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT",
        "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE", "DATE", "TIME",
        "TIMESTAMP", "TIMESTAMP WITH TIME ZONE", "TIMESTAMP_S", "TIMESTAMP_MS",
        "TIMESTAMP_NS", "TIME WITH TIME ZONE", "INTERVAL", "UUID",
    }
)  # fmt: skip


@dataclass(frozen=True)
class Shape:
    """How the wrapped statement's columns map back to the statement's own.

    Attributes:
        names: The statement's column names, in order.
        cut: For each column, whether it was split in two (value, cut text).
        per_value: The most characters of a cut value's text.
    """

    names: list[str]
    cut: list[bool]
    per_value: int


def per_value_cap(max_bytes: int, columns: int) -> int:
    """The bytes one value may keep: the result cap shared by the columns, at least 256."""
    return max(MIN_PER_VALUE, max_bytes // max(1, columns))


def shape_of(backend: str, description: Sequence[Any], max_bytes: int) -> Shape:
    """Decide which columns to cut from a probe's cursor description.

    Args:
        backend: ``postgresql``, ``duckdb`` or ``sqlite``.
        description: The DB-API description of ``SELECT * ... LIMIT 0``.
        max_bytes: ``max_result_bytes``.

    Returns:
        The shape to wrap the statement in.
    """
    names = [str(column[0]) for column in description]
    cut = [_may_be_long(backend, column) for column in description]
    return Shape(names, cut, per_value_cap(max_bytes, len(names)))


def _may_be_long(backend: str, column: Any) -> bool:
    if backend == "postgresql":
        size = getattr(column, "internal_size", None)
        if size is None and len(column) > 3:
            size = column[3]
        return not (isinstance(size, int) and size > 0)
    if backend == "duckdb":
        return str(column[1]).upper() not in _DUCKDB_FIXED
    return True  # SQLite: any column may hold text or a blob


def small(rows: int, max_bytes: int | None, columns: Sequence[Any]) -> bool:
    """Whether ``rows`` rows of ``columns``, long values cut, fit in ``SMALL_RESULT_BYTES``.

    PostgreSQL reads such a result (the LIMIT the guard appended, every value cut to its
    share of ``max_bytes``, fixed-size values short) without a server-side cursor, which
    costs three round trips more (``DECLARE``, describing it, ``CLOSE``).

    Args:
        rows: The most rows of the result (the LIMIT the guard appended).
        max_bytes: ``max_result_bytes`` (``None``: nothing is cut, never small).
        columns: The result's columns (empty: unknown, never small).

    Returns:
        Whether a client-side cursor may hold the whole result.
    """
    if not max_bytes or not columns:
        return False
    row = max(max_bytes, len(columns) * MIN_PER_VALUE) + ROW_OVERHEAD_BYTES
    return rows * row <= SMALL_RESULT_BYTES


def probe_sql(sql: str) -> str:
    """The statement read for its columns only."""
    return f"SELECT * FROM ({sql}) AS ak_probe LIMIT 0"


def wrapped_sql(backend: str, sql: str, shape: Shape, limit: int | None = None) -> str:
    """The statement with long values cut (see the module doc).

    Args:
        backend: ``postgresql``, ``duckdb`` or ``sqlite``.
        sql: The accepted statement.
        shape: From :func:`shape_of`.
        limit: A LIMIT for the outer query (DuckDB reads its whole result), or ``None``.

    Returns:
        The SQL to run.
    """
    columns = [f"c{i}" for i in range(1, len(shape.names) + 1)]
    outputs: list[str] = []
    for column, cut in zip(columns, shape.cut, strict=True):
        if not cut:
            outputs.append(column)
            continue
        size, text = _size_and_text(backend, column, shape.per_value)
        outputs.append(f"CASE WHEN {size} <= {shape.per_value} THEN {column} END")
        outputs.append(f"CASE WHEN {size} > {shape.per_value} THEN {text} END")
    tail = f" LIMIT {limit}" if limit is not None else ""
    if backend == "duckdb":  # a subquery: DuckDB plans a CTE several times slower
        return f"SELECT {', '.join(outputs)} FROM ({sql}) AS ak_result({', '.join(columns)}){tail}"
    # PostgreSQL would copy the statement's expressions into each use (a huge value built
    # three times); MATERIALIZED builds each row once and still streams (PostgreSQL 12+).
    # SQLite names a subquery's columns only through a CTE.
    materialized = "MATERIALIZED " if backend == "postgresql" else ""
    return (
        f"WITH ak_result({', '.join(columns)}) AS {materialized}({sql}) "
        f"SELECT {', '.join(outputs)} FROM ak_result{tail}"
    )


def _size_and_text(backend: str, column: str, per_value: int) -> tuple[str, str]:
    if backend == "postgresql":
        # format() renders with the type's output function, never a cast a user created
        text = f"pg_catalog.format('%s', {column})"
        return f"pg_catalog.octet_length({text})", f"pg_catalog.left({text}, {per_value})"
    if backend == "duckdb":
        return (
            f"strlen(CAST({column} AS VARCHAR))",
            f"left(CAST({column} AS VARCHAR), {per_value})",
        )
    # SQLite: length() counts a blob's bytes without reading it, a text's characters
    return f"length({column})", f"substr({column}, 1, {per_value})"


def rejoin(shape: Shape, row: Sequence[Any]) -> tuple[list[Any], list[str]]:
    """One wrapped row in the statement's own shape, and the names of the values cut.

    Args:
        shape: The shape the statement was wrapped in.
        row: A row of the wrapped statement.

    Returns:
        The values, a cut one as its first characters followed by a marker, and the cut
        columns' names.
    """
    values: list[Any] = []
    cut_names: list[str] = []
    position = 0
    for name, cut in zip(shape.names, shape.cut, strict=True):
        if not cut:
            values.append(row[position])
            position += 1
            continue
        value, text = row[position], row[position + 1]
        position += 2
        if text is None:
            values.append(value)
            continue
        if isinstance(text, bytes | bytearray | memoryview):
            text = bytes(text).hex()
        values.append(f"{text}[... cut at {shape.per_value:,} characters]")
        cut_names.append(name)
    return values, cut_names
