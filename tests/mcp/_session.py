"""A real MCP client session (the SDK's own ``stdio_client`` + ``ClientSession``) against a
spawned ``python -m agentkernel.mcp`` process, and wire-form views of its results.

Imported only by test modules that have already required the ``mcp`` extra.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from tests.support.fixtures_mcp import REPO, server_command


@asynccontextmanager
async def stdio_session(*args: str) -> AsyncIterator[ClientSession]:
    """Spawn the server with ``args`` and yield an initialized client session."""
    command = server_command(*args)
    # the same sources as this process (PYTHONPATH included), not the SDK's bare environment
    params = StdioServerParameters(
        command=command[0], args=command[1:], cwd=str(REPO), env=dict(os.environ)
    )
    with tempfile.TemporaryFile("w+") as errlog:
        try:
            async with (
                stdio_client(params, errlog=errlog) as streams,
                ClientSession(streams[0], streams[1]) as session,
            ):
                await session.initialize()
                yield session
        except BaseException:
            errlog.seek(0)
            print("server stderr:\n" + errlog.read()[-4000:])  # shown by pytest on failure
            raise


@asynccontextmanager
async def http_session(url: str) -> AsyncIterator[ClientSession]:
    """Connect to a streamable-HTTP endpoint and yield an initialized client session."""
    async with (
        streamable_http_client(url) as streams,
        ClientSession(streams[0], streams[1]) as session,
    ):
        await session.initialize()
        yield session


def wire(model: Any) -> dict[str, Any]:
    """A result as it travels on the wire (camelCase keys), whatever the SDK line."""
    data: dict[str, Any] = model.model_dump(by_alias=True, mode="json", exclude_none=True)
    return data


async def tools(session: ClientSession) -> dict[str, dict[str, Any]]:
    """The listed tools by name, in wire form, in listing order."""
    return {tool["name"]: tool for tool in wire(await session.list_tools())["tools"]}


async def call(session: ClientSession, name: str, **arguments: Any) -> tuple[str, bool]:
    """Call a tool; returns its text and its ``isError`` flag."""
    result = wire(await session.call_tool(name, arguments))
    text = "\n".join(block["text"] for block in result["content"] if block["type"] == "text")
    return text, bool(result.get("isError", False))
