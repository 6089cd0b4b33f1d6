"""``ADKModule``: attach configured OKF tools and instructions to Google ADK agents.

An agent's identity is its ``LlmAgent.name``. The OKF tools are appended to
``LlmAgent.tools`` and the OKF instructions to ``LlmAgent.instruction`` (an instruction
provider callable is wrapped so the text is appended to what it returns). Registering opens
no store.
"""

from __future__ import annotations

from agentkernel.adk._tools import ADKToolBuilder
from agentkernel.roles.agents import AgentModule


class ADKModule(AgentModule):
    """Register ADK agents (``LlmAgent``) with the ``okf`` block of ``config.yaml``.

    The okf block lists an agent by its ``name``; ``instruction`` (singular, as ADK spells
    it) receives the OKF instructions.
    """

    binder = ADKToolBuilder
    identity = "name"
    instructions = "instruction"
