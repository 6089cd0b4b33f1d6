"""The second judge on PostgreSQL: the functions and operators the server really resolves.

The statement guard judges the names an agent wrote; PostgreSQL may call something else:
``SELECT c.fn FROM t c`` calls ``fn(c)`` (attribute notation), ``a === b`` calls whatever
function backs the operator ``===`` found on the ``search_path``, and ``lower(5)`` calls a
user's ``public.lower(integer)`` before ``pg_catalog.lower(text)`` (an exact match beats a
cast). So, after the guard accepted a query and before it runs, the same connection and
transaction:

1. asks the server to analyse the query without planning or running it (``PREPARE``, then
   ``DEALLOCATE``) with ``debug_print_parse`` on and ``client_min_messages = log``, so the
   server sends its parse tree back as a LOG notice (the server log receives it too);
2. reads from that tree the object id of every function (``FUNCEXPR :funcid``, aggregates,
   window functions), operator (``:opno``, ``:opnos``) and sort or equality operator
   (``:sortop``, ``:eqop``) the query will call, implicit casts included;
3. looks the ids up in ``pg_proc`` and ``pg_operator`` and refuses the statement unless
   every function is in ``pg_catalog`` (a call written as a call, an aggregate or a window
   function must also be on the dialect's allow-list, see ``functions``), and every operator
   and the function behind it are in ``pg_catalog``; a function the user listed in
   ``allowed_functions`` (``"schema.fn"``, or ``"fn"`` in any schema) is accepted too.

Planning is avoided on purpose: the planner runs immutable functions with constant
arguments, which would fold a call away before it could be seen. Nothing here loosens the
guard: it only refuses. A tree that cannot be read, or an id the catalog does not know,
refuses the statement. Built-in objects (ids below 16384, fixed when the cluster was
created) are looked up once per manager.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from agentkernel.knowledgebase._sql import functions as lists
from agentkernel.knowledgebase._sql import pg_pipeline
from agentkernel.knowledgebase._sql.sessions import run_statements
from agentkernel.knowledgebase.errors import SQLQueryError, SQLRefusedError

logger = logging.getLogger(__name__)

_STATEMENT = "agentkernel_check"
_FIRST_USER_OID = 16384  # FirstNormalObjectId: every id below was fixed by initdb
_FUNCEXPR = re.compile(r"\{FUNCEXPR\s")
_FUNCID = re.compile(r":funcid\s+(\d+)")
_FUNCFORMAT = re.compile(r":funcformat\s+(\d+)")
_CALLED = re.compile(r":(?:aggfnoid|winfnoid)\s+(\d+)")  # aggregates, window functions
_CALLING_NODES = re.compile(r"\{(?:AGGREF|WINDOWFUNC)\s")
_OPERATORS = re.compile(r":(?:opno|eqop|sortop)\s+(\d+)")
_OPNO = re.compile(r":opno\s+\d+")
_OPERATOR_NODES = re.compile(r"\{(?:OPEXPR|DISTINCTEXPR|NULLIFEXPR|SCALARARRAYOPEXPR)\s")
_OPERATOR_LISTS = re.compile(r":opnos\s+\(o((?:\s+\d+)*)\s*\)")
_SELECT_TREE = re.compile(r"\{QUERY\s+:commandType\s+1\s")  # CMD_SELECT
_EXPLICIT_CALL = "0"
_PYFORMAT = re.compile(
    r"%%|%\((\w+)\)s"
)  # CoercionForm COERCE_EXPLICIT_CALL; casts and SQL syntax are 1, 2, 3


@dataclass
class _Calls:
    """What one parse tree calls: function ids written as calls, other function ids, operators."""

    named: set[int] = field(default_factory=set)
    implied: set[int] = field(default_factory=set)
    operators: set[int] = field(default_factory=set)


@dataclass(frozen=True)
class _Function:
    schema: str
    name: str


@dataclass(frozen=True)
class _Operator:
    schema: str
    name: str
    function: _Function | None


class PostgresResolver:
    """Checks an accepted query against what PostgreSQL resolves; one per manager."""

    def __init__(self, allowed_functions: frozenset[str]) -> None:
        """Keep the user's allowed functions and an empty cache of built-in objects.

        Args:
            allowed_functions: ``allowed_functions`` as the guard normalised them.
        """
        self.allowed = allowed_functions
        self._functions: dict[int, _Function] = {}
        self._operators: dict[int, _Operator] = {}

    def check(self, dbapi_connection: Any, query: str) -> list[Any] | None:
        """Refuse ``query`` unless everything it calls is a built-in it may call.

        Args:
            dbapi_connection: The psycopg (3 or 2) connection the query will run on, in
                the transaction it will run in.
            query: The SELECT or VALUES the guard accepted.

        Returns:
            The query's columns as DB-API description items when the driver described it
            in the same round trip (psycopg 3, ``pg_pipeline``), else ``None``.

        Raises:
            SQLRefusedError: The query calls a function or operator outside the allow-list.
            SQLQueryError: The driver cannot return the server's parse tree.
            Exception: The driver's own error when the server rejects the query.
        """
        trees, described = _parse_trees(dbapi_connection, query)
        calls = _calls(trees)
        functions, operators = self._look_up(dbapi_connection, calls)
        for oid in sorted(calls.named | calls.implied):
            function = functions.get(oid)
            if function is None:
                raise _refused(f"the statement calls a function (id {oid}) the catalog lacks")
            if not self._function_allowed(function, written=oid in calls.named):
                raise _refused(
                    f"the server resolves a call to {function.schema}.{function.name}(), which "
                    "is not a pg_catalog built-in on the allow-list (if it is safe for this "
                    f"database, pass allowed_functions=['{function.schema}.{function.name}'])"
                )
        for oid in sorted(calls.operators):
            operator = operators.get(oid)
            backing = operator.function if operator else None
            if operator is None or backing is None:
                raise _refused(f"the statement uses an operator (id {oid}) the catalog lacks")
            if operator.schema != "pg_catalog" or not self._function_allowed(
                backing, written=False
            ):
                raise _refused(
                    f"the server resolves the operator {operator.name} to "
                    f"{operator.schema}.{operator.name}, backed by "
                    f"{backing.schema}.{backing.name}(); only pg_catalog's operators are served"
                )
        return described

    def _function_allowed(self, function: _Function, *, written: bool) -> bool:
        if f"{function.schema}.{function.name}" in self.allowed or function.name in self.allowed:
            return True
        if function.schema != "pg_catalog":
            return False
        return not written or function.name in lists.BUILTIN_FUNCTIONS["postgres"]

    def _look_up(
        self, dbapi_connection: Any, calls: _Calls
    ) -> tuple[dict[int, _Function], dict[int, _Operator]]:
        """The functions and operators of ``calls``: built-ins from the cache, the rest asked."""
        functions = dict(self._functions)
        operators = dict(self._operators)
        missing_functions = (calls.named | calls.implied) - functions.keys()
        missing_operators = calls.operators - operators.keys()
        if not missing_functions and not missing_operators:
            return functions, operators
        sql = (
            "SELECT 'f', p.oid::int8, n.nspname::text, p.proname::text, NULL, NULL "
            "FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace "
            f"WHERE p.oid = ANY('{_oid_array(missing_functions)}'::pg_catalog.oid[]) UNION ALL "
            "SELECT 'o', o.oid::int8, n.nspname::text, o.oprname::text, fn.nspname::text, "
            "f.proname::text FROM pg_catalog.pg_operator o "
            "JOIN pg_catalog.pg_namespace n ON n.oid = o.oprnamespace "
            "LEFT JOIN pg_catalog.pg_proc f ON f.oid = o.oprcode "
            "LEFT JOIN pg_catalog.pg_namespace fn ON fn.oid = f.pronamespace "
            f"WHERE o.oid = ANY('{_oid_array(missing_operators)}'::pg_catalog.oid[])"
        )
        rows = run_statements(dbapi_connection, sql, fetch=True)
        for kind, oid, schema, name, backing_schema, backing_name in rows:
            if kind == "f":
                functions[int(oid)] = _Function(schema, name)
            else:
                backing = _Function(backing_schema, backing_name) if backing_name else None
                operators[int(oid)] = _Operator(schema, name, backing)
        # built-ins never change; a user's object may be dropped and its id reused
        self._functions.update((o, f) for o, f in functions.items() if o < _FIRST_USER_OID)
        self._operators.update((o, p) for o, p in operators.items() if o < _FIRST_USER_OID)
        return functions, operators


def _oid_array(oids: Iterable[int]) -> str:
    return "{" + ",".join(str(int(oid)) for oid in sorted(oids)) + "}"


def _refused(reason: str) -> SQLRefusedError:
    return SQLRefusedError(f"Refused: {reason}.")


def _calls(trees: list[str]) -> _Calls:
    """The ids a parse tree calls; a tree not read as expected refuses the statement.

    Each ``{FUNCEXPR`` is read up to its ``:args`` (scalar fields only, whatever their
    order); aggregates, window functions and operator nodes must each show their id, so a
    release that writes nodes differently is refused rather than half read.
    """
    calls = _Calls()
    for tree in trees:
        for match in _FUNCEXPR.finditer(tree):
            head = tree[match.end() : tree.find(":args", match.end())]
            oid, form = _FUNCID.search(head), _FUNCFORMAT.search(head)
            if oid is None or form is None:
                raise _refused("the server's parse tree of the statement could not be read")
            called = calls.named if form.group(1) == _EXPLICIT_CALL else calls.implied
            called.add(int(oid.group(1)))
        if len(_CALLED.findall(tree)) != len(_CALLING_NODES.findall(tree)) or len(
            _OPNO.findall(tree)
        ) != len(_OPERATOR_NODES.findall(tree)):
            raise _refused("the server's parse tree of the statement could not be read")
        calls.named.update(int(oid) for oid in _CALLED.findall(tree))
        calls.operators.update(int(oid) for oid in _OPERATORS.findall(tree) if int(oid))
        for group in _OPERATOR_LISTS.findall(tree):
            calls.operators.update(int(oid) for oid in group.split())
    return calls


def _parse_trees(dbapi_connection: Any, query: str) -> tuple[list[str], list[Any] | None]:
    """The parse trees the server sends while it analyses ``query`` (as LOG notices).

    With psycopg 3, in one round trip that describes the query's columns too
    (``pg_pipeline``); else ``PREPARE`` and ``DEALLOCATE`` in one batch, columns unknown.
    """
    trees: list[str] = []
    described: list[Any] | None = None
    batch = (
        "SET LOCAL debug_print_parse = on; SET LOCAL debug_pretty_print = off; "
        "SET LOCAL client_min_messages = log; "
        f"PREPARE {_STATEMENT} AS {query}; DEALLOCATE {_STATEMENT}; "
        "RESET client_min_messages; RESET debug_print_parse; RESET debug_pretty_print"
    )
    stop = _notice_collector(dbapi_connection, trees)
    try:
        if pg_pipeline.supported(dbapi_connection):
            described = pg_pipeline.analyse(dbapi_connection, query)
        else:
            run_statements(dbapi_connection, batch)
    finally:
        stop()
    if not any(_SELECT_TREE.search(tree) for tree in trees):
        raise _refused("the server's parse tree of the statement could not be read")
    return trees, described


def _notice_collector(dbapi_connection: Any, trees: list[str]) -> Callable[[], None]:
    """Collect the detail of ``parse tree`` notices into ``trees``; returns what stops it."""
    if hasattr(dbapi_connection, "add_notice_handler"):  # psycopg 3

        def handler(diagnostic: Any) -> None:
            if (diagnostic.message_primary or "").startswith("parse tree"):
                trees.append(diagnostic.message_detail or "")

        dbapi_connection.add_notice_handler(handler)
        return lambda: dbapi_connection.remove_notice_handler(handler)
    notices = getattr(dbapi_connection, "notices", None)
    if isinstance(notices, list):  # psycopg2 keeps the last notices as text
        start = len(notices)

        def drain() -> None:
            for text in notices[start:]:
                head, _, detail = str(text).partition("DETAIL:")
                if "parse tree" in head:
                    trees.append(detail)
            del notices[start:]

        return drain
    raise SQLQueryError(
        "This PostgreSQL driver does not return the server's notices, so the functions a "
        "statement calls cannot be checked; use psycopg (3) or psycopg2."
    )
