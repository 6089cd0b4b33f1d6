"""Limits that hold under attack: runaway queries stopped where they run, results cut.

Real: a PostgreSQL 15 cluster on 127.0.0.1 served as the least-privilege role, DuckDB and
SQLite files, the Trino-protocol test server (``tests/support/trino_server.py``, which honours
``query_max_execution_time`` as Trino does), a FalkorDB Bolt server for Neo4j, and the
``KnowledgeBuilder`` tools an agent calls. Memory is measured as the peak RSS of a child
process that runs one tool call (the drivers buffer in C, where tracemalloc cannot see).
The elapsed-time bounds below are generous hang checks, not speed targets.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import require_extra, require_module
from tests.support.fixtures_neo4j import relay_thread

require_extra("sqlalchemy", "sql")

from agentkernel.knowledgebase.knowledgebuilder import KnowledgeBuilder  # noqa: E402
from agentkernel.knowledgebase.sql import SQLManager  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DATABASE = "kb_limits"
RUNAWAY = "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t) SELECT count(*) FROM t"
TIMEOUT = 0.5
HANG = 20.0  # seconds: far past the timeout; only a query that was not stopped takes this long
ROWS_3M = {
    "postgresql": "SELECT g FROM generate_series(1, 3000000) AS g LIMIT 3000000",
    "sqlite": "WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 3000000) "
    "SELECT n FROM g LIMIT 3000000",
    "duckdb": "SELECT range AS g FROM range(3000000) LIMIT 3000000",
}
# 300 rows of 1,000,000 characters: 300 MB if it were read whole
WIDE = {
    "postgresql": "SELECT repeat('x', 1000000) AS wide FROM generate_series(1, 300)",
    "sqlite": "WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 300) "
    "SELECT replace(hex(zeroblob(500000)), '0', 'x') AS wide FROM g",
}


@pytest.fixture(scope="module")
def postgres(postgres_server: Any) -> Iterator[tuple[str, str]]:
    """The reader's URL and the superuser's connection string of a fresh database."""
    psycopg = require_module("psycopg", "psycopg[binary]")

    with psycopg.connect(postgres_server.conninfo(), autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DATABASE}")
        conn.execute(f"CREATE DATABASE {DATABASE}")
    yield postgres_server.reader_url(DATABASE), postgres_server.conninfo(DATABASE)


@pytest.fixture(scope="module")
def sqlite_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("sqlite") / "kb.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (a INTEGER)")
    return f"sqlite:///{path}"


@pytest.fixture(scope="module")
def duckdb_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    duckdb = require_module("duckdb")
    require_module("duckdb_engine", "duckdb-engine")
    path = tmp_path_factory.mktemp("duckdb") / "kb.duckdb"
    duckdb.connect(str(path)).close()
    return f"duckdb:///{path}"


def _url(request: pytest.FixtureRequest, backend: str) -> str:
    if backend == "postgresql":
        return str(request.getfixturevalue("postgres")[0])
    return str(request.getfixturevalue(f"{backend}_url"))


def _read_kb(manager: Any) -> Any:
    # the backend's own caps are under test here, not the answer budget
    return KnowledgeBuilder([manager], answer_chars=None).build()[1]


def _backends(admin: str) -> dict[int, str]:
    """The reader's backends and their state (``active`` while a statement runs)."""
    import psycopg

    with psycopg.connect(admin, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid, state FROM pg_stat_activity WHERE usename = 'kb_reader'"
        ).fetchall()
    return {int(pid): str(state) for pid, state in rows}


# -- runaway queries ------------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["postgresql", "duckdb", "sqlite"])
def test_a_runaway_recursive_query_is_stopped_at_the_timeout(
    backend: str, request: pytest.FixtureRequest
) -> None:
    with SQLManager(_url(request, backend), timeout_seconds=TIMEOUT) as manager:
        started = time.monotonic()
        out = _read_kb(manager)("sql", RUNAWAY)
        elapsed = time.monotonic() - started
        assert out == (
            "Error from backend 'sql' during query: The statement was stopped after "
            "timeout_seconds=0.5; ask for less (a narrower WHERE, fewer joins, a LIMIT)."
        )
        assert elapsed < HANG
        # the connection is usable at once: nothing of the runaway is left on it
        assert _read_kb(manager)("sql", "SELECT 42 AS answer").startswith("- answer: 42")


@pytest.mark.parametrize("backend", ["postgresql", "duckdb", "sqlite"])
def test_a_statement_with_bound_parameters_is_under_the_same_limits(
    backend: str, request: pytest.FixtureRequest
) -> None:
    from agentkernel.knowledgebase.errors import SQLQueryError

    runaway = RUNAWAY.replace("SELECT 1 UNION", "SELECT CAST(:start AS INTEGER) UNION")
    stopped = pytest.raises(SQLQueryError, match=r"stopped after timeout_seconds=0\.5")
    with SQLManager(_url(request, backend), timeout_seconds=TIMEOUT) as manager, stopped:
        manager.query(runaway, params={"start": 1})
    with SQLManager(_url(request, backend)) as manager:
        rows = manager.query(ROWS_3M[backend].replace("3000000", ":n"), params={"n": 3000000})
    assert len(rows) == 1000
    assert rows.notice.startswith("[Cut by the row cap (max_rows=1000): 1000 rows shown")  # type: ignore[attr-defined]


def test_postgres_without_a_timeout_leaves_the_servers_own(postgres: tuple[str, str]) -> None:
    url, _ = postgres
    server_side = {"connect_args": {"options": "-c statement_timeout=300"}}
    with SQLManager(url, timeout_seconds=None, engine_options=server_side) as manager:
        out = _read_kb(manager)("sql", RUNAWAY)
    assert out == (
        "Error from backend 'sql' during query: The statement was stopped after the server's "
        "statement_timeout; ask for less (a narrower WHERE, fewer joins, a LIMIT)."
    )


def test_postgres_leaves_no_active_query_after_the_timeout(postgres: tuple[str, str]) -> None:
    url, admin = postgres
    with SQLManager(url, timeout_seconds=TIMEOUT) as manager:
        out = _read_kb(manager)("sql", RUNAWAY)
        assert "stopped after timeout_seconds=0.5" in out
        assert "active" not in _backends(admin).values()


def test_postgres_ends_the_backend_when_the_client_is_killed(postgres: tuple[str, str]) -> None:
    url, admin = postgres
    script = (
        "import sys\n"
        "from agentkernel.knowledgebase.sql import SQLManager\n"
        "SQLManager(sys.argv[1], timeout_seconds=300).query(sys.argv[2])\n"
    )
    assert "active" not in _backends(admin).values()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    child = subprocess.Popen([sys.executable, "-c", script, url, RUNAWAY], env=env)
    try:
        deadline = time.monotonic() + HANG
        running: list[int] = []
        while not running and time.monotonic() < deadline:
            running = [pid for pid, state in _backends(admin).items() if state == "active"]
            time.sleep(0.1)
        assert len(running) == 1, "the runaway query never started"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    # statement_timeout is 300 s here: only client_connection_check_interval ends it now
    deadline = time.monotonic() + HANG
    while running[0] in _backends(admin) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert running[0] not in _backends(admin)


def test_trino_stops_a_runaway_query_at_the_session_time_limit(trino_server: Any) -> None:
    require_extra("trino", "trino")
    from agentkernel.knowledgebase.starburst import StarburstManager

    manager = StarburstManager(
        host="127.0.0.1", port=trino_server.port, user="analyst", http_scheme="http",
        timeout_seconds=TIMEOUT,
    )  # fmt: skip
    started = time.monotonic()
    out = _read_kb(manager)("starburst", RUNAWAY)
    assert time.monotonic() - started < HANG
    assert out.startswith(
        "Error from backend 'starburst' during query: The statement was stopped after "
        "timeout_seconds=0.5"
    )
    assert trino_server.received[-1]["session"] == (
        "query_max_execution_time=500ms,query_max_run_time=500ms"
    )
    # the server is free again: the runaway no longer holds it
    assert _read_kb(manager)("starburst", "SELECT 42 AS answer").startswith("- answer: 42")


def test_trino_session_time_limit_stops_runaways_without_a_client_cancel(
    trino_server: Any,
) -> None:
    """The server-side stop alone: the session property, no client deadline; twice in a row."""
    require_extra("trino", "trino")
    import trino.dbapi
    import trino.exceptions

    conn = trino.dbapi.connect(  # type: ignore[no-untyped-call]
        host="127.0.0.1", port=trino_server.port, user="analyst", http_scheme="http",
        session_properties={"query_max_execution_time": "300ms"},
        request_timeout=HANG, max_attempts=1,  # a runaway not stopped fails the test
    )  # fmt: skip
    try:
        for _ in range(2):
            cursor = conn.cursor()
            started = time.monotonic()
            with pytest.raises(trino.exceptions.TrinoQueryError) as failed:
                cursor.execute(RUNAWAY)
                cursor.fetchall()
            assert time.monotonic() - started < HANG
            assert failed.value.error_name == "EXCEEDED_TIME_LIMIT"
        cursor = conn.cursor()
        cursor.execute("SELECT 42")
        assert cursor.fetchall() == [[42]]
    finally:
        conn.close()


# -- results cut at the caps ------------------------------------------------------------------


def _measured(url: str, statement: str, limit: int) -> dict[str, Any]:
    """Run one read_kb call in a child process; its output and how much its peak RSS grew.

    The peak is Linux's VmHWM, reset just before the call, against VmRSS just before it.
    """
    script = (
        "import json, sys\n"
        "from agentkernel.knowledgebase.knowledgebuilder import KnowledgeBuilder\n"
        "from agentkernel.knowledgebase.sql import SQLManager\n"
        "read_kb = KnowledgeBuilder([SQLManager(sys.argv[1])], answer_chars=None).build()[1]\n"
        "def kib(field):\n"
        "    status = open('/proc/self/status').read().split(field + ':')[1]\n"
        "    return int(status.split()[0])\n"
        "read_kb('sql', 'SELECT 1 AS warm')\n"
        "before = kib('VmRSS')\n"
        "open('/proc/self/clear_refs', 'w').write('5')  # the peak (VmHWM) starts again here\n"
        "out = read_kb('sql', sys.argv[2], limit=int(sys.argv[3]))\n"
        "print(json.dumps({'grew_mb': (kib('VmHWM') - before) / 1024, 'chars': len(out),\n"
        "                  'lines': out.count('\\n') + 1, 'tail': out[-400:]}))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(
        [sys.executable, "-c", script, url, statement, str(limit)],
        env=env, capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("backend", ["postgresql", "sqlite"])
def test_a_result_size_attack_is_cut_at_the_size_cap_with_bounded_memory(
    backend: str, request: pytest.FixtureRequest
) -> None:
    measured = _measured(_url(request, backend), WIDE[backend], limit=1000)
    assert measured["chars"] < 1_001_000  # the 1 MB cap and the notice, of a 300 MB result
    assert measured["tail"].endswith(
        "[Cut by the size cap (max_result_bytes=1,000,000): 1 row shown with its text cut "
        "from 1,000,007 to 1,000,000 bytes; the rows after them were not read. Select fewer "
        "or shorter columns, or fewer rows.]"
    )
    assert measured["grew_mb"] < 100, measured  # reading it whole took 1.2-1.5 GB


@pytest.mark.parametrize("backend", ["postgresql", "sqlite", "duckdb"])
def test_a_three_million_row_result_is_cut_at_the_row_cap_without_buffering(
    backend: str, request: pytest.FixtureRequest
) -> None:
    measured = _measured(_url(request, backend), ROWS_3M[backend], limit=3)
    assert measured["lines"] == 1001  # max_rows rows and the notice
    assert measured["tail"].endswith(
        "[Cut by the row cap (max_rows=1000): 1000 rows shown; the rows after them were not "
        "read. Narrow the query to see others.]"
    )
    assert measured["grew_mb"] < 40, measured


def test_rows_that_fit_come_back_whole_and_without_a_notice(sqlite_url: str) -> None:
    with SQLManager(sqlite_url, max_result_bytes=100) as manager:
        out = _read_kb(manager)("sql", "VALUES ('a'), ('b')", limit=5)
    assert out.splitlines() == [
        "- column1: a (source: sql:sqlite:kb.sqlite)",
        "- column1: b (source: sql:sqlite:kb.sqlite)",
    ]


def test_the_size_cap_keeps_the_rows_before_the_one_that_does_not_fit(sqlite_url: str) -> None:
    statement = "VALUES ('" + "a" * 40 + "'), ('" + "b" * 40 + "'), ('" + "c" * 40 + "')"
    with SQLManager(sqlite_url, max_result_bytes=120) as manager:
        records = manager.query(statement, limit=5)
        out = _read_kb(manager)("sql", statement, limit=5)
    assert [r["metadata"]["row"]["column1"][0] for r in records] == ["a", "b"]
    assert out.splitlines()[-1] == (
        "[Cut by the size cap (max_result_bytes=120): 2 rows shown (100 bytes); the rows after "
        "them were not read. Select fewer or shorter columns, or fewer rows.]"
    )


def test_neo4j_reads_are_cut_at_the_size_cap(bolt_server: Any) -> None:
    require_extra("neo4j", "neo4j")
    from agentkernel.knowledgebase.neo4j import Neo4jManager

    manager = Neo4jManager(uri=bolt_server.uri, max_result_bytes=1000)
    try:
        manager.write(
            [{"text": letter * 400, "metadata": {"id": f"wide-{letter}"}} for letter in "xyz"]
        )
        out = _read_kb(manager)(
            "Neo4jDB",
            "MATCH (k:Knowledge) WHERE k.id STARTS WITH 'wide-' "
            "RETURN k.text AS text ORDER BY k.id",
            limit=3,
        )
    finally:
        manager.close()
    lines = out.splitlines()
    assert [line[2] for line in lines[:-1]] == ["x", "y"]
    assert lines[-1].startswith("[Cut by the size cap (max_result_bytes=1,000): 2 rows shown")


# -- Chroma ---------------------------------------------------------------------------------


def _stalling_relay(upstream: int, stall: threading.Event) -> int:
    """A loopback relay to ``upstream`` that stops passing answers back once ``stall`` is set."""
    listener = socket.create_server(("127.0.0.1", 0))

    def accept() -> None:
        while True:
            try:
                client, _ = listener.accept()
                server = socket.create_connection(("127.0.0.1", upstream), timeout=10)
            except OSError:
                return
            server.settimeout(None)
            relay_thread(client, server)
            relay_thread(server, client, lambda data: b"" if stall.is_set() else data)

    threading.Thread(target=accept, daemon=True).start()
    return int(listener.getsockname()[1])


def test_chroma_results_are_cut_and_a_silent_server_is_given_up_on(
    chroma_server: Any, minilm_embedding_function: Any
) -> None:
    require_extra("chromadb", "chromadb")
    from agentkernel.knowledgebase.chroma import ChromaManager

    stall = threading.Event()
    manager = ChromaManager(
        host="127.0.0.1",
        port=_stalling_relay(chroma_server.port, stall),
        collection="limits-cut",
        embedding_function=minilm_embedding_function,
        timeout_seconds=TIMEOUT,
        max_result_bytes=1000,
    )
    try:
        manager.write([{"text": f"{word} " * 200, "metadata": {"id": word}} for word in "abc"])
        out = _read_kb(manager)("ChromaDB", "a b c", limit=3)
        assert out.splitlines()[-1].startswith(
            "[Cut by the size cap (max_result_bytes=1,000): 2 rows shown"
        )
        stall.set()  # the server still works; its answers no longer arrive
        started = time.monotonic()
        out = _read_kb(manager)("ChromaDB", "a b c", limit=3)
        assert time.monotonic() - started < HANG
        assert out.startswith("Error from backend 'ChromaDB' during search: Chroma search failed")
        assert "ReadTimeout" in out
    finally:
        manager.close()


@pytest.mark.parametrize(
    ("option", "value"),
    [("timeout_seconds", 0), ("timeout_seconds", -1.0), ("timeout_seconds", "30"),
     ("max_result_bytes", 0), ("max_result_bytes", 1.5), ("max_result_bytes", True)],
)  # fmt: skip
def test_a_limit_that_is_not_a_positive_number_is_a_configuration_error(
    sqlite_url: str, option: str, value: Any
) -> None:
    from agentkernel.errors import AKConfigError

    with pytest.raises(AKConfigError, match=f"SQLManager 'sql': {option} must be a positive"):
        SQLManager(sqlite_url, **{option: value})
