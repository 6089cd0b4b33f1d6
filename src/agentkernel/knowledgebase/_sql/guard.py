"""The read-only statement guard and the fallback LIMIT shared by the SQL backends.

``StarburstManager`` and ``SQLManager`` run SQL an agent wrote. Before anything reaches a
database, :func:`guard_statement` parses the text with ``sqlglot`` (a real SQL parser, in the
backend's dialect) and accepts exactly one read-only statement. The parser is the first judge
(``SQLManager`` then asks the database itself, see below): nothing is accepted on the
strength of its text alone.

========================  ==================================================================
accepted                  notes
========================  ==================================================================
``SELECT``                also ``WITH ... SELECT``, set operations (``UNION`` ...), a
                          parenthesised query, PostgreSQL's ``TABLE t``, DuckDB's ``FROM t``
``VALUES``                a literal row set
``SHOW``                  per dialect: Trino ``SHOW TABLES|SCHEMAS|CATALOGS|COLUMNS|CREATE|
                          FUNCTIONS|SESSION|STATS|GRANTS|ROLES ...``, DuckDB ``SHOW TABLES``,
                          PostgreSQL ``SHOW <parameter>`` for the session parameters listed
                          in ``functions.POSTGRES_SHOW_PARAMETERS`` (not file locations,
                          not ``SHOW ALL``); SQLite has no SHOW
``DESCRIBE`` / ``DESC``   a table, a query (which must itself pass), or Trino's
                          ``DESCRIBE INPUT|OUTPUT <prepared statement>``
``EXPLAIN``               only of a statement that passes this guard itself, so
                          ``EXPLAIN ANALYZE DELETE ...`` (which executes the delete) is refused
========================  ==================================================================

Inside an accepted statement, every part must be something the guard knows to be a read:

* **Functions by allow-list.** A function call, and a function used as a table source
  (``FROM fn(...)``, ``LATERAL fn(...)``, ``ROWS FROM (...)``, Trino's ``TABLE(fn(...))``),
  is accepted only when its name, resolved as the server resolves it (``U&"..."``
  identifiers decoded, quoting and letter case per dialect, schema qualification such as
  ``pg_catalog.fn``), is on the dialect's list of built-ins without side effects
  (``agentkernel.knowledgebase._sql.functions``) or in the ``allowed_functions`` the user
  passed to the manager. Anything else, ``pg_read_file``, ``lo_import``, ``nextval``,
  ``pg_sleep``, ``set_config``, ``dblink``, DuckDB's ``read_csv`` and ``getenv``, SQLite's
  ``load_extension`` and ``fts3_tokenizer``, a user's own function, is refused with a message
  naming it and saying how to allow it. Trino's pass-through ``catalog.system.query(query =>
  '...')`` is accepted only when its query string is a plain literal that passes this guard
  itself.
* **Syntax by allow-list.** Every node of the parse tree must be of a kind the guard knows:
  query clauses, expressions, operators, casts, literals. Writes (``INSERT``, ``UPDATE``,
  ``DELETE``, ``MERGE``, ``SELECT ... INTO``), DDL, ``GRANT``, ``CALL``, ``SET``, ``USE``,
  transactions, ``COPY``, ``ATTACH``, ``PRAGMA``, locking reads (``FOR UPDATE``), a write hidden
  in a CTE, and any construct the guard does not recognise are refused.
* **Relations that expose the server.** Tables and views that show server files,
  configuration, credentials or replication state are refused by name
  (``pg_settings``, ``pg_file_settings``, ``pg_hba_file_rules``, ``pg_authid``, ``pg_shadow``,
  ``duckdb_settings``, SQLite's ``sqlite_dbpage``, Trino's ``system.runtime``, Iceberg's
  ``$files`` ..., see ``functions.REFUSED_RELATIONS``), as is a DuckDB table name that
  DuckDB would read as a file (``FROM 'x.csv'``). Ordinary tables are the database's to
  protect, through the privileges of the role the manager connects as.

**Lexical traps are refused.** Comments (where parsers and servers disagree: nested ``/* */``
in PostgreSQL, MySQL's executable ``/*! ... */``), more than one statement, any text between
tokens other than plain whitespace, and a backslash before a quote inside a string literal
(PostgreSQL with ``standard_conforming_strings`` off, and MySQL, read it as an escaped quote,
so the string would end elsewhere for the server than for the parser). A statement the
parser cannot read, or a name the guard cannot resolve, is refused: the guard fails closed.

Parsing is the first wall only: ``SQLManager`` then asks the database what an accepted
query's names resolve to and refuses a user's function, operator or file (``pg_resolve``,
``duckdb_resolve``; it never accepts what this guard refused), opens every session read-only
in the database and always rolls back; Starburst relies on this guard plus the catalog's own access
control. Verdicts for statements already seen are remembered (an LRU of 512, keyed by the
statement, dialect, limit and allowed functions); refusals are not cached.

The fallback LIMIT: a ``SELECT`` whose outermost query carries no ``LIMIT`` (or ``FETCH
FIRST``) gets ``LIMIT <limit>`` appended; one that carries its own keeps it unchanged.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, cast

from agentkernel.errors import AKConfigError, missing_extra
from agentkernel.knowledgebase.errors import SQLRefusedError

try:
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError
    from sqlglot.tokens import Token, TokenType  # type: ignore[attr-defined]

    from agentkernel.knowledgebase._sql import functions as lists
    from agentkernel.knowledgebase._sql.names import (
        UnresolvedName,
        ascii_lower,
        decode_unicode_identifiers,
        function_parts,
    )
    from agentkernel.knowledgebase._sql.relations import Refusal as _Refusal
    from agentkernel.knowledgebase._sql.relations import check_named_relation as _check_named
    from agentkernel.knowledgebase._sql.relations import check_relation as _check_relation
    from agentkernel.knowledgebase._sql.relations import check_show as _check_show
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise missing_extra("sqlglot", "sql", feature="the SQL statement guard") from exc

logger = logging.getLogger(__name__)

StatementKind = Literal["select", "values", "show", "describe", "explain"]

ACCEPTED = "SELECT, WITH ... SELECT, VALUES, SHOW, DESCRIBE and EXPLAIN"

# The meta key under which the parser records the name a known function was written with.
_NAME_KEY = "agentkernel_name"

# Node types that make a statement something other than a read, named in refusals. Resolved
# by name so a sqlglot release that renames one cannot break the import.
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

# Every other node of an accepted statement must be one of these (functions are judged by
# name, see _check_function). Names missing from a sqlglot release are skipped.
_ALLOWED_NODE_NAMES = (
    "Select", "Union", "Intersect", "Except", "Subquery", "With", "CTE", "From", "Join",
    "Where", "Group", "Having", "Order", "Ordered", "Limit", "Offset", "Fetch", "Qualify",
    "Window", "WindowSpec", "Distinct", "Column", "Identifier", "Literal", "Star", "Alias",
    "Aliases", "TableAlias", "Table", "Values", "Tuple", "Paren", "Null", "Boolean",
    "Placeholder", "Var", "Dot", "Bracket", "DataType", "DataTypeParam",
    "Interval", "IntervalSpan", "Kwarg", "PropertyEQ", "Slice", "Lambda", "Lateral", "Neg",
    "Not", "And", "Or", "Xor", "EQ", "NEQ", "NullSafeEQ", "NullSafeNEQ", "GT", "GTE", "LT",
    "LTE", "Is", "In", "Between", "Like", "ILike", "LikeAny", "ILikeAny", "SimilarTo",
    "Glob", "Add", "Sub", "Mul", "Div", "IntDiv", "Mod", "DPipe", "BitwiseAnd", "BitwiseOr",
    "BitwiseXor", "BitwiseNot", "BitwiseLeftShift", "BitwiseRightShift", "Escape", "Case",
    "If", "Any", "All", "Filter", "WithinGroup", "RespectNulls", "IgnoreNulls", "HavingMax",
    "Collate", "TableSample", "Rollup", "Cube", "GroupingSets", "ColumnDef", "Overlaps",
    "Operator", "JSONPath", "JSONPathKey", "JSONPathRoot", "JSONPathSubscript",
    "JSONPathWildcard", "JSONPathSlice", "JSONPathFilter", "JSONPathSelector",
    "JSONPathUnion", "JSONPathRecursive", "JSONPathScript", "RawString", "ByteString",
    "HexString", "BitString", "UnicodeString", "National", "PositionalColumn", "Distance",
    "Adjacent", "ExtendsLeft", "ExtendsRight", "Pivot", "Unpivot", "PivotAlias", "In",
    "Tags", "ColumnConstraint", "Columns", "JSONKeyValue", "FormatJson", "OnCondition",
    "JSONColumnDef", "JSONSchema", "Heredoc",
    "ArrayContainsAll", "ArrayOverlaps", "IsInf", "IsNan", "Exists", "Whens", "Struct",
    "LimitOptions", "AtTimeZone",
)  # fmt: skip
_KNOWN_NODES = [getattr(exp, name) for name in _ALLOWED_NODE_NAMES if hasattr(exp, name)]
_ALLOWED_NODES: frozenset[type[exp.Expression]] = frozenset(
    kind for kind in _KNOWN_NODES if not issubclass(kind, exp.Func)
)
# A function node is judged by the name it was written with; without one (an operator such
# as AND, a keyword form such as CASE or CAST) only by its exact type.
_SYNTAX_FUNCTIONS: frozenset[type[exp.Func]] = frozenset(
    getattr(exp, name) for name in lists.SYNTAX_FUNCTIONS if hasattr(exp, name)
) | frozenset(kind for kind in _KNOWN_NODES if issubclass(kind, exp.Func))

_QUERY_STARTS = frozenset({"SELECT", "WITH", "VALUES", "TABLE", "FROM"})
_STRING_TOKENS = frozenset(
    {TokenType.STRING, TokenType.NATIONAL_STRING, TokenType.RAW_STRING, TokenType.BYTE_STRING}
)
# between tokens only these characters may appear: what every server reads as whitespace
_BLANK = re.compile(r"[ \t\r\n\f]*")
_LEADING_WORD = re.compile(r"[A-Za-z_]+")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")
_WORDS = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?: [A-Za-z_][A-Za-z0-9_]*)*")
_NODE_NAMES = {"truncatetable": "TRUNCATE", "altercolumn": "ALTER", "loaddata": "LOAD DATA"}
_MANAGER = {"trino": "StarburstManager"}


@dataclass(frozen=True)
class GuardedStatement:
    """A statement the guard accepted, ready to run.

    Attributes:
        sql: The text to execute: the original without a trailing semicolon (with
            PostgreSQL ``U&"..."`` identifiers written as the plain names they spell), plus
            ``LIMIT <n>`` when the fallback was appended.
        kind: ``select``, ``values``, ``show``, ``describe`` or ``explain``.
        limit_appended: The fallback ``LIMIT`` was appended.
        has_own_limit: The outermost query carried its own ``LIMIT`` / ``FETCH FIRST``.
        query: The query whose calls the server resolves: ``sql`` for a SELECT or VALUES,
            the query explained or described for EXPLAIN and DESCRIBE, else empty.
    """

    sql: str
    kind: StatementKind
    limit_appended: bool = False
    has_own_limit: bool = False
    query: str = ""


def allowed_function_names(names: Iterable[str]) -> frozenset[str]:
    """Check and normalise user-allowed function names (``fn``, ``schema.fn``, ``a.b.fn``).

    Args:
        names: Function names as the user gave them; matched without regard to letter case.

    Returns:
        The names in lower case.

    Raises:
        AKConfigError: A name is not a string of one to three non-empty dotted parts.
    """
    if isinstance(names, str):
        raise AKConfigError("allowed_functions must be a list of names, not one string")
    result = set()
    for name in names:
        parts = name.strip().split(".") if isinstance(name, str) else []
        if not 1 <= len(parts) <= 3 or not all(p.strip() for p in parts):
            raise AKConfigError(f"allowed_functions holds an invalid function name: {name!r:.80}")
        result.add(".".join(ascii_lower(p.strip()) for p in parts))
    return frozenset(result)


def guard_statement(
    statement: str,
    *,
    dialect: str | None,
    limit: int | None,
    allowed_functions: Iterable[str] = (),
) -> GuardedStatement:
    """Accept exactly one read-only statement, appending the fallback LIMIT to a bare SELECT.

    Args:
        statement: SQL as the agent wrote it (after ``semantic_map`` resolution).
        dialect: A sqlglot dialect name (``"trino"``, ``"postgres"``, ``"duckdb"``,
            ``"sqlite"``, ...) or ``None`` for sqlglot's generic SQL.
        limit: The LIMIT appended to a ``SELECT`` that carries none; ``None`` appends nothing.
        allowed_functions: Functions accepted besides the dialect's built-ins without side
            effects (``"fn"`` for an unqualified call, ``"schema.fn"`` for a qualified one).

    Returns:
        The statement to execute and what the guard learned about it.

    Raises:
        SQLRefusedError: The statement is empty, unparsable, not read-only, calls a function
            not on the allow-list, reads a refused relation, carries a comment, or is more
            than one statement; the message says which.
    """
    if not isinstance(statement, str):
        raise SQLRefusedError(
            f"The SQL statement must be a string, got {type(statement).__name__}."
        )
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise SQLRefusedError(f"limit must be a positive whole number, got {limit!r}.")
    try:
        allowed = (
            _normalised(allowed_functions)  # the managers' own set: checked once
            if isinstance(allowed_functions, frozenset)
            else allowed_function_names(allowed_functions)
        )
    except AKConfigError as exc:
        raise SQLRefusedError(str(exc)) from None
    try:
        return _guard_cached(statement, dialect, limit, allowed)
    except _Refusal as refusal:
        raise SQLRefusedError(
            f"Refused: {refusal}. Only one read-only statement is accepted ({ACCEPTED})."
        ) from None


@functools.lru_cache(maxsize=64)
def _normalised(names: frozenset[str]) -> frozenset[str]:
    return allowed_function_names(names)


@functools.lru_cache(maxsize=512)
def _guard_cached(
    statement: str, dialect: str | None, limit: int | None, allowed: frozenset[str]
) -> GuardedStatement:
    """The verdict is a pure function of its inputs: remember accepted ones."""
    return _guard(statement, dialect, limit, allowed)


def _guard(
    statement: str, dialect: str | None, limit: int | None, allowed: frozenset[str]
) -> GuardedStatement:
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
            names_table = _check_show(tokens, dialect)
            return GuardedStatement(text, "show", query=_select_all(rest) if names_table else "")
        if word == "EXPLAIN":
            inner = _check_explain(rest, tokens, dialect, allowed)
            return GuardedStatement(text, "explain", query=inner)
        inner = _check_describe(rest, tokens, dialect, allowed)
        return GuardedStatement(text, "describe", query=inner)
    tokens = _tokens(text, dialect)
    try:
        decoded = decode_unicode_identifiers(text, tokens, dialect)
    except UnresolvedName as exc:
        raise _Refusal(str(exc)) from None
    if decoded != text:
        text, tokens = decoded, _tokens(decoded, dialect)
    root = _parse_one(text, tokens, dialect)
    kind = _check_query(root, text, dialect, allowed, word)
    if kind != "select":
        return GuardedStatement(text, kind, query=text)
    if root.args.get("limit") is not None:
        return GuardedStatement(text, "select", has_own_limit=True, query=text)
    if limit is None:
        return GuardedStatement(text, "select", query=text)
    sql = f"{text} LIMIT {limit}"
    return GuardedStatement(sql, "select", limit_appended=True, query=sql)


def _tokens(text: str, dialect: str | None, *, allow_empty: bool = False) -> list[Token]:
    """Tokenize; refuse comments, a second statement and anything read between tokens."""
    try:
        instance = sqlglot.Dialect.get_or_raise(dialect)
        tokens = list(instance.tokenize(text))
    except SqlglotError as exc:
        raise _Refusal(f"the statement cannot be read as SQL ({_first_line(exc)})") from exc
    except ValueError as exc:  # an unknown dialect name is a developer mistake: say so
        raise SQLRefusedError(f"Unknown SQL dialect {dialect!r}: {exc}") from exc
    if any(token.comments for token in tokens) or (text.strip() and not tokens):
        raise _Refusal("the statement contains an SQL comment; send it without comments")
    if tokens and (
        tokens[0].token_type in instance.tokenizer_class.COMMANDS
        or any(token.token_type == TokenType.COMMAND for token in tokens)
    ):  # the tokenizer kept the rest as one opaque string
        raise _Refusal(f"{tokens[0].text.upper()} is not a read-only query")
    position = 0
    for token in tokens:
        if not _BLANK.fullmatch(text, position, token.start):
            raise _Refusal(
                "the statement contains text the parser skipped (a comment or an unusual "
                "character); send it without comments"
            )
        if token.token_type in _STRING_TOKENS and "\\'" in text[token.start : token.end + 1]:
            raise _Refusal(
                "a string literal holds a backslash before a quote, which servers read "
                "differently (standard_conforming_strings); write the quote as ''"
            )
        position = token.end + 1
    if not _BLANK.fullmatch(text, position):
        raise _Refusal("the statement contains text the parser skipped")
    if any(token.token_type == TokenType.SEMICOLON for token in tokens):
        raise _Refusal("the text holds more than one statement (separated by ';')")
    if not tokens and not allow_empty:
        raise _Refusal("the statement is incomplete")
    return tokens


def _parse_one(text: str, tokens: list[Token], dialect: str | None) -> exp.Expression:
    try:
        dialect_instance = sqlglot.Dialect.get_or_raise(dialect)
        # a fresh instance per call: record the name each known function was written with
        dialect_instance.ORIGINAL_NAME_META_KEY = _NAME_KEY
        parser = dialect_instance.parser()
        parsed = [e for e in parser.parse(tokens, text) if e is not None]
    except SqlglotError as exc:
        raise _Refusal(f"the statement cannot be parsed as SQL ({_first_line(exc)})") from exc
    if len(parsed) != 1:
        raise _Refusal("the text holds more than one statement")
    return cast(exp.Expression, parsed[0])


def _check_query(
    root: exp.Expression,
    text: str,
    dialect: str | None,
    allowed: frozenset[str],
    word: str = "",
) -> StatementKind:
    """Accept a query root and judge every node beneath it."""
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
        kind_of_node = type(node)
        # a name written as a call is judged even where the parser made an operator of it
        named = node.meta_get(_NAME_KEY) is not None
        if kind_of_node in _ALLOWED_NODES and not named:  # exact type: subclasses are not
            if kind_of_node is exp.Table:
                _check_relation(cast(exp.Table, node), text, dialect)
            elif kind_of_node is exp.Operator:
                _check_operator(node)
            elif kind_of_node is exp.Var and not _WORDS.fullmatch(str(node.this)):
                # a keyword; never a stretch of text the parser kept unread
                raise _Refusal(f"the statement holds {str(node.this)[:40]!r}, which is not read")
        elif isinstance(node, _FORBIDDEN_NODES):
            raise _Refusal(f"the statement contains {_describe_node(node)}, which is not read-only")
        elif named or isinstance(node, exp.Func):
            _check_function(node, text, dialect, allowed)
        else:
            raise _Refusal(
                f"the statement uses {kind_of_node.__name__} ({node.sql(dialect=dialect)[:60]!r}), "
                "which the guard does not accept as read-only"
            )
    return kind


def _check_operator(node: exp.Expr) -> None:
    """PostgreSQL's ``OPERATOR(schema.op)``: an operator outside pg_catalog runs a user function."""
    written = "".join(str(node.args.get("operator", "")).split())
    schema, _, _ = written.rpartition(".")
    if schema and ascii_lower(schema.strip('"')) != "pg_catalog":
        raise _Refusal(f"the operator {written[:40]} is not a built-in (only pg_catalog's are)")


def _check_function(
    node: exp.Expr, text: str, dialect: str | None, allowed: frozenset[str]
) -> None:
    if _is_table_wrapper(node, dialect):
        return
    if node.meta_get(_NAME_KEY) is None and not isinstance(node, exp.Anonymous):
        if type(node) in _SYNTAX_FUNCTIONS:
            return  # an operator, keyword or special form of a listed built-in
        raise _Refusal(
            f"the statement uses {type(node).__name__} ({node.sql(dialect=dialect)[:60]!r}), "
            "which the guard does not accept as read-only"
        )
    try:
        parts = function_parts(node, text, dialect, _NAME_KEY)
    except UnresolvedName as exc:
        raise _Refusal(str(exc)) from None
    shown = ".".join(parts)
    name, qualifier = parts[-1], parts[:-1]
    if _is_passthrough(name, qualifier, dialect):
        _check_passthrough(node, shown, allowed)
        return
    if _function_allowed(name, qualifier, dialect, allowed):
        return
    manager = _MANAGER.get(dialect or "", "SQLManager")
    if any(_matches(qualifier, q) for q in lists.BUILTIN_QUALIFIERS.get(dialect, ((),))):
        shown = name  # pg_catalog.fn is allowed as "fn"
    raise _Refusal(
        f"the function {shown}() is not on the {dialect or 'generic SQL'} allow-list of "
        "built-in functions without side effects (if it is safe for this database, pass "
        f"allowed_functions=[{shown!r}] to {manager})"
    )


def _function_allowed(
    name: str, qualifier: tuple[str, ...], dialect: str | None, allowed: frozenset[str]
) -> bool:
    qualifiers = lists.BUILTIN_QUALIFIERS.get(dialect, ((),))
    builtin = any(_matches(qualifier, pattern) for pattern in qualifiers)
    if builtin and name in lists.BUILTIN_FUNCTIONS.get(dialect, lists.COMMON_FUNCTIONS):
        return True
    if builtin and name in allowed:
        return True
    if dialect == "trino" and name in lists.CONNECTOR_TABLE_FUNCTIONS:
        return qualifier[-1:] == ("system",) and len(qualifier) <= 2
    return ".".join((*qualifier, name)) in allowed


def _matches(qualifier: tuple[str, ...], pattern: tuple[str, ...]) -> bool:
    return len(qualifier) == len(pattern) and all(
        want in ("*", have) for have, want in zip(qualifier, pattern, strict=True)
    )


def _is_table_wrapper(node: exp.Expr, dialect: str | None) -> bool:
    """Trino's ``TABLE(fn(...))`` in FROM: the wrapper itself calls nothing."""
    if not (
        isinstance(node, exp.Anonymous)
        and isinstance(node.this, str)
        and node.this.upper() == "TABLE"
        and isinstance(node.parent, exp.Table)
        and dialect in ("trino", None)
    ):
        return False
    inner = node.expressions
    call = inner[0].expression if len(inner) == 1 and isinstance(inner[0], exp.Dot) else None
    if len(inner) != 1 or not isinstance(call or inner[0], exp.Func):
        raise _Refusal("TABLE(...) must hold exactly one table function call")
    return True


def _is_passthrough(name: str, qualifier: tuple[str, ...], dialect: str | None) -> bool:
    return (
        dialect in ("trino", None)
        and name in lists.PASSTHROUGH_FUNCTIONS
        and qualifier[-1:] == ("system",)
        and len(qualifier) <= 2
    )


def _check_passthrough(node: exp.Expr, shown: str, allowed: frozenset[str]) -> None:
    """A query string handed to the underlying database must pass the guard itself."""
    for argument in node.expressions:
        named = isinstance(argument, (exp.Kwarg, exp.PropertyEQ))
        value = argument.expression if named else argument
        if not (isinstance(value, exp.Literal) and value.is_string):
            raise _Refusal(f"{shown}() takes only a plain string literal as its query")
        try:
            inner = _guard(str(value.this), None, None, allowed)
        except _Refusal as refusal:
            raise _Refusal(f"the query passed to {shown}() is refused: {refusal}") from None
        if inner.kind not in ("select", "values"):
            raise _Refusal(f"the query passed to {shown}() must be a SELECT")


def _check_explain(
    rest: str, tokens: list[Token], dialect: str | None, allowed: frozenset[str]
) -> str:
    """EXPLAIN is accepted only of a statement that passes the guard itself; returns it."""
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
        inner = _guard(rest[tokens[i].start :], dialect, None, allowed)
    except _Refusal as refusal:
        raise _Refusal(f"EXPLAIN is accepted only of a read-only query: {refusal}") from None
    if inner.kind not in ("select", "values"):
        raise _Refusal("EXPLAIN is accepted only of a SELECT or VALUES query")
    return inner.sql


def _check_describe(
    rest: str, tokens: list[Token], dialect: str | None, allowed: frozenset[str]
) -> str:
    """DESCRIBE of a table, or of a query that passes the guard itself; returns the query."""
    words = [t.text.upper() for t in tokens]
    if len(tokens) == 2 and words[0] in ("INPUT", "OUTPUT"):
        return ""  # Trino: DESCRIBE INPUT|OUTPUT <prepared statement name>
    if words[0] in _QUERY_STARTS or tokens[0].token_type == TokenType.L_PAREN:
        try:
            inner = _guard(rest, dialect, None, allowed)
        except _Refusal as refusal:
            raise _Refusal(f"DESCRIBE is accepted only of a read-only query: {refusal}") from None
        if inner.kind not in ("select", "values"):
            raise _Refusal("DESCRIBE takes a table name or a SELECT query")
        return inner.sql
    names = (TokenType.VAR, TokenType.DOT, TokenType.IDENTIFIER)
    if any(t.token_type not in names and not _NAME.fullmatch(t.text) for t in tokens):
        raise _Refusal("DESCRIBE takes a table name or a SELECT query")
    _check_named(tokens, dialect)
    return _select_all(rest)


def _select_all(name: str) -> str:
    """The query whose names the database resolves for DESCRIBE / SHOW of a table."""
    return f"SELECT * FROM {name.strip()}"


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
