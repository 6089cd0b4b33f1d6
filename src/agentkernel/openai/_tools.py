"""Bind tool callables as OpenAI Agents SDK ``FunctionTool`` objects.

This module lives in a package named ``agentkernel.openai``; the imports below are absolute,
so ``agents`` and ``openai`` always mean the installed SDKs, never this package.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from agentkernel._tooling.bind import ToolBuilder, plain_function
from agentkernel._tooling.schema import parameters_json_schema
from agentkernel._tooling.spec import ToolSpec
from agentkernel.errors import missing_extra

try:
    from agents import FunctionTool, RunContextWrapper, function_tool
except ImportError as exc:  # pragma: no cover - exercised by the missing-extra test
    raise missing_extra("openai-agents", "openai", feature="agentkernel.openai") from exc

logger = logging.getLogger(__name__)

__all__ = ["OpenAIToolBuilder"]


class OpenAIToolBuilder(ToolBuilder[FunctionTool]):
    """Bind tool callables into ``agents.FunctionTool`` objects.

    Each tool goes through the SDK's own ``function_tool``, so argument validation,
    guardrails, timeouts, tracing and failure handling are the SDK's. The description and
    the parameter schema are the ones every adapter gets (:mod:`agentkernel._tooling`): the
    SDK's own docstring parsing is switched off. The schema is not strict (a parameter with
    a default stays optional).

    Example:
        >>> tools = OpenAIToolBuilder.bind(KnowledgeBuilder([okf]).build())  # doctest: +SKIP
        >>> agent = Agent(name="Router", instructions="...", tools=tools)  # doctest: +SKIP
    """

    framework = "the OpenAI Agents SDK"

    @classmethod
    def _bind_one(cls, spec: ToolSpec) -> FunctionTool:
        tool: FunctionTool = function_tool(
            plain_function(spec),
            name_override=spec.name,
            description_override=spec.description or None,
            use_docstring_info=False,
            strict_mode=False,
            failure_error_function=_failure_message(spec),
        )
        tool.params_json_schema = parameters_json_schema(spec)
        return tool


def _failure_message(spec: ToolSpec) -> Callable[[RunContextWrapper[Any], Exception], str]:
    """The message the model gets when a call fails before or inside the tool.

    The SDK's default hides the cause ("An error occurred ..."); the model cannot correct
    its arguments from that, so this one names the error and the parameters the tool takes.
    Tool data is not echoed back unless the SDK itself put it into the error.
    """
    described = ", ".join(
        f"{p.name} ({'required' if p.required else f'default {p.default!r}'})"
        for p in spec.parameters
    )
    takes = f" It takes: {described}." if described else " It takes no arguments."

    def message(context: RunContextWrapper[Any], error: Exception) -> str:
        logger.info("tool %s failed: %s: %s", spec.name, type(error).__name__, error)
        return f"Tool {spec.name} could not run: {error}.{takes}"

    return message
