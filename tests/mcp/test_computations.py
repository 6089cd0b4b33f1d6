"""``run_computation`` over MCP: listed read-only, attested values and refusals flagged.

Real: the SDK's own client (``stdio_client`` + ``ClientSession``) spawning
``python -m agentkernel.mcp --factory tests.knowledgebase.okf.computations_support:mcp_builder``,
which serves a copy of the example bundle of ``examples/okf/computations`` with runtime ``sql``
bound to a SQLite warehouse built from the shipped ``warehouse.sql``; and spawning the
``agentkernel-kb serve --config examples/okf/computations/config.yaml --agent Analyst`` console
script, whose okf block binds the runtime to the shipped SQLite warehouse.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import anyio
import pytest

from tests.support import require_extra

require_extra("mcp", "mcp")
require_extra("sqlalchemy", "sql")
require_extra("sqlglot", "sql")

from tests.knowledgebase.okf.computations_support import EXAMPLE, warehouse  # noqa: E402
from tests.mcp._session import call, stdio_session, wire  # noqa: E402

FACTORY = "tests.knowledgebase.okf.computations_support:mcp_builder"


def test_run_computation_over_mcp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bundle = tmp_path / "bundle"
    shutil.copytree(EXAMPLE / "bundle", bundle)
    monkeypatch.setenv("AK_TEST_COMPUTE_BUNDLE", str(bundle))
    monkeypatch.setenv("AK_TEST_COMPUTE_DB", warehouse("sqlite", tmp_path))

    async def scenario() -> None:
        async with stdio_session("--factory", FACTORY) as session:
            listed = {t["name"]: t for t in wire(await session.list_tools())["tools"]}
            tool = listed["run_computation"]
            assert tool["annotations"]["readOnlyHint"] is True
            text, failed = await call(
                session,
                "run_computation",
                backend="warehouse",
                computation="computations/revenue",
                params_json='{"year": 2024}',
            )
            assert not failed and "revenue: 6000.25" in text and "Verdict: ATTESTED" in text
            text, failed = await call(
                session,
                "run_computation",
                backend="warehouse",
                computation="computations/revenue",
                params_json='{"year": 2024, "sql": "DROP TABLE sales"}',
            )
            assert failed and "has no parameter 'sql'" in text

    anyio.run(scenario)
    assert not list(bundle.rglob("IMPORTED-*")), "bundle code ran"


def test_run_computation_over_mcp_from_config_for_a_consumer() -> None:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from tests.support import REPO

    params = StdioServerParameters(
        command=str(Path(sys.executable).parent / "agentkernel-kb"),
        args=["serve", "--config", "examples/okf/computations/config.yaml", "--agent", "Analyst"],
        cwd=str(REPO),
        env=dict(os.environ),
    )

    async def scenario() -> None:
        async with (
            stdio_client(params) as streams,
            ClientSession(streams[0], streams[1]) as session,
        ):
            await session.initialize()
            listed = {t["name"]: t for t in wire(await session.list_tools())["tools"]}
            assert "write_kb" not in listed  # a consumer
            assert listed["run_computation"]["annotations"]["readOnlyHint"] is True
            text, failed = await call(
                session,
                "run_computation",
                backend="warehouse",
                computation="computations/regional-sales",
                params_json='{"region": "EU", "since": "2023-01-01"}',
            )
            assert not failed and "Verdict: ATTESTED" in text and "orders: 2" in text

    anyio.run(scenario)
