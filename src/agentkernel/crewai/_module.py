"""``CrewAIModule``: attach configured OKF tools and instructions to CrewAI agents.

A CrewAI agent has no ``name``; its identity is its ``role`` (the string CrewAI itself uses
to tell agents apart in a crew), so the okf block lists agents by role. The OKF tools are
appended to ``Agent.tools`` and the OKF instructions to ``Agent.backstory``, the part of
the system prompt that describes the agent. Registering opens no store.
"""

from __future__ import annotations

from agentkernel.crewai._tools import CrewAIToolBuilder
from agentkernel.roles.agents import AgentModule


class CrewAIModule(AgentModule):
    """Register CrewAI agents with the ``okf`` block of ``config.yaml``, by ``role``."""

    binder = CrewAIToolBuilder
    identity = "role"
    instructions = "backstory"
