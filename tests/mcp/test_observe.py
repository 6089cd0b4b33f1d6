"""/healthz, /readyz and /metrics of a real server, scraped as a platform would.

Real: ``agentkernel-kb serve --config config.yaml --http 127.0.0.1:0 --auth-tokens FILE`` and
``agentkernel-kb serve BUNDLE --http 127.0.0.1:0`` processes (``python -m agentkernel.cli``) over
a copy of the shared GA4 OKF bundle (plus one long concept, so an answer is cut), the mcp SDK's
streamable-HTTP client for the calls, ``urllib`` for the probes, and prometheus_client's own
text parser for the scrape. Nothing is mocked.
"""

from __future__ import annotations

import json
import shutil
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import anyio
import yaml

from tests.support import okf_bundle, require_extra

require_extra("mcp", "mcp")
require_extra("prometheus_client", "mcp")

from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from tests.mcp import auth_support as a  # noqa: E402
from tests.mcp._session import call  # noqa: E402

TOKENS = {"reader": "ak_reader_" + "r" * 32, "writer": "ak_writer_" + "w" * 32}


def _bundle(tmp_path: Path) -> Path:
    ga4 = shutil.copytree(okf_bundle("ga4"), tmp_path / "ga4")
    long = "\n\n".join(f"Paragraph {n}: " + "sessions and users " * 20 for n in range(120))
    (ga4 / "tables" / "long.md").write_text(f"---\ntype: Note\ntitle: Long\n---\n{long}\n")
    return ga4


def _get(url: str, token: str | None = None) -> tuple[int, str]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def test_probes_and_metrics_of_an_authenticated_server(tmp_path: Path) -> None:
    ga4 = _bundle(tmp_path)
    config = tmp_path / "config.yaml"
    databases = {"ga4": {"type": "local", "uri": str(ga4), "consumer": ["reader"]}}
    databases["ga4"]["producer"] = ["writer"]
    config.write_text(yaml.safe_dump({"okf": {"databases": databases}}))
    (tmp_path / "tokens").write_text(
        "\n".join(a.token_line(name, token) for name, token in TOKENS.items())
    )
    command = a.cli_command(
        "serve", "--config", str(config), "--http", "127.0.0.1:0",
        "--auth-tokens", str(tmp_path / "tokens"),
    )  # fmt: skip
    with a.serving(command) as server:
        base = server.url.removesuffix("/mcp")

        async def run() -> list[tuple[str, bool]]:
            async with a.session(server.url, TOKENS["reader"]) as opened:
                answers = [await call(opened, "search_kb", backend="ga4", query="users")]
                answers.append(await call(opened, "search_kb", backend="ga4", query="sessions"))
                answers.append(await call(opened, "write_kb", backend="ga4", text="No\nNope."))
                answers.append(await call(opened, "fetch_kb", backend="ga4", ids="tables/long"))
                return answers

        answers = anyio.run(run)
        assert a.post(server.url, a.INITIALIZE, {"Authorization": "Bearer ak_wrong"})[0] == 401
        assert a.post(server.url, a.INITIALIZE)[0] == 401
        health = _get(f"{base}/healthz")
        ready = _get(f"{base}/readyz")
        refused = _get(f"{base}/metrics")
        refused_bad = _get(f"{base}/metrics", "ak_wrong")
        status, scraped = _get(f"{base}/metrics", TOKENS["writer"])

    assert answers[2][1] is True  # a consumer has no write_kb: refused
    assert "[cut]" in answers[3][0]
    assert health == (200, "ok\n")  # probes take no token
    assert ready[0] == 200 and json.loads(ready[1]) == {
        "ready": True,
        "databases": {"ga4": "ready"},
    }
    assert refused[0] == 401 and refused_bad[0] == 401  # metrics name tools: a token is needed
    assert status == 200
    found = _samples(scraped)
    calls = "agentkernel_tool_calls_total"
    assert found[(calls, (("outcome", "ok"), ("tool", "search_kb")))] == 2
    assert found[(calls, (("outcome", "refused"), ("tool", "unknown")))] == 1
    assert found[(calls, (("outcome", "ok"), ("tool", "fetch_kb")))] == 1
    assert found[("agentkernel_tool_call_seconds_count", (("tool", "search_kb"),))] == 2
    assert found[("agentkernel_answers_cut_total", (("database", "ga4"),))] == 1
    failures = "agentkernel_auth_failures_total"
    # the two refused MCP requests and the two refused scrapes, by reason
    assert found[(failures, (("reason", "missing"),))] == 2
    assert sum(v for (name, _), v in found.items() if name == failures) == 4
    assert found[("agentkernel_database_ready", (("database", "ga4"),))] == 1
    assert found[("agentkernel_database_vectors_ready", (("database", "ga4"),))] == 1
    assert TOKENS["reader"] not in scraped and "reader" not in scraped  # no identities


def test_a_loopback_server_without_authentication_answers_its_probes(tmp_path: Path) -> None:
    ga4 = _bundle(tmp_path)
    with a.serving(a.cli_command("serve", str(ga4), "--http", "127.0.0.1:0")) as server:
        base = server.url.removesuffix("/mcp")

        async def run() -> tuple[str, bool]:
            async with a.session(server.url) as opened:
                return await call(opened, "search_kb", backend="ga4", query="users")

        assert anyio.run(run)[1] is False
        ready = _get(f"{base}/readyz")
        status, scraped = _get(f"{base}/metrics")
        posted = a.post(f"{base}/readyz", {})
    assert ready[0] == 200 and json.loads(ready[1])["ready"] is True
    assert status == 200
    found: Any = _samples(scraped)
    assert found[("agentkernel_tool_calls_total", (("outcome", "ok"), ("tool", "search_kb")))] == 1
    assert posted[0] == 405


def test_metrics_name_the_served_index_version_and_its_age(tmp_path: Path) -> None:
    require_extra("lancedb", "lancedb")
    require_extra("lance", "lancedb")  # the index is served through pylance
    import subprocess
    import sys

    ga4 = _bundle(tmp_path)
    index = tmp_path / "ga4.lance"
    built = subprocess.run(
        [sys.executable, "-m", "agentkernel.cli", "index", str(ga4), "--to", str(index)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    config = tmp_path / "config.yaml"
    entry = {"type": "local", "uri": str(ga4), "index": str(index), "consumer": ["reader"]}
    config.write_text(yaml.safe_dump({"okf": {"databases": {"ga4": entry}}}))
    with a.serving(a.cli_command("serve", "--config", str(config), "--http", ":0")) as server:
        base = server.url.removesuffix("/mcp")
        # the server listens before its index is open (it loads in the background)
        deadline = time.monotonic() + 120
        while _get(f"{base}/readyz")[0] != 200:
            assert time.monotonic() < deadline, _get(f"{base}/readyz")
            time.sleep(0.05)
        status, scraped = _get(f"{base}/metrics")
    assert status == 200
    found = _samples(scraped)
    assert found[("agentkernel_database_index_version", (("database", "ga4"),))] >= 1
    age = found[("agentkernel_database_index_age_seconds", (("database", "ga4"),))]
    assert 0 <= age < 3600  # indexed by this test, moments ago


def test_readyz_is_503_and_names_what_is_still_warming() -> None:
    command = a.module_command("--factory", "tests.mcp.factories:warming")
    with a.serving(command) as server:
        base = server.url.removesuffix("/mcp")
        ready = _get(f"{base}/readyz")
        health = _get(f"{base}/healthz")
        status, scraped = _get(f"{base}/metrics")
    assert health[0] == 200 and status == 200  # alive while warming
    assert ready[0] == 503
    assert json.loads(ready[1]) == {
        "ready": False,
        "databases": {"Notes": "ready", "Loading": "warming walk: 3/10 (30%)"},
    }
    found = _samples(scraped)
    assert found[("agentkernel_database_ready", (("database", "Loading"),))] == 0
    assert found[("agentkernel_database_ready", (("database", "Notes"),))] == 1
