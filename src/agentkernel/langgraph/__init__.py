"""LangGraph / LangChain integration (the ``langgraph`` extra).

Importing this package imports ``langchain_core``; without the extra it raises
:class:`~agentkernel.errors.MissingExtraError` naming it. The bound tools are
``StructuredTool`` objects, usable by LangGraph's ``ToolNode`` and any LangChain agent.

Example:
    >>> from langgraph.prebuilt import ToolNode
    >>> from agentkernel.langgraph import LangGraphToolBuilder
    >>> tools = LangGraphToolBuilder.bind(builder.build())  # doctest: +SKIP
    >>> node = ToolNode(tools)  # doctest: +SKIP
"""

from __future__ import annotations

from agentkernel.langgraph._module import LangGraphModule
from agentkernel.langgraph._tools import LangGraphToolBuilder

__all__ = ["LangGraphModule", "LangGraphToolBuilder"]
