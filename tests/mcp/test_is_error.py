"""``isError`` comes from the tool's own result, never from how its text is worded.

Real: the SDK's own client (``stdio_client`` + ``ClientSession``) spawning
``python -m agentkernel.mcp --factory tests.mcp.factories:flagged`` (the real builder over
real custom backends, one of them failing, one whose formatting raises, and one whose
results read like the builder's refusals) and ``python -m agentkernel.knowledgestore DIR``
over a store folder in a temporary directory. Every refusal path of the builder's and the
store's tools is called over stdio; each must come back ``isError: true``, and every result
``false``, whatever its words.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio

from tests.support import require_extra

require_extra("mcp", "mcp")

from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

from tests.mcp._session import call, stdio_session  # noqa: E402

Call = tuple[str, dict[str, Any]]

BUILDER_REFUSALS: list[Call] = [
    ("search_kb", {"backend": "Nope", "query": "x"}),
    ("search_kb", {"backend": "Graph", "query": "x"}),
    ("fetch_kb", {"backend": "Archive", "ids": "a"}),
    ("browse_kb", {"backend": "Archive"}),
    ("write_kb", {"backend": "Archive", "text": "x"}),
    ("write_kb", {"backend": "Notes"}),
    ("write_kb", {"backend": "Graph", "query": "CREATE (n)", "params_json": "{"}),
    ("write_kb", {"backend": "Graph", "query": "CREATE (n)", "params_json": "[]"}),
    ("search_kb", {"backend": "Notes", "query": " "}),
    ("read_kb", {"backend": "Notes", "query": "x", "limit": 0}),
    ("fetch_kb", {"backend": "Notes", "ids": " , "}),
    ("search_kb", {"backend": "Flaky", "query": "x"}),
    ("browse_kb", {"backend": "Flaky"}),
    ("search_kb", {"backend": "Broken", "query": "on-call"}),
    ("fetch_kb", {"backend": "Broken", "ids": "ops/oncall"}),
    ("read_kb", {"backend": "Notes"}),
    ("search_kb", {"backend": "Notes", "query": "x", "bogus": 1}),
    ("no_such_tool", {}),
]
BUILDER_RESULTS: list[Call] = [
    ("search_kb", {"backend": "Misleading", "query": "on-call"}),
    ("search_kb", {"backend": "Notes", "query": "zzz"}),
    ("search_kb", {"backend": "Notes", "query": "on-call rotation"}),
    ("fetch_kb", {"backend": "Notes", "ids": "ops/oncall,ops/missing"}),
    ("browse_kb", {"backend": "Notes"}),
    ("read_kb", {"backend": "Graph", "query": "MATCH (n) RETURN n"}),
    ("get_schemas", {}),
    ("get_all_kb_descriptions", {}),
    ("write_kb", {"backend": "Notes", "text": "Error from backend 'Flaky' during search: a note"}),
    ("write_kb", {"backend": "Graph", "query": "CREATE (n)", "params_json": "{}"}),
]

STORE_REFUSALS: list[Call] = [
    ("knowledge_read", {"page": "concept/none"}),
    ("knowledge_search", {"query": " "}),
    ("knowledge_search", {"query": "tides", "limit": 0}),
    ("knowledge_create", {"type": "nope", "slug": "a", "title": "A", "content": "x"}),
    ("knowledge_edit", {"page": "concept/none", "old_text": "a", "new_text": "b"}),
    ("knowledge_supersede", {"page": "concept/none", "by": "concept/tides"}),
    ("knowledge_log", {"what": "x"}),
]
STORE_RESULTS: list[Call] = [
    ("knowledge_create", {"type": "concept", "slug": "tides", "title": "Tides"}),
    ("knowledge_create", {"type": "concept", "slug": "tides", "title": "Tides", "content": "Up."}),
    ("knowledge_read", {"page": "overview"}),
    ("knowledge_search", {"query": "nothing like it"}),
    ("knowledge_index", {}),
    ("knowledge_check", {}),
    ("knowledge_log", {"operation": "ingest", "what": "Added tides."}),
]


async def _flags(session: ClientSession, calls: list[Call]) -> list[tuple[str, bool]]:
    return [await call(session, name, **arguments) for name, arguments in calls]


def _check(calls: list[Call], answers: list[tuple[str, bool]], *, errors: bool) -> None:
    for (name, arguments), (text, flagged) in zip(calls, answers, strict=True):
        assert flagged is errors, f"{name}({arguments}) -> {text!r}"


def test_every_builder_refusal_is_an_error_and_every_result_is_not() -> None:
    async def run() -> tuple[list[tuple[str, bool]], list[tuple[str, bool]]]:
        async with stdio_session("--factory", "tests.mcp.factories:flagged", "--writable") as s:
            return await _flags(s, BUILDER_REFUSALS), await _flags(s, BUILDER_RESULTS)

    refusals, results = anyio.run(run)
    _check(BUILDER_REFUSALS, refusals, errors=True)
    _check(BUILDER_RESULTS, results, errors=False)
    # worded like a refusal, still a result: the flag is not read from the words
    assert results[0][0].startswith("Unknown backend 'Nope'.")
    assert results[1][0] == "No results."


def test_every_store_refusal_is_an_error_and_every_result_is_not(tmp_path: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "agentkernel.knowledgestore", str(tmp_path / "knowledge"), "--writable"],
        env=dict(os.environ),
    )

    async def run() -> tuple[list[tuple[str, bool]], list[tuple[str, bool]]]:
        async with (
            stdio_client(params) as streams,
            ClientSession(streams[0], streams[1]) as session,
        ):
            await session.initialize()
            return await _flags(session, STORE_RESULTS), await _flags(session, STORE_REFUSALS)

    results, refusals = anyio.run(run)
    _check(STORE_REFUSALS, refusals, errors=True)
    _check(STORE_RESULTS, results, errors=False)
    assert results[0][0].startswith("Template for a concept page")
