"""Bind tool callables as CrewAI ``BaseTool`` objects."""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import PrivateAttr

from agentkernel._tooling.bind import ToolBuilder, run_sync
from agentkernel._tooling.schema import args_model, call_arguments
from agentkernel._tooling.spec import ToolSpec
from agentkernel.errors import missing_extra

__all__ = ["CrewAIToolBuilder", "KnowledgeTool"]

try:
    from crewai.tools import BaseTool
except ImportError as exc:  # pragma: no cover - exercised by the missing-extra test
    raise missing_extra("crewai", "crewai", feature="agentkernel.crewai") from exc


class KnowledgeTool(BaseTool):  # type: ignore[misc]
    """A CrewAI tool that calls one plain tool callable.

    ``args_schema`` is a pydantic model of the callable's parameters (types, defaults and
    ``Args:`` descriptions), which CrewAI validates input against and shows the model.
    ``run`` calls the callable (running a coroutine function to completion); ``arun``
    awaits a coroutine function and runs a plain one in a worker thread.
    """

    _spec: ToolSpec = PrivateAttr()

    @classmethod
    def from_spec(cls, spec: ToolSpec) -> KnowledgeTool:
        """Build the tool for a described callable.

        Args:
            spec: The callable's spec.

        Returns:
            The tool.
        """
        tool = cls(
            name=spec.name,
            description=spec.description or spec.name,
            args_schema=args_model(spec),
        )
        tool._spec = spec
        return tool

    def _run(self, *args: Any, **kwargs: Any) -> Any:
        spec = self._spec
        arguments = self._arguments(args, kwargs)
        if spec.is_async:
            return run_sync(spec.func, **arguments)
        return spec.func(**arguments)

    async def _arun(self, *args: Any, **kwargs: Any) -> Any:
        spec = self._spec
        arguments = self._arguments(args, kwargs)
        if spec.is_async:
            return await spec.func(**arguments)
        return await asyncio.to_thread(spec.func, **arguments)

    def _arguments(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        """Keyword arguments for the callable; positional ones are matched in order."""
        names = [param.name for param in self._spec.parameters]
        if len(args) > len(names):
            raise TypeError(f"{self.name} takes {len(names)} arguments, got {len(args)}")
        merged = dict(zip(names, args, strict=False))
        merged.update(kwargs)
        return call_arguments(self._spec, merged)


class CrewAIToolBuilder(ToolBuilder[KnowledgeTool]):
    """Bind tool callables into CrewAI tools (:class:`KnowledgeTool`, a ``BaseTool``).

    Example:
        >>> tools = CrewAIToolBuilder.bind(KnowledgeBuilder([okf]).build())  # doctest: +SKIP
        >>> tools[0].run()  # doctest: +SKIP
    """

    framework = "CrewAI"

    @classmethod
    def _bind_one(cls, spec: ToolSpec) -> KnowledgeTool:
        return KnowledgeTool.from_spec(spec)
