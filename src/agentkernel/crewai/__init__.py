"""CrewAI integration (the ``crewai`` extra).

Importing this package imports ``crewai``; without the extra it raises
:class:`~agentkernel.errors.MissingExtraError` naming it. The ``crewai`` extra cannot share an
environment with the ``openai`` extra (crewai pins ``openai<3``), nor with ``adk``.

Example:
    >>> from crewai import Agent
    >>> from agentkernel.crewai import CrewAIToolBuilder
    >>> tools = CrewAIToolBuilder.bind(builder.build())  # doctest: +SKIP
    >>> agent = Agent(role="Router", goal="...", backstory="...", tools=tools)  # doctest: +SKIP
"""

from __future__ import annotations

from agentkernel.crewai._module import CrewAIModule
from agentkernel.crewai._tools import CrewAIToolBuilder, KnowledgeTool

__all__ = ["CrewAIModule", "CrewAIToolBuilder", "KnowledgeTool"]
