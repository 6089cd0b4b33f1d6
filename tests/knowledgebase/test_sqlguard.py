"""The read-only statement guard and fallback LIMIT shared by the SQL backends.

Real: the sqlglot parser in each backend's dialect (trino, postgres, duckdb, sqlite). No
database is involved here; the backends' own tests send the same hostile statements through
the agent tools to real servers and prove none of them arrives.
"""

from __future__ import annotations

import pytest

from tests.support import require_extra
from tests.support.hostile_sql import HOSTILE

require_extra("sqlglot", "sql")

from agentkernel.knowledgebase._sql.guard import (  # noqa: E402
    SQLRefusedError,
    guard_statement,
)
from agentkernel.knowledgebase.errors import KnowledgeError  # noqa: E402

DIALECTS = ["trino", "postgres", "duckdb", "sqlite"]


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize(("statement", "reason"), HOSTILE)
def test_every_hostile_statement_is_refused_with_its_reason(
    statement: str, reason: str, dialect: str
) -> None:
    with pytest.raises(SQLRefusedError) as caught:
        guard_statement(statement, dialect=dialect, limit=3)
    message = str(caught.value)
    assert message.startswith("Refused: ")
    assert "Only one read-only statement is accepted" in message
    if dialect == "trino":  # the reason is worded from the Trino parse
        assert reason.lower() in message.lower()


@pytest.mark.parametrize(
    ("dialect", "statement", "reason"),
    [
        ("postgres", "SELECT * FROM clients FOR UPDATE", "locking clause"),
        (
            "postgres",
            "SELECT set_config('default_transaction_read_only', 'off', false)",
            "set_config",
        ),
        (
            "postgres",
            "SELECT * FROM t WHERE id IN (SELECT pg_terminate_backend(42))",
            "pg_terminate",
        ),
        ("postgres", "DO $$ BEGIN DELETE FROM clients; END $$", "DO"),
        ("postgres", "LOCK TABLE clients", "LOCK"),
        ("postgres", "VACUUM", "VACUUM"),
        ("duckdb", "ATTACH 'other.db' AS other", "ATTACH"),
        ("duckdb", "INSTALL httpfs", "INSTALL"),
        ("duckdb", "COPY (SELECT * FROM clients) TO 'out.csv'", "COPY"),
        ("sqlite", "PRAGMA query_only = OFF", "PRAGMA"),
        ("sqlite", "REPLACE INTO clients VALUES (1)", "REPLACE"),
        ("mysql", "SELECT 1 /*! ; DROP TABLE clients */", "comment"),
        ("trino", "DESCRIBE (DELETE FROM clients)", "DESCRIBE"),
        ("trino", "EXPLAIN (TYPE DISTRIBUTED) INSERT INTO t VALUES (1)", "EXPLAIN"),
        ("trino", "SELECT 'unterminated", "cannot be read"),
    ],
)
def test_dialect_specific_hostile_statements_are_refused(
    dialect: str, statement: str, reason: str
) -> None:
    with pytest.raises(SQLRefusedError, match="Refused") as caught:
        guard_statement(statement, dialect=dialect, limit=3)
    assert reason.lower() in str(caught.value).lower()


def test_refusals_are_knowledge_errors_so_tools_report_them() -> None:
    assert issubclass(SQLRefusedError, KnowledgeError)


@pytest.mark.parametrize(
    ("dialect", "statement", "kind"),
    [
        ("trino", "SELECT * FROM TABLE(kb_sheets.system.sheet(id => 'SHEET_ID'))", "select"),
        ("trino", "WITH active AS (SELECT * FROM clients) SELECT * FROM active", "select"),
        ("trino", "SELECT a FROM x UNION ALL SELECT a FROM y", "select"),
        ("trino", "SELECT * FROM TABLE(pg.system.query(query => 'SELECT 1'))", "select"),
        ("trino", "VALUES (1, 'a'), (2, 'b')", "values"),
        ("trino", "SHOW TABLES FROM kb.crm LIKE 'cl%'", "show"),
        ("trino", "SHOW CREATE TABLE clients", "show"),
        ("trino", "DESCRIBE kb.crm.clients", "describe"),
        ("trino", "DESCRIBE OUTPUT my_statement", "describe"),
        ("trino", "EXPLAIN SELECT * FROM clients", "explain"),
        ("trino", "EXPLAIN (TYPE DISTRIBUTED) SELECT 1", "explain"),
        ("trino", "EXPLAIN ANALYZE SELECT count(*) FROM clients", "explain"),
        ("postgres", "TABLE clients", "select"),
        ("postgres", "SHOW search_path", "show"),
        ("postgres", "EXPLAIN (ANALYZE, FORMAT JSON) SELECT 1", "explain"),
        ("duckdb", "SHOW TABLES", "show"),
        (
            "sqlite",
            "SELECT region, count(*) FROM clients GROUP BY region HAVING count(*) > 1",
            "select",
        ),
    ],
)
def test_read_only_statements_are_accepted(dialect: str, statement: str, kind: str) -> None:
    assert guard_statement(statement, dialect=dialect, limit=3).kind == kind


def test_comment_markers_and_semicolons_inside_string_literals_are_data_not_syntax() -> None:
    guarded = guard_statement(
        "SELECT 'a -- b' AS x, 'c; DROP TABLE t' AS y, '/* z */' AS z", dialect="trino", limit=3
    )
    assert guarded.sql == "SELECT 'a -- b' AS x, 'c; DROP TABLE t' AS y, '/* z */' AS z LIMIT 3"


def test_the_manuals_semantic_map_table_function_passes_and_gets_the_fallback_limit() -> None:
    sql = "SELECT * FROM TABLE(kb_sheets.system.sheet(id => 'SHEET_ID'))"
    guarded = guard_statement(sql, dialect="trino", limit=3)
    assert guarded.sql == f"{sql} LIMIT 3"
    assert guarded.limit_appended


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        ("SELECT * FROM clients", "SELECT * FROM clients LIMIT 4"),
        ("SELECT * FROM clients;", "SELECT * FROM clients LIMIT 4"),
        ("  select * from clients order by name  ", "select * from clients order by name LIMIT 4"),
        # a LIMIT inside a subquery bounds the subquery, not the result
        (
            "SELECT * FROM (SELECT * FROM clients LIMIT 10) t",
            "SELECT * FROM (SELECT * FROM clients LIMIT 10) t LIMIT 4",
        ),
        ("SELECT a FROM x UNION SELECT a FROM y", "SELECT a FROM x UNION SELECT a FROM y LIMIT 4"),
        ("SELECT credit_limit FROM clients", "SELECT credit_limit FROM clients LIMIT 4"),
    ],
)
def test_a_select_without_a_limit_gets_the_fallback(statement: str, expected: str) -> None:
    guarded = guard_statement(statement, dialect="trino", limit=4)
    assert guarded.sql == expected
    assert guarded.limit_appended and not guarded.has_own_limit


@pytest.mark.parametrize(
    "statement",
    [
        "SELECT * FROM clients LIMIT 5",
        "SELECT * FROM clients LIMIT ALL",
        "SELECT * FROM clients FETCH FIRST 2 ROWS ONLY",
        "SELECT a FROM x UNION SELECT a FROM y LIMIT 7",
        "WITH c AS (SELECT * FROM clients) SELECT * FROM c LIMIT 9",
    ],
)
def test_a_select_with_its_own_limit_is_kept_unchanged(statement: str) -> None:
    guarded = guard_statement(statement, dialect="trino", limit=3)
    assert guarded.sql == statement
    assert guarded.has_own_limit and not guarded.limit_appended


@pytest.mark.parametrize(
    "statement", ["SHOW TABLES", "VALUES (1)", "DESCRIBE clients", "EXPLAIN SELECT 1"]
)
def test_statements_that_take_no_limit_are_not_rewritten(statement: str) -> None:
    assert guard_statement(statement, dialect="trino", limit=3).sql == statement


def test_no_limit_given_appends_nothing() -> None:
    assert guard_statement("SELECT 1", dialect="trino", limit=None).sql == "SELECT 1"


@pytest.mark.parametrize("limit", [0, -1, True, 2.5, "3"])
def test_a_bad_limit_is_refused(limit: object) -> None:
    with pytest.raises(SQLRefusedError, match="limit must be a positive whole number"):
        guard_statement("SELECT 1", dialect="trino", limit=limit)  # type: ignore[arg-type]


def test_a_non_string_statement_is_refused() -> None:
    with pytest.raises(SQLRefusedError, match="must be a string"):
        guard_statement(None, dialect="trino", limit=3)  # type: ignore[arg-type]


def test_an_unknown_dialect_is_named() -> None:
    with pytest.raises(SQLRefusedError, match="Unknown SQL dialect 'klingon'"):
        guard_statement("SELECT 1", dialect="klingon", limit=3)


# -- names resolved as the server resolves them ----------------------------------------------


@pytest.mark.parametrize(
    "statement",
    [
        "SELECT pg_catalog.U&\"pg_r\\0065ad_file\"('/etc/passwd')",
        "SELECT U&\"pg_r\\0065ad_file\"('/etc/passwd')",
        "SELECT u&\"pg_r\\+000065ad_file\"('/etc/passwd')",
        "SELECT U&\"pg_r!0065ad_file\" UESCAPE '!' ('/etc/passwd')",
        "SELECT PG_READ_FILE('/etc/passwd')",
        "SELECT \"pg_read_file\"('/etc/passwd')",
    ],
)
def test_postgres_names_are_resolved_before_they_are_judged(statement: str) -> None:
    with pytest.raises(SQLRefusedError) as caught:
        guard_statement(statement, dialect="postgres", limit=3)
    message = str(caught.value)
    assert "the function pg_read_file() is not on the postgres allow-list" in message
    assert "pass allowed_functions=['pg_read_file'] to SQLManager" in message


def test_a_u_identifier_is_run_as_the_plain_name_it_spells() -> None:
    guarded = guard_statement('SELECT U&"\\0075pper"(x) FROM t', dialect="postgres", limit=3)
    assert guarded.sql == 'SELECT "upper"(x) FROM t LIMIT 3'


@pytest.mark.parametrize(
    ("dialect", "statement"),
    [
        ("postgres", 'SELECT U&"pg_sleep\\d800"(1)'),  # a lone surrogate
        ("postgres", 'SELECT U&"pg_\\zzzzsleep"(1)'),  # not hex
        ("postgres", "SELECT U&\"pg_sleep\" UESCAPE 'a' (1)"),  # a hex digit as escape
        (None, 'SELECT U&"upper"(x)'),  # generic SQL: the server's reading is unknown
    ],
)
def test_unresolvable_u_identifiers_are_refused(dialect: str | None, statement: str) -> None:
    with pytest.raises(SQLRefusedError, match="Refused"):
        guard_statement(statement, dialect=dialect, limit=3)


@pytest.mark.parametrize(
    ("dialect", "statement", "accepted"),
    [
        ("postgres", 'SELECT "upper"(x) FROM t', True),
        ("postgres", 'SELECT "Upper"(x) FROM t', False),  # a different function there
        ("postgres", "SELECT pg_catalog.upper(x) FROM t", True),
        ("postgres", "SELECT public.upper(x) FROM t", False),  # a user's function
        ("duckdb", 'SELECT "UPPER"(x) FROM t', True),  # DuckDB ignores case, quoted or not
        ("duckdb", "SELECT system.main.upper(x) FROM t", True),
        ("sqlite", "SELECT main.upper(x) FROM t", False),
        ("trino", "SELECT system.builtin.upper(x) FROM t", True),
        (None, 'SELECT "upper"(x) FROM t', False),  # generic SQL: quoting has no known rule
        ("postgres", "SELECT glob('a*', x) FROM t", False),  # parsed as an operator, still a call
        ("sqlite", "SELECT glob('a*', x) FROM t", True),
    ],
)
def test_quoting_case_and_qualification_follow_the_dialect(
    dialect: str | None, statement: str, accepted: bool
) -> None:
    if accepted:
        assert guard_statement(statement, dialect=dialect, limit=3).kind == "select"
    else:
        with pytest.raises(SQLRefusedError, match="Refused"):
            guard_statement(statement, dialect=dialect, limit=3)


def test_allowed_functions_extend_the_list_for_exactly_the_name_given() -> None:
    with pytest.raises(SQLRefusedError, match=r"allowed_functions=\['bump'\]"):
        guard_statement("SELECT bump()", dialect="postgres", limit=3)
    assert guard_statement("SELECT bump()", dialect="postgres", limit=3, allowed_functions=["BUMP"])
    assert guard_statement(
        "SELECT bump()", dialect="postgres", limit=3, allowed_functions=frozenset({" Bump "})
    )
    with pytest.raises(SQLRefusedError, match=r"public\.bump"):  # only the unqualified call
        guard_statement(
            "SELECT public.bump()", dialect="postgres", limit=3, allowed_functions=["bump"]
        )
    assert guard_statement(
        "SELECT public.bump()", dialect="postgres", limit=3, allowed_functions=["public.bump"]
    )
    with pytest.raises(SQLRefusedError, match="StarburstManager"):
        guard_statement("SELECT sleep(1)", dialect="trino", limit=3)


@pytest.mark.parametrize("names", ["bump", ["a.b.c.d"], [""], [None], ["x."]])
def test_invalid_allowed_functions_are_refused_with_the_name(names: object) -> None:
    with pytest.raises(SQLRefusedError, match="allowed_functions"):
        guard_statement("SELECT 1", dialect="postgres", limit=3, allowed_functions=names)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("dialect", "statement", "reason"),
    [
        ("postgres", "SELECT * FROM pg_catalog.pg_file_settings", "pg_file_settings"),
        ("postgres", "SELECT name, setting FROM PG_SETTINGS", "pg_settings"),
        ("postgres", "SELECT * FROM pg_hba_file_rules", "pg_hba_file_rules"),
        ("postgres", "SELECT rolpassword FROM pg_authid", "pg_authid"),
        ("postgres", "SHOW data_directory", "data_directory"),
        ("postgres", "SHOW ALL", "all"),
        ("duckdb", "SELECT * FROM 'data.csv'", "as a file"),
        ("duckdb", 'SELECT * FROM "/etc/passwd"', "as a file"),
        ("duckdb", 'DESCRIBE "x.parquet"', "as a file"),
        ("sqlite", "SELECT * FROM sqlite_dbpage", "sqlite_dbpage"),
        ("sqlite", "SHOW TABLES", "SHOW"),
        ("trino", "SELECT query FROM system.runtime.queries", "system.runtime.queries"),
        ("trino", 'SELECT * FROM "orders$files"', "$files"),
        ("trino", "SELECT * FROM TABLE(pg.system.query(query => 'DEL' || 'ETE'))", "literal"),
        ("postgres", "SELECT 'a\\', 1 AS b, ' \\' AS c", "backslash"),
        ("postgres", "SELECT 1\u00a0FROM t", "skipped"),
        ("mysql", "SELECT @@datadir", "SessionParameter"),
        ("mysql", "SELECT @a := 1", "Parameter"),
    ],
)
def test_relations_and_lexical_traps_that_expose_the_server_are_refused(
    dialect: str, statement: str, reason: str
) -> None:
    with pytest.raises(SQLRefusedError) as caught:
        guard_statement(statement, dialect=dialect, limit=3)
    assert reason.lower() in str(caught.value).lower()


def test_ordinary_tables_and_side_effect_free_functions_pass() -> None:
    statement = (
        "WITH s AS (SELECT region, sum(revenue) AS r FROM clients GROUP BY region) "
        "SELECT region, r, rank() OVER (ORDER BY r DESC), round(r / 12, 2), "
        "date_trunc('month', now()), details->>'sku', coalesce(region, '?') FROM s, orders"
    )
    assert guard_statement(statement, dialect="postgres", limit=3).limit_appended


def test_accepted_verdicts_are_cached_and_refusals_are_not() -> None:
    from agentkernel.knowledgebase._sql import guard as _sqlguard

    _sqlguard._guard_cached.cache_clear()
    guard_statement("SELECT 1 AS cached", dialect="duckdb", limit=3)
    guard_statement("SELECT 1 AS cached", dialect="duckdb", limit=3)
    info = _sqlguard._guard_cached.cache_info()
    assert (info.hits, info.currsize) == (1, 1)
    for _ in range(2):
        with pytest.raises(SQLRefusedError):
            guard_statement("SELECT getenv('HOME')", dialect="duckdb", limit=3)
    assert _sqlguard._guard_cached.cache_info().currsize == 1
