"""Turn SQL result rows into knowledge records, shared by the SQL backends.

A row becomes ``{"text": "name: Ada | status: active", "metadata": {...}}`` where the
metadata holds ``source``, ``columns`` (the column names in order), ``row`` (column name to
a JSON-serialisable value) and ``row_number`` (1-based position in the result). Values are
made JSON-safe without losing information: decimals and UUIDs become strings, dates and times
ISO 8601, bytes hexadecimal, nested arrays, rows and maps lists and dicts. SQL ``NULL`` is
``None`` in ``row`` and ``NULL`` in the text.
"""

from __future__ import annotations

import datetime as dt
import decimal
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from agentkernel.knowledgebase.model import Record


def json_safe(value: Any) -> Any:
    """Return a JSON-serialisable form of one SQL value.

    Args:
        value: A value as the database driver returned it.

    Returns:
        ``None``, a bool, int, float, str, list or dict.
    """
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return (
            value if value == value and value not in (float("inf"), float("-inf")) else str(value)
        )
    if isinstance(value, decimal.Decimal | uuid.UUID):
        return str(value)
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, Sequence | set | frozenset):
        return [json_safe(v) for v in value]
    return str(value)


def rows_to_records(
    columns: Sequence[str], rows: Sequence[Sequence[Any]], *, source: str
) -> list[Record]:
    """Render result rows as records.

    Args:
        columns: Column names, in result order.
        rows: The fetched rows.
        source: What ``metadata["source"]`` names (the backend and where it read from).

    Returns:
        One record per row.
    """
    names = [str(c) for c in columns]
    return [row_to_record(names, row, number, source) for number, row in enumerate(rows, start=1)]


def row_to_record(names: Sequence[str], row: Sequence[Any], number: int, source: str) -> Record:
    """Render one result row as a record.

    Args:
        names: Column names, in result order, as strings.
        row: The row's values.
        number: Its 1-based position in the result.
        source: What ``metadata["source"]`` names.

    Returns:
        The record.
    """
    values = [json_safe(v) for v in row]
    text = " | ".join(
        f"{name}: {cell_text(value)}" for name, value in zip(names, values, strict=False)
    )
    return {
        "text": text,
        "metadata": {
            "source": source,
            "columns": names,
            "row": dict(zip(names, values, strict=False)),
            "row_number": number,
        },
    }


def cell_text(value: Any) -> str:
    """Return one SQL value as a record's text shows it (``NULL``, ``true``/``false``, or ``str``).

    Args:
        value: A value as the database driver returned it.

    Returns:
        The text.
    """
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
