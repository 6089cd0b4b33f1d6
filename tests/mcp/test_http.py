"""The MCP server over streamable HTTP on 127.0.0.1, driven by the SDK's own HTTP client.

Real: a ``python -m agentkernel.mcp --http 127.0.0.1:0`` process (uvicorn), the SDK's
``streamable_http_client`` + ``ClientSession``, the real builder over a writable copy of the
GA4 OKF bundle served by ``OKFManager``. Nothing is mocked.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import anyio

from tests.support import require_extra

require_extra("mcp", "mcp")

from tests.mcp._session import call, http_session, tools  # noqa: E402


def test_streamable_http_round_trip(ga4_bundle: Path, mcp_http_server: Callable[..., str]) -> None:
    url = mcp_http_server("--bundle", str(ga4_bundle), "--kb-name", "GA4", "--writable")
    assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")

    async def run() -> tuple[list[str], dict[str, tuple[str, bool]]]:
        out: dict[str, tuple[str, bool]] = {}
        async with http_session(url) as session:
            names = list(await tools(session))
            out["search"] = await call(session, "search_kb", backend="GA4", query="purchasers")
            out["write"] = await call(
                session, "write_kb", backend="GA4", text="Churn window\nGA4 churn is 28 days."
            )
            out["fetch"] = await call(
                session, "fetch_kb", backend="GA4", ids="generated/churn-window"
            )
            out["error"] = await call(session, "browse_kb", backend="Nowhere")
        return names, out

    names, out = anyio.run(run)
    assert names == [
        "get_schemas",
        "read_kb",
        "write_kb",
        "get_all_kb_descriptions",
        "search_kb",
        "fetch_kb",
        "browse_kb",
    ]
    assert out["search"][1] is False and "[references/metrics/purchasers]" in out["search"][0]
    assert out["write"] == ("Wrote 1 record(s) to 'GA4': ['generated/churn-window']", False)
    assert out["fetch"][1] is False and "GA4 churn is 28 days." in out["fetch"][0]
    assert out["error"][1] is True and out["error"][0].startswith("Unknown backend 'Nowhere'")
    assert (ga4_bundle / "generated" / "churn-window.md").is_file()


def test_a_second_client_is_served_after_the_first_disconnects(
    mcp_http_server: Callable[..., str],
) -> None:
    url = mcp_http_server("--factory", "tests.mcp.factories:search_only", "--read-only")

    async def one_client() -> tuple[str, bool]:
        async with http_session(url) as session:
            return await call(session, "search_kb", backend="Vectors", query="backups")

    first = anyio.run(one_client)
    second = anyio.run(one_client)
    assert first == second
    assert first[1] is False and "kept for 35 days" in first[0]
