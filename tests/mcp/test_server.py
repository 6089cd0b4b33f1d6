"""``create_server`` in process: what it serves, and how a call turns into ``(text, isError)``.

Real: the SDK's low-level server built by ``create_server``, the real ``KnowledgeBuilder`` over
the in-memory custom backend of the contract tests, and plain tool callables that raise or are
coroutines. Calls go through ``KnowledgeServer.call``, the function the server's
``tools/call`` handler runs (the wire itself is covered by test_stdio.py and test_http.py).
"""

from __future__ import annotations

import threading
from typing import Any

import anyio
import pytest

from tests.support import require_extra

require_extra("mcp", "mcp")

from agentkernel.knowledgebase import KnowledgeBuilder  # noqa: E402
from agentkernel.mcp import KnowledgeServer, create_server  # noqa: E402
from tests.knowledgebase.memory_backend import chroma_like, okf_like  # noqa: E402


def explode(reason: str) -> str:
    """Fail on purpose.

    Args:
        reason: What to fail with.
    """
    raise ValueError(reason)


async def shout(text: str, times: int = 1) -> str:
    """Repeat text loudly.

    Args:
        text: What to say.
        times: How often.
    """
    return " ".join([text.upper()] * times)


def test_a_tool_that_raises_becomes_an_error_result() -> None:
    server = create_server([explode, shout])
    assert anyio.run(server.call, "explode", {"reason": "no disk"}) == (
        "Tool explode failed: ValueError: no disk",
        True,
    )
    assert anyio.run(server.call, "shout", {"text": "hi", "times": 2}) == ("HI HI", False)


def test_plain_callables_get_schemas_from_their_docstrings() -> None:
    server = create_server([shout])
    (definition,) = server.definitions
    assert definition.input_schema == {
        "type": "object",
        "properties": {
            "text": {"type": "string", "description": "What to say."},
            "times": {"type": "integer", "description": "How often.", "default": 1},
        },
        "required": ["text"],
        "additionalProperties": False,
    }
    assert definition.annotations == {}  # nothing is known about a foreign callable


def test_a_builders_plain_tool_list_keeps_its_hints_and_error_detection() -> None:
    tools = KnowledgeBuilder([chroma_like("Vectors")]).build()
    server = create_server(tools)
    hints = {d.name: d.annotations for d in server.definitions}
    assert hints["search_kb"]["readOnlyHint"] is True
    # the hints are the tools' own: a text-only writable backend adds, never destroys
    assert hints["write_kb"]["destructiveHint"] is False
    assert hints == {
        d.name: d.annotations
        for d in create_server(KnowledgeBuilder([chroma_like("Vectors")])).definitions
    }
    text, is_error = anyio.run(server.call, "search_kb", {"backend": "Nope", "query": "x"})
    assert is_error and text.startswith("Unknown backend 'Nope'")


def test_writable_false_drops_write_kb_from_a_builder_and_from_callables() -> None:
    builder = KnowledgeBuilder([okf_like()])
    assert "write_kb" not in create_server(builder, writable=False).tool_names
    assert "write_kb" not in create_server(builder.build(), writable=False).tool_names
    assert create_server(builder).tool_names == [
        "get_schemas",
        "read_kb",
        "write_kb",
        "get_all_kb_descriptions",
        "search_kb",
        "fetch_kb",
        "browse_kb",
    ]


@pytest.mark.parametrize(
    ("given", "error", "message"),
    [
        ("tools", TypeError, "takes a KnowledgeBuilder or a list of tool callables"),
        ([shout, 42], TypeError, "Tool at position 1 cannot be served"),
        ([shout, shout], ValueError, "Two tools are named 'shout'"),
    ],
)
def test_bad_input_is_refused_at_construction(given: Any, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        create_server(given)


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="max_concurrency must be at least 1"):
        create_server([shout], max_concurrency=0)
    with pytest.raises(ValueError, match="non-empty name"):
        KnowledgeServer([shout], name=" ")


def test_blocking_calls_run_one_at_a_time_by_default() -> None:
    in_flight = 0
    most = 0
    lock = threading.Lock()
    release = threading.Event()

    def slow(tag: str) -> str:
        """Hold a worker thread until released.

        Args:
            tag: Echoed back.
        """
        nonlocal in_flight, most
        with lock:
            in_flight += 1
            most = max(most, in_flight)
        release.wait(5)
        with lock:
            in_flight -= 1
        return tag

    server = create_server([slow])

    async def run() -> list[tuple[str, bool]]:
        results: list[tuple[str, bool]] = []

        async def one(tag: str) -> None:
            results.append(await server.call("slow", {"tag": tag}))

        async with anyio.create_task_group() as tg:
            for tag in ("a", "b", "c"):
                tg.start_soon(one, tag)
            await anyio.sleep(0.2)
            release.set()
        return results

    results = anyio.run(run)
    assert sorted(results) == [("a", False), ("b", False), ("c", False)]
    assert most == 1


def test_every_refusal_the_builder_returns_is_flagged_and_results_are_not() -> None:
    from agentkernel._tooling.result import is_error
    from tests.knowledgebase.memory_backend import MemoryBackend

    flaky = MemoryBackend("Flaky", fail=KeyError("gone"), search=True, fetch=True, browse=True)
    notes = okf_like("Notes")
    notes.docs["a"] = "Alpha facts."
    tools = {t.__name__: t for t in KnowledgeBuilder([notes, flaky.add_schema({})]).build()}
    refusals = [
        tools["search_kb"](backend="Nope", query="x"),
        tools["search_kb"](backend="Flaky", query="x"),
        tools["write_kb"](backend="Flaky", text="x"),
        tools["write_kb"](backend="Notes"),
        tools["write_kb"](backend="Notes", query="q", params_json="[]"),
        tools["write_kb"](backend="Notes", query="q", params_json="{"),
        tools["browse_kb"](backend="Notes", path=3),
        tools["search_kb"](backend="Notes", query=" "),
        tools["search_kb"](backend="Notes", query="x", limit=True),
        tools["fetch_kb"](backend="Notes", ids=" , "),
    ]
    for text in refusals:
        assert is_error(text), text
    results = [
        tools["search_kb"](backend="Notes", query="alpha"),
        tools["search_kb"](backend="Notes", query="zzz"),
        tools["fetch_kb"](backend="Notes", ids="a,b"),
        tools["browse_kb"](backend="Notes"),
        tools["get_all_kb_descriptions"](),
        tools["get_schemas"](),
        tools["write_kb"](backend="Notes", text="Error from backend 'Flaky' is a note"),
    ]
    for text in results:
        assert isinstance(text, str) and not is_error(text), text
