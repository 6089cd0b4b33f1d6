"""An MCP client run by another interpreter (another SDK line): prints what it saw as JSON.

Usage: ``python cross_line_client.py stdio SERVER_PYTHON REPO FACTORY`` or
``python cross_line_client.py http URL``. Only the ``mcp`` SDK is imported, so it runs in a
virtualenv that holds nothing else.
"""

from __future__ import annotations

import json
import os
import sys
from importlib.metadata import version
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client


async def exercise(session: ClientSession) -> dict[str, Any]:
    await session.initialize()
    listed = (await session.list_tools()).model_dump(by_alias=True, mode="json", exclude_none=True)
    calls = {
        "search": ("search_kb", {"backend": "Vectors", "query": "backups"}),
        "error": ("search_kb", {"backend": "Nowhere", "query": "x"}),
    }
    out: dict[str, Any] = {"tools": listed["tools"]}
    for key, (name, args) in calls.items():
        result = await session.call_tool(name, args)
        out[key] = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    out["client_sdk"] = version("mcp")  # which SDK line this client ran on
    return out


async def main(argv: list[str]) -> dict[str, Any]:
    if argv[0] == "stdio":
        python, repo, factory = argv[1:4]
        params = StdioServerParameters(
            command=python,
            args=["-m", "agentkernel.mcp", "--factory", factory, "--writable"],
            cwd=repo,
            env=dict(os.environ),
        )
        async with stdio_client(params) as streams, ClientSession(streams[0], streams[1]) as s:
            return await exercise(s)
    async with (
        streamable_http_client(argv[1]) as streams,
        ClientSession(streams[0], streams[1]) as s,
    ):
        return await exercise(s)


if __name__ == "__main__":
    print(json.dumps(anyio.run(main, sys.argv[1:])))
