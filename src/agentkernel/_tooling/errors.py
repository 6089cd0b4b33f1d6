"""The refusal a tool body raises where it decides a call cannot be served.

:class:`ToolRefusal` is the ``ToolRefusal`` leaf of the tree drawn in :mod:`agentkernel.errors`.
A tool body (a ``KnowledgeBuilder`` tool, the code it calls, a ``knowledge_*`` tool) raises
it with the whole answer the agent gets; the one tool factory
(:func:`agentkernel._tooling.factory.make_tool`) catches it and returns that answer, flagged as
an error. So a refusal is raised once, where it is decided, and no function returns "a result
or a refusal".

Example:
    >>> refusal = ToolRefusal("Unknown backend 'x'. Available: ['OKF']")
    >>> refusal.answer
    "Unknown backend 'x'. Available: ['OKF']"
"""

from __future__ import annotations

from agentkernel.errors import AKError

__all__ = ["ToolRefusal"]


class ToolRefusal(AKError):
    """A tool call refused: its message is the tool's whole answer, worded for the agent."""

    def __init__(self, answer: str) -> None:
        """Create the refusal.

        Args:
            answer: What the agent reads, exactly (the factory returns it unchanged).
        """
        super().__init__(answer)
        self.answer = answer
