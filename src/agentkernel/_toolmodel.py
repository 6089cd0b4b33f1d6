"""A tool's parameters as a pydantic model, for frameworks that take an ``args_schema``.

LangChain's ``StructuredTool`` and CrewAI's ``BaseTool`` validate a tool's input with a
pydantic model and show the model its JSON Schema. :func:`args_model` builds that model from
a :class:`~agentkernel._toolspec.ToolSpec`, so every field carries the parameter's type,
default (or required-ness) and ``Args:`` description. pydantic is a core dependency.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from agentkernel._toolspec import ToolSpec

__all__ = ["args_model", "call_arguments"]


def args_model(spec: ToolSpec) -> type[BaseModel]:
    """Build the pydantic model of a tool's parameters.

    Unknown arguments are rejected (``extra="forbid"``); an annotation that could not be
    resolved (kept as a string by the introspection) accepts any value.

    Args:
        spec: The tool's spec.

    Returns:
        A model class named ``<tool name>_args`` with one field per parameter, in
        signature order.
    """
    fields: dict[str, Any] = {}
    for param in spec.parameters:
        annotation = Any if isinstance(param.annotation, str) else param.annotation
        description = param.description or None
        if param.required:
            fields[param.name] = (annotation, Field(..., description=description))
        else:
            fields[param.name] = (annotation, Field(param.default, description=description))
    model: type[BaseModel] = create_model(  # type: ignore[call-overload]
        f"{spec.name}_args",
        __config__=ConfigDict(extra="forbid", arbitrary_types_allowed=True),
        __doc__=spec.summary or None,
        **fields,
    )
    return model


def call_arguments(spec: ToolSpec, values: BaseModel | dict[str, Any]) -> dict[str, Any]:
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
