"""Deprecated alias of :mod:`agentkernel.mcp.store` (the store's MCP server), for one release.

``create_knowledge_server`` and ``serve_knowledge_store`` stay importable from
:mod:`agentkernel.knowledgestore`, which is where the manual imports them.
"""

from __future__ import annotations

from agentkernel import _moved
from agentkernel.mcp import store as _new
from agentkernel.mcp.store import SERVER_NAME, create_knowledge_server, serve_knowledge_store

_moved.alias_package(__name__, "agentkernel.mcp.store")

__all__ = ["SERVER_NAME", "create_knowledge_server", "serve_knowledge_store"]


def __getattr__(name: str) -> object:
    return _moved.forward(_new, name)
