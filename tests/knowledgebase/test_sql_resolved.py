"""What the database resolves a statement to is judged, and long values are cut as read.

Real: PostgreSQL 15 (``initdb`` + ``pg_ctl`` on 127.0.0.1, fixture ``postgres_server``) with a
secret table the least-privilege role ``kb_reader`` may not select and SECURITY DEFINER
functions that return it; DuckDB and SQLite database files; ``SQLManager`` and the agent tool
``read_kb``. Each bypass below returned the secret before the server-side check existed.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support import require_extra, require_module

require_extra("sqlalchemy", "sql")
require_extra("sqlglot", "sql")

from agentkernel.knowledgebase.errors import SQLQueryError, SQLRefusedError  # noqa: E402
from agentkernel.knowledgebase.knowledgebuilder import KnowledgeBuilder  # noqa: E402
from agentkernel.knowledgebase.sql import SQLManager  # noqa: E402

DATABASE = "kb_resolved"
SECRET = "TOPSECRET-7f3a"
_SETUP = [
    "CREATE TABLE t (id integer, name text)",
    "INSERT INTO t VALUES (1, 'ada')",
    "CREATE TABLE secrets (s text)",
    f"INSERT INTO secrets VALUES ('{SECRET}')",
    "CREATE FUNCTION public.fn(t) RETURNS text LANGUAGE sql SECURITY DEFINER "
    "AS $$ SELECT s FROM secrets $$",
    "CREATE FUNCTION public.lower(integer) RETURNS text LANGUAGE sql SECURITY DEFINER "
    "AS $$ SELECT s FROM secrets $$",
    "CREATE FUNCTION public.leak(integer, integer) RETURNS text LANGUAGE sql SECURITY DEFINER "
    "AS $$ SELECT s FROM secrets $$",
    "CREATE OPERATOR public.|| (LEFTARG = integer, RIGHTARG = integer, FUNCTION = public.leak)",
    # a type whose cast to text is a user's function: cutting its values must not call it
    "CREATE TYPE mood AS (v text)",
    "CREATE FUNCTION public.mood_text(mood) RETURNS text LANGUAGE sql SECURITY DEFINER "
    "AS $$ SELECT s FROM secrets $$",
    "CREATE CAST (mood AS text) WITH FUNCTION public.mood_text(mood)",
    "CREATE TABLE moods (m mood)",
    "INSERT INTO moods VALUES (ROW(repeat('m', 300000)))",
]


@pytest.fixture(scope="module")
def reader_url(postgres_reader: Any) -> str:
    psycopg = require_module("psycopg", "psycopg[binary]")
    server = postgres_reader
    with psycopg.connect(server.conninfo(), autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DATABASE}")
        conn.execute(f"CREATE DATABASE {DATABASE}")
    with psycopg.connect(server.conninfo(DATABASE), autocommit=True) as conn:
        for statement in _SETUP:
            conn.execute(statement)
    url = server.reader_url(DATABASE)
    with psycopg.connect(server.conninfo(DATABASE), autocommit=True) as conn:
        conn.execute(f"REVOKE SELECT ON secrets FROM {server.reader}")
    return url


def _read_kb(manager: SQLManager) -> Callable[[str], str]:
    tool = {t.__name__: t for t in KnowledgeBuilder([manager]).build()}["read_kb"]
    return lambda statement: str(tool(manager.backend_name, statement))


@pytest.mark.parametrize(
    ("statement", "named"),
    [
        ("SELECT c.fn FROM t c", "public.fn()"),  # attribute notation runs fn(c)
        ("SELECT 1 || 2", "public.leak()"),  # || resolves to public.|| (integer, integer)
        ("SELECT lower(5)", "public.lower()"),  # an exact overload beats pg_catalog.lower(text)
        ("EXPLAIN SELECT c.fn FROM t c", "public.fn()"),
    ],
)
def test_postgres_refuses_what_the_server_would_resolve_to_a_user_function(
    reader_url: str, statement: str, named: str
) -> None:
    with SQLManager(reader_url) as manager:
        out = _read_kb(manager)(statement)
    assert SECRET not in out
    assert out.startswith("Refused:") or "Refused:" in out
    assert named in out


def test_postgres_cutting_a_value_calls_no_cast_a_user_created(reader_url: str) -> None:
    with SQLManager(reader_url, max_result_bytes=10_000) as manager:
        rows = manager.query("SELECT m FROM moods")
        with pytest.raises(SQLRefusedError, match=r"public\.mood_text"):
            manager.query("SELECT m::text AS t FROM moods")  # the user's cast, written
    assert SECRET not in str(rows)
    assert rows[0]["metadata"]["values_cut"] == ["m"]
    assert str(rows[0]["metadata"]["row"]["m"]).startswith("(mmmm")


def test_postgres_the_reader_really_cannot_read_the_secret(reader_url: str) -> None:
    with SQLManager(reader_url) as manager, pytest.raises(SQLQueryError, match="permission"):
        manager.query("SELECT s FROM secrets")


def test_postgres_a_user_function_listed_by_the_user_runs(reader_url: str) -> None:
    with SQLManager(reader_url, allowed_functions=["public.fn"]) as manager:
        out = _read_kb(manager)("SELECT c.fn FROM t c")
    assert SECRET in out  # the owner said so: the check follows allowed_functions


def test_postgres_parameters_are_checked_as_literals(reader_url: str) -> None:
    with SQLManager(reader_url) as manager, pytest.raises(SQLRefusedError, match=r"public\.lower"):
        manager.query("SELECT lower(:n)", params={"n": 5})


def test_postgres_builtins_casts_and_syntax_still_run(reader_url: str) -> None:
    with SQLManager(reader_url) as manager:
        rows = manager.query(
            "SELECT lower(name) AS l, id + 1 AS n, name || 'x' AS s, CAST(id AS numeric) AS c, "
            "EXTRACT(year FROM DATE '2024-01-02') AS y, name SIMILAR TO 'a%' AS m FROM t"
        )
        path = manager.query("SHOW search_path")
    assert rows[0]["metadata"]["row"]["l"] == "ada"
    assert rows[0]["metadata"]["row"]["s"] == "adax"
    assert str(path[0]["text"]).split(": ", 1)[1].startswith("pg_catalog")


# -- DuckDB and SQLite ---------------------------------------------------------------------


@pytest.fixture
def duckdb_file(tmp_path: Path) -> Path:
    duckdb = require_module("duckdb")
    require_module("duckdb_engine", "duckdb-engine")
    (tmp_path / "secret.csv").write_text(f"a,b\n1,{SECRET}\n")
    path = tmp_path / "kb.duckdb"
    conn = duckdb.connect(str(path))
    conn.execute("CREATE TABLE t (a INTEGER, s VARCHAR)")
    conn.execute("INSERT INTO t VALUES (1, 'x')")
    conn.execute(f"CREATE MACRO lower(x) AS '{SECRET}'")
    conn.close()
    return path


def _duckdb(path: Path, external: bool = False) -> SQLManager:
    config = {"connect_args": {"config": {"enable_external_access": True}}} if external else {}
    return SQLManager(f"duckdb:///{path}", engine_options=config)


def test_duckdb_never_shows_the_database_path(duckdb_file: Path) -> None:
    with _duckdb(duckdb_file) as manager:
        read_kb = _read_kb(manager)
        outs = [read_kb("SELECT * FROM pragma_database_list"), read_kb("SELECT * FROM nosuch")]
    for out in outs:
        assert str(duckdb_file.parent) not in out
        assert out.startswith("Error") or "Refused" in out


def test_duckdb_a_dotted_name_never_reads_a_file(duckdb_file: Path, monkeypatch: Any) -> None:
    monkeypatch.chdir(duckdb_file.parent)
    with _duckdb(duckdb_file, external=True) as manager:
        out = _read_kb(manager)("SELECT * FROM secret.csv")
    assert SECRET not in out
    assert "not a table or view" in out
    with _duckdb(duckdb_file, external=True) as manager:
        read_kb = _read_kb(manager)
        described = [read_kb("DESCRIBE secret.csv"), read_kb("SHOW secret.csv")]
        table = read_kb("DESCRIBE t")
    assert all("not a table or view" in out for out in described), described
    assert "column_name: a" in table


def test_duckdb_a_macro_shadowing_a_builtin_is_refused(duckdb_file: Path) -> None:
    with _duckdb(duckdb_file) as manager:
        read_kb = _read_kb(manager)
        out = read_kb("SELECT lower('a') AS l")
        fine = read_kb("WITH x AS (SELECT a FROM t) SELECT upper(s) AS u FROM t, x")
    assert SECRET not in out and "defined in this database" in out
    assert "u: X" in fine


def test_sqlite_pragma_relations_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "kb.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (a)")
    with SQLManager(f"sqlite:///{path}") as manager:
        out = _read_kb(manager)("SELECT * FROM pragma_database_list")
    assert "Refused" in out and str(tmp_path) not in out


# -- long values are cut as they are read ------------------------------------------------------


def _sqlite_url(tmp_path: Path) -> str:
    path = tmp_path / "kb.sqlite"
    sqlite3.connect(path).close()
    return f"sqlite:///{path}"


@pytest.mark.parametrize("backend", ["postgresql", "duckdb", "sqlite"])
def test_a_long_value_is_cut_in_the_text_and_the_row(
    backend: str, reader_url: str, duckdb_file: Path, tmp_path: Path
) -> None:
    url = {
        "postgresql": reader_url,
        "duckdb": f"duckdb:///{duckdb_file}",
        "sqlite": _sqlite_url(tmp_path),
    }[backend]
    big = {
        "postgresql": "repeat('x', 3000000)",
        "duckdb": "repeat('x', 3000000)",
        "sqlite": "printf('%.*c', 3000000, 'x')",
    }[backend]
    with SQLManager(url, max_result_bytes=100_000) as manager:
        rows = manager.query(f"SELECT {big} AS big, 7 AS n")
    row = rows[0]["metadata"]["row"]
    assert row["n"] == 7
    assert len(row["big"]) < 60_000 and row["big"].endswith("characters]")
    assert rows[0]["metadata"]["values_cut"] == ["big"]
    assert len(rows[0]["text"]) <= 100_000


def test_sqlite_a_value_too_big_to_build_is_an_error_not_a_crash(tmp_path: Path) -> None:
    with SQLManager(_sqlite_url(tmp_path)) as manager, pytest.raises(SQLQueryError, match="big"):
        manager.query("SELECT zeroblob(700000000) AS z")


@pytest.mark.parametrize("backend", ["postgresql", "sqlite"])
def test_the_time_limit_covers_fetching(backend: str, reader_url: str, tmp_path: Path) -> None:
    url = reader_url if backend == "postgresql" else _sqlite_url(tmp_path)
    slow = {
        "postgresql": "SELECT length(repeat(md5(g::text), 200000)) AS n "
        "FROM generate_series(1, 100000000) g",
        "sqlite": "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) "
        "SELECT length(printf('%.*c', 200000, 'x')) AS n FROM r",
    }[backend]
    # no size cap: on an idle machine SQLite fills the default 1 MB within the second, and
    # the result would be cut by the size cap instead of stopped by the time limit
    with (
        SQLManager(url, timeout_seconds=1, max_rows=10_000_000, max_result_bytes=None) as manager,
        pytest.raises(SQLQueryError, match="stopped after timeout_seconds=1"),
    ):
        manager.query(slow + " LIMIT 100000000")


def test_postgres_a_parse_tree_not_read_as_expected_refuses() -> None:
    from agentkernel.knowledgebase._sql import pg_resolve

    read = pg_resolve._calls(["{FUNCEXPR :funcformat 0 :funcid 870 :args ({VAR})}"])
    assert read.named == {870}  # fields read in any order
    for tree in (
        "{FUNCEXPR :funcid 870 :args ({VAR})}",  # no :funcformat
        "{AGGREF :aggtype 20 :args <>}",  # an aggregate without its id
        "{OPEXPR :opresulttype 16 :args <>}",  # an operator without its id
    ):
        with pytest.raises(SQLRefusedError, match="could not be read"):
            pg_resolve._calls([tree])


def test_postgres_the_prepare_batch_judges_alike_where_pipelines_are_missing(
    reader_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a libpq older than 14 (or psycopg2): PREPARE / DEALLOCATE in one batch, then a probe
    from agentkernel.knowledgebase._sql import pg_pipeline

    monkeypatch.setattr(pg_pipeline, "supported", lambda _connection: False)
    with SQLManager(reader_url, max_result_bytes=10_000) as manager:
        for statement, named in [
            ("SELECT c.fn FROM t c", "public.fn()"),
            ("SELECT 1 || 2", "public.leak()"),
            ("SELECT lower(5)", "public.lower()"),
        ]:
            out = _read_kb(manager)(statement)
            assert SECRET not in out and named in out
        rows = manager.query("SELECT repeat('x', 30000) AS big, upper('a') AS up")
    assert rows[0]["metadata"]["values_cut"] == ["big"]
    assert rows[0]["metadata"]["row"]["up"] == "A"
