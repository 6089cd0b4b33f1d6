"""``ADKModule``: attach configured OKF tools and instructions to Google ADK agents.

An agent's identity is its ``LlmAgent.name``. The OKF tools are appended to
``LlmAgent.tools`` and the OKF instructions to ``LlmAgent.instruction`` (an instruction
provider callable is wrapped so the text is appended to what it returns). Registering opens
no store.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from typing import Any

from agentkernel.adk._tools import ADKToolBuilder
from agentkernel.roles.attach import ConfigSource, append_text, load_capability, plan, tool_name
from agentkernel.roles.capability import OKFCapability


class ADKModule:
    """Register ADK agents with the ``okf`` block of ``config.yaml``."""

    def __init__(
        self, agents: Iterable[Any] = (), config: ConfigSource | OKFCapability = None
    ) -> None:
        """Load the configuration and attach OKF to each agent.

        Args:
            agents: ``google.adk.agents.LlmAgent`` objects; those named in no database are
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
            agent: An ``LlmAgent``; its ``name`` is looked up in the okf block.

        Returns:
            The same agent.
        """
        own = list(agent.tools or [])
        attachment = plan(self.capability, str(agent.name), map(tool_name, own))
        if attachment is None:
            return agent
        agent.tools = [*own, *ADKToolBuilder.bind(attachment.tools)]
        agent.instruction = _append(agent.instruction, attachment.instructions)
        return agent


def _append(instruction: Any, extra: str) -> Any:
    if not callable(instruction):
        return append_text(instruction, extra)
    provider = instruction

    async def with_okf(context: Any) -> str:
        text = provider(context)
        if inspect.isawaitable(text):
            text = await text
        return append_text(text, extra)

    return with_okf
