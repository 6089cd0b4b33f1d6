"""The parent side of ``_sql.duckdb_worker``: one DuckDB process per ``SQLManager``.

:class:`DuckDBProcess` starts the worker on first use (never at import or construction),
sends it one request at a time and waits for the answer no longer than the query's time
limit allows, plus ``GRACE_SECONDS`` for the worker's own ``interrupt()`` to land. A worker
that has not answered by then is killed (``SIGKILL``), and the next query starts a new one.
A worker that dies (out of memory, a crash) is started again the same way. Requests from
several threads take turns (one connection); a caller waits for its turn within its own time
limit.

Errors come back as ``SQLQueryError`` or ``SQLRefusedError`` with the database file's path
scrubbed by the caller; :class:`WorkerTimeout` says the time limit passed.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import pickle
import select
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agentkernel.errors import AKError
from agentkernel.knowledgebase import _limits
from agentkernel.knowledgebase._sql.duckdb_worker import FRAME
from agentkernel.knowledgebase._sql.records import row_to_record
from agentkernel.knowledgebase.errors import SQLQueryError, SQLRefusedError
from agentkernel.knowledgebase.model import Record

logger = logging.getLogger(__name__)

GRACE_SECONDS = 0.5  # after the deadline, for the worker's interrupt() before it is killed
START_SECONDS = 60.0  # for a new worker to import DuckDB and open the file
MAX_ANSWER_BYTES = 256 * 2**20  # a larger answer is a broken worker
DEFAULT_MEMORY_MB = 100
FIRST_ROWS = 16  # rows the answer to a query brings (take_rows asks for 16 first when capped)


class WorkerTimeout(AKError):
    """The query's time limit passed (the worker stopped it, or was killed)."""


class _Unpickler(pickle.Unpickler):
    """Answers hold plain values only (the worker makes them JSON-safe): no class is loaded."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"the DuckDB worker sent an object of {module}.{name}")


class DuckDBProcess:
    """The DuckDB worker of one manager: started lazily, killed on overrun, started again."""

    def __init__(
        self,
        path: str,
        config: dict[str, Any],
        allowed: frozenset[str],
        memory_mb: int | None,
        scrub: Callable[[str], str],
    ) -> None:
        """Remember how to start the worker; nothing starts yet.

        Args:
            path: The database file.
            config: DuckDB's configuration (read-only settings included).
            allowed: The guard's normalised ``allowed_functions``.
            memory_mb: How far the worker's memory may grow above its idle state.
            scrub: Takes the database file's path out of an error's text.
        """
        self._scrub = scrub
        self._setup = {
            "path": path,
            "config": dict(config),
            "allowed": sorted(allowed),
            "memory_mb": memory_mb,
        }
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._finalizer: weakref.finalize[Any, Any] | None = None

    @property
    def pid(self) -> int | None:
        """The worker's process id, or ``None`` when none runs."""
        return self._process.pid if self._process is not None else None

    def request(self, deadline: float | None, operation: str, *arguments: Any) -> Any:
        """Send one request and return the answer's value.

        Args:
            deadline: The ``time.monotonic()`` time the query's limit ends, or ``None``.
            operation: ``query``, ``fetch``, ``close`` or ``run`` (see the worker).
            *arguments: The operation's arguments.

        Returns:
            What the worker answered.

        Raises:
            WorkerTimeout: The deadline passed.
            SQLRefusedError: The second judge refused the query.
            SQLQueryError: DuckDB rejected it, ran out of memory, or the worker failed.
        """
        wait = None if deadline is None else max(0.0, deadline - time.monotonic())
        if not self._lock.acquire(timeout=-1 if wait is None else wait):
            raise WorkerTimeout
        try:
            process = self._started()
            seconds = None if deadline is None else max(0.001, deadline - time.monotonic())
            self._send(process, (operation, seconds, *arguments))
            answer = self._receive(process, None if deadline is None else deadline + GRACE_SECONDS)
        finally:
            self._lock.release()
        if answer[0] == "ok":
            return answer[1]
        kind, text = answer[1], answer[2]
        if kind == "timeout":
            raise WorkerTimeout
        text = self._scrub(text)
        if kind == "refused":
            raise SQLRefusedError(text)
        if kind == "memory":
            raise SQLQueryError(
                f"The duckdb query needed more memory than the manager allows: {text}"
            )
        raise SQLQueryError(f"The duckdb database rejected the query: {text}")

    def read(
        self,
        deadline: float | None,
        query: tuple[str, Sequence[Any] | None, str],
        max_bytes: int | None,
        outer_limit: int | None,
        rows: tuple[int, str, str],
    ) -> list[Record]:
        """Run a query in the worker and read its rows up to the caps, as records.

        Args:
            deadline: The ``time.monotonic()`` time the limit ends, or ``None``.
            query: The SQL to run, its positional parameters (or ``None``) and the query
                the second judge checks (``""``: none).
            max_bytes: ``max_result_bytes`` for a query (values cut), else ``None``.
            outer_limit: An outer LIMIT (DuckDB computes a whole vector of rows), or ``None``.
            rows: The row cap, how the notice names it, and the records' source.

        Returns:
            The records (``CutRecords`` with a notice when a cap cut them).

        Raises:
            WorkerTimeout: The deadline passed.
            SQLRefusedError: The second judge refused the query.
            SQLQueryError: DuckDB rejected it, ran out of memory, or the worker failed.
        """
        sql, params, check = query
        cap, row_cap, source = rows
        first = min(cap + 1, FIRST_ROWS) if max_bytes else cap + 1
        columns, buffered, ended = self.request(
            deadline, "query", sql, params, check, max_bytes, outer_limit, first
        )
        if not columns:
            return []

        def fetchmany(count: int) -> list[tuple[list[Any], list[str]]]:
            """Rows the query's answer brought first, then more from the worker."""
            nonlocal buffered
            batch: list[tuple[list[Any], list[str]]] = buffered[:count]
            buffered = buffered[count:]
            if len(batch) < count and not ended:
                batch += self.request(deadline, "fetch", count - len(batch))
            return batch

        def to_record(item: tuple[list[Any], list[str]], number: int) -> Record:
            values, cut = item
            record = row_to_record(columns, values, number, source)
            if cut:
                record["metadata"]["values_cut"] = cut
            return record

        try:
            return _limits.take_rows(
                fetchmany,
                to_record,
                max_rows=cap,
                max_bytes=max_bytes,
                row_cap=row_cap,
                deadline=deadline,
            )
        finally:
            try:
                if self._process is not None and not ended:  # not after a kill or the end
                    self.request(time.monotonic() + START_SECONDS, "close")
            except (WorkerTimeout, SQLQueryError):
                logger.debug("closing a DuckDB result failed", exc_info=True)

    def start(self) -> None:
        """Start the worker unless it runs; called before a query's time limit starts.

        Raises:
            SQLQueryError: The worker could not open the database.
        """
        if not self._lock.acquire(timeout=START_SECONDS):
            raise SQLQueryError("The duckdb worker stayed busy; try again.")
        try:
            self._started()
        finally:
            self._lock.release()

    def stop(self) -> None:
        """End the worker (it exits when its input closes; killed if it does not)."""
        with self._lock:
            self._stop()

    # -- internals -------------------------------------------------------------------------

    def _started(self) -> subprocess.Popen[bytes]:
        if self._process is not None and self._process.poll() is None:
            return self._process
        self._stop()
        package_root = str(Path(__file__).resolve().parents[3])  # the folder holding agentkernel
        path = os.environ.get("PYTHONPATH", "")
        env = {**os.environ, "PYTHONPATH": package_root + (os.pathsep + path if path else "")}
        # one malloc arena: glibc reserves 64 MB of address space for each arena it adds
        # when threads contend, which the worker's address-space bound would count
        env["MALLOC_ARENA_MAX"] = "1"
        try:
            process = subprocess.Popen(
                [sys.executable, "-m", "agentkernel.knowledgebase._sql.duckdb_worker"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=env,
                close_fds=True,
            )
        except OSError as exc:
            raise SQLQueryError(f"Could not start the duckdb worker process: {exc}") from exc
        self._process = process
        self._finalizer = weakref.finalize(self, _end, process)
        try:
            self._send(process, self._setup)
            answer = self._receive(process, time.monotonic() + START_SECONDS)
        except WorkerTimeout as exc:
            self._stop()
            raise SQLQueryError("Could not reach the duckdb database: it did not open") from exc
        if answer[0] != "ok":
            self._stop()
            raise SQLQueryError(f"Could not reach the duckdb database: {self._scrub(answer[2])}")
        logger.debug("DuckDB worker %d started", process.pid)
        return process

    def _send(self, process: subprocess.Popen[bytes], message: Any) -> None:
        data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        assert process.stdin is not None
        try:
            process.stdin.write(FRAME.pack(len(data)) + data)
            process.stdin.flush()
        except OSError as exc:
            self._stop()
            raise SQLQueryError("The duckdb worker process ended; the query was not run") from exc

    def _receive(self, process: subprocess.Popen[bytes], until: float | None) -> Any:
        assert process.stdout is not None
        fd = process.stdout.fileno()
        head = self._read(fd, FRAME.size, until)
        (size,) = FRAME.unpack(head)
        if size > MAX_ANSWER_BYTES:
            self._stop()
            raise SQLQueryError(f"The duckdb worker sent an answer of {size:,} bytes")
        try:
            return _Unpickler(io.BytesIO(self._read(fd, size, until))).load()
        except (pickle.UnpicklingError, EOFError, ValueError) as exc:
            self._stop()
            raise SQLQueryError(f"The duckdb worker sent a broken answer: {exc}") from exc

    def _read(self, fd: int, size: int, until: float | None) -> bytes:
        chunks: list[bytes] = []
        left = size
        while left:
            wait = None if until is None else until - time.monotonic()
            if (wait is not None and wait <= 0) or not select.select([fd], [], [], wait)[0]:
                logger.warning("DuckDB worker killed: no answer within the time limit")
                self._stop(patience=0.0)
                raise WorkerTimeout
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                code = self._process.poll() if self._process is not None else None
                self._stop()
                raise SQLQueryError(
                    "The duckdb worker process ended"
                    + (f" (exit status {code})" if code is not None else "")
                    + "; it may have run out of memory. The next query starts a new one."
                )
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def _stop(self, patience: float = 2.0) -> None:
        process, self._process = self._process, None
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None
        if process is not None:
            _end(process, patience)


def _end(process: subprocess.Popen[bytes], patience: float = 2.0) -> None:
    """Close the worker's input (it exits) and kill it if it is still there after ``patience``."""
    if process.poll() is None:
        try:
            if not patience:
                raise subprocess.TimeoutExpired(process.args, 0)
            if process.stdin is not None:
                process.stdin.close()
            process.wait(patience)
        except (OSError, subprocess.TimeoutExpired):
            process.kill()
            process.wait()
    for stream in (process.stdin, process.stdout):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()


def compiled(engine_dialect: Any, sql: str, params: Any) -> tuple[str, Sequence[Any] | None]:
    """``sql`` with ``:name`` parameters as DuckDB's driver takes them (positional).

    Args:
        engine_dialect: The SQLAlchemy DuckDB dialect.
        sql: The statement.
        params: A mapping of parameter names to values, or ``None``.

    Returns:
        The statement in the driver's parameter style and the values in order.
    """
    if not params:
        return sql, None
    import sqlalchemy as sa

    statement = sa.text(sql).bindparams(**dict(params))
    compiled_statement = statement.compile(dialect=engine_dialect)
    values = compiled_statement.construct_params()
    order = compiled_statement.positiontup or []
    return compiled_statement.string, [values[name] for name in order]
