"""``ADKModule``: attach configured OKF tools and instructions to Google ADK agents.

An agent's identity is its ``LlmAgent.name``. The OKF tools are appended to
``LlmAgent.tools`` and the OKF instructions to ``LlmAgent.instruction`` (an instruction
provider callable is wrapped so the text is appended to what it returns). Registering opens
no store.
"""

from __future__ import annotations

import inspect
from typing import Any

from agentkernel._tooling.attach import AgentModule
from agentkernel.adk._tools import ADKToolBuilder
from agentkernel.roles.attach import append_text


class ADKModule(AgentModule):
    """Register ADK agents (``LlmAgent``, by ``name``) with the ``okf`` block of ``config.yaml``."""

    binder = ADKToolBuilder

    @staticmethod
    def _identity(agent: Any) -> str:
        return str(agent.name)

    @staticmethod
    def _instruct(agent: Any, instructions: str) -> None:
        agent.instruction = _append(agent.instruction, instructions)


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
