"""The curated store's MCP server describes and checks its tools as the KB server does.

Real: ``agentkernel-kb store serve DIR`` (and ``--interactive``) as a subprocess, spoken to by
the official MCP client over stdio; a store folder in a temporary directory.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support import require_extra

require_extra("mcp", "mcp")

from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

from tests.mcp._session import call, tools  # noqa: E402

SCRIPT = Path(sys.executable).parent / "agentkernel-kb"


def session_run(folder: Path, *extra: str, steps: Any) -> Any:
    params = StdioServerParameters(
        command=str(SCRIPT),
        args=["store", "serve", str(folder), "--writable", *extra],
        env=dict(os.environ),
    )
    out: list[Any] = []

    async def run() -> None:
        async with (
            stdio_client(params) as streams,
            ClientSession(streams[0], streams[1]) as session,
        ):
            await session.initialize()
            out.append(await steps(session))

    anyio.run(run)
    return out[0]


@pytest.mark.parametrize("interactive", [False, True], ids=["plain", "interactive"])
def test_every_tool_has_a_title_and_described_parameters(tmp_path: Path, interactive: bool) -> None:
    listed = session_run(tmp_path, *(["--interactive"] if interactive else []), steps=tools)
    assert ("knowledge_retire" in listed) is interactive
    for name, tool in listed.items():
        assert tool.get("title") and tool["annotations"]["title"] == tool["title"], name
        schema = tool["inputSchema"]
        for parameter, spec in schema.get("properties", {}).items():
            assert spec.get("description"), f"{name}.{parameter} has no description"
        assert schema.get("additionalProperties") is False, name
    read = listed["knowledge_read"]
    assert read["title"] == "Read a page"
    assert read["inputSchema"]["required"] == ["page"]
    assert "concept/bowline" in read["inputSchema"]["properties"]["page"]["description"]


def test_a_missing_or_wrong_argument_is_answered_like_the_kb_server(tmp_path: Path) -> None:
    async def steps(session: ClientSession) -> list[tuple[str, bool]]:
        return [
            await call(session, "knowledge_read"),
            await call(session, "knowledge_read", page=3),
            await call(session, "knowledge_search", query="x", bogus=1),
            await call(session, "knowledge_search", query="nothing here"),
        ]

    missing, wrong, unknown, fine = session_run(tmp_path, steps=steps)
    assert missing == ("Invalid arguments for knowledge_read: page is required", True)
    assert wrong[1] and wrong[0].startswith("Invalid arguments for knowledge_read: page: ")
    assert "pydantic" not in wrong[0] and "http" not in wrong[0]
    assert unknown == (
        "Invalid arguments for knowledge_search: bogus is not a parameter of this tool",
        True,
    )
    assert fine[1] is False
