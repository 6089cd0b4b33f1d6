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

from typing import TYPE_CHECKING

from agentkernel import _lazy_exports
from agentkernel.openai._tools import OpenAIToolBuilder

if TYPE_CHECKING:
    from agentkernel.openai.module import OpenAIModule

# module -> the public names it defines, imported on first access
_HOMES = {"agentkernel.openai.module": ("OpenAIModule",)}

__all__ = ["OpenAIModule", "OpenAIToolBuilder"]

__getattr__, __dir__ = _lazy_exports(__name__, _HOMES)
