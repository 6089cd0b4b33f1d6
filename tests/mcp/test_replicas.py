"""Two server processes behind a real round-robin HAProxy, no affinity: every client works.

Real: two ``agentkernel-kb serve --config config.yaml --http 127.0.0.1:0 --auth-tokens FILE
--stateless`` processes (``python -m agentkernel.cli``) over copies of the shared GA4 and
crypto_bitcoin OKF bundles, each with its own audit file; Debian's HAProxy on 127.0.0.1 in front
of them (``balance roundrobin``, nothing sticky; tests/support/haproxy.py), naming the replica
that answered in a response header. The clients are the mcp SDK's streamable-HTTP client
exactly as docs/deployment.md shows it, raw ``urllib`` POSTs carrying one ``tools/call`` and no
session, and MCP Inspector's command line (the version the other tests install). Nothing is
mocked.
"""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import yaml

from tests.support import okf_bundle, require_extra
from tests.support.haproxy import REPLICA_HEADER, round_robin

require_extra("mcp", "mcp")

from mcp import ClientSession  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.shared._httpx_utils import create_mcp_http_client  # noqa: E402

from agentkernel.mcp._sdk import SDK_LINE  # noqa: E402
from tests.mcp import auth_support as a  # noqa: E402
from tests.mcp.test_auth_inspector import _inspector  # noqa: E402

# handshake-era revisions without a session, and the sessionless one where the SDK has it
VERSIONS = ("2025-03-26", "2025-06-18") + (("2026-07-28",) if SDK_LINE >= 2 else ())
TOKENS = {
    "reader": "ak_reader_" + "r" * 32,  # consumer of ga4
    "writer": "ak_writer_" + "w" * 32,  # producer of crypto, consumer of ga4
}


def _config(tmp_path: Path) -> Path:
    ga4 = shutil.copytree(okf_bundle("ga4"), tmp_path / "ga4")
    crypto = shutil.copytree(okf_bundle("crypto_bitcoin"), tmp_path / "crypto")
    config = {
        "okf": {
            "databases": {
                "ga4": {"type": "local", "uri": str(ga4), "consumer": ["reader", "writer"]},
                "crypto": {"type": "local", "uri": str(crypto), "producer": ["writer"]},
            }
        }
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    (tmp_path / "tokens").write_text(
        "\n".join(a.token_line(name, token) for name, token in TOKENS.items())
    )
    return path


@contextmanager
def _replicas(tmp_path: Path, count: int = 2) -> Iterator[tuple[str, list[Path]]]:
    """``count`` stateless replicas behind HAProxy: the proxy's URL and the audit files."""
    config = _config(tmp_path)
    audits = [tmp_path / f"audit-{index}.jsonl" for index in range(count)]
    with ExitStack() as stack:
        servers = [
            stack.enter_context(
                a.serving(
                    a.cli_command(
                        "serve",
                        "--config",
                        str(config),
                        "--http",
                        "127.0.0.1:0",
                        "--auth-tokens",
                        str(tmp_path / "tokens"),
                        "--audit",
                        str(audit),
                        "--stateless",
                    )
                )
            )
            for audit in audits
        ]
        assert all("stateless (no MCP sessions)" in "".join(s.lines) for s in servers)
        yield stack.enter_context(round_robin([s.url for s in servers])), audits


def _calls(audits: list[Path]) -> list[dict[str, Any]]:
    lines = [json.loads(line) for audit in audits for line in audit.read_text().splitlines()]
    return [line for line in lines if line["event"] == "call"]


def _text(result: Any) -> tuple[str, bool]:
    failed = getattr(result, "is_error", getattr(result, "isError", None))  # 2.x, 1.x
    return "\n".join(block.text for block in result.content), bool(failed)


async def _as_documented(url: str, token: str, replicas: list[str]) -> dict[str, Any]:
    """The SDK client as docs/deployment.md shows it, noting which replica answered each time."""

    async def note(response: httpx.Response) -> None:
        replicas.append(response.headers.get(REPLICA_HEADER, "?"))

    out: dict[str, Any] = {}
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        create_mcp_http_client(headers=headers) as http,
        streamable_http_client(url, http_client=http) as streams,
        ClientSession(streams[0], streams[1]) as session,
    ):
        http.event_hooks["response"].append(note)
        await session.initialize()
        out["tools"] = [tool.name for tool in (await session.list_tools()).tools]
        out["search"] = _text(
            await session.call_tool("search_kb", {"backend": "ga4", "query": "purchasers"})
        )
        out["fetch"] = _text(
            await session.call_tool(
                "fetch_kb", {"backend": "ga4", "ids": "references/metrics/purchasers"}
            )
        )
        out["write"] = _text(
            await session.call_tool(
                "write_kb", {"backend": "crypto", "text": "Halving\nThe next halving is in 2028."}
            )
        )
    return out


def test_the_sdk_client_works_when_consecutive_requests_land_on_different_replicas(
    tmp_path: Path,
) -> None:
    with _replicas(tmp_path) as (url, audits):
        answered: dict[str, list[str]] = {name: [] for name in TOKENS}

        async def run() -> dict[str, dict[str, Any]]:
            return {
                name: await _as_documented(url, token, answered[name])
                for name, token in TOKENS.items()
            }

        seen = anyio.run(run)

    for name in TOKENS:
        path = answered[name]
        assert set(path) == {"r1", "r2"}, path
        # round robin with nothing sticky: no two consecutive answers came from one replica
        assert all(first != second for first, second in itertools.pairwise(path)), path
        assert seen[name]["search"][1] is False and "purchasers" in seen[name]["search"][0].lower()
        assert seen[name]["fetch"][1] is False

    reader, writer = seen["reader"], seen["writer"]
    assert "write_kb" not in reader["tools"] and reader["write"][1] is True
    assert "write_kb" in writer["tools"]
    assert writer["write"] == ("Wrote 1 record(s) to 'crypto': ['generated/halving']", False)
    assert (tmp_path / "crypto" / "generated" / "halving.md").is_file()

    calls = _calls(audits)
    assert all(_calls([audit]) for audit in audits)  # both replicas served calls
    made = {name: 3 for name in TOKENS}  # search, fetch, write per identity
    assert {name: sum(c["identity"] == name for c in calls) for name in TOKENS} == made
    assert {(c["identity"], c["tool"], c["outcome"]) for c in calls if c["tool"] == "write_kb"} == {
        ("reader", "write_kb", "refused"),
        ("writer", "write_kb", "ok"),
    }


def _raw_call(url: str, token: str, ident: int, version: str) -> tuple[int, dict[str, str], Any]:
    body: dict[str, Any] = {
        "jsonrpc": "2.0",
        "id": ident,
        "method": "tools/call",
        "params": {"name": "search_kb", "arguments": {"backend": "ga4", "query": "sessions"}},
    }
    if version >= "2026":  # the sessionless revision: the envelope travels in each request
        body["params"]["_meta"] = {
            "io.modelcontextprotocol/protocolVersion": version,
            "io.modelcontextprotocol/clientCapabilities": {},
        }
    headers = {"Authorization": f"Bearer {token}", "mcp-protocol-version": version}
    if version >= "2026":
        headers.update({"mcp-method": "tools/call", "mcp-name": "search_kb"})
    status, answered, raw = a.post(url, body, headers)
    text = raw.decode()
    if "data:" in text:  # an SSE answer: the message is on its data line
        text = next(line[5:] for line in text.splitlines() if line.startswith("data:"))
    return status, {k.lower(): v for k, v in answered.items()}, json.loads(text)


def test_raw_stateless_requests_and_inspector_work_across_replicas(tmp_path: Path) -> None:
    inspector = _inspector()
    with _replicas(tmp_path) as (url, audits):
        raw = [
            _raw_call(url, TOKENS["reader"], ident, version)
            for ident in range(1, 11)
            for version in VERSIONS
        ]
        command = [inspector, "--cli", url, "--transport", "http", "--method", "tools/call"]
        command += ["--tool-name", "search_kb", "--tool-arg", "backend=ga4"]
        command += ["--tool-arg", "query=purchasers"]
        command += ["--header", f"Authorization: Bearer {TOKENS['writer']}"]
        inspected = [
            subprocess.run(
                command,
                capture_output=True,
                text=True,
                timeout=120,
            )
            for _ in range(3)
        ]
    for status, headers, message in raw:
        assert status == 200, message
        assert message["result"]["isError"] is False, message
        assert "mcp-session-id" not in headers
    assert {headers[REPLICA_HEADER] for _, headers, _ in raw} == {"r1", "r2"}
    for run in inspected:
        assert run.returncode == 0, run.stdout + run.stderr
        answer = json.loads(run.stdout)
        assert answer["isError"] is False and "purchasers" in answer["content"][0]["text"].lower()
    calls = _calls(audits)
    assert sum(c["identity"] == "reader" for c in calls) == len(raw)
    assert sum(c["identity"] == "writer" for c in calls) == len(inspected)
    assert all(_calls([audit]) for audit in audits)
