"""The child process that runs one ``SQLManager``'s DuckDB queries (``python -m`` this module).

DuckDB computes inside the process that calls it, and some values are built whole in one
function call that neither ``interrupt()`` nor DuckDB's ``memory_limit`` stops
(``repeat('x', 10^9)`` took about 2 GB and 12-22 s against a 5 s limit). So
``SQLManager`` runs DuckDB here, in a process of its own (``_sql.duckdb_process`` starts it
and talks to it), and this process is bounded three ways:

* its address space may grow only ``memory_mb`` above its idle state (``RLIMIT_AS``, set
  once the database is open and the catalog read), and DuckDB's own ``memory_limit`` is set
  lower still, so a huge value fails with DuckDB's "Out of Memory Error" instead of taking
  the machine's memory;
* every request carries the seconds left of its query's time limit, and the shared
  watchdog calls ``interrupt()`` when they run out; the parent kills this process if it
  has not answered shortly after (one function call ``interrupt()`` cannot stop);
* rows are sent in batches as the parent reads them, each value cut by the database
  (``_sql.bounded``) and made JSON-safe (``records.json_safe``), so only plain Python values
  (``None``, numbers, strings, lists, dicts) cross the pipe; a batch stops at the first row
  that takes the query's text past ``max_result_bytes``.

The protocol is one pickled request and one pickled answer at a time over stdin and stdout,
each framed by its length (8 bytes, big-endian). The answer is ``("ok", value)`` or
``("error", kind, text)`` with ``kind`` one of ``refused``, ``timeout``, ``memory`` and
``database``. Nothing here is a public interface.
"""

from __future__ import annotations

import importlib
import os
import pickle
import resource
import struct
import sys
from collections.abc import Sequence
from typing import IO, Any

FRAME = struct.Struct(">Q")


def read_frame(stream: IO[bytes]) -> Any:
    """One request from the parent, or ``None`` at the end of the pipe."""
    head = stream.read(FRAME.size)
    if len(head) < FRAME.size:
        return None
    (size,) = FRAME.unpack(head)
    return pickle.loads(stream.read(size))  # the parent that started this process wrote it


def write_frame(stream: IO[bytes], message: Any) -> None:
    """One answer to the parent."""
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(FRAME.pack(len(data)) + data)
    stream.flush()


def _vm_bytes() -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


class Worker:
    """One read-only DuckDB connection and the result being read."""

    def __init__(self, setup: dict[str, Any]) -> None:
        """Open the database read-only and bound the process (see the module doc).

        Args:
            setup: ``path``, ``config`` (DuckDB's), ``allowed`` (the guard's normalised
                ``allowed_functions``) and ``memory_mb`` (``None``: no bound).
        """
        duckdb = importlib.import_module("duckdb")

        from agentkernel.knowledgebase._sql import bounded, duckdb_resolve
        from agentkernel.knowledgebase._sql.records import json_safe

        self.duckdb, self.bounded, self.resolve, self.json_safe = (
            duckdb,
            bounded,
            duckdb_resolve,
            json_safe,
        )
        config = dict(setup["config"])
        memory_mb = setup.get("memory_mb")
        if memory_mb:
            config.setdefault("memory_limit", f"{max(16, int(memory_mb) // 2)}MB")
        self.connection = duckdb.connect(setup["path"], read_only=True, config=config)
        self.catalog = duckdb_resolve.read_catalog(self.connection)
        self.allowed: frozenset[str] = frozenset(setup["allowed"])
        self.shapes: dict[str, Any] = {}
        self.cursor: Any = None
        self.shape: Any = None
        self.max_bytes: int | None = None
        self.used = 0
        self.connection.execute("SELECT 1").fetchall()  # warm, so idle is idle
        from agentkernel.knowledgebase import _limits

        _limits.at_deadline(3600.0, lambda: None)()  # the watchdog's thread starts now
        if memory_mb:
            bound = _vm_bytes() + int(memory_mb) * 2**20
            resource.setrlimit(resource.RLIMIT_AS, (bound, bound))

    def handle(self, request: tuple[Any, ...]) -> Any:
        """Run one request under its time limit; the answer's value."""
        from agentkernel.knowledgebase import _limits

        operation, seconds, arguments = request[0], request[1], request[2:]
        cancel = _limits.at_deadline(seconds, self.connection.interrupt) if seconds else None
        try:
            return getattr(self, f"do_{operation}")(*arguments)
        finally:
            if cancel is not None:
                cancel()

    def do_query(
        self,
        sql: str,
        params: Sequence[Any] | None,
        check: str,
        max_bytes: int | None,
        outer_limit: int | None,
        first: int = 0,
    ) -> tuple[list[str], list[tuple[list[Any], list[str]]], bool]:
        """Judge, probe and start reading a query.

        Returns:
            Its column names, its first ``first`` rows (as :meth:`do_fetch`) and whether the
            result ended with them (then it is closed already).
        """
        self.do_close()
        if check:
            self.resolve.check(self.catalog, check, self.allowed)
        shape = None
        if max_bytes:
            shape = self.shapes.get(sql) if not params else None
            if shape is None:
                probe = self.connection.execute(self.bounded.probe_sql(sql), params or None)
                description = probe.description
                probe.fetchall()
                shape = self.bounded.shape_of("duckdb", description or [], max_bytes)
                if not params:
                    if len(self.shapes) >= 256:
                        self.shapes.pop(next(iter(self.shapes)))
                    self.shapes[sql] = shape
            shape = shape if shape.names and any(shape.cut) else None
        if shape is not None:
            run = self.bounded.wrapped_sql("duckdb", sql, shape, outer_limit)
        elif outer_limit is not None:
            run = f"SELECT * FROM ({sql}) AS ak_result LIMIT {outer_limit}"
        else:
            run = sql
        self.cursor = self.connection.cursor()
        self.cursor.execute(run, params or None)
        self.shape, self.max_bytes, self.used = shape, max_bytes, 0
        if self.cursor.description is None:
            self.do_close()
            return [], [], True
        names = shape.names if shape else [str(c[0]) for c in self.cursor.description]
        rows = self.do_fetch(first) if first else []
        ended = self.cursor is None or (first > 0 and len(rows) < first)
        if ended:
            self.do_close()
        return names, rows, ended

    def do_fetch(self, count: int) -> list[tuple[list[Any], list[str]]]:
        """Up to ``count`` rows: each row's JSON-safe values and the names of those cut."""
        if self.cursor is None:
            return []
        batch: list[tuple[list[Any], list[str]]] = []
        for row in self.cursor.fetchmany(count):
            if self.shape is not None:
                values, cut = self.bounded.rejoin(self.shape, row)
            else:
                values, cut = list(row), []
            values = [self.json_safe(value) for value in values]
            batch.append((values, cut))
            if self.max_bytes is not None:
                self.used += sum(len(str(value)) for value in values)
                if self.used > self.max_bytes:  # the parent stops at this row or before
                    self.do_close()
                    break
        return batch

    def do_close(self) -> None:
        """Drop the result being read."""
        if self.cursor is not None:
            cursor, self.cursor = self.cursor, None
            cursor.close()

    def do_run(
        self, sql: str, params: Sequence[Any] | None, cap: int | None
    ) -> tuple[list[str], list[list[Any]]]:
        """``SQLManager._run``: the path below the guard, for tests and schema lookups."""
        self.do_close()
        cursor = self.connection.cursor()
        try:
            cursor.execute(sql, params or None)
            if cursor.description is None:
                return [], []
            rows = cursor.fetchmany(cap) if cap else cursor.fetchall()
            columns = [str(c[0]) for c in cursor.description]
            return columns, [[self.json_safe(v) for v in row] for row in rows]
        finally:
            cursor.close()

    def error(self, exc: BaseException) -> tuple[str, str, str]:
        """The answer for a failed request."""
        from agentkernel.knowledgebase.errors import SQLRefusedError

        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if isinstance(exc, SQLRefusedError):
            return ("error", "refused", text)
        if isinstance(exc, self.duckdb.InterruptException):
            return ("error", "timeout", text)
        if isinstance(exc, MemoryError | self.duckdb.OutOfMemoryException):
            self.do_close()
            return ("error", "memory", text)
        return ("error", "database", text)


def main() -> None:
    """Serve requests from stdin until it closes."""
    requests = sys.stdin.buffer
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # a stray print never breaks a frame
    setup = read_frame(requests)
    try:
        worker = Worker(setup)
    except Exception as exc:  # the parent reports it as a connection failure
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        write_frame(answers, ("error", "connect", text))
        return
    write_frame(answers, ("ok", os.getpid()))
    while (request := read_frame(requests)) is not None:
        try:
            answer: Any = ("ok", worker.handle(request))
        except Exception as exc:  # every failure is an answer; the process lives on
            answer = worker.error(exc)
        try:
            write_frame(answers, answer)
        except MemoryError:
            worker.do_close()
            write_frame(answers, ("error", "memory", "the answer did not fit in memory"))


if __name__ == "__main__":
    main()
