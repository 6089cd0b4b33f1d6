"""The read-only statement guard and the fallback LIMIT shared by the SQL backends.

``StarburstManager`` and ``SQLManager`` run SQL an agent wrote. Before anything reaches a
database, :func:`guard_statement` parses the text with ``sqlglot`` (a real SQL parser, in the
backend's dialect) and accepts exactly one read-only statement:

========================  ==================================================================
accepted                  notes
========================  ==================================================================
``SELECT``                also ``WITH ... SELECT``, set operations (``UNION`` ...), a
                          parenthesised query, PostgreSQL's ``TABLE t``, and table functions
                          in ``FROM`` such as ``TABLE(kb_sheets.system.sheet(id => 'X'))``
``VALUES``                a literal row set
``SHOW``                  ``SHOW TABLES``, ``SHOW SCHEMAS``, ``SHOW CREATE TABLE`` ...
``DESCRIBE`` / ``DESC``   a table, a query (which must itself pass), or Trino's
                          ``DESCRIBE INPUT|OUTPUT <prepared statement>``
``EXPLAIN``               only of a statement that passes this guard itself, so
                          ``EXPLAIN ANALYZE DELETE ...`` (which executes the delete) is refused
========================  ==================================================================

Everything else is refused with :class:`SQLRefusedError`, whose message says why: writes
(``INSERT``, ``UPDATE``, ``DELETE``, ``MERGE``, ``SELECT ... INTO``), DDL, ``GRANT``,
``CALL``, ``SET``, ``USE``, transactions, ``COPY``, ``ATTACH``, ``PRAGMA``, locking reads
(``FOR UPDATE``), a write hidden in a CTE, more than one statement, a pass-through query
string handed to a table function (``TABLE(pg.system.query(query => 'DELETE ...'))``) that is
not itself read-only, and calls of well-known functions with side effects (``nextval``,
``set_config``, ``pg_terminate_backend``, ``dblink_exec``, ...).

**Comments are refused too.** A comment changes nothing a query can do, but it is where
parsers and servers disagree (nested ``/* */`` in PostgreSQL, MySQL's executable
``/*! ... */``), and such a disagreement is exactly how a second statement slips past a
guard. Agent-written SQL never needs one; the refusal says to send the statement without it.

A statement the parser cannot read is refused rather than passed through (the guard fails
closed), except a plain ``SELECT`` the lexical tier below has already cleared. Parsing is the
first wall only: ``SQLManager`` also opens every session read-only in the database and always
rolls back; Starburst relies on this guard plus the catalog's own access control.

The guard decides in two tiers. Parsing costs 0.3-1 ms of CPU per statement, more than a
local query, so a plain ``SELECT`` / ``WITH ... SELECT`` is first read by the single-pass lexer
of ``agentkernel.knowledgebase._sqlfast`` (5-25 microseconds): it clears a statement only when
its tokens prove it one read-only query (no comment, no ``;``, no word of any write, DDL, session
or locking syntax, no refused function) and then returns exactly what the parser would. Anything
it cannot prove goes to the parser, which takes every decision to refuse and words every
refusal. Plain SELECTs of the cleared shape that sqlglot cannot parse at all reach the
database, which reports the syntax error (see that module for why that is safe). Verdicts for
statements already seen are remembered (an LRU of 512); refusals are not cached.

The fallback LIMIT: a ``SELECT`` whose outermost query carries no ``LIMIT`` (or ``FETCH
FIRST``) gets ``LIMIT <limit>`` appended; one that carries its own keeps it unchanged.
"""

from __future__ import annotations

import functools
import logging
import re
from dataclasses import dataclass
from typing import Literal, cast

from agentkernel.errors import missing_extra
from agentkernel.knowledgebase._sqlfast import FastPath
from agentkernel.knowledgebase.errors import SQLRefusedError

try:
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError
    from sqlglot.tokens import Token, TokenType  # type: ignore[attr-defined]
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise missing_extra("sqlglot", "sql", feature="the SQL statement guard") from exc

logger = logging.getLogger(__name__)

StatementKind = Literal["select", "values", "show", "describe", "explain"]

ACCEPTED = "SELECT, WITH ... SELECT, VALUES, SHOW, DESCRIBE and EXPLAIN"

# Node types that make a statement something other than a read. Resolved by name so a
# sqlglot release that renames one cannot break the import; missing names are skipped.
_FORBIDDEN_NODE_NAMES = (
    "Insert", "Update", "Delete", "Merge", "Create", "Drop", "Alter", "AlterColumn",
    "TruncateTable", "Command", "Set", "Use", "Transaction", "Commit", "Rollback", "Copy",
    "Pragma", "Into", "Lock", "Attach", "Detach", "Install", "Grant", "Revoke", "LoadData",
    "Analyze", "Cache", "Uncache", "Refresh", "Export", "Kill", "Comment", "Declare",
    "Execute", "Call",
)  # fmt: skip
_FORBIDDEN_NODES: tuple[type[exp.Expression], ...] = tuple(
    getattr(exp, name) for name in _FORBIDDEN_NODE_NAMES if hasattr(exp, name)
)

# Functions that change state, execute a string as SQL, or reach outside the database.
_SIDE_EFFECT_FUNCTIONS = frozenset(
    {
        "nextval", "setval", "set_config", "pg_terminate_backend", "pg_cancel_backend",
        "pg_reload_conf", "pg_rotate_logfile", "pg_switch_wal", "pg_create_restore_point",
        "pg_logical_emit_message", "pg_advisory_lock", "pg_advisory_xact_lock",
        "pg_try_advisory_lock", "pg_sleep", "pg_read_file", "pg_read_binary_file",
        "pg_ls_dir", "lo_import", "lo_export", "lo_unlink", "lo_create", "lo_from_bytea",
        "lo_put", "dblink", "dblink_exec", "dblink_connect", "query_to_xml",
        "query_to_xml_and_xmlschema", "txid_current", "load_extension", "writefile",
        "sys_exec", "sys_eval", "pg_notify", "pg_advisory_unlock", "pg_advisory_unlock_all",
        "pg_advisory_unlock_shared", "pg_advisory_lock_shared", "pg_try_advisory_xact_lock",
        "dblink_send_query", "dblink_open", "cursor_to_xml", "ts_stat",
    }
)  # fmt: skip
# Table functions that hand a string to the underlying engine (Trino's JDBC connectors'
# ``system.query``, DuckDB's ``query``): the string must pass the guard itself.
_PASSTHROUGH_FUNCTIONS = frozenset({"query", "raw_query", "query_table"})
_FAST_PATH = FastPath(_SIDE_EFFECT_FUNCTIONS | _PASSTHROUGH_FUNCTIONS)

_QUERY_STARTS = frozenset({"SELECT", "WITH", "VALUES", "TABLE", "FROM"})
_SHOW_FORBIDDEN_WORDS = frozenset(
    {"INSERT", "UPDATE", "DELETE", "MERGE", "DROP", "ALTER", "CALL", "GRANT",
     "REVOKE", "TRUNCATE", "SET", "EXECUTE"}
)  # fmt: skip


_LEADING_WORD = re.compile(r"[A-Za-z_]+")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")
_NODE_NAMES = {"truncatetable": "TRUNCATE", "altercolumn": "ALTER", "loaddata": "LOAD DATA"}


@dataclass(frozen=True)
class GuardedStatement:
    """A statement the guard accepted, ready to run.

    Attributes:
        sql: The text to execute: the original without a trailing semicolon, plus
            ``LIMIT <n>`` when the fallback was appended.
        kind: ``select``, ``values``, ``show``, ``describe`` or ``explain``.
        limit_appended: The fallback ``LIMIT`` was appended.
        has_own_limit: The outermost query carried its own ``LIMIT`` / ``FETCH FIRST``.
    """

    sql: str
    kind: StatementKind
    limit_appended: bool = False
    has_own_limit: bool = False


def guard_statement(statement: str, *, dialect: str | None, limit: int | None) -> GuardedStatement:
    """Accept exactly one read-only statement, appending the fallback LIMIT to a bare SELECT.

    Args:
        statement: SQL as the agent wrote it (after ``semantic_map`` resolution).
        dialect: A sqlglot dialect name (``"trino"``, ``"postgres"``, ``"duckdb"``,
            ``"sqlite"``, ...) or ``None`` for sqlglot's generic SQL.
        limit: The LIMIT appended to a ``SELECT`` that carries none; ``None`` appends nothing.

    Returns:
        The statement to execute and what the guard learned about it.

    Raises:
        SQLRefusedError: The statement is empty, unparsable, not read-only, carries a
            comment, or is more than one statement; the message says which.
    """
    if not isinstance(statement, str):
        raise SQLRefusedError(
            f"The SQL statement must be a string, got {type(statement).__name__}."
        )
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise SQLRefusedError(f"limit must be a positive whole number, got {limit!r}.")
    try:
        return _guard_cached(statement, dialect, limit)
    except _Refusal as refusal:
        raise SQLRefusedError(
            f"Refused: {refusal}. Only one read-only statement is accepted ({ACCEPTED})."
        ) from None


class _Refusal(Exception):
    """Why a statement (or a statement nested in it) is refused; worded by the caller."""


@functools.lru_cache(maxsize=512)
def _guard_cached(statement: str, dialect: str | None, limit: int | None) -> GuardedStatement:
    """The lexical fast path, else the parser; a pure function of its inputs: remember it."""
    return _fast_guard(statement, dialect, limit) or _guard(statement, dialect, limit)


def _fast_guard(statement: str, dialect: str | None, limit: int | None) -> GuardedStatement | None:
    """What ``_guard`` returns for a plain SELECT the lexer clears, else ``None`` (parse it)."""
    cleared = _FAST_PATH.clear(statement, dialect, limit)
    if cleared is None:
        return None
    return GuardedStatement(cleared.sql, "select", cleared.limit_appended, cleared.has_own_limit)


def _guard(statement: str, dialect: str | None, limit: int | None) -> GuardedStatement:
    text = statement.strip()
    if text.endswith(";"):
        text = text[:-1].rstrip()
    if not text:
        raise _Refusal("the statement is empty")
    leading = _LEADING_WORD.match(text)
    word = leading.group(0).upper() if leading else ""
    if word in ("SHOW", "EXPLAIN", "DESCRIBE", "DESC"):
        # sqlglot reads these as opaque commands; read the rest as SQL ourselves.
        rest = text[len(word) :]
        tokens = _tokens(rest, dialect, allow_empty=word == "SHOW")
        if word == "SHOW":
            _check_show(tokens)
            return GuardedStatement(text, "show")
        if word == "EXPLAIN":
            _check_explain(rest, tokens, dialect)
            return GuardedStatement(text, "explain")
        _check_describe(rest, tokens, dialect)
        return GuardedStatement(text, "describe")
    root = _parse_one(text, _tokens(text, dialect), dialect)
    kind = _check_query(root, dialect, word)
    if kind != "select":
        return GuardedStatement(text, kind)
    if root.args.get("limit") is not None:
        return GuardedStatement(text, "select", has_own_limit=True)
    if limit is None:
        return GuardedStatement(text, "select")
    return GuardedStatement(f"{text} LIMIT {limit}", "select", limit_appended=True)


def _tokens(text: str, dialect: str | None, *, allow_empty: bool = False) -> list[Token]:
    """Tokenize; refuse comments and a second statement."""
    try:
        tokens = list(sqlglot.Dialect.get_or_raise(dialect).tokenize(text))
    except SqlglotError as exc:
        raise _Refusal(f"the statement cannot be read as SQL ({_first_line(exc)})") from exc
    except ValueError as exc:  # an unknown dialect name is a developer mistake: say so
        raise SQLRefusedError(f"Unknown SQL dialect {dialect!r}: {exc}") from exc
    if any(token.comments for token in tokens) or (text.strip() and not tokens):
        raise _Refusal("the statement contains an SQL comment; send it without comments")
    if any(token.token_type == TokenType.SEMICOLON for token in tokens):
        raise _Refusal("the text holds more than one statement (separated by ';')")
    if not tokens and not allow_empty:
        raise _Refusal("the statement is incomplete")
    return tokens


def _parse_one(text: str, tokens: list[Token], dialect: str | None) -> exp.Expression:
    try:
        parser = sqlglot.Dialect.get_or_raise(dialect).parser()
        parsed = [e for e in parser.parse(tokens, text) if e is not None]
    except SqlglotError as exc:
        raise _Refusal(f"the statement cannot be parsed as SQL ({_first_line(exc)})") from exc
    if len(parsed) != 1:
        raise _Refusal("the text holds more than one statement")
    return cast(exp.Expression, parsed[0])


def _check_query(root: exp.Expression, dialect: str | None, word: str = "") -> StatementKind:
    """Accept a query root and scan every node beneath it."""
    if isinstance(root, exp.Values):
        kind: StatementKind = "values"
    elif isinstance(root, exp.Query):
        kind = "select"
    else:
        what = _describe_node(root)
        raise _Refusal(
            f"{word if what == 'this statement' and word else what} is not a read-only query"
        )
    for node in root.walk():
        if isinstance(node, _FORBIDDEN_NODES):
            raise _Refusal(f"the statement contains {_describe_node(node)}, which is not read-only")
        if isinstance(node, exp.Func):
            _check_function(node, dialect)
    return kind


def _check_function(node: exp.Func, dialect: str | None) -> None:
    name = _function_name(node)
    if name in _SIDE_EFFECT_FUNCTIONS:
        raise _Refusal(f"the function {name}() has side effects or reaches outside the database")
    if name in _PASSTHROUGH_FUNCTIONS:
        for literal in node.find_all(exp.Literal):
            if literal.is_string:
                try:
                    inner = _guard(str(literal.this), None, None)
                except _Refusal as refusal:
                    raise _Refusal(f"the query passed to {name}() is refused: {refusal}") from None
                if inner.kind not in ("select", "values"):
                    raise _Refusal(f"the query passed to {name}() must be a SELECT")


def _function_name(node: exp.Func) -> str:
    if isinstance(node, exp.Anonymous):
        return str(node.name).lower()
    sql_names = getattr(node, "_sql_names", None) or [node.key]
    return str(sql_names[0]).lower()


def _check_show(tokens: list[Token]) -> None:
    for token in tokens:
        word = token.text.upper()
        if token.token_type != TokenType.STRING and word in _SHOW_FORBIDDEN_WORDS:
            raise _Refusal(f"a SHOW statement may not contain {word}")


def _check_explain(rest: str, tokens: list[Token], dialect: str | None) -> None:
    """EXPLAIN is accepted only of a statement that passes the guard itself."""
    i = 0
    if (
        tokens[0].token_type == TokenType.L_PAREN
        and len(tokens) > 1
        and tokens[1].text.upper() not in _QUERY_STARTS
    ):  # an option list: EXPLAIN (TYPE DISTRIBUTED) ..., EXPLAIN (ANALYZE, FORMAT JSON) ...
        depth = 0
        while i < len(tokens):
            depth += {TokenType.L_PAREN: 1, TokenType.R_PAREN: -1}.get(tokens[i].token_type, 0)
            i += 1
            if depth == 0:
                break
    while i < len(tokens) and tokens[i].text.upper() in ("ANALYZE", "VERBOSE", "QUERY", "PLAN"):
        i += 1
    if i >= len(tokens):
        raise _Refusal("EXPLAIN needs a query to explain")
    try:
        inner = _guard(rest[tokens[i].start :], dialect, None)
    except _Refusal as refusal:
        raise _Refusal(f"EXPLAIN is accepted only of a read-only query: {refusal}") from None
    if inner.kind not in ("select", "values"):
        raise _Refusal("EXPLAIN is accepted only of a SELECT or VALUES query")


def _check_describe(rest: str, tokens: list[Token], dialect: str | None) -> None:
    words = [t.text.upper() for t in tokens]
    if len(tokens) == 2 and words[0] in ("INPUT", "OUTPUT"):
        return  # Trino: DESCRIBE INPUT|OUTPUT <prepared statement name>
    if words[0] in _QUERY_STARTS or tokens[0].token_type == TokenType.L_PAREN:
        try:
            inner = _guard(rest, dialect, None)
        except _Refusal as refusal:
            raise _Refusal(f"DESCRIBE is accepted only of a read-only query: {refusal}") from None
        if inner.kind not in ("select", "values"):
            raise _Refusal("DESCRIBE takes a table name or a SELECT query")
        return
    names = (TokenType.VAR, TokenType.DOT, TokenType.IDENTIFIER)
    if any(t.token_type not in names and not _NAME.fullmatch(t.text) for t in tokens):
        raise _Refusal("DESCRIBE takes a table name or a SELECT query")


def _describe_node(node: exp.Expression) -> str:
    if isinstance(node, exp.Command):
        return str(node.this).upper() or "this command"
    if isinstance(node, exp.Into):
        return "SELECT ... INTO (it creates a table)"
    if isinstance(node, exp.Lock):
        return "a locking clause (FOR UPDATE / FOR SHARE)"
    if isinstance(node, (exp.Column, exp.Alias, exp.Identifier, exp.Literal)):
        return "this statement"
    key = str(node.key)
    return _NODE_NAMES.get(key, key.upper())


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
