"""One authenticated HTTP server, eight callers, one of them flooding: do the others suffer?

Starts ``python -m agentkernel.mcp --http 127.0.0.1:0`` over the shared GA4 bundle (searches
are real BM25 over 26 concepts) with a token table of eight identities, then measures the
latency of each ``search_kb`` call seen by the mcp SDK's streamable-HTTP client:

- ``idle``: seven well-behaved callers, each making N calls one after another, all at once;
- ``flooded``: the same seven, while the eighth fires N calls with 16 in flight
  (``--max-calls-per-identity`` turns most of them away at once with an error result);
- ``no auth``: the seven callers against the same server without authentication (loopback),
  the previous version's only HTTP shape, to show what authentication costs.

Prints one table with p50 and p95 per scenario and their ratios to ``idle``; the issue's
target is the flooded p95 within 2x of the idle p95. The machine is shared: read ratios, not
absolute times. ``python bench/auth_load_bench.py --calls 200``.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

REPO = Path(__file__).resolve().parents[1]
BUNDLE = REPO.parent / "shared" / "data" / "okf-bundles" / "ga4"
QUERIES = ["purchasers", "sessions", "revenue", "engagement rate", "bounce", "events"]
_READY = re.compile(r"Serving MCP .* at (http://\S+) \(")


def _start(args: list[str]) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentkernel.mcp", "--bundle", str(BUNDLE), *args],
        cwd=REPO,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stderr is not None
    for line in proc.stderr:
        found = _READY.search(line)
        if found:
            threading.Thread(target=lambda: [None for _ in proc.stderr or ()], daemon=True).start()
            return proc, found.group(1)
    raise SystemExit(f"server did not start (exit {proc.wait()})")


async def _caller(url: str, token: str | None, calls: int, times: list[float]) -> None:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        create_mcp_http_client(headers=headers) as client,
        streamable_http_client(url, http_client=client) as streams,
        ClientSession(streams[0], streams[1]) as session,
    ):
        await session.initialize()
        for number in range(calls):
            started = time.perf_counter()
            await session.call_tool(
                "search_kb", {"backend": "ga4", "query": QUERIES[number % len(QUERIES)]}
            )
            times.append((time.perf_counter() - started) * 1000)


async def _flooder(url: str, token: str, calls: int, limited: list[int]) -> None:
    async with (
        create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as client,
        streamable_http_client(url, http_client=client) as streams,
        ClientSession(streams[0], streams[1]) as session,
    ):
        await session.initialize()
        gate = anyio.Semaphore(16)

        async def one(number: int) -> None:
            async with gate:
                result: Any = await session.call_tool(
                    "search_kb", {"backend": "ga4", "query": QUERIES[number % len(QUERIES)]}
                )
                if getattr(result, "is_error", getattr(result, "isError", False)):
                    limited.append(number)

        async with anyio.create_task_group() as group:
            for number in range(calls):
                group.start_soon(one, number)


def _scenario(url: str, tokens: list[str | None], calls: int, flood: str | None) -> dict[str, Any]:
    times: list[float] = []
    limited: list[int] = []

    async def run() -> None:
        async with anyio.create_task_group() as group:
            for token in tokens:
                group.start_soon(_caller, url, token, calls, times)
            if flood:
                group.start_soon(_flooder, url, flood, calls, limited)

    anyio.run(run)
    ordered = sorted(times)
    return {
        "calls": len(times),
        "p50": statistics.median(ordered),
        "p95": ordered[int(0.95 * (len(ordered) - 1))],
        "limited": len(limited),
    }


def main() -> None:
    """Run the three scenarios and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200, help="calls per identity")
    args = parser.parse_args()
    tokens = [f"ak_bench_{n}_" + "t" * 32 for n in range(8)]
    with tempfile.TemporaryDirectory() as tmp:
        table = Path(tmp) / "tokens"
        table.write_text(
            "\n".join(
                f"agent{n} sha256:{hashlib.sha256(t.encode()).hexdigest()}"
                for n, t in enumerate(tokens)
            )
        )
        results: dict[str, dict[str, Any]] = {}
        common = ["--http", "127.0.0.1:0", "--max-calls-per-identity", "4"]
        proc, url = _start([*common, "--auth-tokens", str(table), "--audit", f"{tmp}/audit"])
        try:
            results["idle (7 callers)"] = _scenario(url, list(tokens[:7]), args.calls, None)
            results["flooded (7 + 1 flooding)"] = _scenario(
                url, list(tokens[:7]), args.calls, tokens[7]
            )
        finally:
            proc.terminate()
            proc.wait()
        audit_lines = len((Path(tmp) / "audit").read_text().splitlines())
        proc, url = _start(common)
        try:
            results["no auth (7 callers)"] = _scenario(url, [None] * 7, args.calls, None)
        finally:
            proc.terminate()
            proc.wait()
    idle = results["idle (7 callers)"]
    print(f"search_kb over ga4, {args.calls} calls per identity, p50/p95 in ms of the 7 callers")
    print("| scenario | calls | p50 | p95 | p95 / idle | flooder refused |")
    print("|---|---|---|---|---|---|")
    for name, row in results.items():
        print(
            f"| {name} | {row['calls']} | {row['p50']:.1f} | {row['p95']:.1f} | "
            f"{row['p95'] / idle['p95']:.2f}x | {row['limited'] or '-'} |"
        )
    expected = 14 * args.calls + args.calls  # two authenticated scenarios and the flooder
    print(f"audit lines: {audit_lines} (calls made with auth: {expected})")


if __name__ == "__main__":
    main()
