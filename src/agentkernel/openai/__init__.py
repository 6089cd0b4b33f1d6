"""OpenAI Agents SDK integration (the ``openai`` extra).

Importing this package imports the ``agents`` SDK; without the extra it raises
:class:`~agentkernel.errors.MissingExtraError` naming it.

Example:
    >>> from agents import Agent
    >>> from agentkernel.openai import OpenAIToolBuilder
    >>> agent = Agent(name="kb", tools=OpenAIToolBuilder.bind(builder.build()))  # doctest: +SKIP
"""

from __future__ import annotations

from agentkernel.openai._tools import OpenAIToolBuilder

__all__ = ["OpenAIToolBuilder"]
