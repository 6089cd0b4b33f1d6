"""Lexical pre-clearance of plain read-only SELECTs, so most agent queries skip the parser.

:mod:`agentkernel.knowledgebase._sqlguard` decides every statement by parsing it with
``sqlglot``, which costs 0.3-1 ms of CPU per new statement: more than a local SQLite or
PostgreSQL query. Most agent SQL is a plain ``SELECT`` (or ``WITH ... SELECT``) whose safety is
visible in its words alone. This module reads such a statement with one single-pass lexer (a
compiled regular expression over the whole text: quoted strings with ``''`` escapes, ``"..."``
and backtick identifiers with doubled-quote escapes, words, numbers, punctuation, whitespace)
and clears it when, and only when, the tokens show all of this:

* the text is one statement starting with ``SELECT`` or ``WITH``: no ``;``, no comment marker
  (``--``, ``/*``, ``*/``, ``//``, ``#``) outside quotes, and every character belongs to a token;
* the lexing cannot differ between the dialects concerned: no backslash anywhere (MySQL
  escapes, PostgreSQL without ``standard_conforming_strings``), no ``$`` outside quotes (dollar
  quoting, positional parameters), no quote right after a word or ``&`` (``E'...'``,
  ``U&'...'``, ``X'...'``, ``N'...'``), no ``?``, ``@``, ``{``, ``}``, no number run into a word
  (``1into``), backticks only where they quote identifiers (SQLite, MySQL) and ``[`` only where it
  is not an identifier quote (Trino, PostgreSQL, DuckDB);
* no word that any write, DDL, session, transaction or locking syntax needs in any supported
  dialect (:data:`DENIED_WORDS`: ``INSERT``, ``INTO``, ``FOR``, ``SET``, ``COPY``, ``PRAGMA``,
  ``FUNCTION`` ...), and no function name the guard refuses, as a word or as a quoted identifier;
* every CTE list has the strict form ``name [(columns)] AS [[NOT] MATERIALIZED] (body)``, every
  body starts with ``SELECT`` or ``WITH`` and the list is followed by ``SELECT``, so no statement
  keyword (``END``, ``DESC``, ``REPLACE`` ..., harmless inside a query) starts a statement;
* a later ``SELECT`` follows only ``(``, ``)``, a set operation, ``ALL`` or ``DISTINCT``, and no
  ``FROM`` follows a comma or a keyword awaiting an operand (sqlglot reads ``FROM FROM t`` or
  ``FROM SELECT ...`` as an unparenthesised subquery, which moves the ``LIMIT``);
* parentheses balance; a ``LIMIT`` (after an operand, followed by a number or ``ALL``) or
  ``FETCH FIRST|NEXT`` at parenthesis depth 0 and after the last depth-0 set operation is the
  query's own limit; any other depth-0 ``LIMIT`` / ``FETCH`` sends the statement to the parser.

Anything else returns ``None``: "not cleared, ask the parser". This module never refuses; every
refusal and its message stays with the parser. A cleared statement gets what the parser would
return for it (the text to run, the fallback ``LIMIT``, the limit flags):
``tests/knowledgebase/test_sqlfast.py`` checks that differentially, on a fixed corpus and on
random statements built from query fragments, denied words and quoting debris.

One class of statements is cleared that the parser would refuse: text of the shape above that
``sqlglot`` cannot parse at all (``SELECT a FROM t WHERE``, a function sqlglot does not know in
an odd position). That is safe because it reaches the database as what the lexer proved it is:
a single statement which, in any supported dialect's grammar, can only be a query (the CTE
check pins ``SELECT`` as the main statement, and every clause that writes, locks, creates or
changes the session needs a denied word) or a syntax error, which the database reports as an
error (``SQLQueryError``). ``SQLManager`` also runs it in a read-only session that is always
rolled back; Starburst relies on the catalog's access control as it does for parsed SQL.

Only the dialects whose lexing is pinned here are handled (``trino``, ``postgres``, ``duckdb``,
``sqlite``, ``mysql`` and ``None``, sqlglot's generic SQL); any other dialect goes to the parser.
"""

from __future__ import annotations

import re
from typing import NamedTuple

# Words behind every statement or clause the guard refuses, across the supported dialects:
# sqlglot's statement keywords (its STATEMENT_PARSERS and COMMANDS, less those also used inside
# queries, see _STATEMENT_ONLY), the clauses that write or lock inside a SELECT, and statements
# sqlglot reads as opaque commands. A test checks this covers sqlglot's own keyword tables.
DENIED_WORDS = frozenset(
    {
        # writes and DDL
        "INSERT", "UPDATE", "DELETE", "MERGE", "UPSERT", "CREATE", "DROP", "ALTER",
        "TRUNCATE", "RENAME", "COPY", "INTO", "RETURNING", "OUTFILE", "DUMPFILE", "LOAD",
        "IMPORT", "EXPORT", "REINDEX", "VACUUM", "ANALYZE", "OPTIMIZE",
        "CLUSTER", "CHECKPOINT", "REFRESH", "CACHE", "UNCACHE", "SUMMARIZE",
        # locking reads, SELECT ... PROCEDURE, NEXT VALUE FOR, time travel
        "FOR", "LOCK", "UNLOCK", "PROCEDURE", "FUNCTION",
        # privileges
        "GRANT", "REVOKE", "DENY", "REASSIGN", "SECURITY",
        # session, transactions, procedural
        "SET", "RESET", "USE", "BEGIN", "COMMIT", "ROLLBACK", "ABORT", "SAVEPOINT",
        "RELEASE", "TRANSACTION", "DISCARD", "LISTEN", "UNLISTEN", "NOTIFY", "DO", "CALL",
        "EXEC", "EXECUTE", "PREPARE", "DEALLOCATE", "DECLARE", "HANDLER", "KILL",
        "ATTACH", "DETACH", "INSTALL", "FORCE", "CONNECT", "DISCONNECT", "PRAGMA",
        # other statements sqlglot reads (SHOW, DESCRIBE, EXPLAIN are the parser's)
        "SHOW", "DESCRIBE", "EXPLAIN",
        # limits the fallback LIMIT logic does not mirror; Unicode escapes
        "TOP", "UESCAPE",
    }
)  # fmt: skip
# Statement keywords that are also ordinary words inside a query (CASE ... END, ORDER BY x DESC,
# replace(), FETCH FIRST, a column named "comment"). They are harmless except where a statement
# starts, and the CTE check admits only SELECT / WITH there.
_STATEMENT_ONLY = frozenset(
    {"END", "DESC", "REPLACE", "FETCH", "PIVOT", "UNPIVOT", "PIVOT_WIDER", "COMMENT", "START"}
)

# The lexer. Alternatives are tried in order at each position; whitespace (ASCII only) is the
# one thing findall() skips, since the last alternative takes any other single character, so
# every character lands in a token and unknown ones are seen and refused.
_TOKEN = re.compile(
    r"""
    '[^']*+(?:''[^']*+)*+'          # a string; '' is a quote inside it
    | "[^"]*+(?:""[^"]*+)*+"        # a quoted identifier; "" is a quote inside it
    | `[^`]*+(?:``[^`]*+)*+`        # a backtick identifier
    | [A-Za-z0-9_]++[$'"`]?         # a word or number, with a glued quote or $ caught
    | --|/\*|\*/|//|\|>|&['"]       # comment markers, pipe syntax, U&'...' / U&"..."
    | [^ \t\r\n]                    # any other single character
    """,
    re.VERBOSE,
)
_EXPONENT = re.compile(r"[0-9]+E[0-9]+")
_QUOTES = frozenset("'\"`")
_PUNCTUATION = frozenset("(),.*+-/%<>=!|&^~:")
_SET_OPERATIONS = frozenset({"UNION", "INTERSECT", "EXCEPT", "MINUS"})
_WATCHED = frozenset({"WITH", "LIMIT", "FETCH", "FROM", "SELECT"}) | _SET_OPERATIONS
# What may come right before a SELECT that is not the first word.
_SELECT_AFTER = frozenset({"(", ")", "ALL", "DISTINCT"}) | _SET_OPERATIONS
# A WITH after one of these (or first) opens a CTE list; elsewhere only a modifier is cleared.
_QUERY_START_BEFORE = frozenset({"", "(", "AS", "ALL", "DISTINCT"}) | _SET_OPERATIONS
_WITH_MODIFIERS = frozenset({"TIME", "LOCAL", "ORDINALITY", "ROLLUP", "CUBE", "TIES"})
# Keywords an operand follows: a LIMIT right after one is a name, not the query's limit.
_OPERAND_EXPECTED = frozenset(
    {
        "SELECT", "FROM", "JOIN", "WHERE", "ON", "BY", "AS", "DISTINCT", "ALL", "AND", "OR",
        "NOT", "CASE", "WHEN", "THEN", "ELSE", "HAVING", "IN", "IS", "LIKE", "ILIKE", "BETWEEN",
        "USING", "LATERAL", "TABLE", "OVER", "PARTITION", "WINDOW", "QUALIFY", "ESCAPE", "WITH",
        "REPLACE", "EXCLUDE",
    }
) | _SET_OPERATIONS  # fmt: skip


class _Dialect(NamedTuple):
    punctuation: frozenset[str]
    backticks: bool


_BRACKETS = _PUNCTUATION | {"[", "]"}
_DIALECTS: dict[str | None, _Dialect] = {
    None: _Dialect(_PUNCTUATION, backticks=False),
    "trino": _Dialect(_BRACKETS, backticks=False),
    "postgres": _Dialect(_BRACKETS, backticks=False),
    "duckdb": _Dialect(_BRACKETS, backticks=False),
    "sqlite": _Dialect(_PUNCTUATION, backticks=True),  # [x] quotes an identifier there
    "mysql": _Dialect(_PUNCTUATION, backticks=True),
}


class Cleared(NamedTuple):
    """A plain SELECT cleared without parsing, as the parser would have returned it.

    Attributes:
        sql: The text to execute (stripped, one trailing ``;`` removed, plus the fallback
            ``LIMIT`` when appended).
        limit_appended: ``LIMIT <limit>`` was appended.
        has_own_limit: The outermost query carries its own ``LIMIT`` / ``FETCH``.
    """

    sql: str
    limit_appended: bool
    has_own_limit: bool


class FastPath:
    """Clears plain read-only SELECTs by lexing alone; ``None`` means "ask the parser"."""

    __slots__ = ("_denied", "_functions")

    def __init__(self, denied_functions: frozenset[str]) -> None:
        """Build the word tables once.

        Args:
            denied_functions: Lower-case names of the functions the parser refuses (side
                effects, pass-through query strings); never cleared as a word or as a quoted
                identifier.
        """
        self._functions = frozenset(name.lower() for name in denied_functions)
        self._denied = DENIED_WORDS | {name.upper() for name in denied_functions}

    def clear(self, statement: str, dialect: str | None, limit: int | None) -> Cleared | None:
        """Clear one plain read-only SELECT, or return ``None`` for the parser to decide.

        Args:
            statement: SQL as the agent wrote it.
            dialect: The sqlglot dialect name the guard was given.
            limit: The fallback LIMIT (already validated), or ``None``.

        Returns:
            What the parser would return for the statement, or ``None`` when this lexical
            check cannot prove it is a plain read-only SELECT.
        """
        rules = _DIALECTS.get(dialect)
        if rules is None or "\\" in statement:
            return None
        text = statement.strip()
        if text.endswith(";"):
            text = text[:-1].rstrip()
        tokens = _tokens(text)
        if not tokens or tokens[0] not in ("SELECT", "WITH"):
            return None
        own_limit = self._scan(tokens, rules)
        if own_limit is None:
            return None
        if own_limit:
            return Cleared(text, limit_appended=False, has_own_limit=True)
        if limit is None:
            return Cleared(text, limit_appended=False, has_own_limit=False)
        return Cleared(f"{text} LIMIT {limit}", limit_appended=True, has_own_limit=False)

    def _scan(self, tokens: list[str], rules: _Dialect) -> bool | None:
        """Check every token; return whether the outer query has its own limit, or ``None``."""
        punctuation = rules.punctuation
        denied = self._denied
        depth = 0
        own_limit = False
        withs: list[int] = []
        for i, token in enumerate(tokens):
            if token in punctuation:
                if token == "(":
                    depth += 1
                elif token == ")":
                    depth -= 1
                    if depth < 0:
                        return None
                continue
            if token in denied:
                return None
            if token.isidentifier():  # an ASCII word, upper-cased
                if token not in _WATCHED:
                    continue
                if token == "WITH":
                    withs.append(i)
                elif token == "FROM":
                    if _starts_from_first_query(tokens[i - 1]):
                        return None
                elif token == "SELECT":
                    if i and tokens[i - 1] not in _SELECT_AFTER:  # FROM SELECT ...: a subquery
                        return None
                elif depth:
                    pass
                elif token in _SET_OPERATIONS:
                    if own_limit:  # LIMIT ... UNION: that limit belongs to a branch
                        return None
                elif _is_own_limit(token, tokens[i - 1], _at(tokens, i + 1)):
                    own_limit = True
                else:
                    return None
                continue
            first = token[0]
            if first == "'":
                if len(token) < 2:  # an unterminated string
                    return None
                continue
            if first == '"' or (first == "`" and rules.backticks):
                if len(token) < 2 or self._names_function(token):
                    return None
                continue
            if first.isdigit() and (token.isdigit() or _EXPONENT.fullmatch(token)):
                continue
            return None  # anything else: not a token this check vouches for
        if depth:
            return None
        if any(not _cte_list_ok(tokens, i) for i in withs):
            return None
        return own_limit

    def _names_function(self, quoted: str) -> bool:
        quote = quoted[0]
        name = quoted[1:-1].replace(quote + quote, quote).lower()
        return name in self._functions


def _tokens(text: str) -> list[str] | None:
    """Lex ``text`` with words upper-cased; ``None`` for a non-ASCII character outside quotes."""
    if text.isascii():
        return _TOKEN.findall(text.upper())
    tokens = []
    for token in _TOKEN.findall(text):
        if token.isascii():
            tokens.append(token.upper())
        elif token[0] in _QUOTES and len(token) > 1:  # non-ASCII text inside quotes only
            tokens.append(token)
        else:
            return None
    return tokens


def _at(tokens: list[str], i: int) -> str:
    return tokens[i] if i < len(tokens) else ""


def _is_own_limit(word: str, before: str, after: str) -> bool:
    """A depth-0 LIMIT / FETCH that ends a query (``x LIMIT 5``), not a name (``FROM limit``)."""
    if before in _OPERAND_EXPECTED or (before in _PUNCTUATION and before != ")"):
        return False
    if word == "LIMIT":
        return after.isdigit() or after == "ALL"
    return after in ("FIRST", "NEXT")  # FETCH FIRST | NEXT ... ROWS ONLY


def _starts_from_first_query(before: str) -> bool:
    """``FROM FROM t``, ``JOIN FROM t``, ``a, FROM t``: sqlglot reads a FROM-first query there."""
    return before == "," or (before in _OPERAND_EXPECTED and before != "DISTINCT")


def _closing(tokens: list[str], i: int) -> int:
    """Index of the ``)`` matching ``tokens[i] == "("``, or -1."""
    depth = 0
    for j in range(i, len(tokens)):
        token = tokens[j]
        if token == "(":
            depth += 1
        elif token == ")":
            depth -= 1
            if depth == 0:
                return j
    return -1


def _cte_list_ok(tokens: list[str], i: int) -> bool:
    """A WITH at ``tokens[i]``: a modifier (``WITH TIME ZONE``), or a strict CTE list + SELECT."""
    before = _at(tokens, i - 1) if i else ""
    if before not in _QUERY_START_BEFORE:  # TIMESTAMP WITH TIME ZONE, GROUP BY a WITH ROLLUP
        return _at(tokens, i + 1) in _WITH_MODIFIERS
    j = i + 1
    if _at(tokens, j) == "RECURSIVE":
        j += 1
    while True:
        name = tokens[j] if j < len(tokens) else ""
        if not (name.isidentifier() or name[:1] in ('"', "`")):
            return False
        j += 1
        if _at(tokens, j) == "(":  # a column list
            j = _closing(tokens, j)
            if j < 0:
                return False
            j += 1
        if _at(tokens, j) != "AS":
            return False
        j += 1
        if _at(tokens, j) == "NOT":
            j += 1
            if _at(tokens, j) != "MATERIALIZED":
                return False
        if _at(tokens, j) == "MATERIALIZED":
            j += 1
        if _at(tokens, j) != "(" or _at(tokens, j + 1) not in ("SELECT", "WITH"):
            return False
        j = _closing(tokens, j)
        if j < 0:
            return False
        j += 1
        if _at(tokens, j) != ",":
            return _at(tokens, j) == "SELECT"
        j += 1
