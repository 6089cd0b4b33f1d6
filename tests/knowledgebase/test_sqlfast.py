"""The SQL guard's lexical fast path, checked against the parser it stands in front of.

Real: the sqlglot parser in each dialect the backends use (the guard's slow path,
``_sqlguard._guard``, called directly so the fast path is bypassed) and the fast path's own
lexer. No database is involved: what matters here is that whenever the fast path clears a
statement, the parser would have returned exactly the same thing, and that it never clears a
hostile statement. Hypothesis assembles random statements from query fragments, denied words
and quoting/comment debris to look for a disagreement.
"""

from __future__ import annotations

import pytest

from tests.support import require_extra
from tests.support.hostile_sql import HOSTILE

require_extra("sqlglot", "sql")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from sqlglot.dialects.dialect import Dialect  # noqa: E402

from agentkernel.knowledgebase import _sqlfast, _sqlguard  # noqa: E402
from agentkernel.knowledgebase._sqlguard import GuardedStatement, guard_statement  # noqa: E402
from agentkernel.knowledgebase.errors import SQLRefusedError  # noqa: E402

DIALECTS: list[str | None] = ["trino", "postgres", "duckdb", "sqlite", "mysql", None]

# Typical agent SELECTs: the fast path must clear every one of these in every dialect.
TYPICAL = [
    "SELECT * FROM clients",
    "SELECT * FROM clients;",
    "  select client_name, status from clients where status = 'active'  ",
    "SELECT region, count(*) AS n FROM clients GROUP BY region ORDER BY n DESC",
    "SELECT * FROM orders WHERE order_date >= DATE '2024-01-01' ORDER BY order_date DESC LIMIT 20",
    "SELECT c.client_name, sum(o.amount) AS total FROM clients c JOIN orders o "
    "ON o.client_id = c.id GROUP BY c.client_name ORDER BY total DESC LIMIT 10",
    "SELECT id, name FROM products WHERE lower(name) LIKE '%widget%'",
    "SELECT DISTINCT category FROM products",
    "WITH recent AS (SELECT * FROM orders WHERE amount > 10) "
    "SELECT client_id, count(*) FROM recent GROUP BY client_id",
    "SELECT name, CASE WHEN credit_limit > 10000 THEN 'high' ELSE 'low' END AS tier FROM clients",
    "SELECT * FROM clients WHERE id IN (SELECT client_id FROM orders WHERE amount > 500)",
    "SELECT product_id, sum(quantity) FROM items GROUP BY product_id HAVING sum(quantity) > 100",
    "SELECT name, rank() OVER (PARTITION BY region ORDER BY revenue DESC) AS r FROM clients",
    "SELECT coalesce(nickname, name) AS display_name FROM users LIMIT 50",
    "SELECT a FROM x UNION SELECT a FROM y",
    "SELECT a FROM x UNION ALL SELECT a FROM y LIMIT 7",
    "SELECT * FROM (SELECT * FROM clients LIMIT 10) t",
    "SELECT credit_limit FROM clients",
    "SELECT 'a -- b' AS x, 'c; DROP TABLE t' AS y, '/* z */' AS z, 'it''s' AS w",
    'SELECT "client name" FROM clients WHERE "a""b" = 1',
    "SELECT replace(name, 'a', 'b') AS r, 1.5 AS f, 2e3 AS g FROM clients",
    "SELECT * FROM clients ORDER BY name FETCH FIRST 2 ROWS ONLY",
    "SELECT * FROM clients LIMIT ALL",
    "SELECT 'München' AS city, name FROM clients",
]
TRINO_AND_POSTGRES = [
    "SELECT * FROM TABLE(kb_sheets.system.sheet(id => 'SHEET_ID'))",
    "SELECT CAST(signed AS TIMESTAMP WITH TIME ZONE) FROM clients",
    "WITH RECURSIVE r (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 5) SELECT n FROM r",
    "SELECT tags[1] FROM clients",
    "SELECT * FROM clients OFFSET 2",
    "SELECT * FROM clients LIMIT 5 OFFSET 2",
    "WITH a AS (SELECT 1 AS x), b AS (SELECT x FROM a) SELECT * FROM b",
    "SELECT * FROM (WITH a AS (SELECT 1 AS x) SELECT x FROM a) s",
    "SELECT x::int FROM t",
]
# More shapes for the differential check (cleared or not, the result must match).
EDGE = [
    "SELECT",
    "SELECT limit FROM t",
    "SELECT fetch FROM t",
    "SELECT a FROM t LIMIT 3 UNION SELECT b FROM u",
    "SELECT a FROM t WHERE",
    "SELECT (a FROM t",
    "SELECT a) FROM (t",
    "WITH x AS (SELECT 1) VALUES (1)",
    "WITH x AS (SELECT 1) TABLE x",
    "WITH x AS (SELECT 1) (SELECT * FROM x)",
    "WITH x AS (END) SELECT 1",
    "WITH x AS (DESC t) SELECT 1",
    "WITH x AS NOT MATERIALIZED (SELECT 1) SELECT * FROM x",
    "WITH x AS MATERIALIZED (SELECT 1) SELECT * FROM x",
    "SELECT * FROM t WHERE a = ANY (SELECT b FROM u LIMIT 1)",
    "SELECT * FROM t ORDER BY a LIMIT 5, 10",
    "SELECT * FROM t LIMIT 5 LIMIT 6",
    "SELECT a FROM t UNION (SELECT b FROM u LIMIT 3)",
    "SELECT * EXCEPT (a) FROM t LIMIT 5",
    "SELECT end, desc, comment, start FROM t",
    "SELECT unnest(a) WITH ORDINALITY FROM t",
    "SELECT a FROM t GROUP BY a WITH ROLLUP",
    "SELECT `a` FROM `t`",
    "SELECT 1 -1",
    "SELECT 'x' || 'y'",
    "SELECT a FROM t WHERE b <> 'c' AND d >= 2 OR e != 3",
]
ACCEPTED_BY_GUARD_TESTS = [
    "SELECT * FROM TABLE(kb_sheets.system.sheet(id => 'SHEET_ID'))",
    "WITH active AS (SELECT * FROM clients) SELECT * FROM active",
    "SELECT a FROM x UNION ALL SELECT a FROM y",
    "SELECT * FROM TABLE(pg.system.query(query => 'SELECT 1'))",
    "VALUES (1, 'a'), (2, 'b')",
    "SHOW TABLES FROM kb.crm LIKE 'cl%'",
    "DESCRIBE kb.crm.clients",
    "EXPLAIN SELECT * FROM clients",
    "TABLE clients",
    "SELECT region, count(*) FROM clients GROUP BY region HAVING count(*) > 1",
    "WITH c AS (SELECT * FROM clients) SELECT * FROM c LIMIT 9",
]
CORPUS = TYPICAL + TRINO_AND_POSTGRES + EDGE + ACCEPTED_BY_GUARD_TESTS + [s for s, _ in HOSTILE]

# Statements the fast path must leave to the parser, whatever the parser then decides.
NOT_CLEARED: list[tuple[str | None, str]] = [
    ("postgres", "SELECT E'\\x27; DROP TABLE t; --'"),
    ("postgres", "SELECT 'a\\' ; DROP TABLE t; --'"),
    ("mysql", "SELECT 'a\\'; DROP TABLE t; -- '"),
    ("postgres", "SELECT U&\"nextv\\0061l\"('s')"),
    ("postgres", "SELECT U&'d!0061t' UESCAPE '!'"),
    ("trino", "SELECT X'00'"),
    ("postgres", "SELECT $$a; DROP TABLE t$$"),
    ("postgres", "SELECT $1"),
    ("sqlite", "SELECT ?"),
    ("mysql", "SELECT @a := 1"),
    ("mysql", "SELECT 1 # comment"),
    ("mysql", "SELECT 1 /*! ; DROP TABLE t */"),
    ("postgres", "SELECT 1 -- comment"),
    ("postgres", "SELECT 1 */"),
    ("postgres", "SELECT 1 // 2"),
    ("duckdb", "SELECT {'a': 1}"),
    ("postgres", "SELECT \"nextval\"('s')"),
    ("postgres", "SELECT \"NextVal\"('s')"),
    ("postgres", "SELECT pg_catalog.nextval('s')"),
    ("postgres", "SELECT set_config('a', 'b', false)"),
    ("trino", "SELECT * FROM TABLE(pg.system.query(query => 'SELECT 1'))"),
    ("mysql", "SELECT `query`('x')"),
    ("sqlite", "SELECT ['] ; DROP TABLE t; [']"),
    ("sqlite", "SELECT [a] FROM t"),
    ("postgres", "SELECT `a` FROM t"),
    ("trino", "SELECT 1into x"),
    ("mysql", "SELECT 0x41"),
    ("postgres", "SELECT a FROM t LIMIT 3 UNION SELECT b FROM u"),
    ("postgres", "SELECT limit FROM t"),
    ("postgres", "SELECT * FROM t FOR UPDATE"),
    ("postgres", "SELECT * INTO x FROM t"),
    ("postgres", "SELECT NEXT VALUE FOR s"),
    ("trino", "WITH FUNCTION f() RETURNS int RETURN 1 SELECT f()"),
    ("postgres", "WITH x AS (END) SELECT 1"),
    ("postgres", "WITH x AS (SELECT 1) END"),
    ("postgres", "WITH x AS (SELECT 1) DELETE FROM t"),
    ("postgres", "SELECT * FROM (WITH a AS (SELECT 1) REPLACE INTO t VALUES (1)) s"),
    ("duckdb", "WITH x USING KEY (a) AS (SELECT 1) SELECT 1"),
    ("postgres", "SELECT é FROM t"),
    ("postgres", "SELECT\u00a0a FROM t"),
    ("postgres", "SELECT a\x0cFROM t"),
    ("postgres", "SELECT 1 |> WHERE true"),
    ("postgres", "SELECT (1"),
    ("postgres", "SELECT 1)"),
    ("postgres", "SELECT 'unterminated"),
    ("postgres", "(SELECT 1)"),
    ("postgres", "VALUES (1)"),
    ("postgres", "SELECT 1; SELECT 2"),
    ("postgres", "SELECT 1;;"),
    ("tsql", "SELECT 1"),
    ("klingon", "SELECT 1"),
    ("trino", "SELECT TOP 5 a FROM t"),
    ("trino", "SELECT * FROM t WHERE region = ? AND status = ?"),
]


def _parser_verdict(statement: str, dialect: str | None, limit: int | None) -> object:
    """The slow path alone: a GuardedStatement or the refusal message."""
    try:
        return _sqlguard._guard(statement, dialect, limit)
    except _sqlguard._Refusal as refusal:
        return f"refused: {refusal}"
    except SQLRefusedError as error:
        return f"error: {error}"


def _parse_failure(verdict: object) -> bool:
    return isinstance(verdict, str) and (
        "cannot be parsed as SQL" in verdict or "cannot be read as SQL" in verdict
    )


@pytest.mark.parametrize("limit", [3, None])
@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("statement", CORPUS)
def test_whatever_the_fast_path_clears_the_parser_returns_identically(
    statement: str, dialect: str | None, limit: int | None
) -> None:
    cleared = _sqlguard._fast_guard(statement, dialect, limit)
    if cleared is None:
        return
    verdict = _parser_verdict(statement, dialect, limit)
    if _parse_failure(verdict):  # the documented exception, see _sqlfast
        assert statement in EDGE, f"{statement!r} cleared but sqlglot cannot parse it: {verdict}"
        return
    assert cleared == verdict


@pytest.mark.parametrize("dialect", ["trino", "postgres", "duckdb", "sqlite", "mysql", None])
@pytest.mark.parametrize("statement", TYPICAL)
def test_typical_agent_selects_take_the_fast_path(statement: str, dialect: str | None) -> None:
    cleared = _sqlguard._fast_guard(statement, dialect, 3)
    assert isinstance(cleared, GuardedStatement)
    assert cleared == _sqlguard._guard(statement, dialect, 3)


@pytest.mark.parametrize("dialect", ["trino", "postgres", "duckdb"])
@pytest.mark.parametrize("statement", TRINO_AND_POSTGRES)
def test_trino_postgres_and_duckdb_shapes_take_the_fast_path(statement: str, dialect: str) -> None:
    cleared = _sqlguard._fast_guard(statement, dialect, 4)
    assert isinstance(cleared, GuardedStatement)
    assert cleared == _sqlguard._guard(statement, dialect, 4)


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize(("statement", "reason"), HOSTILE)
def test_no_hostile_statement_is_cleared_and_the_guard_still_refuses_it(
    statement: str, reason: str, dialect: str | None
) -> None:
    assert _sqlguard._fast_guard(statement, dialect, 3) is None
    with pytest.raises(SQLRefusedError, match=r"^Refused: "):
        guard_statement(statement, dialect=dialect, limit=3)


@pytest.mark.parametrize(("dialect", "statement"), NOT_CLEARED)
def test_what_the_lexer_cannot_vouch_for_is_left_to_the_parser(
    dialect: str | None, statement: str
) -> None:
    assert _sqlguard._fast_guard(statement, dialect, 3) is None


def test_the_fallback_limit_flags_match_the_parser() -> None:
    own = _sqlguard._fast_guard("SELECT * FROM clients LIMIT 5", "trino", 3)
    assert own == GuardedStatement("SELECT * FROM clients LIMIT 5", "select", has_own_limit=True)
    appended = _sqlguard._fast_guard("SELECT * FROM clients;", "trino", 3)
    assert appended == GuardedStatement(
        "SELECT * FROM clients LIMIT 3", "select", limit_appended=True
    )
    assert _sqlguard._fast_guard("SELECT 1", "trino", None) == GuardedStatement(
        "SELECT 1", "select"
    )


def test_a_select_sqlglot_cannot_parse_is_cleared_for_the_database_to_report() -> None:
    # The documented exception: lexically a plain read-only SELECT, unparsable by sqlglot.
    # The database reports the syntax error (SQLManager: in a read-only, rolled-back session).
    statement = "SELECT a FROM t WHERE"
    assert _parse_failure(_parser_verdict(statement, "postgres", 3))
    guarded = guard_statement(statement, dialect="postgres", limit=3)
    assert guarded == GuardedStatement(f"{statement} LIMIT 3", "select", limit_appended=True)


def _first_words(dialect: str | None) -> set[str]:
    """The words sqlglot starts a statement or an opaque command with, in one dialect."""
    dialect_class = Dialect.get_or_raise(dialect)
    tokenizer, parser = dialect_class.tokenizer_class, dialect_class.parser_class
    starts = set(parser.STATEMENT_PARSERS) | set(tokenizer.COMMANDS)
    return {keyword.split()[0] for keyword, token in tokenizer.KEYWORDS.items() if token in starts}


@pytest.mark.parametrize("dialect", DIALECTS)
def test_every_sqlglot_statement_keyword_is_denied_or_kept_from_statement_starts(
    dialect: str | None,
) -> None:
    # A sqlglot upgrade that learns a new statement keyword fails here until it is classified.
    known = _sqlfast.DENIED_WORDS | _sqlfast._STATEMENT_ONLY
    assert _first_words(dialect) - known == set()


def test_every_forbidden_node_has_its_keyword_denied() -> None:
    keyword = {
        "AlterColumn": "ALTER", "TruncateTable": "TRUNCATE", "Command": "SHOW",
        "Transaction": "BEGIN", "LoadData": "LOAD", "Comment": "COMMENT", "Into": "INTO",
    }  # fmt: skip
    for name in _sqlguard._FORBIDDEN_NODE_NAMES:
        word = keyword.get(name, name.upper())
        assert word in _sqlfast.DENIED_WORDS | _sqlfast._STATEMENT_ONLY, name
    assert "START" in _sqlfast._STATEMENT_ONLY and "TRANSACTION" in _sqlfast.DENIED_WORDS


def test_the_guards_function_lists_are_denied_as_words_and_quoted_names() -> None:
    for name in _sqlguard._SIDE_EFFECT_FUNCTIONS | _sqlguard._PASSTHROUGH_FUNCTIONS:
        assert _sqlguard._fast_guard(f"SELECT {name}('x')", "postgres", 3) is None
        assert _sqlguard._fast_guard(f"SELECT \"{name}\"('x')", "postgres", 3) is None
        assert _sqlguard._fast_guard(f"SELECT `{name}`('x')", "mysql", 3) is None


# --- property: random statements --------------------------------------------------------

_WORDS = sorted(_sqlfast.DENIED_WORDS | _sqlfast._STATEMENT_ONLY) + sorted(
    _sqlguard._SIDE_EFFECT_FUNCTIONS | _sqlguard._PASSTHROUGH_FUNCTIONS
)
_FRAGMENTS = [
    "a", "b.c", "*", ",", "(", ")", "FROM t", "FROM t x", "WHERE", "=", "<>", "+", "-", "/",
    "1", "2.5", "3e2", "'x'", "'a;b'", "'--'", "'/*'", "'it''s'", "\"id\"", "\"a\"\"b\"",
    "`id`", "count(*)", "upper(a)", "LIMIT 5", "LIMIT", "LIMIT ALL", "OFFSET 2",
    "FETCH FIRST 2 ROWS ONLY", "UNION", "UNION ALL", "INTERSECT", "EXCEPT", "SELECT", "WITH",
    "WITH c AS (SELECT 1)", "AS", "ORDER BY a", "DESC", "GROUP BY a", "CASE WHEN a THEN b END",
    "JOIN u ON a = b", "IN (SELECT 1)", "(SELECT 2)", "TABLE(f(x => 'y'))", "TIME ZONE",
    "MATERIALIZED", "NOT", "RECURSIVE", "VALUES (1)", "[1]", ";", "--", "/*", "*/", "'", "\"",
    "`", "$1", "$$", "E'x'", "U&'x'", "\\", "#", "?", "@x", "::", "||", "é", "1x", "\t", "\n",
]  # fmt: skip
_SEPARATORS = [" ", "", "\n"]


@st.composite
def _statements(draw: st.DrawFn) -> str:
    head = draw(st.sampled_from(["SELECT ", "SELECT a FROM t ", "WITH c AS (SELECT 1) ", "WITH "]))
    parts = draw(
        st.lists(
            st.one_of(st.sampled_from(_FRAGMENTS), st.sampled_from(_WORDS)),
            min_size=0,
            max_size=10,
        )
    )
    text = head
    for part in parts:
        text += draw(st.sampled_from(_SEPARATORS)) + part
    return text + draw(st.sampled_from(["", ";", " ;", " SELECT 1"]))


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    statement=_statements(),
    dialect=st.sampled_from(DIALECTS),
    limit=st.sampled_from([3, None]),
)
def test_random_statements_are_cleared_only_as_the_parser_would(
    statement: str, dialect: str | None, limit: int | None
) -> None:
    cleared = _sqlguard._fast_guard(statement, dialect, limit)
    if cleared is None:
        return
    verdict = _parser_verdict(statement, dialect, limit)
    if _parse_failure(verdict):
        return  # the documented exception: unparsable for sqlglot, sent for the database to refuse
    assert cleared == verdict, f"{statement!r} ({dialect}): fast {cleared}, parser {verdict}"
