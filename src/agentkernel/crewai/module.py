"""``CrewAIModule``: attach configured OKF tools and instructions to CrewAI agents.

A CrewAI agent has no ``name``; its identity is its ``role`` (the string CrewAI itself uses
to tell agents apart in a crew), so the okf block lists agents by role. The OKF tools are
appended to ``Agent.tools`` and the OKF instructions to ``Agent.backstory``, the part of
the system prompt that describes the agent. Registering opens no store.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from agentkernel.crewai._tools import CrewAIToolBuilder
from agentkernel.roles.attach import ConfigSource, append_text, load_capability, plan, tool_name
from agentkernel.roles.capability import OKFCapability


class CrewAIModule:
    """Register CrewAI agents with the ``okf`` block of ``config.yaml``."""

    def __init__(
        self, agents: Iterable[Any] = (), config: ConfigSource | OKFCapability = None
    ) -> None:
        """Load the configuration and attach OKF to each agent.

        Args:
            agents: ``crewai.Agent`` objects; those whose role is named in no database are
                left untouched.
            config: An ``AKConfig``, mapping, path, ``OKFCapability``, or ``None`` for the
                default ``config.yaml``. Without an ``okf`` block nothing changes.

        Raises:
            AKConfigError: The okf block is invalid.
        """
        self.capability = load_capability(config)
        for agent in agents:
            self.register(agent)

    def register(self, agent: Any) -> Any:
        """Attach the agent's OKF tools and instructions in place.

        Args:
            agent: A ``crewai.Agent``; its ``role`` is looked up in the okf block.

        Returns:
            The same agent.
        """
        own = list(agent.tools or [])
        attachment = plan(self.capability, str(agent.role), map(tool_name, own))
        if attachment is None:
            return agent
        agent.tools = [*own, *CrewAIToolBuilder.bind(attachment.tools)]
        agent.backstory = append_text(agent.backstory, attachment.instructions)
        return agent
