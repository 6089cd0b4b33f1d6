"""Bind tool callables as LangChain ``StructuredTool`` objects (what LangGraph runs)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from agentkernel._tooling.bind import ToolBuilder, plain_function, run_sync
from agentkernel._tooling.schema import args_model, invalid_arguments_message
from agentkernel._tooling.spec import ToolSpec
from agentkernel.errors import missing_extra

__all__ = ["LangGraphToolBuilder"]

try:
    from langchain_core.tools import StructuredTool
except ImportError as exc:  # pragma: no cover - exercised by the missing-extra test
    raise missing_extra("langchain-core", "langgraph", feature="agentkernel.langgraph") from exc


class LangGraphToolBuilder(ToolBuilder[StructuredTool]):
    """Bind tool callables into ``langchain_core.tools.StructuredTool`` objects.

    Each tool gets an explicit ``args_schema`` (a pydantic model whose fields carry the
    parameter types, defaults and ``Args:`` descriptions), so nothing depends on LangChain
    parsing the docstring. A coroutine function becomes the tool's ``coroutine`` (used by
    ``ainvoke`` and by LangGraph's async runs) and is also callable synchronously; a plain
    function is run in an executor by ``ainvoke``. Arguments that fail validation come
    back to the model as a message naming the problem, not as an exception.

    Example:
        >>> tools = LangGraphToolBuilder.bind(KnowledgeBuilder([okf]).build())  # doctest: +SKIP
        >>> tools[0].invoke({})  # doctest: +SKIP
    """

    framework = "LangGraph"

    @classmethod
    def _bind_one(cls, spec: ToolSpec) -> StructuredTool:
        wrapper = plain_function(spec)
        func: Callable[..., Any]
        if spec.is_async:

            def func(**kwargs: Any) -> Any:
                return run_sync(spec.func, **kwargs)

            coroutine: Callable[..., Any] | None = wrapper
        else:
            func, coroutine = wrapper, None
        tool: StructuredTool = StructuredTool.from_function(
            func=func,
            coroutine=coroutine,
            name=spec.name,
            description=spec.description or spec.name,
            args_schema=args_model(spec),
            infer_schema=False,
            handle_validation_error=_validation_message(spec.name),
        )
        return tool


def _validation_message(name: str) -> Callable[[ValidationError], str]:
    def message(error: ValidationError) -> str:
        return invalid_arguments_message(name, error)

    return message
