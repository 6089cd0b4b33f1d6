"""A client on the mcp 1.x SDK line (crewai pins ``mcp<2``) against our server.

Real: the client runs in a separate virtualenv holding ``mcp>=1.30,<2`` (made by
``tests/support/prepare.d/40-mcp1-client.sh`` under ``$AK_PREP_DIR``), speaking to a
``python -m agentkernel.mcp`` process of this environment over stdio and over streamable HTTP.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support import missing, require_extra
from tests.support.fixtures_mcp import REPO

require_extra("mcp", "mcp")

CLIENT = Path(__file__).with_name("cross_line_client.py")
FACTORY = "tests.mcp.factories:search_only"


@pytest.fixture(scope="module")
def mcp1_python() -> str:
    prep = os.environ.get("AK_PREP_DIR")
    python = Path(prep or "/nonexistent") / "mcp1-client" / "bin" / "python"
    if not python.is_file():
        missing("the mcp 1.x client venv", "run tests/support/prepare.d/40-mcp1-client.sh")
    return str(python)


def run_client(python: str, *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [python, str(CLIENT), *args], capture_output=True, text=True, timeout=300, cwd=REPO
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


def check(seen: dict[str, Any]) -> None:
    assert seen["client_sdk"].startswith("1.")
    names = [tool["name"] for tool in seen["tools"]]
    assert names == ["get_schemas", "read_kb", "write_kb", "get_all_kb_descriptions", "search_kb"]
    search = next(tool for tool in seen["tools"] if tool["name"] == "search_kb")
    assert search["annotations"]["readOnlyHint"] is True
    assert search["inputSchema"]["properties"]["limit"]["default"] == 3
    assert seen["search"]["isError"] is False
    assert "kept for 35 days" in seen["search"]["content"][0]["text"]
    assert seen["error"]["isError"] is True
    assert seen["error"]["content"][0]["text"].startswith("Unknown backend 'Nowhere'")


def test_an_mcp1_client_over_stdio(mcp1_python: str) -> None:
    check(run_client(mcp1_python, "stdio", sys.executable, str(REPO), FACTORY))


def test_an_mcp1_client_over_http(mcp1_python: str, mcp_http_server: Callable[..., str]) -> None:
    url = mcp_http_server("--factory", FACTORY, "--writable")
    check(run_client(mcp1_python, "http", url))
