"""An MCP server for any set of knowledge bases (the ``mcp`` extra).

:func:`create_server` turns a ``KnowledgeBuilder`` into an MCP server whose tools are the
builder's, annotated from the backends' capability declarations; serve it on stdio or
streamable HTTP, or from the command line with ``python -m agentkernel.mcp``.

Works with both lines of the official SDK the extra accepts (``mcp>=1.30,<3``).
"""

from __future__ import annotations

from agentkernel.errors import missing_extra

try:
    import mcp  # noqa: F401
except ImportError as exc:
    raise missing_extra("mcp", "mcp", feature="agentkernel.mcp") from exc

from agentkernel.mcp.server import KnowledgeServer, create_server

__all__ = ["KnowledgeServer", "create_server"]
