"""Google ADK integration (the ``adk`` extra).

Importing this package imports ``google.adk``; without the extra it raises
:class:`~agentkernel.errors.MissingExtraError` naming it. The ``adk`` extra cannot share an
environment with ``crewai`` (they need different opentelemetry-sdk lines).

Example:
    >>> from google.adk.agents import LlmAgent
    >>> from agentkernel.adk import ADKToolBuilder
    >>> tools = ADKToolBuilder.bind(builder.build())  # doctest: +SKIP
    >>> agent = LlmAgent(name="router", model="gemini-2.5-flash", tools=tools)  # doctest: +SKIP
"""

from __future__ import annotations

from agentkernel.adk._module import ADKModule
from agentkernel.adk._tools import ADKToolBuilder, KnowledgeFunctionTool

__all__ = ["ADKModule", "ADKToolBuilder", "KnowledgeFunctionTool"]
