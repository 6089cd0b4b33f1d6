"""One knowledge service a team runs (#37): a /metrics scrape, and replicas behind a proxy.

Two measurements, each on real processes bound to 127.0.0.1:

- ``metrics``: ``agentkernel-kb serve BUNDLE --http :0`` over a 10,000-concept OKF bundle (the
  Debian corpus of bench/README.md, ``--bundle``), once ``/readyz`` says ready and after some
  calls: the time of a ``GET /metrics`` scrape (parsed with prometheus_client's parser once),
  next to a ``GET /healthz`` on the same keep-alive connection (the HTTP floor). Target: a
  scrape under 5 ms.
- ``replicas``: two ``serve --config ... --auth-tokens ... --stateless`` processes, each with its
  own audit file, behind Debian's HAProxy (round robin, nothing sticky; tests/support/haproxy.py)
  and four identities at once: two mcp SDK clients exactly as docs/deployment.md shows them and
  two raw ``tools/call`` POSTs without a session; a consumer and a producer of each kind. Every
  tenth call of each is a write (the consumers' must be refused, the producers' must land).
  Target: 1,000 calls, 0 errors, every role honoured, one audit line per call across the
  replicas' audit files.

``python bench/serve_bench.py [--calls 1000] [--scrapes 200] [--bundle DIR]``. The machine is
shared and noisy: read the scrape against the floor, not as an absolute.
"""

from __future__ import annotations

import argparse
import http.client
import json
import shutil
import socket
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx
import yaml
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.mcp import auth_support as a  # noqa: E402
from tests.support.haproxy import round_robin  # noqa: E402

SHARED = REPO.parent / "shared" / "data" / "okf-bundles"
DEBIAN = Path("/work/helpers/benchdata/debian-10000-s20260530-v1/bundle")
TOKENS = {
    "sdk_reader": "ak_sdk_reader_" + "a" * 32,
    "sdk_writer": "ak_sdk_writer_" + "b" * 32,
    "raw_reader": "ak_raw_reader_" + "c" * 32,
    "raw_writer": "ak_raw_writer_" + "d" * 32,
}
WRITERS = {"sdk_writer", "raw_writer"}
QUERIES = ["purchasers", "sessions", "revenue", "engagement rate", "bounce", "events"]


def _ms(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return statistics.median(ordered) * 1000, ordered[int(len(ordered) * 0.95) - 1] * 1000


def _get(connection: http.client.HTTPConnection, path: str) -> tuple[int, bytes, float]:
    started = time.perf_counter()
    connection.request("GET", path)
    response = connection.getresponse()
    body = response.read()
    return response.status, body, time.perf_counter() - started


def metrics(bundle: Path, scrapes: int) -> dict[str, Any]:
    """Scrape /metrics of a server over ``bundle``; the scrape's and /healthz's times."""
    from prometheus_client.parser import text_string_to_metric_families

    command = a.cli_command("serve", str(bundle), "--http", "127.0.0.1:0")
    with a.serving(command, timeout=900) as server:
        base = urlsplit(server.url)
        connection = http.client.HTTPConnection(base.hostname or "", base.port, timeout=600)
        connection.connect()
        # without it, delayed ACKs add ~40 ms to every request alike and hide the scrape
        connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while _get(connection, "/readyz")[0] != 200:
            time.sleep(0.5)

        async def calls() -> None:
            async with a.session(server.url) as opened:
                for query in QUERIES * 5:
                    await opened.call_tool(
                        "search_kb", {"backend": bundle.name, "query": query, "limit": 5}
                    )

        anyio.run(calls)
        scraped, floor = [], []
        body = b""
        for _ in range(scrapes):
            status, body, took = _get(connection, "/metrics")
            assert status == 200
            scraped.append(took)
            floor.append(_get(connection, "/healthz")[2])
        families = list(text_string_to_metric_families(body.decode()))
        concepts = _get(connection, "/readyz")[1].decode()
        connection.close()
    return {
        "scrape": _ms(scraped),
        "healthz": _ms(floor),
        "families": len(families),
        "bytes": len(body),
        "readyz": concepts.strip(),
    }


def _config(folder: Path) -> Path:
    ga4 = shutil.copytree(SHARED / "ga4", folder / "ga4")
    notes = folder / "notes"
    notes.mkdir()
    (notes / "index.md").write_text("# Notes\n")
    config = {
        "okf": {
            "databases": {
                "ga4": {"type": "local", "uri": str(ga4), "consumer": list(TOKENS)},
                "notes": {
                    "type": "local",
                    "uri": str(notes),
                    "producer": sorted(WRITERS),
                    "consumer": sorted(set(TOKENS) - WRITERS),
                },
            }
        }
    }
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    (folder / "tokens").write_text("\n".join(a.token_line(n, t) for n, t in TOKENS.items()))
    return path


def _arguments(name: str, index: int) -> tuple[str, dict[str, Any]]:
    if index % 10 == 9:
        text = f"Note {index} by {name}\nWritten in call {index}."
        return "write_kb", {"backend": "notes", "text": text}
    return "search_kb", {"backend": "ga4", "query": QUERIES[index % len(QUERIES)]}


def _judge(name: str, tool: str, text: str, failed: bool) -> str:
    """``ok``, ``honoured`` (a refusal the role demands) or ``error`` (anything unexpected)."""
    if tool == "write_kb" and name not in WRITERS:
        # a consumer everywhere is offered no write_kb at all: the call is refused by name
        refused = "Unknown tool 'write_kb'" in text or "read-only access to 'notes'" in text
        return "honoured" if failed and refused else "error"
    if failed:
        return "error"
    if tool == "write_kb":
        return "ok" if text.startswith("Wrote 1 record(s) to 'notes'") else "error"
    return "ok"


async def _sdk(url: str, name: str, calls: int, outcomes: Counter[str]) -> None:
    headers = {"Authorization": f"Bearer {TOKENS[name]}"}
    async with (
        create_mcp_http_client(headers=headers) as http,
        streamable_http_client(url, http_client=http) as streams,
        ClientSession(streams[0], streams[1]) as session,
    ):
        await session.initialize()
        for index in range(calls):
            tool, arguments = _arguments(name, index)
            try:
                result = await session.call_tool(tool, arguments)
                text = "\n".join(getattr(b, "text", "") for b in result.content)
                outcomes[_judge(name, tool, text, bool(result.is_error))] += 1
            except Exception:
                outcomes["error"] += 1


async def _raw(url: str, name: str, calls: int, outcomes: Counter[str]) -> None:
    headers = {
        "Authorization": f"Bearer {TOKENS[name]}",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2025-11-25",
    }
    async with httpx.AsyncClient(headers=headers, timeout=120) as client:
        for index in range(calls):
            tool, arguments = _arguments(name, index)
            body = {
                "jsonrpc": "2.0",
                "id": index + 1,
                "method": "tools/call",
                "params": {"name": tool, "arguments": arguments},
            }
            try:
                response = await client.post(url, json=body)
                text = response.text
                if "data:" in text:
                    text = next(x[5:] for x in text.splitlines() if x.startswith("data:"))
                result = json.loads(text)["result"]
                said = "\n".join(block.get("text", "") for block in result["content"])
                outcomes[_judge(name, tool, said, bool(result.get("isError")))] += 1
            except Exception:
                outcomes["error"] += 1


def replicas(calls: int) -> dict[str, Any]:
    """Four identities, ``calls`` calls in all, through HAProxy to two stateless replicas."""
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        config = _config(folder)
        audits = [folder / "audit-1.jsonl", folder / "audit-2.jsonl"]
        commands = [
            a.cli_command(
                "serve", "--config", str(config), "--http", "127.0.0.1:0", "--stateless",
                "--auth-tokens", str(folder / "tokens"), "--audit", str(audit),
            )
            for audit in audits
        ]  # fmt: skip
        with (
            a.serving(commands[0]) as first,
            a.serving(commands[1]) as second,
            round_robin([first.url, second.url]) as url,
        ):
            outcomes: Counter[str] = Counter()
            each = calls // len(TOKENS)
            started = time.perf_counter()

            async def run() -> None:
                async with anyio.create_task_group() as group:
                    for name in TOKENS:
                        kind = _sdk if name.startswith("sdk") else _raw
                        group.start_soon(kind, url, name, each, outcomes)

            anyio.run(run)
            elapsed = time.perf_counter() - started
        lines = [
            json.loads(line)
            for audit in audits
            for line in audit.read_text().splitlines()
            if '"event":"call"' in line
        ]
        written = sorted((folder / "notes" / "generated").glob("*.md"))
        per_replica = [len(audit.read_text().splitlines()) for audit in audits]
    return {
        "calls": each * len(TOKENS),
        "outcomes": dict(outcomes),
        "audit_lines": len(lines),
        "per_replica": per_replica,
        "written": len(written),
        "seconds": elapsed,
    }


def main() -> int:
    """Run both measurements and print their tables; 1 when a target fails."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--scrapes", type=int, default=200)
    parser.add_argument("--bundle", type=Path, default=DEBIAN)
    parser.add_argument("--only", choices=("metrics", "replicas"), default=None)
    args = parser.parse_args()
    failed = False
    if args.only in (None, "metrics"):
        found = metrics(args.bundle, args.scrapes)
        p50, p95 = found["scrape"]
        floor50, floor95 = found["healthz"]
        verdict = "PASS" if p50 < 5 else "FAIL"
        failed |= verdict == "FAIL"
        print(f"\n/metrics at {args.bundle} ({found['readyz']})")
        print("| request | p50 ms | p95 ms |")
        print("|---|---|---|")
        print(f"| GET /healthz (floor) | {floor50:.2f} | {floor95:.2f} |")
        print(f"| GET /metrics | {p50:.2f} | {p95:.2f} |")
        print(
            f"scrape/floor p50 {p50 / floor50:.2f}x; {found['families']} families, "
            f"{found['bytes']} bytes; target p50 < 5 ms: {verdict}"
        )
    if args.only in (None, "replicas"):
        found = replicas(args.calls)
        outcomes = found["outcomes"]
        errors = outcomes.get("error", 0)
        honoured = outcomes.get("honoured", 0)
        expected_refusals = sum(
            1 for name in TOKENS if name not in WRITERS for i in range(found["calls"] // 4)
            if i % 10 == 9
        )  # fmt: skip
        verdict = (
            "PASS"
            if errors == 0
            and honoured == expected_refusals
            and found["audit_lines"] == found["calls"]
            and all(found["per_replica"])
            else "FAIL"
        )
        failed |= verdict == "FAIL"
        print("\n2 stateless replicas behind HAProxy (round robin), 4 identities")
        print(
            "| calls | ok | refused as the role demands | errors | audit lines (r1+r2) | writes |"
        )
        print("|---|---|---|---|---|---|")
        print(
            f"| {found['calls']} | {outcomes.get('ok', 0)} | {honoured}/{expected_refusals} | "
            f"{errors} | {found['audit_lines']} ({'+'.join(map(str, found['per_replica']))}) | "
            f"{found['written']} |"
        )
        print(f"{found['seconds']:.1f} s in all; target: {verdict}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
