"""Tool callables as MCP tools: definitions, annotations, and calls that never raise.

Nothing here imports the ``mcp`` SDK: this module turns plain tool callables (a
``KnowledgeBuilder``'s or a knowledge store's) into protocol-neutral definitions (name,
title, description, JSON input schema, annotation hints) and runs a call to a
``(text, is_error)`` pair. The schema advertised and the model the arguments are checked
against are one (:mod:`agentkernel._tooling.schema`); ``is_error`` is the flag the tool's
:class:`~agentkernel._tooling.result.ToolResult` carries, never read from its wording.
:mod:`agentkernel.mcp._sdk` wraps the pairs into the SDK's types.

Annotation policy (hints only; MCP clients must not trust them for safety). What a tool may
do is stated once, where it is made (``make_tool(read_only=..., destructive=...)``), and
``readOnlyHint`` and ``destructiveHint`` are read from the tool itself
(:func:`~agentkernel._tooling.factory.tool_effects`), so a builder's tools served as a bare
list get the same hints as through the builder:

- every reading tool of the builder (``get_schemas``, ``get_all_kb_descriptions``,
  ``read_kb``, ``search_kb``, ``fetch_kb``, ``browse_kb``) is ``readOnlyHint: true``;
- ``write_kb`` is ``readOnlyHint: false`` and ``idempotentHint: false`` (writing a note twice
  stores it twice in every shipped backend). The builder makes it destructive exactly when
  some writable backend declares ``query``: a write statement (Cypher, SQL) may update or
  delete; text writes only add records (an OKF bundle authors a new document under a fresh
  name);
- a store's reading tools (``knowledge_index``, ``knowledge_search``, ``knowledge_read``,
  ``knowledge_check``) are read-only and idempotent; the ones that replace or mark what a page
  says (edit, rewrite, supersede, retire) are made destructive; create and log only add;
- every tool is ``openWorldHint: false``: it reaches only the configured knowledge.

Callables the tool factory did not make get no annotations.
"""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from agentkernel._tooling.factory import tool_effects
from agentkernel._tooling.result import ToolResult, is_error
from agentkernel._tooling.schema import args_model, parameters_json_schema, validate_arguments
from agentkernel._tooling.spec import ToolSpec, tool_spec

logger = logging.getLogger(__name__)

__all__ = [
    "Annotate",
    "ToolDefinition",
    "call_tool",
    "check_arguments",
    "define_tools",
    "tool_annotations",
]

#: The title MCP clients may show for each tool, the builder's and a store's.
TITLES: dict[str, str] = {
    "get_schemas": "Describe knowledge bases",
    "get_all_kb_descriptions": "List knowledge bases",
    "read_kb": "Read knowledge",
    "search_kb": "Search knowledge",
    "fetch_kb": "Fetch records",
    "browse_kb": "Browse a namespace",
    "write_kb": "Write knowledge",
    "run_computation": "Run an attested computation",
    "knowledge_index": "Show the catalog",
    "knowledge_search": "Search pages",
    "knowledge_read": "Read a page",
    "knowledge_create": "Create pages",
    "knowledge_edit": "Edit part of a page",
    "knowledge_rewrite": "Rewrite a page",
    "knowledge_supersede": "Supersede a page",
    "knowledge_retire": "Retire a page (asks the person)",
    "knowledge_log": "Log an operation",
    "knowledge_check": "Check the links",
}

#: Gives the wire-named annotation hints of a tool callable (empty for none).
Annotate = Callable[[Callable[..., Any]], dict[str, Any]]


@dataclass(frozen=True)
class ToolDefinition:
    """One tool as an MCP server lists it.

    Attributes:
        name: The tool name (the callable's ``__name__``).
        description: The docstring's prose, followed by its ``Returns:`` text.
        input_schema: JSON Schema of the arguments: types, defaults, per-parameter
            descriptions, ``required``, no additional properties.
        annotations: MCP tool annotations in wire form (``title``, ``readOnlyHint``, ...);
            empty when nothing is known about the callable.
        spec: The introspected callable.
        arguments_model: Validates the arguments a client sends (``input_schema`` is its
            JSON Schema).
    """

    name: str
    description: str
    input_schema: dict[str, Any]
    annotations: dict[str, Any]
    spec: ToolSpec
    arguments_model: type[BaseModel] = field(repr=False, compare=False)

    @property
    def title(self) -> str | None:
        """The title clients may show, when the tool has one."""
        title = self.annotations.get("title")
        return title if isinstance(title, str) else None


def define_tools(tools: Sequence[Callable[..., Any]], annotate: Annotate) -> list[ToolDefinition]:
    """Describe tool callables for an MCP server.

    Args:
        tools: The callables, for example ``builder.build()``.
        annotate: The hints of each tool (:func:`tool_annotations`).

    Returns:
        One definition per callable, in order.

    Raises:
        TypeError: A callable cannot be described as a tool (see
            :func:`agentkernel._tooling.spec.tool_spec`).
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
                annotations=annotate(func),
                spec=spec,
                arguments_model=args_model(spec),
            )
        )
    return definitions


def tool_annotations(tool: Callable[..., Any]) -> dict[str, Any]:
    """The hints of a tool, as the tool factory made it.

    A tool that only reads is idempotent as well, and never destructive.

    Args:
        tool: The tool callable.

    Returns:
        The wire-named hints; empty for a callable the factory did not make, or one with no
        title here.
    """
    name, effects = tool.__name__, tool_effects(tool)
    if effects is None or name not in TITLES:
        return {}
    return {
        "title": TITLES[name],
        "readOnlyHint": effects.read_only,
        "destructiveHint": effects.destructive,
        "idempotentHint": effects.read_only,
        "openWorldHint": False,
    }


def check_arguments(definition: ToolDefinition, arguments: Mapping[str, Any] | None) -> str | None:
    """Check a client's arguments against a tool's parameters.

    Args:
        definition: The tool.
        arguments: The arguments the client sent.

    Returns:
        ``"Invalid arguments for <tool>: <what is wrong>"``, or ``None`` when they are valid.
    """
    checked = validate_arguments(definition.spec, definition.arguments_model, arguments)
    return checked if isinstance(checked, str) else None


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
        ``(text, is_error)``: the output (the tool's own
        :class:`~agentkernel._tooling.result.ToolResult` when it made one), and whether it
        reports a failure (invalid arguments, an exception from the tool, or a result the tool
        flagged as an error).
    """
    name = definition.name
    kwargs = validate_arguments(definition.spec, definition.arguments_model, arguments)
    if isinstance(kwargs, str):
        return kwargs, True
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
    return _render(result), is_error(result)


def _render(result: Any) -> str:
    if isinstance(result, ToolResult):
        return result  # the text, still carrying what code reads (a cut note, records)
    if isinstance(result, str):
        return str(result)
    if result is None:
        return ""
    try:
        return json.dumps(result, indent=2, default=str, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(result)
