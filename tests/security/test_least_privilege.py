"""Least privilege checked when a connection opens.

Real: a PostgreSQL 15 cluster on 127.0.0.1 (``initdb``/``pg_ctl``) with its superuser, the
least-privilege role ``kb_reader`` and roles holding the file and program roles; a DuckDB
file and an SQLite file opened by ``SQLManager`` through SQLAlchemy; the
``KnowledgeBuilder`` tools. Nothing is mocked.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import require_extra, require_module

require_extra("sqlalchemy", "sql")
require_module("psycopg", "psycopg[binary]")

from agentkernel.knowledgebase.errors import SQLQueryError  # noqa: E402
from agentkernel.knowledgebase.knowledgebuilder import KnowledgeBuilder  # noqa: E402
from agentkernel.knowledgebase.sql import SQLManager  # noqa: E402

DATABASE = "kb_privilege"


@pytest.fixture(scope="module")
def server(postgres_server: Any) -> Iterator[Any]:
    import psycopg

    with psycopg.connect(postgres_server.conninfo(), autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DATABASE}")
        conn.execute(f"CREATE DATABASE {DATABASE}")
    with psycopg.connect(postgres_server.conninfo(DATABASE), autocommit=True) as conn:
        conn.execute("CREATE TABLE notes (body TEXT)")
        conn.execute("INSERT INTO notes VALUES ('kept')")
        # a direct member of a file role, and one that inherits it through another role
        conn.execute("DROP ROLE IF EXISTS kb_files, kb_team, kb_inherits")
        conn.execute("CREATE ROLE kb_files LOGIN IN ROLE pg_read_server_files")
        conn.execute("CREATE ROLE kb_team IN ROLE pg_execute_server_program")
        conn.execute("CREATE ROLE kb_inherits LOGIN IN ROLE kb_team")
        conn.execute("GRANT SELECT ON notes TO kb_files, kb_inherits")
    postgres_server.grant_reader(DATABASE)
    yield postgres_server


def _read(manager: SQLManager, statement: str) -> str:
    return KnowledgeBuilder([manager]).build()[1](manager.backend_name, statement)


def _url(server: Any, user: str) -> str:
    return f"postgresql+psycopg://{user}@{server.host}:{server.port}/{DATABASE}"


def test_the_superuser_is_refused_by_default_with_the_role_recipe(server: Any) -> None:
    with SQLManager(server.url(DATABASE)) as manager:
        out = _read(manager, "SELECT body FROM notes")
        with pytest.raises(SQLQueryError, match="refused to connect as 'postgres'"):
            manager.query("SELECT body FROM notes")
    assert out.startswith("Error from backend 'sql' during query: SQLManager 'sql' refused")
    assert "it is a superuser" in out
    for step in (
        "CREATE ROLE kb_reader LOGIN",
        "GRANT CONNECT ON DATABASE",
        "GRANT USAGE ON SCHEMA public",
        "GRANT SELECT ON ALL TABLES IN SCHEMA public",
        "ALTER ROLE kb_reader SET default_transaction_read_only = on",
        "allow_privileged_role=True",
    ):
        assert step in out
    assert "Traceback" not in out


def test_a_refused_connection_is_closed_not_left_open(server: Any) -> None:
    import psycopg

    with SQLManager(_url(server, "kb_files")) as manager:
        for _ in range(3):
            with pytest.raises(SQLQueryError):
                manager.query("SELECT body FROM notes")
    with psycopg.connect(server.conninfo(DATABASE)) as conn:
        left = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE usename = 'kb_files'"
        ).fetchone()
    assert left == (0,)


def test_the_superuser_is_accepted_with_the_explicit_opt_in(server: Any) -> None:
    with SQLManager(server.url(DATABASE), allow_privileged_role=True) as manager:
        assert _read(manager, "SELECT body FROM notes") == (
            "- body: kept (source: sql:postgresql:kb_privilege)"
        )
        # still read-only: the opt-in accepts the role, not writes
        with pytest.raises(SQLQueryError, match="read-only transaction"):
            manager._run("INSERT INTO notes VALUES ('written')")


@pytest.mark.parametrize(
    ("user", "role"),
    [("kb_files", "pg_read_server_files"), ("kb_inherits", "pg_execute_server_program")],
)
def test_a_member_of_a_file_or_program_role_is_refused(server: Any, user: str, role: str) -> None:
    with SQLManager(_url(server, user)) as manager:
        out = _read(manager, "SELECT body FROM notes")
    assert f"refused to connect as '{user}': it is a member of {role}" in out


def test_the_least_privilege_role_is_accepted(server: Any) -> None:
    with SQLManager(server.reader_url(DATABASE)) as manager:
        assert _read(manager, "SELECT body FROM notes") == (
            "- body: kept (source: sql:postgresql:kb_privilege)"
        )
        # what the role cannot do whatever a statement says: read server files
        with pytest.raises(SQLQueryError, match="permission denied"):
            manager._run("SELECT pg_read_file('/etc/hostname')")


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    path = tmp_path / "kb.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE notes (body TEXT)")
        conn.execute("INSERT INTO notes VALUES ('kept')")
    return f"sqlite:///{path}"


def test_sqlite_is_query_only_distrusts_the_schema_and_loads_no_extension(
    sqlite_url: str,
) -> None:
    with SQLManager(sqlite_url) as manager:
        _, rows = manager._run("SELECT * FROM pragma_query_only, pragma_trusted_schema")
        assert rows == [(1, 0)]
        with pytest.raises(SQLQueryError, match="not authorized"):
            manager._run("SELECT load_extension('/nonexistent/ext')")


def test_duckdb_configuration_is_locked_with_extension_loading_off(tmp_path: Path) -> None:
    duckdb = require_module("duckdb")
    require_module("duckdb_engine", "duckdb-engine")
    path = tmp_path / "kb.duckdb"
    duckdb.connect(str(path)).close()
    with SQLManager(f"duckdb:///{path}") as manager:
        _, rows = manager._run(
            "SELECT current_setting('enable_external_access'), "
            "current_setting('autoload_known_extensions'), "
            "current_setting('autoinstall_known_extensions'), "
            "current_setting('allow_community_extensions')"
        )
        assert rows == [(False, False, False, False)]
        with pytest.raises(SQLQueryError, match="configuration has been locked"):
            manager._run("SET enable_external_access = true")
