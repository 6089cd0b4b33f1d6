"""The server's analysis of a query in one round trip, through psycopg 3's pipeline mode.

``pg_resolve`` needs the parse tree of an accepted query, and ``SQLManager`` its columns
(which to cut, ``bounded``), both without the query being planned or run (the planner runs
immutable functions on constant arguments). With psycopg 3 both come from one round trip of
the extended protocol, sent as one pipeline:

0. ``BEGIN READ ONLY`` when the connection is idle (the transaction the query then runs in:
   psycopg sees it open and sends no ``BEGIN`` of its own);
1. ``SELECT set_config(...)`` turns ``debug_print_parse`` on (``client_min_messages = log``,
   ``debug_pretty_print`` off), local to the transaction;
2. ``Parse`` of the query as the unnamed statement: the server analyses it and sends its
   parse tree as a LOG notice (collected by ``pg_resolve``'s notice handler);
3. ``Describe`` of that statement: its columns' names, types and sizes (no planning);
4. ``RESET`` of the three settings (as ``pg_resolve`` did after ``PREPARE``);
5. ``Sync``.

The unnamed statement is never executed (the next ``Parse`` of psycopg replaces it). This
replaces ``BEGIN``, ``PREPARE`` / ``DEALLOCATE`` in a batch and a ``SELECT * FROM (...) LIMIT
0`` probe (which is planned, so it could only run after the check): one round trip instead of
three, and no planning.
"""

from __future__ import annotations

import importlib
import select
from typing import Any

_ON = (
    b"SELECT pg_catalog.set_config('debug_print_parse', 'on', true), "
    b"pg_catalog.set_config('debug_pretty_print', 'off', true), "
    b"pg_catalog.set_config('client_min_messages', 'log', true)"
)
_OFF = (b"RESET debug_print_parse", b"RESET client_min_messages", b"RESET debug_pretty_print")


def supported(dbapi_connection: Any) -> bool:
    """Whether the connection is psycopg 3's, whose libpq has pipeline mode (PostgreSQL 14+)."""
    pgconn = getattr(dbapi_connection, "pgconn", None)
    if pgconn is None or not hasattr(pgconn, "enter_pipeline_mode"):
        return False
    pipeline = getattr(importlib.import_module("psycopg"), "Pipeline", None)
    return bool(pipeline is not None and pipeline.is_supported())  # libpq 14 or later


def analyse(dbapi_connection: Any, query: str) -> list[tuple[str, int, None, int]]:
    """Have the server analyse ``query`` (its parse tree goes to the notice handlers).

    Args:
        dbapi_connection: A psycopg 3 connection, idle or in a transaction.
        query: One SELECT or VALUES.

    Returns:
        The query's columns as DB-API description items ``(name, type oid, None, size)``
        (the size is the type's length, negative for variable-length types).

    Raises:
        psycopg.Error: The server rejected the query (the driver's own error).
    """
    psycopg = importlib.import_module("psycopg")
    pq = importlib.import_module("psycopg.pq")
    pgconn = dbapi_connection.pgconn
    encoding = dbapi_connection.info.encoding
    before = pgconn.transaction_status
    if before not in (pq.TransactionStatus.IDLE, pq.TransactionStatus.INTRANS):
        raise psycopg.InterfaceError("the connection is busy or in a failed transaction")
    pgconn.enter_pipeline_mode()
    try:
        if before == pq.TransactionStatus.IDLE:
            pgconn.send_query_params(b"BEGIN READ ONLY", None)
        pgconn.send_query_params(_ON, None)
        pgconn.send_prepare(b"", query.encode(encoding))
        pgconn.send_describe_prepared(b"")
        for reset in _OFF:
            pgconn.send_query_params(reset, None)
        pgconn.pipeline_sync()
        _flush(pgconn)
        results = _results(pgconn)
    finally:
        pgconn.exit_pipeline_mode()
    for result in results:
        if result.status == pq.ExecStatus.FATAL_ERROR:
            raise psycopg.errors.error_from_result(result, encoding=encoding)
    described = results[3 if before == pq.TransactionStatus.IDLE else 2]
    return [
        (described.fname(i).decode(encoding), described.ftype(i), None, described.fsize(i))
        for i in range(described.nfields)
    ]


def _flush(pgconn: Any) -> None:
    while pgconn.flush():
        select.select([], [pgconn.socket], [])


def _results(pgconn: Any) -> list[Any]:
    """Every result up to the pipeline's sync (one per step, in order)."""
    pq = importlib.import_module("psycopg.pq")

    results: list[Any] = []
    while True:
        while pgconn.is_busy():
            select.select([pgconn.socket], [], [])
            pgconn.consume_input()
        result = pgconn.get_result()
        if result is None:  # the end of one step's results
            continue
        if result.status == pq.ExecStatus.PIPELINE_SYNC:
            return results
        results.append(result)
