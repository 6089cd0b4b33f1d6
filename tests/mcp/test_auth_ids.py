"""JSON-RPC ids as the specification says, over stdio and over HTTP.

Real: ``python -m agentkernel.mcp`` over stdio (raw lines written to its stdin, answers read
from its stdout) and over streamable HTTP on 127.0.0.1 (raw POSTs with stdlib ``urllib``).
Nothing is mocked.
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from typing import Any

from tests.support import require_extra

require_extra("mcp", "mcp")

from tests.mcp import auth_support as a  # noqa: E402
from tests.support.fixtures_mcp import REPO  # noqa: E402

BAD_IDS = ['{"a": 1}', "[1]", "1.5", "true", "9" * 5000]


def _line(ident: str, method: str = "tools/list") -> str:
    return f'{{"jsonrpc": "2.0", "id": {ident}, "method": "{method}"}}'


def test_bad_ids_over_stdio_are_answered_and_good_ones_still_served() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentkernel.mcp", "--factory", "tests.mcp.factories:search_only"],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(json.dumps(a.INITIALIZE) + "\n")
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 1
        proc.stdin.write('{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        answers: list[dict[str, Any]] = []
        for ident in BAD_IDS:
            proc.stdin.write(_line(ident) + "\n")
            proc.stdin.flush()
            answers.append(json.loads(proc.stdout.readline()))
        proc.stdin.write(_line('"after"') + "\n")
        proc.stdin.flush()
        after = json.loads(proc.stdout.readline())
    finally:
        proc.kill()
        proc.wait()
    for ident, answer in zip(BAD_IDS, answers, strict=True):
        assert answer.get("id") is None and answer["error"]["code"] == -32600, ident  # 1.x omits it
        assert "Nothing was run" in answer["error"]["message"]
        assert "UTF-8" not in answer["error"]["message"]
    assert after["id"] == "after" and after["result"]["tools"]


def test_bad_ids_over_http_are_answered(mcp_http_server: Any) -> None:
    url = mcp_http_server("--factory", "tests.mcp.factories:search_only")
    for ident in BAD_IDS:
        raw = urllib.request.Request(
            url,
            data=_line(ident).encode(),
            method="POST",
            headers={
                "content-type": "application/json",
                "accept": "application/json, text/event-stream",
            },
        )
        try:
            with urllib.request.urlopen(raw, timeout=30) as response:
                status, body = response.status, response.read()
        except urllib.error.HTTPError as exc:
            status, body = exc.code, exc.read()
        answer = json.loads(body)
        assert status == 400, ident[:20]
        assert answer["id"] is None and answer["error"]["code"] == -32600, ident[:20]
