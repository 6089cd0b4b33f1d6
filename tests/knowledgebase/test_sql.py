"""SQLManager: any SQLAlchemy database served read-only.

Real: PostgreSQL 15 (``initdb`` + ``pg_ctl`` on 127.0.0.1, through psycopg 3), DuckDB and
SQLite database files, SQLAlchemy 2, sqlglot, and ``KnowledgeBuilder`` tools. Nothing is a
stand-in. Besides the statement guard, these tests prove the database session itself is
read-only: writes sent below the guard, and a SELECT of a function that writes, are refused
by the database and leave the data unchanged.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import require_extra, require_module
from tests.support.hostile_sql import HOSTILE

require_extra("sqlalchemy", "sql")
require_extra("sqlglot", "sql")

from agentkernel.errors import AKConfigError  # noqa: E402
from agentkernel.knowledgebase.errors import KnowledgeCapabilityError, SQLQueryError  # noqa: E402
from agentkernel.knowledgebase.knowledgebuilder import KnowledgeBuilder  # noqa: E402
from agentkernel.knowledgebase.sql import SQLManager  # noqa: E402
from agentkernel.knowledgebase.testing import assert_backend_contract  # noqa: E402

CLIENTS = [
    ("Acme", "active", "EU", "1200.50", "2024-01-15"),
    ("Globex", "active", "US", "980.00", "2024-02-01"),
    ("Initech", "churned", "US", "120.00", "2023-11-30"),
    ("Umbrella", "active", "APAC", "4500.75", "2024-03-09"),
    ("Hooli", "prospect", "US", "0.00", "2024-04-20"),
    ("Stark", "active", "US", "9999.99", "2022-06-06"),
    ("Wayne", "churned", "EU", "310.10", "2021-09-09"),
    ("Tyrell", "active", "APAC", "777.00", "2024-05-05"),
]
CREATE = (
    "CREATE TABLE clients (client_name VARCHAR(40), status VARCHAR(20), region VARCHAR(10), "
    "revenue DECIMAL(10,2), signed DATE)"
)
# what each database says when the session refuses a write
READ_ONLY_MESSAGES = {
    "postgresql": "read-only transaction",
    "sqlite": "readonly database",
    "duckdb": "read-only mode",
}


# -- databases ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def postgres_url(postgres_server: Any) -> str:
    psycopg = require_module("psycopg", "psycopg[binary]")
    with psycopg.connect(postgres_server.conninfo(), autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS kb_sql")
        conn.execute("CREATE DATABASE kb_sql")
    with psycopg.connect(postgres_server.conninfo("kb_sql"), autocommit=True) as conn:
        conn.execute(CREATE)
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO clients VALUES (%s, %s, %s, %s, %s)", CLIENTS)
        conn.execute("CREATE TABLE audit (note TEXT)")
        conn.execute("CREATE SEQUENCE client_ids")
        # a function that writes: a SELECT of it passes any parser, the session must refuse it
        conn.execute(
            "CREATE FUNCTION bump() RETURNS integer LANGUAGE sql AS "
            "$$ INSERT INTO audit VALUES ('bumped') RETURNING 1 $$"
        )
    # served as the least-privilege role, as the manual tells users to
    return str(postgres_server.reader_url("kb_sql"))


@pytest.fixture(scope="module")
def postgres_admin(postgres_server: Any, postgres_url: str) -> str:
    """The superuser's connection string to kb_sql, for what an administrator does."""
    return str(postgres_server.conninfo("kb_sql"))


@pytest.fixture(scope="module")
def duckdb_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    duckdb = require_module("duckdb")
    require_module("duckdb_engine", "duckdb-engine")
    path = tmp_path_factory.mktemp("duckdb") / "kb.duckdb"
    conn = duckdb.connect(str(path))
    conn.execute(CREATE)
    conn.executemany("INSERT INTO clients VALUES (?, ?, ?, ?, ?)", CLIENTS)
    conn.close()
    return f"duckdb:///{path}"


@pytest.fixture(scope="module")
def sqlite_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("sqlite") / "kb.sqlite"
    conn = sqlite3.connect(path)
    conn.execute(CREATE)
    conn.executemany("INSERT INTO clients VALUES (?, ?, ?, ?, ?)", CLIENTS)
    conn.commit()
    conn.close()
    return f"sqlite:///{path}"


@pytest.fixture(params=["postgresql", "duckdb", "sqlite"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def url(backend: str, request: pytest.FixtureRequest) -> str:
    name = {"postgresql": "postgres_url"}.get(backend, f"{backend}_url")
    return str(request.getfixturevalue(name))


@pytest.fixture
def kb(url: str) -> Iterator[SQLManager]:
    manager = SQLManager(url).add_schema({"tables": {"clients": "client_name, status, region"}})
    yield manager
    manager.close()


def _snapshot(manager: SQLManager, url: str) -> list[tuple[Any, ...]]:
    """Read every client through a connection of its own (not the manager's)."""
    manager.close()  # DuckDB allows one configuration per file per process
    if url.startswith("postgresql"):
        import psycopg

        conninfo = url.replace("postgresql+psycopg://", "postgresql://")
        with psycopg.connect(conninfo) as conn:
            rows = conn.execute("SELECT client_name, status FROM clients ORDER BY 1").fetchall()
    elif url.startswith("duckdb"):
        import duckdb

        conn = duckdb.connect(url.removeprefix("duckdb:///"), read_only=True)
        rows = conn.execute("SELECT client_name, status FROM clients ORDER BY 1").fetchall()
        conn.close()
    else:
        conn3 = sqlite3.connect(url.removeprefix("sqlite:///"))
        rows = conn3.execute("SELECT client_name, status FROM clients ORDER BY 1").fetchall()
        conn3.close()
    return [tuple(r) for r in rows]


# the tests of session behaviour identify the server process; the guard does not list it
PID = ["pg_backend_pid"]
ORIGINAL = sorted((name, status) for name, status, *_ in CLIENTS)


def _tools(
    *backends: Any, semantic_map: dict[str, str] | None = None
) -> dict[str, Callable[..., str]]:
    return {t.__name__: t for t in KnowledgeBuilder(backends, semantic_map=semantic_map).build()}


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


# -- declaration and contract -------------------------------------------------------------


def test_declares_structured_read_only_sql(kb: SQLManager) -> None:
    caps = kb.capabilities
    assert caps.kinds == ["structured"]
    assert caps.query and caps.query_language == "sql"
    assert not (caps.writable or caps.search or caps.fetch or caps.browse or caps.derives_schema)


def test_keeps_the_backend_contract(kb: SQLManager) -> None:
    assert_backend_contract(kb, query_statement="SELECT client_name FROM clients ORDER BY 1")


# -- round trips through the tools --------------------------------------------------------


def test_read_kb_runs_sql_and_renders_rows(kb: SQLManager, backend: str) -> None:
    out = _tools(kb)["read_kb"](
        "sql", "SELECT client_name, status FROM clients WHERE status = 'active' ORDER BY 1"
    )
    database = "kb_sql" if backend == "postgresql" else f"kb.{backend}"
    assert _lines(out) == [
        f"- client_name: {name} | status: active (source: sql:{backend}:{database})"
        for name in ("Acme", "Globex", "Stark")
    ]


def test_records_are_json_serialisable_with_columns(kb: SQLManager) -> None:
    rows = kb.query("SELECT client_name, revenue, signed FROM clients WHERE client_name = 'Acme'")
    assert len(rows) == 1
    metadata = rows[0]["metadata"]
    assert metadata["columns"] == ["client_name", "revenue", "signed"]
    assert metadata["row"]["client_name"] == "Acme"
    assert str(metadata["row"]["signed"]).startswith("2024-01-15")
    assert float(metadata["row"]["revenue"]) == 1200.5
    json.dumps(rows)


def test_semantic_map_placeholders_resolve_in_sql(kb: SQLManager) -> None:
    read_kb = _tools(kb, semantic_map={"<CLIENTS>": "clients"})["read_kb"]
    out = read_kb("sql", "SELECT client_name FROM <CLIENTS> WHERE region = 'EU' ORDER BY 1")
    assert [line.split(" (source")[0] for line in _lines(out)] == [
        "- client_name: Acme",
        "- client_name: Wayne",
    ]


def test_named_params_are_bound(kb: SQLManager) -> None:
    rows = kb.query(
        "SELECT client_name FROM clients WHERE region = :region ORDER BY 1", params={"region": "US"}
    )
    assert [r["metadata"]["row"]["client_name"] for r in rows] == ["Globex", "Hooli", "Initech"]


def test_percent_signs_in_literals_are_not_taken_for_placeholders(kb: SQLManager) -> None:
    rows = kb.query("SELECT client_name, '100%' AS pct FROM clients WHERE client_name LIKE '%ar%'")
    assert [r["text"] for r in rows] == ["client_name: Stark | pct: 100%"]


# -- limits ------------------------------------------------------------------------------


def test_a_select_without_limit_gets_the_fallback(kb: SQLManager) -> None:
    assert len(kb.query("SELECT * FROM clients")) == 3
    read_kb = _tools(kb)["read_kb"]
    assert len(_lines(read_kb("sql", "SELECT client_name FROM clients", limit=5))) == 5


def test_an_own_limit_is_kept(kb: SQLManager) -> None:
    assert len(kb.query("SELECT * FROM clients ORDER BY 1 LIMIT 6", limit=2)) == 6


def test_an_own_limit_is_capped_at_max_rows(url: str) -> None:
    with SQLManager(url, max_rows=4) as manager:
        assert len(manager.query("SELECT * FROM clients LIMIT 7")) == 4


# -- errors ------------------------------------------------------------------------------


def test_a_query_error_is_an_error_not_no_results(kb: SQLManager, backend: str) -> None:
    read_kb = _tools(kb)["read_kb"]
    out = read_kb("sql", "SELECT * FROM no_such_table")
    rejected = f"The {backend} database rejected the query:"
    if backend == "duckdb":  # judged before it runs: DuckDB might read the name as a file
        rejected = "Refused: no_such_table is not a table or view of this database"
    assert out.startswith(f"Error from backend 'sql' during query: {rejected}")
    assert "no_such_table" in out
    assert read_kb("sql", "SELECT * FROM clients WHERE region = 'MARS'") == "No results."


# -- read-only: the guard -----------------------------------------------------------------


def test_every_hostile_statement_is_refused_and_nothing_changes(kb: SQLManager, url: str) -> None:
    read_kb = _tools(kb)["read_kb"]
    accepted = []
    for statement, _reason in HOSTILE:
        out = read_kb("sql", statement or " ")
        if "Refused" not in out and out != "query must not be empty.":
            accepted.append((statement, out))
    assert accepted == []
    assert _snapshot(kb, url) == ORIGINAL


def test_write_kb_declines_and_write_raises_a_capability_error(kb: SQLManager) -> None:
    out = _tools(kb)["write_kb"]("sql", text="Acme renewed")
    assert out == "Backend 'sql' is read-only. Knowledge bases that accept writes: []"
    with pytest.raises(KnowledgeCapabilityError):
        kb.write([{"text": "x", "metadata": {}}])


# -- read-only: the database session itself -----------------------------------------------


@pytest.mark.parametrize(
    "write",
    [
        "INSERT INTO clients (client_name, status) VALUES ('Evil', 'active')",
        "UPDATE clients SET status = 'churned'",
        "DELETE FROM clients",
        "CREATE TABLE stolen (a INTEGER)",
        "DROP TABLE clients",
    ],
)
def test_the_session_refuses_a_write_that_slipped_past_parsing(
    kb: SQLManager, url: str, backend: str, write: str
) -> None:
    with pytest.raises(SQLQueryError) as caught:
        kb._run(write)  # the execution path below the guard
    assert READ_ONLY_MESSAGES[backend] in str(caught.value)
    assert _snapshot(kb, url) == ORIGINAL


def test_postgres_refuses_a_select_of_a_function_that_writes(postgres_url: str) -> None:
    import psycopg

    with SQLManager(postgres_url, allowed_functions=["bump"]) as manager:
        out = _tools(manager)["read_kb"]("sql", "SELECT bump()")  # allowed past the guard
    assert "cannot execute INSERT in a read-only transaction" in out
    conninfo = postgres_url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(conninfo) as conn:
        assert conn.execute("SELECT count(*) FROM audit").fetchone() == (0,)


def test_postgres_read_only_is_set_per_transaction_not_only_per_session(postgres_url: str) -> None:
    with SQLManager(postgres_url) as manager:
        shown = manager.query("SHOW default_transaction_read_only")
        assert [r["text"] for r in shown] == ["default_transaction_read_only: on"]
        manager._run("SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE")
        with pytest.raises(SQLQueryError, match="read-only transaction"):
            manager._run("INSERT INTO audit VALUES ('sneaky')")
        # the change above was rolled back with the statement's transaction
        shown = manager.query("SHOW default_transaction_read_only")
        assert [r["text"] for r in shown] == ["default_transaction_read_only: on"]


def test_postgres_transactions_begin_read_only_even_with_the_session_default_off(
    postgres_url: str,
) -> None:
    import psycopg

    with SQLManager(postgres_url, allowed_functions=[*PID, "current_setting"]) as manager:
        pid = manager.query("SELECT pg_backend_pid() AS pid")[0]["metadata"]["row"]["pid"]
        # commit a read-write session default on the pooled connection, behind the manager
        raw = manager.engine.raw_connection()
        try:
            cursor = raw.cursor()
            cursor.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE")
            cursor.close()
            raw.commit()
        finally:
            raw.close()
        same = manager.query(
            "SELECT pg_backend_pid() AS pid, current_setting('default_transaction_read_only') AS d"
        )
        assert same[0]["metadata"]["row"] == {"pid": pid, "d": "off"}
        with pytest.raises(SQLQueryError, match="read-only transaction"):
            manager._run("INSERT INTO audit VALUES ('sneaky')")
    conninfo = postgres_url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(conninfo) as conn:
        assert conn.execute("SELECT count(*) FROM audit").fetchone() == (0,)


def test_postgres_leaves_no_transaction_open_between_queries(postgres_url: str) -> None:
    import psycopg

    conninfo = postgres_url.replace("postgresql+psycopg://", "postgresql://")
    with SQLManager(postgres_url, allowed_functions=PID) as manager:
        pid = manager.query("SELECT pg_backend_pid() AS pid")[0]["metadata"]["row"]["pid"]
        with psycopg.connect(conninfo, autocommit=True) as conn:
            state = conn.execute(
                "SELECT state FROM pg_stat_activity WHERE pid = %s", (pid,)
            ).fetchone()
        assert state == ("idle",)  # not "idle in transaction": it was rolled back


def test_postgres_a_dropped_connection_is_reported_then_replaced(
    postgres_url: str, postgres_admin: str
) -> None:
    import psycopg

    with SQLManager(postgres_url, allowed_functions=PID) as manager:
        pid = manager.query("SELECT pg_backend_pid() AS pid")[0]["metadata"]["row"]["pid"]
        with psycopg.connect(postgres_admin, autocommit=True) as admin:  # as a server restart would
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        out = _tools(manager)["read_kb"]("sql", "SELECT client_name FROM clients")
        assert "Could not reach the postgresql database" in out
        # the dead connection was discarded: the next query opens a new one
        again = manager.query("SELECT pg_backend_pid() AS pid, count(*) AS n FROM clients")
        assert again[0]["metadata"]["row"]["pid"] != pid
        assert again[0]["metadata"]["row"]["n"] == len(CLIENTS)


def test_postgres_cancels_a_statement_running_past_the_timeout(postgres_url: str) -> None:
    with SQLManager(postgres_url, timeout_seconds=0.05) as manager:
        out = _tools(manager)["read_kb"](
            "sql", "SELECT count(*) FROM generate_series(1, 500000000) AS g"
        )
    assert "The statement was stopped after timeout_seconds=0.05" in out


def test_postgres_timeout_applies_to_every_pooled_connection(postgres_url: str) -> None:
    with SQLManager(postgres_url, timeout_seconds=0.05) as manager:
        shown = manager.query("SHOW statement_timeout")
        assert [r["text"] for r in shown] == ["statement_timeout: 50ms"]
    with SQLManager(postgres_url) as manager:  # the default: 30 s
        shown = manager.query("SHOW statement_timeout")
        assert [r["text"] for r in shown] == ["statement_timeout: 30s"]
    with SQLManager(postgres_url, timeout_seconds=None) as manager:  # off: the server's stays
        shown = manager.query("SHOW statement_timeout")
        assert [r["text"] for r in shown] == ["statement_timeout: 0"]


def test_duckdb_cannot_reach_files_from_sql(duckdb_url: str) -> None:
    # the guard refuses read_csv(); allowed past it, the session itself refuses the file
    with SQLManager(duckdb_url, allowed_functions=["read_csv"]) as manager:
        out = _tools(manager)["read_kb"]("sql", "SELECT * FROM read_csv('/etc/hostname')")
    assert "rejected the query" in out and "disabled by configuration" in out


# -- schema ------------------------------------------------------------------------------


def test_derives_its_schema_from_the_database(url: str, backend: str) -> None:
    with SQLManager(url, derives_schema=True) as manager:
        reported = json.loads(_tools(manager)["get_schemas"]())["sql"]
    assert "error" not in reported
    assert reported["engine"] == backend and reported["read_only"] is True
    columns = reported["tables"]["clients"]
    assert [c.split()[0] for c in columns] == [
        "client_name",
        "status",
        "region",
        "revenue",
        "signed",
    ]
    assert reported["capabilities"]["derives_schema"] is True


def test_without_derives_schema_add_schema_is_what_the_agent_sees(kb: SQLManager) -> None:
    reported = json.loads(_tools(kb)["get_schemas"]())["sql"]
    assert reported["tables"] == {"clients": "client_name, status, region"}


# -- configuration -----------------------------------------------------------------------


def test_the_url_falls_back_to_the_environment(
    monkeypatch: pytest.MonkeyPatch, sqlite_url: str
) -> None:
    monkeypatch.setenv("AGENTKERNEL_SQL_URL", sqlite_url)
    with SQLManager() as manager:
        assert len(manager.query("SELECT * FROM clients")) == 3
    monkeypatch.setenv("AGENTKERNEL_SQL_URL", "sqlite:////nonexistent/ignored.db")
    with SQLManager(sqlite_url) as manager:  # an explicit URL wins
        assert len(manager.query("SELECT * FROM clients")) == 3


@pytest.mark.parametrize(
    ("url", "message"),
    [
        (None, "needs a database URL: pass url= or set AGENTKERNEL_SQL_URL"),
        ("not a url", "not a SQLAlchemy URL"),
        ("sqlite://", "in-memory sqlite database"),
        ("sqlite:///:memory:", "in-memory sqlite database"),
        ("duckdb:///:memory:", "in-memory duckdb database"),
        ("mssql+pymssql://reader@db/warehouse", "cannot make a mssql session read-only"),
        ("postgresql+nosuchdriver://reader@db/warehouse", "cannot load the SQLAlchemy dialect"),
    ],
)
def test_configuration_mistakes_fail_at_construction(
    monkeypatch: pytest.MonkeyPatch, url: str | None, message: str
) -> None:
    monkeypatch.delenv("AGENTKERNEL_SQL_URL", raising=False)
    with pytest.raises(AKConfigError, match=message):
        SQLManager(url)


def test_a_missing_sqlite_file_is_reported_not_created(tmp_path: Path) -> None:
    missing = tmp_path / "missing.sqlite"
    with SQLManager(f"sqlite:///{missing}") as manager:
        out = _tools(manager)["read_kb"]("sql", "SELECT 1")
    assert "unable to open database file" in out
    assert not missing.exists()


# -- lifecycle ---------------------------------------------------------------------------


def test_close_disposes_and_a_later_query_reconnects(kb: SQLManager) -> None:
    kb.close()
    kb.close()
    assert kb._engine is None
    assert len(kb.query("SELECT client_name FROM clients")) == 3
