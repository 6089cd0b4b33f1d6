"""``LangGraphModule``: configured OKF tools and prompts for LangGraph agents.

A compiled LangGraph graph cannot be changed afterwards, so the tools and the prompt are
handed out to be bound *before* ``compile()``: ``tools_for(name)`` for ``model.bind_tools``
and the ``ToolNode``, ``prompt_for(name, own_prompt)`` for the system message. The agent's
identity is the name the okf block lists it under. Nothing here opens a store.

Example:
    >>> okf = LangGraphModule()  # the okf block of ./config.yaml  # doctest: +SKIP
    >>> tools = [*my_tools, *okf.tools_for("Support_Agent", my_tools)]  # doctest: +SKIP
    >>> bound = model.bind_tools(tools)  # doctest: +SKIP
    >>> system = okf.prompt_for("Support_Agent", "You answer support questions.")  # doctest: +SKIP
    >>> graph.add_node("tools", ToolNode(tools))  # then compile()  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from agentkernel.langgraph._tools import LangGraphToolBuilder
from agentkernel.roles.attach import ConfigSource, append_text, load_capability, plan, tool_name
from agentkernel.roles.capability import OKFCapability


class LangGraphModule:
    """The ``okf`` block of ``config.yaml``, served per agent for LangGraph graphs."""

    def __init__(self, config: ConfigSource | OKFCapability = None) -> None:
        """Load the configuration; opens no store.

        Args:
            config: An ``AKConfig``, mapping, path, ``OKFCapability``, or ``None`` for the
                default ``config.yaml``. Without an ``okf`` block every agent gets nothing.

        Raises:
            AKConfigError: The okf block is invalid.
        """
        self.capability = load_capability(config)

    def tools_for(self, name: str, bound: Iterable[Any] = ()) -> list[Any]:
        """The agent's OKF tools as LangChain ``StructuredTool`` objects, to add to its own.

        Args:
            name: The agent's name in the okf block.
            bound: The tools the agent already carries; knowledge-base tools among them are
                named in a WARNING (the OKF tools are returned anyway).

        Returns:
            The OKF tools, or ``[]`` for an agent named in no database.
        """
        attachment = plan(self.capability, name, map(tool_name, bound))
        return [] if attachment is None else LangGraphToolBuilder.bind(attachment.tools)

    def prompt_for(self, name: str, prompt: str = "") -> str:
        """The agent's system prompt with its OKF instructions appended.

        Args:
            name: The agent's name in the okf block.
            prompt: The agent's own prompt.

        Returns:
            ``prompt`` unchanged for an agent named in no database.
        """
        if self.capability is None or not self.capability.roles_of(name):
            return prompt
        return append_text(prompt, self.capability.instructions_for(name))
