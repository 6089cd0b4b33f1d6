"""The statement guard's judgement of relations and SHOW: what a statement may read.

Tables and views that expose server files, configuration or credentials are refused by name
(``functions.REFUSED_RELATIONS``), as are SQLite's and DuckDB's ``pragma_*`` relations (their
``pragma_database_list`` shows the database file's path) and a DuckDB table name DuckDB would
read as a file. SHOW is accepted per dialect only in the forms ``functions.SHOW_WORDS`` and
``functions.POSTGRES_SHOW_PARAMETERS`` list. See ``guard`` for the whole guard.
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.tokens import Token, TokenType  # type: ignore[attr-defined]

from agentkernel.errors import AKError
from agentkernel.knowledgebase._sql import functions as lists
from agentkernel.knowledgebase._sql.names import UnresolvedName, ascii_lower, relation_parts

DUCKDB_FILE_CHARACTERS = frozenset("./\\:*?")
_SHOW_FORBIDDEN_WORDS = frozenset(
    {"INSERT", "UPDATE", "DELETE", "MERGE", "DROP", "ALTER", "CALL", "GRANT",
     "REVOKE", "TRUNCATE", "SET", "EXECUTE"}
)  # fmt: skip
_PRAGMA_DIALECTS = ("duckdb", "sqlite")


class Refusal(AKError):
    """Why a statement (or a statement nested in it) is refused; worded by the caller."""


def check_relation(table: exp.Table, text: str, dialect: str | None) -> None:
    """Refuse relations that expose the server, and DuckDB table names read as files."""
    if isinstance(table.this, exp.Func) or table.this is None:
        return  # a table function, judged as a function; ROWS FROM holds tables of its own
    if not isinstance(table.this, exp.Identifier):
        raise Refusal(f"the table source {table.sql(dialect=dialect)[:60]!r} is not a name")
    try:
        parts = relation_parts(table, dialect)
    except UnresolvedName as exc:
        raise Refusal(str(exc)) from None
    lowered = [ascii_lower(part) for part in parts]
    name = lowered[-1]
    refused = lists.REFUSED_RELATIONS.get(dialect, frozenset())
    if dialect in ("trino", None):
        in_runtime = len(lowered) >= 2 and lowered[-2] in lists.TRINO_REFUSED_SCHEMAS
        if in_runtime or (lowered[:1] == ["system"] and name in lists.REFUSED_RELATIONS["trino"]):
            refused = refused | {name}
        if name.endswith(lists.TRINO_REFUSED_SUFFIXES):
            raise Refusal(f"the metadata table {'.'.join(parts)} lists files or properties")
    if dialect in _PRAGMA_DIALECTS and name.startswith("pragma_"):
        raise Refusal(
            f"the relation {'.'.join(parts)} is a {dialect} pragma (it shows the database's "
            "files or settings) and is not served"
        )
    if name in refused or (dialect is None and name in lists.REFUSED_RELATIONS["postgres"]):
        raise Refusal(
            f"the relation {'.'.join(parts)} exposes server files, configuration or "
            "credentials and is not served"
        )
    if dialect == "duckdb":
        start = table.this.meta_get("start")
        as_string = isinstance(start, int) and text[start : start + 1] == "'"
        if as_string or any(set(part) & DUCKDB_FILE_CHARACTERS for part in parts):
            raise Refusal(
                f"DuckDB reads the table name {'.'.join(parts)!r} as a file; "
                "only tables and views are served"
            )


def check_show(tokens: list[Token], dialect: str | None) -> bool:
    """Accept a SHOW per dialect; ``True`` when it describes a named table (DuckDB)."""
    if dialect == "sqlite":
        raise Refusal("SQLite has no SHOW statement")
    for token in tokens:
        word = token.text.upper()
        if token.token_type != TokenType.STRING and word in _SHOW_FORBIDDEN_WORDS:
            raise Refusal(f"a SHOW statement may not contain {word}")
        if token.token_type in (TokenType.L_PAREN, TokenType.R_PAREN):
            raise Refusal("a SHOW statement may not hold a parenthesised query")
    if not tokens:
        if dialect in (None, "trino", "duckdb", "mysql"):
            return False  # a bare SHOW is a server error, not an effect
        raise Refusal("SHOW needs the name of what to show")
    if dialect == "postgres":
        parameter = " ".join(ascii_lower(t.text) for t in tokens)
        if parameter not in lists.POSTGRES_SHOW_PARAMETERS:
            raise Refusal(
                f"SHOW {parameter} is not among the session parameters served (server files "
                "and configuration are not shown)"
            )
        return False
    words = lists.SHOW_WORDS.get(dialect, lists.SHOW_WORDS[None])
    first = tokens[0].text.upper()
    if first in words:
        return False
    if dialect == "duckdb" and all(
        t.token_type in (TokenType.VAR, TokenType.DOT, TokenType.IDENTIFIER) for t in tokens
    ):
        check_named_relation(tokens, dialect)  # DuckDB's SHOW <table> describes it
        return True
    raise Refusal(f"SHOW {first} is not accepted here")


def check_named_relation(tokens: list[Token], dialect: str | None) -> None:
    """Judge a dotted table name given as tokens (DESCRIBE t, DuckDB's SHOW t)."""
    parts = [
        exp.Identifier(this=t.text, quoted=t.token_type == TokenType.IDENTIFIER)
        for t in tokens
        if t.token_type != TokenType.DOT
    ]
    if not 1 <= len(parts) <= 3:
        raise Refusal("DESCRIBE takes a table name or a SELECT query")
    keys = ("this", "db", "catalog")
    table = exp.Table(**dict(zip(keys, reversed(parts), strict=False)))
    check_relation(table, "", dialect)
