"""Answers over MCP: within the budget, failures flagged, no server path in any answer.

What is real: the SDK's own client (``stdio_client`` + ``ClientSession``) spawning
``python -m agentkernel.mcp --bundle DIR`` over an OKF bundle written to a temporary
directory (a 2 MB concept, a file the walk skips), and ``python -m agentkernel.knowledgestore
DIR`` over a store folder there. The agent's reading is done by following the ``[cut]`` notes'
words; nothing is mocked.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support import require_extra

require_extra("mcp", "mcp")

from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

from agentkernel._tooling.budget import DEFAULT_ANSWER_CHARS  # noqa: E402
from tests.knowledgebase.test_answer_budget import answers_bundle  # noqa: E402
from tests.mcp._session import call, stdio_session, tools  # noqa: E402

_READ_ON = re.compile(r'fetch_kb\(backend="kb", ids="([^"]+)"\)')
_FRAME = re.compile(r"\A\[[^\]\n]+#offset=(\d+)\] characters \d+ to \d+ of \d+ of [^\n]*:\n")

Call = tuple[str, dict[str, Any]]


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    return answers_bundle(tmp_path)


def test_a_2_mb_concept_is_read_whole_by_following_the_notes(bundle: Path) -> None:
    async def run() -> tuple[list[str], list[int], tuple[str, bool]]:
        answers: list[str] = []
        sizes: list[int] = []
        async with stdio_session("--bundle", str(bundle)) as session:
            ids = "notes/big"
            while True:
                text, flagged = await call(session, "fetch_kb", backend="kb", ids=ids)
                assert not flagged, text[:300]
                sizes.append(len(text))
                answers.append(text)
                match = _READ_ON.search(text.rpartition("\n[cut] ")[2])
                if "\n[cut] " not in text:
                    break
                assert match is not None, text[-500:]
                ids = match.group(1)
            many = await call(
                session, "fetch_kb", backend="kb", ids=",".join(["notes/small"] * 20_000)
            )
        return answers, sizes, many

    answers, sizes, many = anyio.run(run)
    assert max(sizes) <= DEFAULT_ANSWER_CHARS
    parts = []
    for number, text in enumerate(answers):
        body = text.rpartition("\n[cut] ")[0] if "\n[cut] " in text else text
        if number:
            frame = _FRAME.match(body)
            assert frame is not None and int(frame.group(1)) == sum(map(len, parts))
            body = body[frame.end() :]
        parts.append(body)
    whole = "".join(parts)
    document = (bundle / "notes" / "big.md").read_text(encoding="utf-8")
    assert whole.startswith("[notes/big] Big")
    assert document.rstrip() in whole  # every byte of the concept, in order
    text, flagged = many
    assert not flagged and text.count("[notes/small]") == 1 and len(text) < 1_000
    assert "19999 repeated id(s) were read once" in text


# -- every tool of both servers, with a bad input: an error result -------------------------

BUILDER_BAD: dict[str, dict[str, Any]] = {
    "get_schemas": {"bogus": 1},
    "get_all_kb_descriptions": {"bogus": 1},
    "read_kb": {"backend": "kb", "query": ""},
    "search_kb": {"backend": "kb", "query": "x", "limit": 0},
    "fetch_kb": {"backend": "kb", "ids": "nope,neither"},
    "browse_kb": {"backend": "kb", "path": "no/such/dir"},
    "write_kb": {"backend": "kb"},
}
STORE_BAD: dict[str, dict[str, Any]] = {
    "knowledge_index": {"bogus": 1},
    "knowledge_search": {"query": " "},
    "knowledge_read": {"page": "concept/none"},
    "knowledge_create": {"type": "nope", "slug": "a", "title": "A", "content": "x"},
    "knowledge_edit": {"page": "concept/none", "old_text": "a", "new_text": "b"},
    "knowledge_rewrite": {"page": "concept/none", "content": "x"},
    "knowledge_supersede": {"page": "concept/none", "by": "concept/other"},
    "knowledge_retire": {"page": "concept/none", "reason": "x"},
    "knowledge_log": {"what": "x"},
    "knowledge_check": {"bogus": 1},
}

HOSTILE = [
    "a" * 300,
    "notes/" + "b" * 5_000,
    "../../../../etc/passwd",
    "/etc/passwd",
    "%2e%2e/%2e%2e/etc/passwd",
    "..\\..\\windows\\win.ini",
    "notes/\x00small",
    "~/.ssh/id_rsa",
    "notes/small#offset=99999999999",
    "notes/./../../kb/notes/small",
]


def _store_params(folder: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "agentkernel.knowledgestore", str(folder), "--writable"],
        env=dict(os.environ),
    )


async def _store_session_calls(
    folder: Path, calls: list[Call]
) -> tuple[set[str], list[tuple[str, bool]]]:
    async with (
        stdio_client(_store_params(folder)) as streams,
        ClientSession(streams[0], streams[1]) as session,
    ):
        await session.initialize()
        listed = set(await tools(session))
        return listed, [await call(session, name, **arguments) for name, arguments in calls]


def test_every_tool_of_both_servers_flags_a_bad_input(bundle: Path, tmp_path: Path) -> None:
    async def run() -> tuple[set[str], list[tuple[str, bool]]]:
        async with stdio_session("--bundle", str(bundle), "--writable") as session:
            listed = set(await tools(session))
            answers = [await call(session, n, **a) for n, a in BUILDER_BAD.items()]
            return listed, answers

    listed, answers = anyio.run(run)
    assert listed == set(BUILDER_BAD), "a new tool needs a bad-input case here"
    for (name, arguments), (text, flagged) in zip(BUILDER_BAD.items(), answers, strict=True):
        assert flagged, f"{name}({arguments}) -> {text!r}"
    store_calls = list(STORE_BAD.items())
    listed, answers = anyio.run(_store_session_calls, tmp_path / "knowledge", store_calls)
    assert listed <= set(STORE_BAD), "a new tool needs a bad-input case here"
    for (name, arguments), (text, flagged) in zip(store_calls, answers, strict=True):
        if name in listed:
            assert flagged, f"{name}({arguments}) -> {text!r}"


# -- no server path in any answer ----------------------------------------------------------


def _secrets(tmp_path: Path) -> list[str]:
    return sorted({str(tmp_path), os.path.realpath(tmp_path), str(Path.cwd()), sys.prefix})


def _builder_hostile() -> list[Call]:
    calls: list[Call] = [("get_schemas", {}), ("get_all_kb_descriptions", {})]
    for value in HOSTILE:
        calls += [
            ("fetch_kb", {"backend": "kb", "ids": value}),
            ("browse_kb", {"backend": "kb", "path": value}),
            ("search_kb", {"backend": "kb", "query": value}),
            ("read_kb", {"backend": "kb", "query": value}),
            ("write_kb", {"backend": "kb", "text": value + "\nbody"}),
            ("fetch_kb", {"backend": value, "ids": "notes/small"}),
        ]
    return calls


def _store_hostile() -> list[Call]:
    calls: list[Call] = [("knowledge_index", {}), ("knowledge_check", {})]
    for value in HOSTILE:
        calls += [
            ("knowledge_read", {"page": value}),
            ("knowledge_search", {"query": value}),
            ("knowledge_create", {"type": "concept", "slug": value, "title": "T", "content": "x"}),
            ("knowledge_edit", {"page": value, "old_text": "a", "new_text": "b"}),
            ("knowledge_supersede", {"page": value, "by": value}),
        ]
    return calls


def test_no_answer_names_a_server_path(bundle: Path, tmp_path: Path) -> None:
    builder_calls = _builder_hostile()

    async def run() -> list[tuple[str, bool]]:
        async with stdio_session("--bundle", str(bundle), "--writable") as session:
            return [await call(session, n, **a) for n, a in builder_calls]

    answers = anyio.run(run)
    store_calls = _store_hostile()
    _, store_answers = anyio.run(_store_session_calls, tmp_path / "knowledge", store_calls)
    secrets = _secrets(tmp_path)
    for (name, arguments), (text, _) in zip(
        builder_calls + store_calls, answers + store_answers, strict=True
    ):
        leaked = [s for s in secrets if s in text]
        assert not leaked, f"{name}({str(arguments)[:120]}) -> {text[:400]!r}"
