"""The shared half of ``OpenAIModule``, ``CrewAIModule`` and ``ADKModule``.

Each registers a framework's agents with the ``okf`` block of ``config.yaml``: it looks an
agent up by its identity, appends the agent's OKF tools (bound by the framework's
:class:`~agentkernel._tooling.bind.ToolBuilder`) to the tools it already carries, and
appends the OKF instructions where the framework keeps them. A subclass says only those
three things; planning (:func:`agentkernel.roles.attach.plan`) opens no store.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any, ClassVar

from agentkernel._tooling.bind import ToolBuilder
from agentkernel.roles.attach import ConfigSource, load_capability, plan, tool_name
from agentkernel.roles.capability import OKFCapability

__all__ = ["AgentModule"]


class AgentModule(ABC):
    """Register a framework's agents with the ``okf`` block of ``config.yaml``."""

    #: Binds the OKF tool callables into the framework's tools.
    binder: ClassVar[type[ToolBuilder[Any]]]

    def __init__(
        self, agents: Iterable[Any] = (), config: ConfigSource | OKFCapability = None
    ) -> None:
        """Load the configuration and attach OKF to each agent.

        Args:
            agents: The framework's agents; those named in no database are left untouched.
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
            agent: The agent; its identity (see the subclass) is looked up in the okf block.

        Returns:
            The same agent.
        """
        own = list(agent.tools or [])
        attachment = plan(self.capability, self._identity(agent), map(tool_name, own))
        if attachment is None:
            return agent
        agent.tools = [*own, *self.binder.bind(attachment.tools)]
        self._instruct(agent, attachment.instructions)
        return agent

    @staticmethod
    @abstractmethod
    def _identity(agent: Any) -> str:
        """The name the okf block lists the agent under."""

    @staticmethod
    @abstractmethod
    def _instruct(agent: Any, instructions: str) -> None:
        """Append the OKF instructions where the framework keeps the agent's own."""
