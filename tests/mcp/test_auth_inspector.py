"""MCP Inspector's command-line client against the authenticated HTTP server.

Real: MCP Inspector (npm ``@modelcontextprotocol/inspector``, ``--cli`` mode, installed by
``tests/support/prepare.d/50-mcp-inspector.sh`` under ``$AK_PREP_DIR``; ``AK_INSPECTOR`` may
name another copy) run with and without ``--header "Authorization: Bearer ..."`` against a
``python -m agentkernel.mcp --http 127.0.0.1:0`` process with ``--auth-tokens`` and
``--auth-jwks``; the counting backend proves what ran. Nothing is mocked.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from tests.support import missing, require_extra

require_extra("mcp", "mcp")

from tests.mcp import auth_support as a  # noqa: E402
from tests.mcp.test_auth_http import _bad_tokens, _server, keyed  # noqa: E402, F401


def _inspector() -> str:
    named = os.environ.get("AK_INSPECTOR")
    prep = os.environ.get("AK_PREP_DIR", "")
    found = named or str(Path(prep) / "mcp-inspector" / "node_modules" / ".bin" / "mcp-inspector")
    if not (Path(found).is_file() and shutil.which("node")):
        missing(
            "MCP Inspector's CLI",
            "run tests/support/prepare.d/50-mcp-inspector.sh (npm install into $AK_PREP_DIR)",
        )
    return found


def _header(value: str | None) -> str | None:
    return None if value is None else f"Authorization: {value}"


def _inspect(url: str, header: str | None, *method: str) -> subprocess.CompletedProcess[str]:
    command = [_inspector(), "--cli", url, "--transport", "http", "--method", *method]
    if header is not None:
        command += ["--header", header]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def test_inspector_with_and_without_authorization(keyed: dict[str, Any]) -> None:  # noqa: F811
    _inspector()
    with _server(keyed) as server:
        bad = _bad_tokens(keyed, server.url)
        refused = {
            name: _inspect(server.url, _header(bad[name]), "tools/list")
            for name in ("missing", "wrong opaque", "expired", "alg none", "HS/RS confusion")
        }
        refused_call = _inspect(
            server.url,
            None,
            "tools/call",
            "--tool-name",
            "search_kb",
            "--tool-arg",
            "backend=Notes",
            "--tool-arg",
            "query=backups",
        )
        header = f"Authorization: Bearer {keyed['opaque']}"
        listed = _inspect(server.url, header, "tools/list")
        called = _inspect(
            server.url,
            header,
            "tools/call",
            "--tool-name",
            "search_kb",
            "--tool-arg",
            "backend=Notes",
            "--tool-arg",
            "query=backups",
        )
    for name, result in {**refused, "call": refused_call}.items():
        assert result.returncode != 0, name
        said = result.stdout + result.stderr
        assert "Authentication required" in said or "401" in said, (name, said[-500:])
    assert listed.returncode == 0, listed.stderr[-1000:]
    names = [tool["name"] for tool in json.loads(listed.stdout)["tools"]]
    assert "search_kb" in names and "write_kb" in names
    assert called.returncode == 0, called.stderr[-1000:]
    answer = json.loads(called.stdout)
    assert answer["isError"] is False and "35 days" in answer["content"][0]["text"]
    assert a.calls_made(keyed["calls"]) == ["search"]  # only the authorized call ran
    trail = keyed["audit"].read_text()
    assert keyed["opaque"] not in trail
    assert sum(1 for line in trail.splitlines() if json.loads(line)["event"] == "auth") >= 6
