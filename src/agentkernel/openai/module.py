"""``OpenAIModule``: attach configured OKF tools and instructions to OpenAI Agents SDK agents.

An agent's identity is its ``Agent.name``. Its OKF tools are appended to ``Agent.tools`` and
its OKF instructions to ``Agent.instructions`` (a callable is wrapped so the text is appended
to whatever it returns). Registering opens no store.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from agentkernel.openai._tools import OpenAIToolBuilder
from agentkernel.roles.attach import ConfigSource, append_text, load_capability, plan, tool_name
from agentkernel.roles.capability import OKFCapability

if TYPE_CHECKING:
    from agents import Agent


class OpenAIModule:
    """Register OpenAI agents with the ``okf`` block of ``config.yaml``."""

    def __init__(
        self, agents: Iterable[Agent[Any]] = (), config: ConfigSource | OKFCapability = None
    ) -> None:
        """Load the configuration and attach OKF to each agent.

        Args:
            agents: The agents to register; those named in no database are left untouched.
            config: An ``AKConfig``, mapping, path, ``OKFCapability``, or ``None`` for the
                default ``config.yaml``. Without an ``okf`` block nothing changes.

        Raises:
            AKConfigError: The okf block is invalid.
        """
        self.capability = load_capability(config)
        for agent in agents:
            self.register(agent)

    def register(self, agent: Agent[Any]) -> Agent[Any]:
        """Attach the agent's OKF tools and instructions in place.

        Args:
            agent: The agent; its ``name`` is looked up in the okf block.

        Returns:
            The same agent.
        """
        attachment = plan(self.capability, agent.name, map(tool_name, agent.tools))
        if attachment is None:
            return agent
        agent.tools = [*agent.tools, *OpenAIToolBuilder.bind(attachment.tools)]
        agent.instructions = _append(agent.instructions, attachment.instructions)
        return agent


def _append(instructions: Any, extra: str) -> Any:
    if not callable(instructions):
        return append_text(instructions, extra)
    dynamic = instructions

    async def with_okf(context: Any, agent: Any) -> str:
        text = dynamic(context, agent)
        if inspect.isawaitable(text):
            text = await text
        return append_text(text, extra)

    return with_okf
