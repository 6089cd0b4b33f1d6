"""``OpenAIModule``: attach configured OKF tools and instructions to OpenAI Agents SDK agents.

An agent's identity is its ``Agent.name``. Its OKF tools are appended to ``Agent.tools`` and
its OKF instructions to ``Agent.instructions`` (a callable is wrapped so the text is appended
to whatever it returns). Registering opens no store.
"""

from __future__ import annotations

from agentkernel.openai._tools import OpenAIToolBuilder
from agentkernel.roles.agents import AgentModule


class OpenAIModule(AgentModule):
    """Register OpenAI agents with the ``okf`` block of ``config.yaml``, by ``Agent.name``."""

    binder = OpenAIToolBuilder
    identity = "name"
    instructions = "instructions"
