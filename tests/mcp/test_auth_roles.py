"""One authenticated server, many agents: each caller's identity names its agent and its role.

Real: ``agentkernel-kb serve --config config.yaml --http 127.0.0.1:0 --auth-tokens FILE``
(``python -m agentkernel.cli``) over copies of the shared GA4 and crypto_bitcoin OKF bundles,
spoken to by the mcp SDK's streamable-HTTP client with each agent's bearer token; the audit
trail read back from its file. Nothing is mocked.
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

from tests.mcp import auth_support as a  # noqa: E402
from tests.mcp._session import call, tools  # noqa: E402

TOKENS = {
    "reader": "ak_reader_" + "r" * 32,  # consumer of ga4
    "writer": "ak_writer_" + "w" * 32,  # producer of crypto
    "mixed": "ak_mixed_" + "m" * 32,  # consumer of ga4, producer of crypto
    "stranger": "ak_stranger_" + "s" * 32,  # named in no database
}


def _config(tmp_path: Path) -> Path:
    ga4 = shutil.copytree(okf_bundle("ga4"), tmp_path / "ga4")
    crypto = shutil.copytree(okf_bundle("crypto_bitcoin"), tmp_path / "crypto")
    config = {
        "okf": {
            "databases": {
                "ga4": {"type": "local", "uri": str(ga4), "consumer": ["reader", "mixed"]},
                "crypto": {"type": "local", "uri": str(crypto), "producer": ["writer", "mixed"]},
            }
        }
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    (tmp_path / "tokens").write_text(
        "\n".join(a.token_line(name, token) for name, token in TOKENS.items())
    )
    return path


def test_each_identity_sees_and_does_what_its_role_allows(tmp_path: Path) -> None:
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
    )
    with a.serving(command) as server:

        async def as_identity(name: str) -> dict[str, Any]:
            out: dict[str, Any] = {}
            async with a.session(server.url, TOKENS[name]) as opened:
                out["tools"] = list(await tools(opened))
                if not out["tools"]:
                    return out
                out["descriptions"] = await call(opened, "get_all_kb_descriptions")
                out["ga4"] = await call(opened, "search_kb", backend="ga4", query="purchasers")
                out["crypto"] = await call(opened, "search_kb", backend="crypto", query="bitcoin")
                out["write_ga4"] = await call(
                    opened, "write_kb", backend="ga4", text="Churn\nGA4 churn is 28 days."
                )
                out["write_crypto"] = await call(
                    opened, "write_kb", backend="crypto", text=f"Note by {name}\nHalving in 2028."
                )
            return out

        async def run() -> dict[str, dict[str, Any]]:
            return {name: await as_identity(name) for name in TOKENS}

        seen = anyio.run(run)
    startup = "".join(server.lines)
    assert "each caller gets its agent's role" in startup
    assert "authentication: tokens (4 identities)" in startup

    reader, writer, mixed, stranger = (seen[n] for n in ("reader", "writer", "mixed", "stranger"))
    assert "write_kb" not in reader["tools"] and "search_kb" in reader["tools"]
    assert reader["ga4"][1] is False and "purchasers" in reader["ga4"][0]
    assert reader["crypto"][1] is True and "Unknown backend 'crypto'" in reader["crypto"][0]
    assert reader["write_ga4"][1] is True  # no write_kb for a consumer: an error result
    assert "ga4" in reader["descriptions"][0] and "crypto" not in reader["descriptions"][0]

    assert "write_kb" in writer["tools"]
    assert writer["write_crypto"] == (
        "Wrote 1 record(s) to 'crypto': ['generated/note-by-writer']",
        False,
    )
    assert writer["ga4"][1] is True and "Unknown backend 'ga4'" in writer["ga4"][0]
    assert writer["write_ga4"][1] is True and "Unknown backend 'ga4'" in writer["write_ga4"][0]

    # a consumer's write where it holds another role is refused as an error result (#23)
    assert mixed["write_ga4"] == (
        "Agent 'mixed' has read-only access to 'ga4'. Knowledge bases it may write to: ['crypto'].",
        True,
    )
    assert mixed["write_crypto"][1] is False
    assert stranger["tools"] == []

    assert (tmp_path / "crypto" / "generated" / "note-by-writer.md").is_file()
    assert not (tmp_path / "ga4" / "generated").exists()

    records = [json.loads(line) for line in audit.read_text().splitlines()]
    writes = [r for r in records if r["tool"] == "write_kb"]
    who_wrote = [r["identity"] for r in writes if "note-by-writer" in r.get("summary", "")]
    assert who_wrote == ["writer"]  # "who wrote this concept": grep the trail for its id
    assert {(r["identity"], r["backend"], r["outcome"]) for r in writes} == {
        ("reader", "ga4", "refused"),
        ("reader", "crypto", "refused"),
        ("writer", "ga4", "error"),
        ("writer", "crypto", "ok"),
        ("mixed", "ga4", "error"),
        ("mixed", "crypto", "ok"),
    }
    assert all(token not in audit.read_text() for token in TOKENS.values())
