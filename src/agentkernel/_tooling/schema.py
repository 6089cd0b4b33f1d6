"""A tool's parameters as one pydantic model: what every adapter advertises and validates.

:func:`args_model` builds the model from a :class:`~agentkernel._tooling.spec.ToolSpec`, so
every field carries the parameter's type, default (or required-ness) and ``Args:``
description. It is the one schema source: LangChain and CrewAI take it as ``args_schema``;
:func:`parameters_json_schema` is its JSON Schema, which the OpenAI and ADK adapters and
both MCP servers advertise; and :func:`validate_arguments` checks a client's arguments
against it, worded by :func:`invalid_arguments_message`. pydantic is a core dependency.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model
from pydantic.json_schema import GenerateJsonSchema
from pydantic_core import CoreSchema

from agentkernel._tooling.spec import ToolSpec
from agentkernel.errors import ECHO_LIMIT, echo

__all__ = [
    "args_model",
    "call_arguments",
    "invalid_arguments_message",
    "parameters_json_schema",
    "validate_arguments",
]


class _ToolJsonSchema(GenerateJsonSchema):
    """pydantic's generator, minus what a tool schema does not need.

    Property titles only repeat the parameter names; a type pydantic cannot describe (an
    arbitrary class) accepts any value, as the model does; a default that is not JSON is
    left out rather than mangled.
    """

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def handle_invalid_for_json_schema(self, schema: CoreSchema, error_info: str) -> Any:
        return {}

    def emit_warning(self, kind: Any, detail: str) -> None:
        if kind != "non-serializable-default":
            super().emit_warning(kind, detail)


def args_model(spec: ToolSpec) -> type[BaseModel]:
    """Build the pydantic model of a tool's parameters.

    Unknown arguments are rejected (``extra="forbid"``); an annotation that could not be
    resolved (kept as a string by the introspection) accepts any value. A parameter the
    ``Args:`` section does not describe takes the first string of its ``Annotated[...]`` type.

    Args:
        spec: The tool's spec.

    Returns:
        A model class named ``<tool name>_args`` with one field per parameter, in
        signature order.
    """
    fields: dict[str, Any] = {}
    for param in spec.parameters:
        annotation = Any if isinstance(param.annotation, str) else param.annotation
        description = param.description or _annotated_note(annotation)
        default = ... if param.required else param.default
        fields[param.name] = (annotation, Field(default, description=description))
    model: type[BaseModel] = create_model(  # type: ignore[call-overload]
        f"{spec.name}_args",
        __config__=ConfigDict(extra="forbid", arbitrary_types_allowed=True),
        **fields,
    )
    return model


def _annotated_note(annotation: Any) -> str | None:
    """The first string of an ``Annotated[...]`` type: its description when ``Args:`` has none."""
    if typing.get_origin(annotation) is not typing.Annotated:
        return None
    return next((note for note in typing.get_args(annotation)[1:] if isinstance(note, str)), None)


def parameters_json_schema(spec: ToolSpec) -> dict[str, Any]:
    """The JSON Schema of a tool's parameters: :func:`args_model`'s, as one object.

    Each property carries its type schema, a ``description`` from the ``Args:`` section
    (when there is one) and its ``default`` (when the default is JSON-serializable);
    ``required`` lists the parameters without defaults, in signature order, and no other
    properties are allowed. Nested types (typed dicts, models, enums) are ``$defs``.

    Args:
        spec: The tool's spec, from :func:`~agentkernel._tooling.spec.tool_spec`.

    Returns:
        ``{"type": "object", "properties": {...}, "required": [...],
        "additionalProperties": False}``.
    """
    schema = args_model(spec).model_json_schema(schema_generator=_ToolJsonSchema)
    schema.pop("title", None)
    schema.setdefault("properties", {})
    schema.setdefault("required", [])
    return schema


def validate_arguments(
    spec: ToolSpec, model: type[BaseModel], arguments: Mapping[str, Any] | None
) -> dict[str, Any] | str:
    """Check a caller's arguments against the tool's model.

    Args:
        spec: The tool's spec.
        model: Its :func:`args_model`, built once per tool.
        arguments: The arguments as a client or framework sent them.

    Returns:
        The keyword arguments to call the tool with, or the message saying what is wrong
        (see :func:`invalid_arguments_message`).
    """
    try:
        values = model.model_validate(dict(arguments or {}))
    except ValidationError as exc:
        return invalid_arguments_message(spec.name, exc)
    return call_arguments(spec, values)


def call_arguments(spec: ToolSpec, values: BaseModel | Mapping[str, Any]) -> dict[str, Any]:
    """The keyword arguments to call a tool's callable with.

    Args:
        spec: The tool's spec.
        values: Validated input, as a model instance or a mapping.

    Returns:
        The parameters the callable takes, by name; anything else is dropped.
    """
    data = dict(values)  # a model iterates as (field, value) pairs
    names = {param.name for param in spec.parameters}
    return {key: value for key, value in data.items() if key in names}


def invalid_arguments_message(name: str, exc: ValidationError) -> str:
    """Word a validation failure for the model: which argument, and what is wrong with it.

    Args:
        name: The tool name.
        exc: The failure.

    Returns:
        For example ``Invalid arguments for read_kb: query is required``.
    """
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
    return f"Invalid arguments for {name}: {'; '.join(parts)}"
