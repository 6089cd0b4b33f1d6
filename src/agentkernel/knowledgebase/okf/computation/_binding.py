"""Binding an agent's values to a computation: values only, typed, never spliced into text.

The agent supplies a mapping of parameter names to values. Every name must be declared, every
required parameter given, and every value of its declared type (OKF 0.2, section 10.3):

=============  =====================================================================
``integer``    a whole number (JSON ``2024``; ``true`` or ``"2024"`` is refused)
``number``     an integer or a finite decimal number
``string``     text
``boolean``    ``true`` or ``false``
``date``       ``YYYY-MM-DD``
``timestamp``  ISO 8601 with an explicit offset (``2024-06-30T00:00:00Z``)
=============  =====================================================================

An optional parameter left out is bound as SQL ``NULL``. The computation names its parameters
as ``:name`` placeholders; each must be a declared parameter. The statement text sent to the
database is the computation exactly as written, and the values travel beside it as the
driver's bind parameters, so no value can change what the statement says. A driver that binds
by position (Trino's ``qmark`` style) gets the same text with each ``:name`` written as ``?``
(:func:`positional`) and the values in that order.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from agentkernel.bundle.timestamps import parse_timestamp
from agentkernel.errors import AKError, echo
from agentkernel.knowledgebase.okf.computation.contract import Contract, ContractError

_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


class BindingError(AKError, ValueError):
    """The values given cannot be bound: an unknown name, a missing or mistyped value."""


@dataclass(frozen=True)
class Binding:
    """A computation bound to values.

    Attributes:
        statement: The statement text, exactly the computation's.
        values: The typed values the driver binds, by name (``None`` for SQL ``NULL``).
        shown: The same values as JSON (dates and timestamps as ISO 8601 text).
    """

    statement: str
    values: Mapping[str, Any]
    shown: Mapping[str, Any]
    order: tuple[str, ...] = ()

    def for_driver(self, backend: str) -> dict[str, Any] | list[Any]:
        """The values as the ``backend``'s driver takes them.

        SQLite has no date or timestamp type: it compares their ISO 8601 text.

        Args:
            backend: The SQLAlchemy backend name (``sqlite``, ``duckdb``, ``postgresql``...),
                or ``trino``.

        Returns:
            Name to value; for a positional binding, the values in placeholder order.
        """
        if self.order:
            return [self.values[name] for name in self.order]
        if backend != "sqlite":
            return dict(self.values)
        return {
            name: value.isoformat() if isinstance(value, date | datetime) else value
            for name, value in self.values.items()
        }


def bind(contract: Contract, given: Any, dialect: str | None) -> Binding:
    """Check the agent's values against the contract and bind them.

    Args:
        contract: The computation's contract, as it stands now.
        given: The values, a mapping of parameter names to JSON values.
        dialect: The ``sqlglot`` dialect the computation is read in, to find its placeholders.

    Returns:
        The binding.

    Raises:
        BindingError: ``given`` is not a mapping, names an undeclared parameter, leaves out a
            required one, or gives a value of the wrong type.
        ContractError: The computation uses a placeholder it does not declare.
    """
    if not isinstance(given, Mapping):
        raise BindingError(
            "parameters must be a JSON object of names to values, e.g. " + _example(contract)
        )
    declared = ", ".join(p.describe() for p in contract.parameters) or "none"
    unknown = [name for name in given if contract.parameter(str(name)) is None]
    if unknown:
        names = ", ".join(echo(str(n)) for n in unknown)
        raise BindingError(
            f"{contract.concept_id} has no parameter {names}; it declares: {declared}. "
            "Only values for declared parameters can be given."
        )
    missing = [p.name for p in contract.parameters if p.required and given.get(p.name) is None]
    if missing:
        raise BindingError(
            f"{contract.concept_id} needs a value for {', '.join(missing)}; "
            f"it declares: {declared}."
        )
    values: dict[str, Any] = {}
    shown: dict[str, Any] = {}
    for parameter in contract.parameters:
        value = given.get(parameter.name)
        if value is None:
            values[parameter.name] = shown[parameter.name] = None
            continue
        typed = _typed(parameter.type, value)
        if typed is _WRONG:
            raise BindingError(
                f"parameter {parameter.name!r} of {contract.concept_id} is of type "
                f"{parameter.type}; "
                f"{echo(value)} is not ({_EXPECTED[parameter.type]}). Nothing was run."
            )
        values[parameter.name] = typed
        shown[parameter.name] = typed.isoformat() if isinstance(typed, date | datetime) else typed
    holes = _placeholder_nodes(contract.computation, dialect)
    if "" in holes:
        raise ContractError(_ANONYMOUS)
    undeclared = sorted(set(holes) - set(values))
    if undeclared:
        raise ContractError(
            f"the computation of {contract.concept_id} uses placeholder(s) "
            f"{', '.join(':' + n for n in undeclared)} that 'parameters' does not declare"
        )
    return Binding(contract.computation, values, shown)


def positional(binding: Binding, dialect: str | None) -> Binding:
    """The binding for a driver that binds by position: each ``:name`` written as ``?``.

    The statement's text is kept byte for byte except the placeholders, found by the
    dialect's tokenizer (a ``:name`` inside a string is text, not a placeholder); ``order``
    names the value of each ``?`` in turn, so a parameter used twice is sent twice.

    Args:
        binding: The binding by name (from :func:`bind`).
        dialect: The ``sqlglot`` dialect (``trino``).

    Returns:
        The positional binding.

    Raises:
        ContractError: The computation already holds a ``?`` (a value no parameter names),
            or cannot be read in the dialect.
    """
    import sqlglot
    from sqlglot.errors import SqlglotError
    from sqlglot.tokens import TokenType  # type: ignore[attr-defined]

    text = binding.statement
    try:
        tokens = list(sqlglot.Dialect.get_or_raise(dialect).tokenize(text))
    except SqlglotError as exc:
        raise ContractError(f"the computation cannot be read as SQL: {exc}") from exc
    if any(token.token_type == TokenType.PLACEHOLDER for token in tokens):
        raise ContractError(_ANONYMOUS)
    pieces: list[str] = []
    order: list[str] = []
    position = 0
    for colon, name in itertools.pairwise(tokens):
        adjacent = colon.end + 1 == name.start
        if colon.token_type == TokenType.COLON and adjacent and name.text in binding.values:
            pieces += [text[position : colon.start], "?"]
            order.append(name.text)
            position = name.end + 1
    pieces.append(text[position:])
    expected = len([n for n in _placeholder_nodes(text, dialect) if n])
    if len(order) != expected:  # the tokenizer and the parser must agree on every hole
        raise ContractError(
            f"the computation's placeholders cannot be rewritten for positional binding "
            f"(found {len(order)} of {expected})"
        )
    return Binding("".join(pieces), binding.values, binding.shown, tuple(order))


def placeholders(statement: str, dialect: str | None) -> set[str]:
    """The ``:name`` placeholders a statement uses (names in strings and comments are not).

    Args:
        statement: The SQL text.
        dialect: The ``sqlglot`` dialect.

    Returns:
        Their names.

    Raises:
        ContractError: The statement cannot be parsed.
    """
    return {name for name in _placeholder_nodes(statement, dialect) if name}


def _placeholder_nodes(statement: str, dialect: str | None) -> list[str]:
    """The name of every placeholder the parser finds, in tree order (``""`` for ``?``)."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    try:
        tree = sqlglot.parse_one(statement, read=dialect)
    except SqlglotError as exc:
        raise ContractError(f"the computation cannot be parsed as SQL: {exc}") from exc
    names = [str(node.name or "") for node in tree.find_all(exp.Placeholder)]
    return ["" if name == "?" else name for name in names]


_ANONYMOUS = (
    "the computation holds a '?' placeholder, a value no parameter names; name every "
    "parameter as :name"
)
_WRONG = object()
_EXPECTED = {
    "integer": "a whole number such as 2024",
    "number": "a number such as 12.5",
    "string": "text in quotes",
    "boolean": "true or false",
    "date": "YYYY-MM-DD",
    "timestamp": "ISO 8601 with an offset, such as 2024-06-30T00:00:00Z",
}


def _typed(kind: str, value: Any) -> Any:
    if kind == "integer":
        return value if isinstance(value, int) and not isinstance(value, bool) else _WRONG
    if kind == "number":
        if isinstance(value, bool) or not isinstance(value, int | float):
            return _WRONG
        return value if math.isfinite(value) else _WRONG
    if kind == "string":
        return value if isinstance(value, str) else _WRONG
    if kind == "boolean":
        return value if isinstance(value, bool) else _WRONG
    if kind == "date":
        if not isinstance(value, str) or not _DATE.fullmatch(value):
            return _WRONG
        try:
            return date.fromisoformat(value)
        except ValueError:
            return _WRONG
    instant = parse_timestamp(value) if isinstance(value, str) else None
    return instant if instant is not None else _WRONG


def _example(contract: Contract) -> str:
    samples = {
        "integer": "2024",
        "number": "12.5",
        "string": '"text"',
        "boolean": "true",
        "date": '"2024-01-31"',
        "timestamp": '"2024-01-31T00:00:00Z"',
    }
    inner = ", ".join(f'"{p.name}": {samples[p.type]}' for p in contract.parameters)
    return "{" + inner + "}"
