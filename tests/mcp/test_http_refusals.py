"""What the HTTP server refuses before any tool runs: foreign Host/Origin on loopback, big bodies.

Real: ``agentkernel-kb serve --http ...`` processes (uvicorn) on 127.0.0.1 and 127.0.0.2,
with and without ``--auth-tokens``; requests sent with stdlib ``urllib`` and ``http.client``
(chunked bodies, forged ``Host`` and ``Origin`` headers, as a browser under DNS rebinding
sends them); the mcp SDK's own streamable-HTTP client for the right address; a counting
backend whose every operation appends to a file, so a refused request provably ran nothing,
and the real audit file. Nothing is mocked.
"""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import pytest

from tests.support import require_extra

require_extra("mcp", "mcp")

from tests.mcp import auth_support as a  # noqa: E402
from tests.mcp._session import call  # noqa: E402

TOKEN = "ak_" + "r" * 40
WRITE = {
    "jsonrpc": "2.0",
    "id": 3,
    "method": "tools/call",
    "params": {"name": "write_kb", "arguments": {"backend": "Notes", "text": "Planted\nby a page"}},
}


def _second_loopback_address() -> str:
    """127.0.0.2 where it can be bound (all of 127.0.0.0/8 is loopback on Linux)."""
    try:
        with socket.create_server(("127.0.0.2", 0)):
            return "127.0.0.2"
    except OSError:
        pytest.skip("127.0.0.2 cannot be bound on this machine")


def _serve(tmp_path: Path, http: str, *extra: str) -> Any:
    return a.serving(
        a.cli_command(
            "serve",
            "--factory",
            "tests.mcp.auth_support:counted",
            "--writable",
            "--http",
            http,
            "--audit",
            str(tmp_path / "audit.jsonl"),
            *extra,
        ),
        env={a.CALLS_ENV: str(tmp_path / "calls.txt")},
    )


def _audit(tmp_path: Path) -> list[dict[str, Any]]:
    path = tmp_path / "audit.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    return [json.loads(line) for line in lines]


def _token_table(tmp_path: Path) -> str:
    table = tmp_path / "tokens"
    table.write_text(a.token_line("alice", TOKEN) + "\n")
    return str(table)


@pytest.mark.parametrize("authenticated", [False, True], ids=["no-auth", "tokens"])
def test_a_rebound_name_is_refused_on_every_loopback_address(
    tmp_path: Path, authenticated: bool
) -> None:
    host = _second_loopback_address()
    extra = ("--auth-tokens", _token_table(tmp_path)) if authenticated else ()
    bearer = {"Authorization": f"Bearer {TOKEN}"} if authenticated else {}
    with _serve(tmp_path, f"{host}:0", *extra) as server:
        port = urlsplit(server.url).port
        own = f"{host}:{port}"
        forged = {
            "rebound Host": {"Host": f"evil.example:{port}"},
            "rebound Host, no port": {"Host": "evil.example"},
            "a name for another loopback address": {"Host": f"localhost:{port}"},
            "foreign Origin": {"Host": own, "Origin": "http://evil.example"},
            "foreign Origin on the loopback port": {
                "Host": own,
                "Origin": f"http://evil.example:{port}",
            },
            "sandboxed page (Origin null)": {"Host": own, "Origin": "null"},
        }
        refused = {
            name: a.post(server.url, body, {**headers, **bearer})[0]
            for name, headers in forged.items()
            for body in (a.INITIALIZE, WRITE)
        }
        same_origin = a.post(server.url, a.INITIALIZE, {"Origin": f"http://{own}", **bearer})

        async def real_client() -> tuple[str, bool]:
            async with a.session(server.url, TOKEN if authenticated else None) as opened:
                return await call(opened, "search_kb", backend="Notes", query="backups")

        answered = anyio.run(real_client)
    assert all(status in (421, 403) for status in refused.values()), refused
    assert same_origin[0] == 200 and b'"serverInfo"' in same_origin[2]
    assert answered[1] is False and "35 days" in answered[0]
    assert a.calls_made(tmp_path / "calls.txt") == ["search"]  # only the real client's call
    reasons = {r.get("reason") for r in _audit(tmp_path) if r.get("outcome") == "refused"}
    assert reasons == {"foreign host", "foreign origin"}


def test_a_host_name_that_only_starts_with_127_is_not_loopback(tmp_path: Path) -> None:
    done = subprocess.run(
        a.cli_command(
            "serve", "--factory", "tests.mcp.auth_support:counted", "--http", "127.evil.example:0"
        ),
        cwd=a.REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert "without authentication" in done.stderr


def _chunked_post(url: str, size: int, headers: dict[str, str]) -> tuple[int, bytes]:
    """POST a JSON-RPC call of about ``size`` bytes in 4 KiB chunks (no Content-Length)."""
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 9,
            "method": "tools/call",
            "params": {"name": "search_kb", "arguments": {"backend": "Notes", "query": "q" * size}},
        }
    ).encode()
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30)

    def chunks() -> Iterator[bytes]:
        for start in range(0, len(body), 4096):
            yield body[start : start + 4096]

    try:
        conn.request(
            "POST",
            parts.path,
            body=chunks(),
            headers={
                "content-type": "application/json",
                "accept": "application/json, text/event-stream",
                **headers,
            },
            encode_chunked=True,
        )
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


@pytest.mark.parametrize("authenticated", [False, True], ids=["no-auth", "tokens"])
def test_the_request_bound_holds_in_every_mode(tmp_path: Path, authenticated: bool) -> None:
    extra = ("--auth-tokens", _token_table(tmp_path)) if authenticated else ()
    bearer = {"Authorization": f"Bearer {TOKEN}"} if authenticated else {}
    big = dict(a.CALL)
    big["params"] = {
        "name": "search_kb",
        "arguments": {"backend": "Notes", "query": "q" * 120_000},
    }
    with _serve(tmp_path, "127.0.0.1:0", "--max-request-bytes", "4096", *extra) as server:
        with_length = a.post(server.url, big, bearer)
        chunked = _chunked_post(server.url, 120_000, bearer)
        # under the bound, a chunked body is read whole and served
        status, headers, _ = a.post(server.url, a.INITIALIZE, bearer)
        session = {k.lower(): v for k, v in headers.items()}["mcp-session-id"]
        small = _chunked_post(
            server.url,
            100,
            {**bearer, "mcp-session-id": session, "mcp-protocol-version": "2025-06-18"},
        )
    assert with_length[0] == 413 and b"larger than 4096 bytes" in with_length[2]
    assert chunked[0] == 413 and b"larger than 4096 bytes" in chunked[1]
    assert status == 200 and small[0] == 200
    assert a.calls_made(tmp_path / "calls.txt") == ["search"]  # only the small call ran
    limits = [r for r in _audit(tmp_path) if r.get("event") == "request"]
    identity = "alice" if authenticated else "anonymous"
    assert [(r["identity"], r["outcome"], r["reason"]) for r in limits] == [
        (identity, "limit", "too large")
    ] * 2
    assert "Traceback" not in "".join(server.lines)
