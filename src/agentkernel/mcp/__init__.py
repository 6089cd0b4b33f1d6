"""MCP servers for knowledge bases and knowledge stores (the ``mcp`` extra).

:func:`create_server` turns a ``KnowledgeBuilder`` into an MCP server whose tools are the
builder's, annotated from the backends' capability declarations; serve it on stdio or
streamable HTTP, or from the command line with ``python -m agentkernel.mcp``.
:mod:`agentkernel.mcp.store` serves a ``KnowledgeStore``'s ``knowledge_*`` tools with the same
:class:`KnowledgeServer` (``agentkernel.knowledgestore.create_knowledge_server``).

Works with both lines of the official SDK the extra accepts (``mcp>=1.30,<3``); only
:mod:`agentkernel.mcp._sdk` knows how they differ.
"""

from __future__ import annotations

from agentkernel.mcp import _require  # noqa: F401  (first: a missing SDK names the extra)
from agentkernel.mcp.server import KnowledgeServer, create_server

__all__ = ["KnowledgeServer", "create_server"]
