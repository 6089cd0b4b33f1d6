"""Curated stores in config.yaml, beside a bundle, under one server: the OKF roles apply to them.

Real: ``agentkernel-kb serve --config config.yaml --http 127.0.0.1:0 --auth-tokens FILE --audit
FILE`` and ``agentkernel-kb store serve s3://...`` processes (``python -m agentkernel.cli``,
started in a scratch working directory), a curated store on the moto S3 API server of
tests/support/fixtures_s3.py (reached through ``AWS_ENDPOINT_URL``, as boto3 reads it), another
in a SQLite file, a copy of the shared GA4 OKF bundle, and the mcp SDK's streamable-HTTP client
with each identity's bearer token. The bucket is read back with boto3. Nothing is mocked.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import anyio
import yaml

from tests.support import okf_bundle, require_extra

require_extra("mcp", "mcp")
require_extra("boto3", "aws")

from tests.mcp import auth_support as a  # noqa: E402
from tests.mcp._session import call, tools  # noqa: E402

TOKENS = {
    "reader": "ak_reader_" + "r" * 32,  # consumer of ga4 and of the team store
    "writer": "ak_writer_" + "w" * 32,  # producer of the team store
    "steward": "ak_steward_" + "s" * 32,  # curator of the team store
    "archivist": "ak_archivist_" + "a" * 32,  # consumer of the SQLite store
}
READS = ["knowledge_index", "knowledge_search", "knowledge_read"]
WRITES = [
    "knowledge_create",
    "knowledge_edit",
    "knowledge_rewrite",
    "knowledge_supersede",
    "knowledge_log",
]
PAGE = {"type": "concept", "slug": "tides", "title": "Tides", "content": "Water rises twice a day."}


def _knowledge(names: list[str]) -> set[str]:
    return {name for name in names if name.startswith("knowledge_")}


def _config(tmp_path: Path, bucket: str) -> Path:
    ga4 = shutil.copytree(okf_bundle("ga4"), tmp_path / "ga4")
    config = {
        "okf": {
            "databases": {
                "ga4": {"type": "local", "uri": str(ga4), "consumer": ["reader"]},
            },
            "stores": {
                "team": {
                    "uri": f"s3://{bucket}/team/knowledge",
                    "description": "What the team learned",
                    "consumer": ["reader"],
                    "producer": ["writer"],
                    "curator": ["steward"],
                },
                "archive": {"uri": "sqlite:///" + str(tmp_path / "archive.sqlite")},
            },
        }
    }
    config["okf"]["stores"]["archive"]["consumer"] = ["archivist"]  # type: ignore[index]
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    (tmp_path / "tokens").write_text(
        "\n".join(a.token_line(name, token) for name, token in TOKENS.items())
    )
    return path


def test_one_config_serves_a_bundle_and_stores_with_each_identitys_role(
    tmp_path: Path, s3_endpoint: str, s3_bucket: str, s3_client: Any
) -> None:
    config = _config(tmp_path, s3_bucket)
    audit = tmp_path / "audit.jsonl"
    command = a.cli_command(
        "serve", "--config", str(config), "--http", "127.0.0.1:0",
        "--auth-tokens", str(tmp_path / "tokens"), "--audit", str(audit),
    )  # fmt: skip
    work = tmp_path / "work"
    work.mkdir()
    with a.serving(command, env={"AWS_ENDPOINT_URL": s3_endpoint}, cwd=work) as server:

        async def run() -> dict[str, dict[str, Any]]:
            seen: dict[str, dict[str, Any]] = {}
            for name in ("writer", "reader", "steward", "archivist"):
                out: dict[str, Any] = {}
                async with a.session(server.url, TOKENS[name]) as opened:
                    out["tools"] = list(await tools(opened))
                    out["create"] = await call(opened, "knowledge_create", **PAGE)
                    out["search"] = await call(opened, "knowledge_search", query="twice")
                    if name == "reader":
                        out["ga4"] = await call(opened, "search_kb", backend="ga4", query="users")
                    if name == "steward":
                        out["check"] = await call(opened, "knowledge_check")
                        out["retire"] = await call(
                            opened, "knowledge_retire", page="concept/tides", reason="wrong"
                        )
                seen[name] = out
            return seen

        seen = anyio.run(run)
    startup = "".join(server.lines)
    assert "3 databases; each caller gets its agent's role" in startup

    reader, writer, steward, archivist = (seen[n] for n in TOKENS)
    assert _knowledge(writer["tools"]) == set(READS + WRITES)
    assert "write_kb" not in writer["tools"] and "search_kb" not in writer["tools"]
    assert writer["create"] == ("Created concept/tides.", False)
    # the page is in the bucket, under the configured prefix; nothing was written locally
    key = "team/knowledge/concepts/tides.md"
    body = s3_client.get_object(Bucket=s3_bucket, Key=key)["Body"].read().decode()
    assert "Water rises twice a day." in body
    assert list(work.iterdir()) == []

    assert _knowledge(reader["tools"]) == set(READS)
    assert "search_kb" in reader["tools"] and "write_kb" not in reader["tools"]
    assert reader["create"][1] is True  # a consumer has no knowledge_create
    assert "concept/tides" in reader["search"][0] and reader["search"][1] is False
    assert reader["ga4"][1] is False

    assert _knowledge(steward["tools"]) == {*READS, *WRITES, "knowledge_retire", "knowledge_check"}
    assert steward["check"][1] is False
    # the SDK client here declares no elicitation: retire asks nobody and refuses
    assert steward["retire"][1] is True
    assert "concept/tides" in reader["search"][0]

    assert _knowledge(archivist["tools"]) == set(READS)
    assert "concept/tides" not in archivist["search"][0]  # another store: its own pages

    records = [json.loads(line) for line in audit.read_text().splitlines()]
    calls = [r for r in records if r["event"] == "call"]
    assert {r["identity"] for r in calls} == set(TOKENS)
    created = [(r["identity"], r["outcome"]) for r in calls if r["tool"] == "knowledge_create"]
    assert sorted(created) == [
        ("archivist", "refused"),
        ("reader", "refused"),
        ("steward", "ok"),  # the same page again: a retried create counts as done
        ("writer", "ok"),
    ]
    retired = s3_client.get_object(Bucket=s3_bucket, Key=key)["Body"].read().decode()
    assert retired == body  # refused: nothing changed


def test_store_serve_reaches_s3(
    tmp_path: Path, s3_endpoint: str, s3_bucket: str, s3_client: Any
) -> None:
    command = a.cli_command(
        "store", "serve", f"s3://{s3_bucket}/team/knowledge", "--writable", "--http", "127.0.0.1:0"
    )
    with a.serving(command, env={"AWS_ENDPOINT_URL": s3_endpoint}, cwd=tmp_path) as server:

        async def run() -> tuple[str, bool]:
            async with a.session(server.url) as opened:
                return await call(opened, "knowledge_create", **PAGE)

        created = anyio.run(run)
    assert f"over the S3 prefix s3://{s3_bucket}/team/knowledge; writable" in "".join(server.lines)
    assert created == ("Created concept/tides.", False)
    listed = s3_client.list_objects_v2(Bucket=s3_bucket, Prefix="team/knowledge/")
    assert "team/knowledge/concepts/tides.md" in {item["Key"] for item in listed["Contents"]}
    assert list(tmp_path.iterdir()) == []  # no local folder named 's3:'


def test_a_stateless_server_retires_nothing_it_cannot_ask_about(tmp_path: Path) -> None:
    """Stateless, the server cannot ask mid-call: a curator's retire refuses, never hangs."""
    import mcp.types as types
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    knowledge = tmp_path / "knowledge"
    config = tmp_path / "config.yaml"
    store = {"uri": str(knowledge), "producer": ["writer"], "curator": ["steward"]}
    config.write_text(yaml.safe_dump({"okf": {"stores": {"team": store}}}))
    (tmp_path / "tokens").write_text(
        "\n".join(a.token_line(n, TOKENS[n]) for n in ("writer", "steward"))
    )
    command = a.cli_command(
        "serve", "--config", str(config), "--http", "127.0.0.1:0", "--stateless",
        "--auth-tokens", str(tmp_path / "tokens"),
    )  # fmt: skip
    asked: list[str] = []

    async def yes(context: Any, params: Any) -> Any:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"retire": True})

    with a.serving(command, cwd=tmp_path) as server:

        async def run() -> tuple[str, bool]:
            async with a.session(server.url, TOKENS["writer"]) as opened:
                assert (await call(opened, "knowledge_create", **PAGE))[1] is False
            headers = {"Authorization": f"Bearer {TOKENS['steward']}"}
            async with (
                create_mcp_http_client(headers=headers) as http,
                streamable_http_client(server.url, http_client=http) as streams,
                ClientSession(streams[0], streams[1], elicitation_callback=yes) as session,
            ):
                await session.initialize()
                with anyio.fail_after(60):
                    result = await session.call_tool(
                        "knowledge_retire", {"page": "concept/tides", "reason": "wrong"}
                    )
                text = "\n".join(getattr(b, "text", "") for b in result.content)
                return text, bool(getattr(result, "is_error", getattr(result, "isError", None)))

        text, failed = anyio.run(run)
    assert failed is True, text
    page = (knowledge / "concepts" / "tides.md").read_text()
    assert "retired" not in page.lower(), page  # still active: nothing was retired


def test_an_agent_of_a_store_over_stdio_gets_its_role_and_retire_asks_the_person(
    tmp_path: Path,
) -> None:
    """``serve --config --agent NAME`` on stdio: the curator's tools, and retire after a yes."""
    import os
    import sys

    import mcp.types as types
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    knowledge = tmp_path / "knowledge"
    config = tmp_path / "config.yaml"
    store = {"uri": str(knowledge), "producer": ["writer"], "curator": ["steward"]}
    config.write_text(yaml.safe_dump({"okf": {"stores": {"team": store}}}))
    asked: list[str] = []

    async def yes(context: Any, params: Any) -> Any:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"retire": True})

    def params(agent: str) -> StdioServerParameters:
        return StdioServerParameters(
            command=sys.executable,
            args=["-m", "agentkernel.cli", "serve", "--config", str(config), "--agent", agent],
            cwd=str(tmp_path),
            env=dict(os.environ),
        )

    async def run() -> dict[str, Any]:
        out: dict[str, Any] = {}
        for agent in ("writer", "steward"):
            async with (
                stdio_client(params(agent)) as (read, write),
                ClientSession(read, write, elicitation_callback=yes) as session,
            ):
                await session.initialize()
                out[agent] = [tool.name for tool in (await session.list_tools()).tools]
                if agent == "writer":
                    created = await session.call_tool("knowledge_create", PAGE)
                    out["created"] = bool(
                        getattr(created, "is_error", getattr(created, "isError", None))
                    )
                else:
                    retired = await session.call_tool(
                        "knowledge_retire", {"page": "concept/tides", "reason": "wrong"}
                    )
                    out["retired"] = "\n".join(getattr(b, "text", "") for b in retired.content)
        return out

    seen = anyio.run(run)
    assert _knowledge(seen["writer"]) == set(READS + WRITES)
    assert _knowledge(seen["steward"]) == {*READS, *WRITES, "knowledge_retire", "knowledge_check"}
    assert seen["created"] is False
    assert len(asked) == 1 and "concept/tides" in asked[0]
    assert seen["retired"].startswith("Retired concept/tides."), seen["retired"]


def test_serving_every_database_without_an_agent_says_the_stores_are_left_out(
    tmp_path: Path,
) -> None:
    config = tmp_path / "config.yaml"
    ga4 = shutil.copytree(okf_bundle("ga4"), tmp_path / "ga4")
    okf = {
        "databases": {"ga4": {"type": "local", "uri": str(ga4), "consumer": ["reader"]}},
        "stores": {"team": {"uri": str(tmp_path / "knowledge"), "producer": ["writer"]}},
    }
    config.write_text(yaml.safe_dump({"okf": okf}))
    command = a.cli_command("serve", "--config", str(config), "--http", "127.0.0.1:0")
    with a.serving(command, cwd=tmp_path) as server:
        names = anyio.run(_names, server.url)
    assert "search_kb" in names and not _knowledge(names)
    said = "".join(server.lines)
    assert "the curated stores ['team']" in said and "give --agent NAME" in said


async def _names(url: str) -> list[str]:
    async with a.session(url) as opened:
        return list(await tools(opened))
