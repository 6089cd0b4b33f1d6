"""Tool callables as MCP tools: definitions, annotations, and calls that never raise.

Nothing here imports the ``mcp`` SDK: this module turns the plain callables of
:meth:`KnowledgeBuilder.build` into protocol-neutral definitions (name, description, JSON
input schema, annotation hints) and runs a call to a ``(text, is_error)`` pair. The SDK glue
in :mod:`agentkernel.mcp._sdk` wraps those into the SDK's types.

Annotation policy (hints only; MCP clients must not trust them for safety):

- every reading tool (``get_schemas``, ``get_all_kb_descriptions``, ``read_kb``,
  ``search_kb``, ``fetch_kb``, ``browse_kb``) is ``readOnlyHint: true``;
- ``write_kb`` is ``readOnlyHint: false`` and ``idempotentHint: false`` (writing a note twice
  stores it twice in every shipped backend). It is ``destructiveHint: true`` exactly when some
  writable backend declares ``query``: a write statement (Cypher, SQL) may update or delete;
  text writes only add records (an OKF bundle authors a new document under a fresh name);
- every tool is ``openWorldHint: false``: it reaches only the configured knowledge bases.

Without a builder (a bare list of callables) the same names get the same hints, except that
``write_kb`` is assumed destructive; other callables get no annotations.
"""

from __future__ import annotations

import inspect
import json
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from agentkernel._toolmodel import args_model, call_arguments
from agentkernel._toolspec import ToolSpec, parameters_json_schema, tool_spec
from agentkernel.errors import ECHO_LIMIT, echo
from agentkernel.knowledgebase.knowledgebuilder import KnowledgeBuilder

logger = logging.getLogger(__name__)

__all__ = [
    "ToolDefinition",
    "argument_problem",
    "call_tool",
    "define_tools",
    "invalid_arguments_message",
    "is_error_text",
]

#: The builder's reading tools, with the title MCP clients may show.
READING_TOOLS: dict[str, str] = {
    "get_schemas": "Describe knowledge bases",
    "get_all_kb_descriptions": "List knowledge bases",
    "read_kb": "Read knowledge",
    "search_kb": "Search knowledge",
    "fetch_kb": "Fetch records",
    "browse_kb": "Browse a namespace",
}
WRITE_TOOL = "write_kb"
_WRITE_TITLE = "Write knowledge"

# The refusals and failures the builder's tools return as text (see knowledgebuilder.py).
# Anchored at the start of the output, where a result listing starts with "- " or "No results."
_ERROR_STARTS = re.compile(
    r"^(?:"
    r"Unknown backend ['\"]"
    r"|Error from backend '"
    r"|Error formatting results from '"
    r"|Backend '[^'\n]*' (?:is read-only\.|does not support )"
    r"|(?:backend|query|ids|text|source|path|limit|params_json) must "
    r"|Nothing to write:"
    r"|params_json is not valid JSON"
    r"|Give at least one id"
    r")"
)
# A capability refusal carries the backend's own detail first, then this fixed tail.
_CAPABILITY_TAIL = re.compile(r" Backends that support \w+: \[[^\]\n]*\]\Z")


@dataclass(frozen=True)
class ToolDefinition:
    """One tool as an MCP server lists it.

    Attributes:
        name: The tool name (the callable's ``__name__``).
        description: The docstring's prose, followed by its ``Returns:`` text.
        input_schema: JSON Schema of the arguments: types, defaults, per-parameter
            descriptions, ``required``, no additional properties.
        annotations: MCP tool annotations in wire form (``readOnlyHint``, ...); empty when
            nothing is known about the callable.
        spec: The introspected callable.
        builder_tool: Whether the tool is one of the builder's, whose refusals are
            recognised as errors.
        arguments_model: Validates the arguments a client sends.
    """

    name: str
    description: str
    input_schema: dict[str, Any]
    annotations: dict[str, Any]
    spec: ToolSpec
    builder_tool: bool
    arguments_model: type[BaseModel] = field(repr=False, compare=False)


def define_tools(
    tools: Sequence[Callable[..., Any]], builder: KnowledgeBuilder | None = None
) -> list[ToolDefinition]:
    """Describe tool callables for an MCP server.

    Args:
        tools: The callables, for example ``builder.build()``.
        builder: The builder they came from, whose capability declarations decide the
            ``write_kb`` hints; ``None`` for callables of unknown origin.

    Returns:
        One definition per callable, in order.

    Raises:
        TypeError: A callable cannot be described as a tool (see
            :func:`agentkernel._toolspec.tool_spec`).
        ValueError: Two callables share a name; an MCP server lists each name once.
    """
    definitions: list[ToolDefinition] = []
    seen: set[str] = set()
    for position, func in enumerate(tools):
        try:
            spec = tool_spec(func)
        except TypeError as exc:
            raise TypeError(f"Tool at position {position} cannot be served: {exc}") from exc
        if spec.name in seen:
            raise ValueError(f"Two tools are named {spec.name!r}; MCP tool names must be unique.")
        seen.add(spec.name)
        description = spec.description
        if spec.returns_description:
            description = f"{description}\n\nReturns: {spec.returns_description}".strip()
        definitions.append(
            ToolDefinition(
                name=spec.name,
                description=description,
                input_schema=parameters_json_schema(spec),
                annotations=_annotations(spec.name, builder),
                spec=spec,
                builder_tool=spec.name in READING_TOOLS or spec.name == WRITE_TOOL,
                arguments_model=args_model(spec),
            )
        )
    return definitions


def _annotations(name: str, builder: KnowledgeBuilder | None) -> dict[str, Any]:
    if name in READING_TOOLS:
        return {"title": READING_TOOLS[name], "readOnlyHint": True, "openWorldHint": False}
    if name == WRITE_TOOL:
        destructive = builder is None or any(
            kb.capabilities.writable and kb.capabilities.query for kb in builder.backends.values()
        )
        return {
            "title": _WRITE_TITLE,
            "readOnlyHint": False,
            "destructiveHint": destructive,
            "idempotentHint": False,
            "openWorldHint": False,
        }
    return {}


def is_error_text(text: str) -> bool:
    """Tell whether a builder tool's output is a refusal or a failure rather than a result.

    The builder's tools never raise: an unknown backend, an undeclared capability, bad
    arguments and backend exceptions all come back as text. These are the forms they take.

    Args:
        text: The tool's output.

    Returns:
        Whether the text is one of the builder's error messages.
    """
    return bool(_ERROR_STARTS.match(text) or _CAPABILITY_TAIL.search(text))


async def call_tool(
    definition: ToolDefinition,
    arguments: Mapping[str, Any] | None,
    run_sync: Callable[[Callable[[], Any]], Any],
) -> tuple[str, bool]:
    """Validate arguments, run a tool and render its output; never raises for tool failures.

    Args:
        definition: The tool.
        arguments: The arguments the client sent.
        run_sync: Awaitable runner for a blocking call (a worker thread in the server).

    Returns:
        ``(text, is_error)``: the output, and whether it reports a failure (invalid
        arguments, an exception from the tool, or one of the builder's error messages).
    """
    name = definition.name
    try:
        values = definition.arguments_model.model_validate(dict(arguments or {}))
    except ValidationError as exc:
        return invalid_arguments_message(name, exc), True
    kwargs = call_arguments(definition.spec, values)
    func = definition.spec.func
    try:
        if definition.spec.is_async:
            result = await func(**kwargs)
        else:
            result = await run_sync(lambda: func(**kwargs))
            if inspect.isawaitable(result):
                result = await result
    except Exception as exc:
        logger.warning("MCP tool %s raised", name, exc_info=True)
        return f"Tool {name} failed: {type(exc).__name__}: {exc}", True
    text = _render(result)
    return text, definition.builder_tool and is_error_text(text)


def argument_problem(definition: ToolDefinition, arguments: Mapping[str, Any] | None) -> str | None:
    """Check a client's arguments against a tool's parameters, as every served tool is checked.

    Args:
        definition: The tool.
        arguments: The arguments the client sent.

    Returns:
        ``"Invalid arguments for <tool>: <what is wrong>"``, or ``None`` when they are valid.
    """
    try:
        definition.arguments_model.model_validate(dict(arguments or {}))
    except ValidationError as exc:
        return invalid_arguments_message(definition.name, exc)
    return None


def invalid_arguments_message(name: str, exc: ValidationError) -> str:
    """Word a validation failure for the model: which argument, and what is wrong with it.

    Args:
        name: The tool name.
        exc: The failure.

    Returns:
        For example ``Invalid arguments for read_kb: query is required``.
    """
    return f"Invalid arguments for {name}: {_validation_summary(exc)}"


def _render(result: Any) -> str:
    if isinstance(result, str):
        return result
    if result is None:
        return ""
    try:
        return json.dumps(result, indent=2, default=str, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(result)


def _validation_summary(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(part) for part in error.get("loc", ())) or "arguments"
        if len(where) > ECHO_LIMIT:  # a client's own key names: quoted cut, like any input
            where = echo(where)
        kind = error.get("type", "")
        if kind == "missing":
            parts.append(f"{where} is required")
        elif kind == "extra_forbidden":
            parts.append(f"{where} is not a parameter of this tool")
        else:
            parts.append(f"{where}: {error.get('msg', 'invalid')}")
    return "; ".join(parts)
