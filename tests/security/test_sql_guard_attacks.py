"""The SQL guard under attack, through the real managers and the agent tool, on real servers.

Real: PostgreSQL 15 (``initdb`` + ``pg_ctl`` on 127.0.0.1) reached as its superuser (with
``allow_privileged_role=True``) and as the least-privilege role ``kb_reader``, a DuckDB file, a
SQLite file, and the Trino-protocol test server (``tests/support/trino_server.py``) over its
own DuckDB data; ``SQLManager`` / ``StarburstManager`` and ``KnowledgeBuilder``'s ``read_kb``.

Every statement of ``hostile_sql_corpus`` must be refused by the guard, and none may reach a
database: PostgreSQL logs every statement of the test database (``log_statement = all``) and
the log must show none after the attack; SQLite's own trace callback must see none; the Trino
server must receive none; files, sequences, locks, slots, large objects and statistics must
be as before, and no file may appear. Every benign statement must pass and run.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.security import hostile_sql_corpus as corpus
from tests.support import require_extra, require_module

require_extra("sqlalchemy", "sql")
require_extra("sqlglot", "sql")

from agentkernel.knowledgebase.knowledgebuilder import KnowledgeBuilder  # noqa: E402
from agentkernel.knowledgebase.sql import SQLManager  # noqa: E402

DATABASE = "kb_security"
CLIENTS = [
    ("Acme", "active", "EU", "1200.50", "2024-01-15"),
    ("Globex", "active", "US", "980.00", "2024-02-01"),
    ("Initech", "churned", "US", "120.00", "2023-11-30"),
    ("Umbrella", "active", "APAC", "4500.75", "2024-03-09"),
]
ORDERS = [
    (1, "Acme", "100.00", "2024-01-02 10:00:00", "web", '{"sku": "A1", "qty": 2}'),
    (2, "Acme", "250.00", "2024-02-03 11:30:00", "shop", '{"sku": "B2", "qty": 1}'),
    (3, "Globex", "75.50", "2024-02-10 09:15:00", "web", '{"sku": "A1", "qty": 5}'),
    (4, "Umbrella", "999.99", "2024-03-01 16:45:00", "phone", '{"sku": "C3", "qty": 3}'),
]


def _ddl(details_type: str) -> list[str]:
    return [
        "CREATE TABLE clients (client_name VARCHAR(40), status VARCHAR(20), "
        "region VARCHAR(10), revenue DECIMAL(10,2), signed DATE)",
        "CREATE TABLE orders (order_id INTEGER, client_name VARCHAR(40), amount DECIMAL(10,2), "
        f"ordered_at TIMESTAMP, channel VARCHAR(10), details {details_type})",
    ]


def _read_kb(manager: Any) -> Callable[[str], str]:
    tool = {t.__name__: t for t in KnowledgeBuilder([manager]).build()}["read_kb"]
    return lambda statement: str(tool(manager.backend_name, statement))


def _attack(read_kb: Callable[[str], str], statements: list[str]) -> list[tuple[str, str]]:
    """Send every statement; return those the guard did not refuse, with the answer."""
    passed = []
    for statement in statements:
        out = read_kb(statement)
        if "Refused:" not in out:
            passed.append((statement, out[:200]))
    return passed


def _benign(read_kb: Callable[[str], str], statements: list[str]) -> list[tuple[str, str]]:
    """Send every statement; return those that did not run, with the answer."""
    return [(s, out[:300]) for s in statements if (out := read_kb(s)).startswith("Error")]


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(autouse=True)
def _no_canary() -> Iterator[None]:
    Path(corpus.CANARY).unlink(missing_ok=True)
    yield
    assert not os.path.exists(corpus.CANARY), "a hostile statement wrote a file"


# -- PostgreSQL ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def postgres(postgres_reader: Any) -> Any:
    psycopg = require_module("psycopg", "psycopg[binary]")
    server = postgres_reader
    with psycopg.connect(server.conninfo(), autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DATABASE}")
        conn.execute(f"CREATE DATABASE {DATABASE}")
        conn.execute(f"ALTER DATABASE {DATABASE} SET log_statement = 'all'")
    with psycopg.connect(server.conninfo(DATABASE), autocommit=True) as conn:
        for statement in _ddl("JSONB"):
            conn.execute(statement)
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO clients VALUES (%s, %s, %s, %s, %s)", CLIENTS)
            cur.executemany("INSERT INTO orders VALUES (%s, %s, %s, %s, %s, %s)", ORDERS)
        conn.execute("CREATE SEQUENCE ak_ids")
        data = Path(str(conn.execute("SHOW data_directory").fetchone()[0]))  # type: ignore[index]
    server.grant_reader(DATABASE)
    return server, data


def _postgres_state(server: Any, data: Path) -> dict[str, Any]:
    import psycopg

    queries = {
        "tables": "SELECT string_agg(tablename, ',' ORDER BY tablename) FROM pg_tables "
        "WHERE schemaname NOT IN ('pg_catalog', 'information_schema')",
        "rows": "SELECT (SELECT count(*) FROM clients) * 1000 + (SELECT count(*) FROM orders)",
        "revenue": "SELECT sum(revenue) FROM clients",
        "sequence": "SELECT last_value::text || is_called::text FROM ak_ids",
        "slots": "SELECT count(*) FROM pg_replication_slots",
        "origins": "SELECT count(*) FROM pg_replication_origin",
        "large objects": "SELECT count(*) FROM pg_largeobject_metadata",
        "advisory locks": "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'",
        "stats reset": "SELECT stats_reset::text FROM pg_stat_database "
        f"WHERE datname = '{DATABASE}'",
        "bgwriter reset": "SELECT stats_reset::text FROM pg_stat_bgwriter",
        "backends": "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'",
    }
    with psycopg.connect(server.conninfo(DATABASE), autocommit=True) as conn:
        state = {k: conn.execute(q).fetchone()[0] for k, q in queries.items()}  # type: ignore[index]
    state["auto.conf"] = _sha(data / "postgresql.auto.conf")
    return state


def _log_after(log: Path, offset: int, marker: str, read_kb: Callable[[str], str]) -> str:
    """The server log written since ``offset``, once a marker statement shows it is complete."""
    assert not read_kb(f"SELECT '{marker}' AS marker").startswith("Error")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        text = log.read_bytes()[offset:].decode("utf-8", errors="replace")
        if marker in text:
            return text[: text.index(marker)]
        time.sleep(0.05)
    raise AssertionError("the marker statement never reached the server log")


@pytest.mark.parametrize("role", ["superuser", "least-privilege"])
def test_postgres_refuses_every_hostile_statement_and_none_reaches_the_server(
    postgres: Any, role: str
) -> None:
    server, data = postgres
    hostile = corpus.postgres_hostile()
    assert len(hostile) >= 300
    url = server.url(DATABASE) if role == "superuser" else server.reader_url(DATABASE)
    log = data.parent / "server.log"
    with SQLManager(url, allow_privileged_role=role == "superuser") as manager:
        read_kb = _read_kb(manager)
        assert not read_kb("SELECT count(*) FROM clients").startswith("Error")  # connected
        before = _postgres_state(server, data)
        offset = log.stat().st_size
        assert _attack(read_kb, hostile) == []
        reached = _log_after(log, offset, f"ak-marker-{role}", read_kb)
        after = _postgres_state(server, data)  # the manager's backend still alive
    statements = [line for line in reached.splitlines() if "statement:" in line]
    if statements and "PREPARE agentkernel_check AS SELECT '" in statements[-1]:
        statements.pop()  # the server's check of the marker's own calls
    if statements and statements[-1].endswith("statement: BEGIN READ ONLY"):
        statements.pop()  # the driver opening the marker's own transaction
    assert statements == [], "hostile statements reached PostgreSQL"
    assert "ERROR:" not in reached
    assert after == before


@pytest.mark.parametrize("role", ["superuser", "least-privilege"])
def test_postgres_runs_every_benign_statement(postgres: Any, role: str) -> None:
    server, _ = postgres
    url = server.url(DATABASE) if role == "superuser" else server.reader_url(DATABASE)
    with SQLManager(url, allow_privileged_role=role == "superuser") as manager:
        assert _benign(_read_kb(manager), corpus.POSTGRES_BENIGN) == []


def test_postgres_the_reported_bypass_is_refused_by_name(postgres: Any) -> None:
    server, _ = postgres
    with SQLManager(server.url(DATABASE), allow_privileged_role=True) as manager:
        out = _read_kb(manager)("SELECT pg_catalog.U&\"pg_r\\0065ad_file\"('/etc/passwd')")
    assert "root:" not in out
    assert "pg_read_file() is not on the postgres allow-list" in out
    assert "allowed_functions=['pg_read_file'] to SQLManager" in out


def test_postgres_a_user_allowed_function_runs(postgres: Any) -> None:
    server, _ = postgres
    with SQLManager(server.reader_url(DATABASE), allowed_functions=["pg_backend_pid"]) as manager:
        out = _read_kb(manager)("SELECT pg_backend_pid() > 0 AS alive")
    assert "alive" in out and not out.startswith("Error")


# -- DuckDB ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def duckdb_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    duckdb = require_module("duckdb")
    require_module("duckdb_engine", "duckdb-engine")
    path = tmp_path_factory.mktemp("duckdb-security") / "kb.duckdb"
    conn = duckdb.connect(str(path))
    for statement in _ddl("JSON"):
        conn.execute(statement)
    conn.executemany("INSERT INTO clients VALUES (?, ?, ?, ?, ?)", CLIENTS)
    conn.executemany("INSERT INTO orders VALUES (?, ?, ?, ?, ?, ?)", ORDERS)
    conn.execute("CREATE SEQUENCE ak_ids")
    conn.close()
    return path


def test_duckdb_refuses_every_hostile_statement_and_changes_nothing(duckdb_file: Path) -> None:
    hostile = corpus.duckdb_hostile()
    assert len(hostile) >= 300
    extensions = Path.home() / ".duckdb"  # where INSTALL would put an extension

    def state() -> tuple[str, list[str], list[str]]:
        installed = sorted(str(p) for p in extensions.rglob("*")) if extensions.exists() else []
        return _sha(duckdb_file), sorted(os.listdir(duckdb_file.parent)), installed

    before = state()
    with SQLManager(f"duckdb:///{duckdb_file}") as manager:
        assert _attack(_read_kb(manager), hostile) == []
    assert state() == before


def test_duckdb_runs_every_benign_statement(duckdb_file: Path) -> None:
    with SQLManager(f"duckdb:///{duckdb_file}") as manager:
        assert _benign(_read_kb(manager), corpus.DUCKDB_BENIGN) == []


# -- SQLite ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sqlite_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("sqlite-security") / "kb.sqlite"
    conn = sqlite3.connect(path)
    for statement in _ddl("TEXT"):
        conn.execute(statement)
    conn.executemany("INSERT INTO clients VALUES (?, ?, ?, ?, ?)", CLIENTS)
    conn.executemany("INSERT INTO orders VALUES (?, ?, ?, ?, ?, ?)", ORDERS)
    conn.commit()
    conn.close()
    return path


def _traced(manager: SQLManager) -> list[str]:
    """Every statement SQLite itself executes on the manager's connections."""
    import sqlalchemy as sa

    seen: list[str] = []
    sa.event.listen(
        manager.engine, "connect", lambda conn, _record: conn.set_trace_callback(seen.append)
    )
    return seen


def test_sqlite_refuses_every_hostile_statement_and_none_reaches_sqlite(sqlite_file: Path) -> None:
    hostile = corpus.sqlite_hostile()
    assert len(hostile) >= 300
    before = (_sha(sqlite_file), sorted(os.listdir(sqlite_file.parent)))
    with SQLManager(f"sqlite:///{sqlite_file}") as manager:
        seen = _traced(manager)
        read_kb = _read_kb(manager)
        assert not read_kb("SELECT count(*) FROM clients").startswith("Error")
        start = len(seen)
        assert seen, "the trace callback sees what SQLite runs"
        assert _attack(read_kb, hostile) == []
        assert seen[start:] == []
    assert (_sha(sqlite_file), sorted(os.listdir(sqlite_file.parent))) == before


def test_sqlite_runs_every_benign_statement(sqlite_file: Path) -> None:
    with SQLManager(f"sqlite:///{sqlite_file}") as manager:
        assert _benign(_read_kb(manager), corpus.SQLITE_BENIGN) == []


# -- Trino protocol ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def trino() -> Iterator[Any]:
    duckdb = require_module("duckdb")
    require_extra("trino", "trino")
    from tests.support.trino_server import TrinoTestServer

    db = duckdb.connect()
    db.execute("ATTACH ':memory:' AS kb")
    db.execute("CREATE SCHEMA kb.crm")
    db.execute("USE kb.crm")
    for statement in _ddl("JSON"):
        db.execute(statement)
    db.executemany("INSERT INTO clients VALUES (?, ?, ?, ?, ?)", CLIENTS)
    db.executemany("INSERT INTO orders VALUES (?, ?, ?, ?, ?, ?)", ORDERS)
    db.execute("ATTACH ':memory:' AS kb_sheets")
    db.execute("CREATE SCHEMA kb_sheets.system")
    db.execute("CREATE MACRO kb_sheets.system.sheet(id) AS TABLE SELECT id AS sheet, 1 AS stock")
    server = TrinoTestServer(db, page_size=50).start()
    try:
        yield server
    finally:
        server.stop()


def _starburst(server: Any) -> Any:
    from agentkernel.knowledgebase.starburst import StarburstManager

    return StarburstManager(
        host="127.0.0.1", port=server.port, user="analyst", catalog="kb", schema="crm",
        http_scheme="http",
    )  # fmt: skip


def test_trino_refuses_every_hostile_statement_and_none_reaches_the_server(trino: Any) -> None:
    hostile = corpus.trino_hostile()
    assert len(hostile) >= 300
    sent = len(trino.received)
    assert _attack(_read_kb(_starburst(trino)), hostile) == []
    assert trino.statements()[sent:] == []


def test_trino_runs_every_benign_statement(trino: Any) -> None:
    assert _benign(_read_kb(_starburst(trino)), corpus.TRINO_BENIGN) == []


@pytest.mark.parametrize(
    "written",
    [
        'U&"pg_r\\0065ad_file"',
        'u&"\\+000070g_sleep"',
        "U&\"pg!0073leep\" UESCAPE '!'",
        'U&"a\\\\b"',
        'U&"d\\00e9j\\00e0"',
        'U&"\\d83d\\de00x"',
        'U&"say ""hi"""',
        "PG_READ_FILE",
        '"Mixed"',
        "x" * 70,
    ],
)
def test_postgres_resolves_names_exactly_as_the_guard_does(postgres: Any, written: str) -> None:
    """The server names a column written this way what the guard resolves the name to."""
    import psycopg

    from agentkernel.knowledgebase._sql.guard import _tokens
    from agentkernel.knowledgebase._sql.names import decode_unicode_identifiers, resolve

    server, _ = postgres
    statement = f"SELECT 1 AS {written}"
    decoded = decode_unicode_identifiers(statement, _tokens(statement, "postgres"), "postgres")
    name = decoded.removeprefix("SELECT 1 AS ")
    quoted = name.startswith('"')
    guard_name = resolve(
        name[1:-1].replace('""', '"') if quoted else name, quoted=quoted, dialect="postgres"
    )
    with psycopg.connect(server.conninfo(DATABASE)) as conn:
        cursor = conn.execute(statement)
        assert cursor.description is not None
        assert cursor.description[0].name == guard_name


def test_postgres_the_reported_bypass_is_real_below_the_guard(postgres: Any) -> None:
    """Sent straight to the server as its superuser, the statement reads the file."""
    import psycopg

    server, _ = postgres
    statement = "SELECT pg_catalog.U&\"pg_r\\0065ad_file\"('/etc/passwd')"
    with psycopg.connect(server.conninfo(DATABASE)) as conn:
        row = conn.execute(statement).fetchone()
    assert row is not None and "root:" in row[0]
