"""Both servers as an operator starts them: what they refuse, what they announce, alike.

Real: ``agentkernel-kb`` (``python -m agentkernel.cli``) and ``python -m agentkernel.mcp`` in
subprocesses, on the shared GA4 bundle (read in place) and an empty knowledge folder; the
mcp SDK's streamable-HTTP client lists the tools. The missing extra is a real failed import
(a ``sitecustomize`` on the child's path refuses ``mcp``). Nothing is mocked.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
import yaml

from tests.support import okf_bundle, require_extra

require_extra("mcp", "mcp")

from tests.cli.test_messages import _BLOCKER  # noqa: E402
from tests.mcp import auth_support as a  # noqa: E402
from tests.mcp._session import http_session, tools  # noqa: E402
from tests.support.fixtures_mcp import REPO  # noqa: E402

_STARTUP = re.compile(
    r"^Serving MCP 'knowledge' at http://127\.0\.0\.1:(\d+)/mcp \((.*); "
    r"authentication off \(loopback only\); audit: off\)$"
)


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        a.cli_command(*args),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        env=env or dict(os.environ),
    )


@pytest.mark.parametrize(
    "extra",
    [(), ("--no-auth",)],
    ids=["no-auth-option", "explicit-no-auth"],
)
def test_http_beyond_loopback_without_auth_refuses_and_says_how(extra: tuple[str, ...]) -> None:
    for command in (
        ("serve", str(okf_bundle("ga4")), "--http", "0.0.0.0:0", *extra),
        ("store", "serve", "/nonexistent-never-opened", "--http", "0.0.0.0:0", *extra),
    ):
        result = _run(*command)
        assert result.returncode == 2, result.stderr
        assert "Refusing to serve 0.0.0.0:0 without authentication" in result.stderr
        assert "--auth-tokens FILE" in result.stderr and "--auth-jwks" in result.stderr
        assert "Traceback" not in result.stderr


def test_http_options_without_http_are_refused(tmp_path: Path) -> None:
    result = _run("serve", str(okf_bundle("ga4")), "--auth-tokens", str(tmp_path / "t"))
    assert result.returncode == 2
    assert "--auth-tokens applies to HTTP: add --http HOST:PORT" in result.stderr


def test_both_servers_announce_alike_and_start_read_only(tmp_path: Path) -> None:
    knowledge = tmp_path / "knowledge"
    knowledge.mkdir()
    lines: dict[str, str] = {}
    listed: dict[str, list[str]] = {}
    commands = {
        "serve": ["serve", str(okf_bundle("ga4")), "--http", ":0"],
        "store": ["store", "serve", str(knowledge), "--http", ":0"],
        "store-writable": ["store", "serve", str(knowledge), "--http", ":0", "--writable"],
    }
    for name, command in commands.items():
        with a.serving(a.cli_command(*command)) as server:

            async def names(url: str = server.url) -> list[str]:
                async with http_session(url) as opened:
                    return list(await tools(opened))

            listed[name] = anyio.run(names)
            lines[name] = next(line for line in server.lines if line.startswith("Serving MCP"))
    for name, line in lines.items():
        assert _STARTUP.match(line.strip()), (name, line)
        assert int(_STARTUP.match(line.strip()).group(1)) > 0  # type: ignore[union-attr]
    assert "read-only: pass --writable to offer write_kb" in lines["serve"]
    assert "read-only: pass --writable to offer the edits" in lines["store"]
    assert "write_kb" not in listed["serve"]
    assert "knowledge_create" not in listed["store"] and "knowledge_read" in listed["store"]
    assert "knowledge_create" in listed["store-writable"]
    assert "; writable" in lines["store-writable"]


def test_a_config_startup_hint_names_no_refused_flag(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "okf": {
                    "databases": {
                        "ga4": {"type": "local", "uri": str(okf_bundle("ga4")), "consumer": ["A"]}
                    }
                }
            }
        )
    )
    with a.serving(a.cli_command("serve", "--config", str(config), "--http", ":0")) as server:
        line = next(line for line in server.lines if line.startswith("Serving MCP"))
    assert "--writable" not in line
    assert "--agent NAME serves that agent's role" in line
    refused = _run("serve", "--config", str(config), "--writable")
    assert refused.returncode == 2  # the flag the old hint suggested is still refused
    # with --agent the line names the agent's roles, not the --agent flag already given
    command = a.cli_command("serve", "--config", str(config), "--agent", "A", "--http", ":0")
    with a.serving(command) as server:
        line = next(line for line in server.lines if line.startswith("Serving MCP"))
    assert "read-only: A's roles grant no writes" in line and "--agent" not in line


def test_plain_http_beyond_loopback_with_tokens_is_served_with_a_warning(tmp_path: Path) -> None:
    table = tmp_path / "tokens"
    table.write_text(a.token_line("ops", "ak_" + "o" * 40))
    command = [
        sys.executable,
        "-m",
        "agentkernel.mcp",
        "--bundle",
        str(okf_bundle("ga4")),
        "--http",
        "0.0.0.0:0",
        "--auth-tokens",
        str(table),
    ]
    with a.serving(command) as server:
        status, _, _ = a.post(server.url.replace("0.0.0.0", "127.0.0.1"), a.INITIALIZE)
    stderr = "".join(server.lines)
    assert status == 401
    assert "serves plain HTTP on 0.0.0.0: tokens cross the network in clear" in stderr
    assert "authentication: tokens (1 identities)" in stderr


def test_version_and_help_without_the_mcp_extra(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(_BLOCKER)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH", "")]))
    env["AK_TEST_BLOCK"] = "mcp"
    version = _run("--version", env=env)
    assert version.returncode == 0 and re.match(r"agentkernel-kb \d+\.\d+", version.stdout)
    helped = _run("serve", "--help", env=env)
    assert helped.returncode == 0
    for option in ("--http", "--writable", "--config", "--auth-tokens", "--audit", "--tls-cert"):
        assert option in helped.stdout, option
    store_help = _run("store", "serve", "--help", env=env)
    assert "--http" in store_help.stdout and "--auth-jwks" in store_help.stdout
    refused = _run("serve", str(okf_bundle("ga4")), "--http", ":0", env=env)
    assert refused.returncode == 2
    assert refused.stderr.strip().endswith("pip install 'agentkernel[mcp]'")
    assert "unrecognized" not in refused.stderr


def test_the_store_trail_records_every_tool_over_stdio_retire_included(tmp_path: Path) -> None:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from tests.mcp._session import call

    knowledge = tmp_path / "knowledge"
    knowledge.mkdir()
    audit = tmp_path / "audit.jsonl"
    command = a.cli_command(
        "store", "serve", str(knowledge), "--writable", "--interactive", "--audit", str(audit)
    )
    params = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))

    async def run() -> list[tuple[str, bool]]:
        async with (
            stdio_client(params) as streams,
            ClientSession(streams[0], streams[1]) as opened,
        ):
            await opened.initialize()
            page = {"type": "concept", "title": "Bowline", "content": "A fixed loop knot."}
            return [
                await call(opened, "knowledge_create", pages=[page]),
                await call(opened, "knowledge_retire", page="concept/bowline", reason="old"),
                await call(opened, "knowledge_read", page="concept/bowline"),
            ]

    created, retired, read = anyio.run(run)
    records = [json.loads(line) for line in audit.read_text().splitlines()]
    assert [(r["identity"], r["tool"]) for r in records] == [
        ("local", "knowledge_create"),
        ("local", "knowledge_retire"),
        ("local", "knowledge_read"),
    ]
    assert records[1]["page"] == "concept/bowline"
    for record, (_, failed) in zip(records, (created, retired, read), strict=True):
        assert record["outcome"] == ("error" if failed else "ok"), record
    assert "fixed loop knot" not in audit.read_text()
