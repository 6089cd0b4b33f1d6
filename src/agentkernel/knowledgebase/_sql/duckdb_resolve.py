"""The second judge on DuckDB: the names a statement uses, as the database file resolves them.

The guard judges names against DuckDB's built-ins, but a database file can change what a
name means: a macro created in it (``CREATE MACRO lower(x) AS ...``) is called instead of
the built-in of the same name, and a table name that is no table (``FROM secret.csv``) is
handed to DuckDB's replacement scans, which read it as a file when external access is on.
So, after the guard accepted a query and before it runs, in the process that runs DuckDB
(``_sql.duckdb_worker``, which reads the catalog once when it opens the file):

* every name the statement holds (any identifier or word) is compared with the functions
  and macros the database defines itself (``duckdb_functions()`` where not ``internal``);
  a match is refused unless the user listed it in ``allowed_functions``;
* every relation the statement reads, unless it names one of the statement's own CTEs, must
  be a table or view of the catalog (``duckdb_tables()``, ``duckdb_views()``), else it is
  refused before DuckDB could try to read it as a file.

Nothing here loosens the guard: it only refuses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.tokens import TokenType  # type: ignore[attr-defined]

from agentkernel.knowledgebase._sql.names import ascii_lower
from agentkernel.knowledgebase._sql.sessions import run_statements
from agentkernel.knowledgebase.errors import SQLRefusedError

_CATALOG = (
    "SELECT 'f', function_name, NULL, NULL FROM duckdb_functions() WHERE NOT internal "
    "UNION ALL SELECT 't', table_name, schema_name, database_name FROM duckdb_tables() "
    "UNION ALL SELECT 't', view_name, schema_name, database_name FROM duckdb_views()"
)
_NAMES = frozenset({TokenType.VAR, TokenType.IDENTIFIER})


@dataclass(frozen=True)
class Catalog:
    """What a DuckDB database defines: its own functions and macros, its relations."""

    user_functions: frozenset[str]
    relations: frozenset[tuple[str, ...]]


def read_catalog(dbapi_connection: Any) -> Catalog:
    """Read the catalog once per connection (a file opened read-only cannot change under it).

    Args:
        dbapi_connection: A DuckDB connection.

    Returns:
        The user's functions and macros (lower case) and every table and view as
        ``(database, schema, name)``.
    """
    rows = run_statements(dbapi_connection, _CATALOG, fetch=True)
    return Catalog(
        frozenset(ascii_lower(str(name)) for kind, name, _, _ in rows if kind == "f"),
        frozenset(
            tuple(ascii_lower(str(p)) for p in (database, schema, name))
            for kind, name, schema, database in rows
            if kind == "t"
        ),
    )


def check(catalog: Catalog, query: str, allowed: frozenset[str]) -> None:
    """Refuse ``query`` if it names a function of the database's own or a relation it lacks.

    Args:
        catalog: The database's catalog (:func:`read_catalog`).
        query: The SELECT or VALUES the guard accepted.
        allowed: ``allowed_functions`` as the guard normalised them.

    Raises:
        SQLRefusedError: A name resolves to a user's function, or a relation is not a table
            or view of the catalog.
    """
    try:
        tokens = list(sqlglot.Dialect.get_or_raise("duckdb").tokenize(query))
        tree = sqlglot.parse_one(query, read="duckdb")
    except SqlglotError as exc:  # the guard parsed it already: fail closed all the same
        raise _refused(f"the statement cannot be parsed again ({exc})") from exc
    user_functions, relations = catalog.user_functions, catalog.relations
    for token in tokens:
        word = ascii_lower(token.text)
        if token.token_type in _NAMES and word in user_functions and word not in allowed:
            raise _refused(
                f"the name {word} is a function or macro defined in this database, which "
                "DuckDB calls instead of a built-in (if it is safe, pass "
                f"allowed_functions=[{word!r}])"
            )
    ctes = {ascii_lower(cte.alias_or_name) for cte in tree.find_all(exp.CTE)}
    for table in tree.find_all(exp.Table):
        if not isinstance(table.this, exp.Identifier):
            continue  # a table function, judged as a function
        parts = tuple(ascii_lower(part.name) for part in table.parts)
        if len(parts) == 1 and parts[0] in ctes:
            continue
        if not any(known[-len(parts) :] == parts for known in relations):
            raise _refused(
                f"{'.'.join(parts)} is not a table or view of this database (DuckDB would "
                "try to read it as a file)"
            )


def _refused(reason: str) -> SQLRefusedError:
    return SQLRefusedError(f"Refused: {reason}.")
