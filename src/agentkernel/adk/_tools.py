"""Bind tool callables as Google ADK ``FunctionTool`` objects."""

from __future__ import annotations

from agentkernel._tooling.bind import ToolBuilder, plain_function
from agentkernel._tooling.schema import parameters_json_schema
from agentkernel._tooling.spec import ToolSpec
from agentkernel.errors import missing_extra

__all__ = ["ADKToolBuilder", "KnowledgeFunctionTool"]

try:
    from google.adk.tools.function_tool import FunctionTool
    from google.genai import types
except ImportError as exc:  # pragma: no cover - exercised by the missing-extra test
    raise missing_extra("google-adk", "adk", feature="agentkernel.adk") from exc


class KnowledgeFunctionTool(FunctionTool):  # type: ignore[misc]
    """An ADK ``FunctionTool`` whose declaration keeps the docstring's structure.

    ADK's own ``FunctionTool`` sends the whole docstring (``Args:`` section included) as the
    description and no per-parameter descriptions. This subclass declares the docstring's
    prose as the description and a JSON Schema whose properties carry the ``Args:`` texts,
    types and defaults. Invocation is ADK's: argument validation, mandatory-argument checks,
    sync and async callables alike.
    """

    def __init__(self, spec: ToolSpec) -> None:
        """Wrap one described callable.

        Args:
            spec: The callable's spec.
        """
        super().__init__(plain_function(spec))
        self.name = spec.name
        self.description = spec.description or spec.name
        self._ak_schema = parameters_json_schema(spec)

    def _get_declaration(self) -> types.FunctionDeclaration:
        return types.FunctionDeclaration(
            name=self.name,
            description=self.description,
            parameters_json_schema=self._ak_schema,
        )


class ADKToolBuilder(ToolBuilder[KnowledgeFunctionTool]):
    """Bind tool callables into Google ADK tools (:class:`KnowledgeFunctionTool`).

    Example:
        >>> tools = ADKToolBuilder.bind(KnowledgeBuilder([okf]).build())  # doctest: +SKIP
        >>> agent = LlmAgent(name="router", model=model, tools=tools)  # doctest: +SKIP
    """

    framework = "Google ADK"

    @classmethod
    def _bind_one(cls, spec: ToolSpec) -> KnowledgeFunctionTool:
        return KnowledgeFunctionTool(spec)
