"""27 sessions of three identities at once on one authenticated server: nothing crosses over.

Real: one ``agentkernel-kb serve --config config.yaml --http 127.0.0.1:0 --auth-tokens FILE``
process (``python -m agentkernel.cli``) over copies of the shared GA4 and crypto_bitcoin OKF
bundles, spoken to by 27 concurrent sessions of the mcp SDK's streamable-HTTP client (nine per
identity: a consumer, a producer and a curator, each of its own database), started and driven
together in one anyio task group; the session hijack attempts are plain HTTP POSTs with
another identity's bearer token; the audit trail is read back from its file. Nothing is mocked.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import yaml

from tests.support import okf_bundle, require_extra

require_extra("mcp", "mcp")

from mcp import ClientSession  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.shared._httpx_utils import create_mcp_http_client  # noqa: E402

from tests.mcp import auth_support as a  # noqa: E402
from tests.mcp._session import call, tools  # noqa: E402

PER_IDENTITY = 9
TOKENS = {
    "Reader": "ak_reader_" + "r" * 32,  # consumer of ga4
    "Ingest": "ak_ingest_" + "i" * 32,  # producer of crypto
    "Keeper": "ak_keeper_" + "k" * 32,  # curator of archive
}
DATABASE = {"Reader": "ga4", "Ingest": "crypto", "Keeper": "archive"}
READ_TOOLS = {
    "get_schemas",
    "read_kb",
    "get_all_kb_descriptions",
    "search_kb",
    "fetch_kb",
    "browse_kb",
}
EXPECTED_TOOLS = {
    "Reader": READ_TOOLS,
    "Ingest": READ_TOOLS | {"write_kb"},
    "Keeper": READ_TOOLS | {"write_kb"},
}


def _config(tmp_path: Path) -> Path:
    ga4 = shutil.copytree(okf_bundle("ga4"), tmp_path / "ga4")
    crypto = shutil.copytree(okf_bundle("crypto_bitcoin"), tmp_path / "crypto")
    archive = shutil.copytree(okf_bundle("crypto_bitcoin"), tmp_path / "archive")
    config = {
        "okf": {
            "databases": {
                "ga4": {"type": "local", "uri": str(ga4), "consumer": ["Reader"]},
                "crypto": {"type": "local", "uri": str(crypto), "producer": ["Ingest"]},
                "archive": {"type": "local", "uri": str(archive), "curator": ["Keeper"]},
            }
        }
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    (tmp_path / "tokens").write_text(
        "\n".join(a.token_line(name, token) for name, token in TOKENS.items())
    )
    return path


@asynccontextmanager
async def _opened(url: str, token: str) -> AsyncIterator[tuple[ClientSession, str]]:
    """An initialized SDK session with ``token``, and the Mcp-Session-Id the server gave it."""
    given: list[str] = []

    async def note_session_id(response: httpx.Response) -> None:
        if "mcp-session-id" in response.headers:
            given.append(response.headers["mcp-session-id"])

    client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    client.event_hooks["response"].append(note_session_id)  # the id, as the SDK received it
    async with (
        client,
        streamable_http_client(url, http_client=client) as streams,
        ClientSession(streams[0], streams[1]) as opened,
    ):
        await opened.initialize()
        assert given, "the server gave the session no Mcp-Session-Id"
        yield opened, given[0]


class _Gate:
    """Holds every session at a step until all of them reach it, so the steps interleave."""

    def __init__(self, parties: int) -> None:
        self.parties = parties
        self.arrived = 0
        self.open = anyio.Event()

    async def wait(self) -> None:
        self.arrived += 1
        if self.arrived == self.parties:
            self.open.set()
        await self.open.wait()


def _hijacks(url: str, sessions: list[tuple[str, int, str]]) -> list[tuple[str, str, int]]:
    """POST a tools/call into each session with each other identity's token: the statuses."""
    statuses = []
    for owner, _, session_id in sessions:
        for thief, token in TOKENS.items():
            if thief == owner:
                continue
            headers = {
                "Authorization": f"Bearer {token}",
                "mcp-session-id": session_id,
                "mcp-protocol-version": "2025-06-18",
            }
            status, _, _ = a.post(url, a.CALL, headers)
            statuses.append((owner, thief, status))
    return statuses


def test_27_concurrent_sessions_of_three_roles_never_see_each_others_tools(
    tmp_path: Path,
) -> None:
    config = _config(tmp_path)
    audit = tmp_path / "audit.jsonl"
    command = a.cli_command(
        "serve",
        "--config",
        str(config),
        "--http",
        "127.0.0.1:0",
        "--auth-tokens",
        str(tmp_path / "tokens"),
        "--audit",
        str(audit),
        "--max-calls-per-identity",
        str(PER_IDENTITY * 2),  # this test is about isolation, not the per-identity limit
    )
    members = [(name, index) for name in TOKENS for index in range(PER_IDENTITY)]
    with a.serving(command) as server:

        async def run() -> tuple[dict[tuple[str, int], dict[str, Any]], list[Any]]:
            seen: dict[tuple[str, int], dict[str, Any]] = {}
            opened_ids: list[tuple[str, int, str]] = []
            started, listed, used = (_Gate(len(members)) for _ in range(3))
            hijacked = anyio.Event()
            statuses: list[tuple[str, str, int]] = []

            async def member(name: str, index: int) -> None:
                out: dict[str, Any] = {}
                database = DATABASE[name]
                async with _opened(server.url, TOKENS[name]) as (opened, session_id):
                    opened_ids.append((name, index, session_id))
                    await started.wait()
                    out["tools"] = set(await tools(opened))
                    await listed.wait()
                    out["descriptions"] = await call(opened, "get_all_kb_descriptions")
                    out["write"] = await call(
                        opened,
                        "write_kb",
                        backend=database,
                        text=f"Note {index} by {name}\nWritten by {name}, session {index}.",
                    )
                    await used.wait()
                    await hijacked.wait()  # the session is still open while others try it
                    out["tools_after"] = set(await tools(opened))
                seen[(name, index)] = out

            async def thieves() -> None:
                await used.open.wait()
                statuses.extend(await anyio.to_thread.run_sync(_hijacks, server.url, opened_ids))
                hijacked.set()

            async with anyio.create_task_group() as group:
                for name, index in members:
                    group.start_soon(member, name, index)
                group.start_soon(thieves)
            return seen, statuses

        seen, statuses = anyio.run(run)

    assert len(seen) == 27
    for (name, index), out in seen.items():
        assert out["tools"] == EXPECTED_TOOLS[name], (name, index)
        assert out["tools_after"] == EXPECTED_TOOLS[name], (name, index)
        described, failed = out["descriptions"]
        assert not failed
        own = DATABASE[name]
        assert own in described, (name, described)
        assert all(f"{other}" not in described for other in set(DATABASE.values()) - {own})
        text, refused = out["write"]
        if name == "Reader":  # a consumer is never given write_kb, even by asking for it
            assert refused, text
        else:
            assert not refused, text
            assert text.startswith(f"Wrote 1 record(s) to '{own}'"), text

    # another identity's Mcp-Session-Id is unknown to it: 27 sessions x 2 other identities
    assert len(statuses) == 54
    assert {status for _, _, status in statuses} == {404}

    # every write landed in its writer's database, once; the consumer's database is untouched
    for name in ("Ingest", "Keeper"):
        written = sorted(p.name for p in (tmp_path / DATABASE[name] / "generated").glob("*.md"))
        assert written == sorted(f"note-{i}-by-{name.lower()}.md" for i in range(PER_IDENTITY))
    assert not (tmp_path / "ga4" / "generated").exists()

    # the audit trail names each caller as itself: no call is attributed to another identity
    records = [json.loads(line) for line in audit.read_text().splitlines()]
    writes = [r for r in records if r.get("tool") == "write_kb"]
    assert len(writes) == 27
    for record in writes:
        assert record["backend"] == DATABASE[record["identity"]]
        if record["identity"] == "Reader":
            assert record["outcome"] == "refused"
        else:
            assert record["outcome"] == "ok"
            assert f"by-{record['identity'].lower()}'" in record["summary"]
