"""The knowledge MCP server, driven by the official SDK client over stdio.

Real: ``python -m agentkernel.knowledgestore DIR`` runs as a subprocess speaking MCP over
stdio to the SDK's own client (``Client`` on the 2.x line, in both protocol modes, and
``ClientSession`` on 1.x); the client's elicitation callback stands in for the person (it
declines, accepts, or is absent). The store's folder is checked on disk afterwards.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentkernel.knowledgestore import FileKnowledgeStore
from tests.support import require_extra

mcp = require_extra("mcp", "mcp")

import mcp.types as types  # noqa: E402
from mcp import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

SDK_LINE = 2 if hasattr(mcp, "Client") else 1
MODES = ["auto", "legacy"] if SDK_LINE >= 2 else ["legacy"]
READERS = {"knowledge_index", "knowledge_search", "knowledge_read", "knowledge_check"}
DESTRUCTIVE = {"knowledge_edit", "knowledge_rewrite", "knowledge_supersede", "knowledge_retire"}
Steps = Callable[[Any], Awaitable[None]]


def _server(folder: Path, interactive: bool) -> StdioServerParameters:
    args = ["-m", "agentkernel.knowledgestore", str(folder), "--writable"]
    return StdioServerParameters(
        command=sys.executable,
        args=[*args, "--interactive"] if interactive else args,
        env=dict(os.environ),  # the same sources as this process (PYTHONPATH included)
    )


@contextlib.asynccontextmanager
async def _client(
    folder: Path, *, interactive: bool, mode: str, elicitation: Any
) -> AsyncIterator[Any]:
    params = _server(folder, interactive)
    if SDK_LINE >= 2:
        options = {"elicitation_callback": elicitation} if elicitation else {}
        async with mcp.Client(params, mode=mode, **options) as client:
            yield client
        return
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write, elicitation_callback=elicitation) as session,
    ):
        await session.initialize()
        yield session


def _session(
    folder: Path,
    steps: Steps,
    *,
    interactive: bool = True,
    mode: str = "auto",
    elicitation: Any = None,
) -> None:
    async def run() -> None:
        async with _client(
            folder, interactive=interactive, mode=mode, elicitation=elicitation
        ) as client:
            await steps(client)

    anyio.run(run)


def _text(result: Any) -> str:
    return "\n".join(getattr(part, "text", "") for part in result.content)


def _is_error(result: Any) -> bool:
    return bool(getattr(result, "is_error", None) or getattr(result, "isError", None))


def _schema(tool: Any) -> dict[str, Any]:
    schema: dict[str, Any] = getattr(tool, "input_schema", None) or tool.inputSchema
    return schema


def _read_only(tool: Any) -> Any:
    hints = tool.annotations
    return getattr(hints, "read_only_hint", None) if SDK_LINE >= 2 else hints.readOnlyHint


def _destructive(tool: Any) -> Any:
    hints = tool.annotations
    return getattr(hints, "destructive_hint", None) if SDK_LINE >= 2 else hints.destructiveHint


def _answer(action: str, asked: list[str] | None = None) -> Any:
    async def answer(context: Any, params: Any) -> Any:
        if asked is not None:
            asked.append(params.message)
        content = {"retire": True} if action == "accept" else None
        return types.ElicitResult(action=action, content=content)  # type: ignore[arg-type]

    return answer


def test_tools_listed_with_annotations(tmp_path: Path) -> None:
    async def steps(client: Any) -> None:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert list(tools) == [
            "knowledge_index",
            "knowledge_search",
            "knowledge_read",
            "knowledge_create",
            "knowledge_edit",
            "knowledge_rewrite",
            "knowledge_supersede",
            "knowledge_retire",
            "knowledge_log",
            "knowledge_check",
        ]
        for name, tool in tools.items():
            assert _read_only(tool) is (name in READERS)
            assert _destructive(tool) is (name in DESTRUCTIVE), name
        assert set(_schema(tools["knowledge_retire"])["properties"]) == {"page", "reason"}
        assert "query" in _schema(tools["knowledge_search"])["required"]

    _session(tmp_path / "knowledge", steps, elicitation=_answer("decline"))


def test_without_interactive_there_is_no_retire(tmp_path: Path) -> None:
    async def steps(client: Any) -> None:
        names = [tool.name for tool in (await client.list_tools()).tools]
        assert "knowledge_retire" not in names and len(names) == 9

    _session(tmp_path / "knowledge", steps, interactive=False)


@pytest.mark.parametrize("mode", MODES)
def test_round_trip_and_a_declined_retire_leaves_the_page_active(tmp_path: Path, mode: str) -> None:
    folder = tmp_path / "knowledge"

    async def steps(client: Any) -> None:
        created = await client.call_tool(
            "knowledge_create",
            {
                "type": "concept",
                "slug": "tides",
                "title": "Tides",
                "content": "Water rises twice a day.",
            },
        )
        assert not _is_error(created) and _text(created) == "Created concept/tides."
        found = await client.call_tool("knowledge_search", {"query": "twice"})
        assert _text(found) == "- concept/tides — Tides: Water rises twice a day."
        edited = await client.call_tool(
            "knowledge_edit",
            {"page": "concept/tides", "old_text": "twice", "new_text": "two times"},
        )
        assert _text(edited) == "Edited concept/tides."
        read = await client.call_tool("knowledge_read", {"page": "concept/tides"})
        assert _text(read).endswith("Water rises two times a day.")
        checked = await client.call_tool("knowledge_check", {})
        assert '"orphans": [\n    "concept/tides"\n  ]' in _text(checked)
        refused = await client.call_tool(
            "knowledge_edit", {"page": "concept/tides", "old_text": "absent", "new_text": "x"}
        )
        assert _is_error(refused) and "isn't in 'concept/tides'" in _text(refused)
        retire = await client.call_tool(
            "knowledge_retire", {"page": "concept/tides", "reason": "Wrong"}
        )
        assert not _is_error(retire) and _text(retire) == "The person said no: the page stays."
        index = await client.call_tool("knowledge_index", {})
        assert "[Tides](concept/tides)" in _text(index)

    _session(folder, steps, mode=mode, elicitation=_answer("decline"))
    page = FileKnowledgeStore(folder).read("concept/tides")
    assert page is not None and page.status == "active"
    assert page.content == "Water rises two times a day."


def test_retire_fails_closed_when_the_client_cannot_ask(tmp_path: Path) -> None:
    folder = tmp_path / "knowledge"
    FileKnowledgeStore(folder).create("concept", "tides", "Tides", "Water.")

    async def steps(client: Any) -> None:
        retire = await client.call_tool(
            "knowledge_retire", {"page": "concept/tides", "reason": "Wrong"}
        )
        assert _is_error(retire) and "can't ask" in _text(retire)

    _session(folder, steps)
    page = FileKnowledgeStore(folder).read("concept/tides")
    assert page is not None and page.status == "active"


def test_retire_goes_ahead_when_the_person_accepts(tmp_path: Path) -> None:
    folder = tmp_path / "knowledge"
    FileKnowledgeStore(folder).create("concept", "tides", "Tides", "Water.")
    asked: list[str] = []

    async def steps(client: Any) -> None:
        retire = await client.call_tool(
            "knowledge_retire", {"page": "concept/tides", "reason": "Wrong"}
        )
        assert _text(retire).startswith("Retired concept/tides.")

    _session(folder, steps, elicitation=_answer("accept", asked))
    assert "'Tides' (concept/tides)" in asked[0] and "Wrong" in asked[0]
    page = FileKnowledgeStore(folder).read("concept/tides")
    assert page is not None and page.status == "retired"


def _module_session(args: list[str], errlog: Any) -> tuple[list[str], Any]:
    """List the tools of ``python -m agentkernel.knowledgestore ARGS`` and read one page."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "agentkernel.knowledgestore", *args],
        env=dict(os.environ),
    )

    async def run() -> tuple[list[str], Any]:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            names = [tool.name for tool in (await session.list_tools()).tools]
            return names, await session.call_tool("knowledge_read", {"page": "overview"})

    return anyio.run(run)


def test_the_module_entry_is_store_serve_read_only_by_default(tmp_path: Path) -> None:
    # the older entry behaves as `agentkernel-kb store serve`: read-only unless --writable,
    # and the same startup line (name, transport, mode)
    folder = tmp_path / "knowledge"
    FileKnowledgeStore(folder).close()
    before = sorted(p.relative_to(folder) for p in folder.rglob("*"))
    log = tmp_path / "stderr.txt"
    with log.open("w") as errlog:
        names, read = _module_session([str(folder)], errlog)
    assert set(names) == READERS
    assert not _is_error(read)
    line = log.read_text()
    assert "Serving MCP 'knowledge' on stdio (4 tools over the folder " in line
    assert "read-only: pass --writable to offer the edits" in line
    assert sorted(p.relative_to(folder) for p in folder.rglob("*")) == before
    with log.open("w") as errlog:
        names, _ = _module_session([str(folder), "--writable"], errlog)
    assert set(names) > READERS and "knowledge_create" in names and "knowledge_retire" not in names
    assert "; writable" in log.read_text()


def test_the_module_entry_refuses_interactive_without_writable(tmp_path: Path) -> None:
    import subprocess

    done = subprocess.run(
        [sys.executable, "-m", "agentkernel.knowledgestore", str(tmp_path), "--interactive"],
        capture_output=True,
        text=True,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert "--interactive offers knowledge_retire, a write: add --writable." in done.stderr
