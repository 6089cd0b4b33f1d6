"""``OpenAIModule``: attach configured OKF tools and instructions to OpenAI Agents SDK agents.

An agent's identity is its ``Agent.name``. Its OKF tools are appended to ``Agent.tools`` and
its OKF instructions to ``Agent.instructions`` (a callable is wrapped so the text is appended
to whatever it returns). Registering opens no store.
"""

from __future__ import annotations

import inspect
from typing import Any

from agentkernel._tooling.attach import AgentModule
from agentkernel.openai._tools import OpenAIToolBuilder
from agentkernel.roles.attach import append_text


class OpenAIModule(AgentModule):
    """Register OpenAI agents (by ``Agent.name``) with the ``okf`` block of ``config.yaml``."""

    binder = OpenAIToolBuilder

    @staticmethod
    def _identity(agent: Any) -> str:
        return str(agent.name)

    @staticmethod
    def _instruct(agent: Any, instructions: str) -> None:
        agent.instructions = _append(agent.instructions, instructions)


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
