"""OpenAI Agents SDK integration (the ``openai`` extra).

Importing this package imports the ``agents`` SDK; without the extra it raises
:class:`~agentkernel.errors.MissingExtraError` naming it. ``OpenAIModule`` (configuration-
driven OKF) is loaded on first access.

Example:
    >>> from agents import Agent
    >>> from agentkernel.openai import OpenAIModule, OpenAIToolBuilder
    >>> agent = Agent(name="kb", tools=OpenAIToolBuilder.bind(builder.build()))  # doctest: +SKIP
    >>> OpenAIModule([Agent(name="Support_Agent")])  # okf block of config.yaml  # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentkernel.openai._tools import OpenAIToolBuilder

if TYPE_CHECKING:
    from agentkernel.openai.module import OpenAIModule

__all__ = ["OpenAIModule", "OpenAIToolBuilder"]


def __getattr__(name: str) -> Any:
    if name == "OpenAIModule":
        from agentkernel.openai.module import OpenAIModule

        return OpenAIModule
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
