"""The MCP server over stdio, driven by the SDK's own client.

Real: the ``mcp`` SDK client (``stdio_client`` + ``ClientSession``) spawning
``python -m agentkernel.mcp`` as a subprocess, the real ``KnowledgeBuilder``, a real OKF
bundle (a writable copy of the GA4 bundle in a temporary directory, served by ``OKFManager``),
and real custom backends from ``tests/mcp/factories.py``. Nothing is mocked.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support import require_extra

require_extra("mcp", "mcp")

from tests.mcp._session import call, stdio_session, tools  # noqa: E402
from tests.support import okf_bundle  # noqa: E402

ALL_TOOLS = [
    "get_schemas",
    "read_kb",
    "write_kb",
    "get_all_kb_descriptions",
    "search_kb",
    "fetch_kb",
    "browse_kb",
]
READERS = [name for name in ALL_TOOLS if name != "write_kb"]
MIXED = ("--factory", "tests.mcp.factories:mixed", "--writable")


@pytest.fixture(scope="module")
def ga4_listed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """What tools/list shows for a writable OKF bundle (one server process for the module)."""
    bundle = tmp_path_factory.mktemp("listing") / "ga4"
    shutil.copytree(okf_bundle("ga4"), bundle)

    async def run() -> dict[str, dict[str, Any]]:
        async with stdio_session(
            "--bundle", str(bundle), "--kb-name", "GA4", "--writable"
        ) as session:
            return await tools(session)

    return anyio.run(run)


def test_an_okf_bundle_lists_exactly_its_gated_tools_with_annotations(
    ga4_listed: dict[str, dict[str, Any]],
) -> None:
    listed = ga4_listed
    assert list(listed) == ALL_TOOLS
    for name in READERS:
        assert listed[name]["annotations"]["readOnlyHint"] is True, name
        assert listed[name]["annotations"]["openWorldHint"] is False, name
    write = listed["write_kb"]["annotations"]
    # an OKF bundle takes text notes only: each write adds a new document
    assert write["readOnlyHint"] is False
    assert write["destructiveHint"] is False
    assert write["idempotentHint"] is False


def test_input_schemas_carry_types_defaults_and_parameter_descriptions(
    ga4_listed: dict[str, dict[str, Any]],
) -> None:
    listed = ga4_listed
    search = listed["search_kb"]["inputSchema"]
    assert search["type"] == "object"
    assert search["required"] == ["backend", "query"]
    assert search["properties"]["backend"] == {
        "type": "string",
        "description": "The backend name, as listed by get_schemas.",
    }
    assert search["properties"]["limit"]["type"] == "integer"
    assert search["properties"]["limit"]["default"] == 3
    assert search["properties"]["limit"]["description"].startswith("The most records")
    browse = listed["browse_kb"]["inputSchema"]["properties"]
    assert browse["path"]["default"] == ""
    assert browse["limit"]["default"] == 50
    write = listed["write_kb"]["inputSchema"]
    assert write["required"] == ["backend"]
    assert write["properties"]["params_json"]["default"] == "{}"
    assert "first line is the title" in write["properties"]["text"]["description"]
    assert listed["get_schemas"]["inputSchema"]["properties"] == {}
    assert "get_schemas" in listed["read_kb"]["description"]


def test_read_only_serves_no_write_tool_and_opens_the_bundle_read_only(ga4_bundle: Path) -> None:
    async def run() -> tuple[dict[str, dict[str, Any]], str]:
        async with stdio_session("--bundle", str(ga4_bundle), "--read-only") as session:
            text, _ = await call(session, "get_schemas")
            return await tools(session), text

    listed, schemas = anyio.run(run)
    assert list(listed) == READERS
    assert '"writable": false' in schemas


def test_only_declared_capabilities_become_tools() -> None:
    async def run() -> dict[str, dict[str, Any]]:
        async with stdio_session(
            "--factory", "tests.mcp.factories:search_only", "--writable"
        ) as session:
            return await tools(session)

    listed = anyio.run(run)
    assert list(listed) == [
        "get_schemas",
        "read_kb",
        "write_kb",
        "get_all_kb_descriptions",
        "search_kb",
    ]


def test_write_kb_is_destructive_when_a_writable_backend_takes_statements() -> None:
    async def run() -> dict[str, dict[str, Any]]:
        async with stdio_session(*MIXED) as session:
            return await tools(session)

    write = anyio.run(run)["write_kb"]["annotations"]
    assert write["readOnlyHint"] is False
    assert write["destructiveHint"] is True


def test_round_trips_over_a_real_okf_bundle(ga4_bundle: Path) -> None:
    async def run() -> dict[str, tuple[str, bool]]:
        out: dict[str, tuple[str, bool]] = {}
        async with stdio_session(
            "--bundle", str(ga4_bundle), "--kb-name", "GA4", "--writable"
        ) as session:
            out["descriptions"] = await call(session, "get_all_kb_descriptions")
            out["search"] = await call(session, "search_kb", backend="GA4", query="purchasers")
            first_id = out["search"][0].split("[", 1)[1].split("]", 1)[0]
            out["fetch"] = await call(session, "fetch_kb", backend="GA4", ids=first_id)
            out["browse"] = await call(session, "browse_kb", backend="GA4")
            out["read"] = await call(session, "read_kb", backend="GA4", query="purchasers", limit=1)
            out["write"] = await call(
                session,
                "write_kb",
                backend="GA4",
                text="Refund rate\nRefunds are 3.1% of GA4 demo orders in January.",
            )
            out["search_new"] = await call(session, "search_kb", backend="GA4", query="refund rate")
            out["fetch_new"] = await call(
                session, "fetch_kb", backend="GA4", ids="generated/refund-rate"
            )
        return out

    out = anyio.run(run)
    assert not any(is_error for _, is_error in out.values()), out
    assert out["descriptions"][0].startswith("- GA4: ")
    assert "[references/metrics/purchasers]" in out["search"][0]
    assert "in_app_purchase" in out["fetch"][0]  # the body, only a fetch returns it
    assert "datasets" in out["browse"][0] and "tables" in out["browse"][0]
    assert out["read"][0].count("\n- ") == 0 and "purchasers" in out["read"][0]
    assert out["write"][0] == "Wrote 1 record(s) to 'GA4': ['generated/refund-rate']"
    assert "[generated/refund-rate]" in out["search_new"][0]
    assert "3.1% of GA4 demo orders" in out["fetch_new"][0]
    written = ga4_bundle / "generated" / "refund-rate.md"
    assert "Refunds are 3.1% of GA4 demo orders in January." in written.read_text()


def test_errors_come_back_as_is_error_results_and_the_server_keeps_serving() -> None:
    calls = [
        ("search_kb", {"backend": "Nowhere", "query": "x"}, "Unknown backend 'Nowhere'"),
        ("fetch_kb", {"backend": "Archive", "ids": "ops/oncall"}, "does not support fetch"),
        ("write_kb", {"backend": "Archive", "text": "x"}, "Backend 'Archive' is read-only."),
        ("search_kb", {"backend": "Notes", "query": "x", "limit": 0}, "limit must be between"),
        ("search_kb", {"backend": "Notes"}, "Invalid arguments for search_kb: query is required"),
        ("search_kb", {"backend": "Notes", "query": "x", "limit": "many"}, "limit:"),
        ("browse_kb", {"backend": "Notes", "depth": 2}, "depth is not a parameter"),
        ("write_kb", {"backend": "Notes"}, "Nothing to write"),
        (
            "write_kb",
            {"backend": "Graph", "query": "CREATE (n)", "params_json": "[1"},
            "not valid JSON",
        ),
        ("drop_kb", {}, "Unknown tool 'drop_kb'"),
    ]

    async def run() -> tuple[list[tuple[str, bool]], tuple[str, bool]]:
        async with stdio_session(*MIXED) as session:
            results = [await call(session, name, **args) for name, args, _ in calls]
            return results, await call(session, "search_kb", backend="Notes", query="backups")

    results, after = anyio.run(run)
    for (name, _, expected), (text, is_error) in zip(calls, results, strict=True):
        assert is_error, (name, text)
        assert expected in text, (name, text)
    assert after == (
        "- [ops/backups] Backups of the orders database run nightly and are kept "
        "for 35 days. (source: memory)",
        False,
    )


def test_results_that_mention_failure_are_not_errors() -> None:
    async def run() -> list[tuple[str, bool]]:
        async with stdio_session(*MIXED) as session:
            return [
                await call(session, "search_kb", backend="Notes", query="nothing matches this"),
                await call(session, "fetch_kb", backend="Notes", ids="ops/oncall, ops/missing"),
                await call(session, "write_kb", backend="Notes", text="Unknown backend 'X' seen"),
            ]

    nothing, partial, written = anyio.run(run)
    assert nothing == ("No results.", False)
    assert partial[1] is False and "Not found: ['ops/missing']" in partial[0]
    assert written[1] is False and written[0].startswith("Wrote 1 record(s) to 'Notes'")


def test_the_server_survives_a_backend_that_raises_and_one_that_prints() -> None:
    async def run() -> list[tuple[str, bool]]:
        async with stdio_session(*MIXED) as session:
            return [
                await call(session, "search_kb", backend="Flaky", query="x"),
                await call(session, "fetch_kb", backend="Flaky", ids="a,b"),
                await call(session, "browse_kb", backend="Flaky"),
                await call(session, "search_kb", backend="Noisy", query="on-call"),
                await call(session, "get_all_kb_descriptions"),
            ]

    search, fetch, browse, noisy, descriptions = anyio.run(run)
    assert search == ("Error from backend 'Flaky' during search: RuntimeError: disk on fire", True)
    assert fetch == ("Error from backend 'Flaky' during fetch: RuntimeError: disk on fire", True)
    assert browse == ("Error from backend 'Flaky' during browse: RuntimeError: disk on fire", True)
    # the backend's print() went to stderr, not into the protocol stream
    assert noisy == (
        "- The on-call rotation changes every Monday at 09:00 UTC. (source: memory)",
        False,
    )
    assert descriptions[1] is False and "- Flaky: " in descriptions[0]
