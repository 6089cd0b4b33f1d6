"""The shared half of ``OpenAIModule``, ``CrewAIModule`` and ``ADKModule``.

Each registers a framework's agents with the ``okf`` block of ``config.yaml``: it looks an
agent up by its identity, appends the agent's OKF tools (bound by the framework's
:class:`~agentkernel._tooling.bind.ToolBuilder`) to the tools it already carries, and
appends the OKF instructions where the framework keeps them. A subclass names only those
three places; planning (:func:`agentkernel.roles.attach.plan`) opens no store.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from typing import Any, ClassVar, cast

from agentkernel._tooling.bind import ToolBuilder
from agentkernel.roles.attach import ConfigSource, append_text, load_capability, plan, tool_name
from agentkernel.roles.capability import OKFCapability

__all__ = ["AgentModule"]


class AgentModule:
    """Register a framework's agents with the ``okf`` block of ``config.yaml``.

    A subclass names the framework's tool builder, the agent attribute holding its identity
    and the one holding its instructions (a string, or a provider callable whose text the
    OKF instructions are appended to).
    """

    #: Binds the OKF tool callables into the framework's tools.
    binder: ClassVar[type[ToolBuilder[Any]]]
    #: The agent attribute the okf block lists the agent under.
    identity: ClassVar[str]
    #: The agent attribute the OKF instructions are appended to.
    instructions: ClassVar[str]

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
            agent: The agent; its identity attribute is looked up in the okf block.

        Returns:
            The same agent.
        """
        own = list(agent.tools or [])
        name = str(getattr(agent, self.identity))
        attachment = plan(self.capability, name, map(tool_name, own))
        if attachment is None:
            return agent
        agent.tools = [*own, *self.binder.bind(attachment.tools)]
        existing = getattr(agent, self.instructions)
        setattr(agent, self.instructions, _appended(existing, attachment.instructions))
        return agent


def _appended(existing: Any, extra: str) -> Any:
    """``existing`` instructions with ``extra`` appended; a provider callable is wrapped."""
    if not callable(existing):
        return append_text(existing, extra)
    provider = existing

    async def with_okf(*args: Any) -> str:
        text = provider(*args)
        if inspect.isawaitable(text):
            text = await text
        return append_text(text, extra)

    # frameworks check a provider's parameters (the OpenAI SDK wants exactly two)
    cast(Any, with_okf).__signature__ = inspect.signature(provider)
    return with_okf
