"""The ``agentkernel-kb`` console script, run in a subprocess as a user runs it.

Real: the installed console script, real bundles (the shared third-party ones, the example
bundle, and temp bundles with planted errors), the official MCP client over stdio for
``serve``, and the OpenAI Agents SDK's own ScriptedModel for ``ask`` with a model.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import REPO, okf_bundle, require_extra

ROOT = REPO
EXAMPLE = ROOT / "examples" / "cli" / "knowledgebase" / "openai" / "okf" / "bundle"
SCRIPT = Path(sys.executable).parent / "agentkernel-kb"


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    environment.update(env or {})
    return subprocess.run(
        [str(SCRIPT), *args], capture_output=True, text=True, env=environment, timeout=120
    )


@pytest.fixture
def broken_bundle(tmp_path: Path) -> Path:
    root = tmp_path / "broken"
    (root / "tables").mkdir(parents=True)
    (root / "tables" / "good.md").write_text(
        "---\ntype: Table\ntitle: Good\nstale_after: someday\n---\nSee [gone](/tables/gone.md).\n"
    )
    (root / "tables" / "untyped.md").write_text("---\ntitle: No type\n---\nbody\n")
    (root / "tables" / "plain.md").write_text("no frontmatter at all\n")
    (root / "tables" / "bad_yaml.md").write_text("---\ntype: [unclosed\n---\n")
    (root / "tables" / "index.md").write_text("---\nokf_version: '0.2'\n---\n# Tables\n")
    (root / "log.md").write_text("# Log\n\n## 2026-01-02\n* x\n\n## last tuesday\n* y\n")
    (root / "notitle.md").write_text("---\ntype: Note\n---\nhello\n")
    return root


@pytest.mark.parametrize("bundle", ["ga4", "crypto_bitcoin"])
def test_check_passes_the_shared_real_bundles(bundle: str) -> None:
    result = cli("check", str(okf_bundle(bundle)), "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["conformant"] is True
    assert report["concepts"] == 9
    assert report["errors"] == [] and report["warnings"] == []
    assert sum(report["types"].values()) == 9
    assert report["trust"] == {"unverified": 9}


def test_check_text_report_on_the_example_bundle() -> None:
    result = cli("check", str(EXAMPLE))
    assert result.returncode == 0, result.stderr
    assert "conformant OKF 0.2" in result.stdout
    assert "34 concepts" in result.stdout
    assert "stale (1): metrics/roast_yield" in result.stdout
    assert "0 error(s), 0 warning(s)" in result.stdout


def test_check_reports_planted_errors_and_exits_1(broken_bundle: Path) -> None:
    result = cli("check", str(broken_bundle), "--json")
    assert result.returncode == 1
    report = json.loads(result.stdout)
    errors = {(e["path"], e["message"].split(":")[0].split(" (")[0]) for e in report["errors"]}
    assert ("tables/untyped.md", "frontmatter has no non-empty 'type'") in errors
    assert ("tables/plain.md", "no YAML frontmatter") in errors
    assert any(path == "tables/bad_yaml.md" for path, _ in errors)
    assert ("tables/index.md", "only the bundle-root index.md may carry frontmatter") in errors
    assert any(e["path"] == "log.md" and "last tuesday" in e["message"] for e in report["errors"])
    warnings = {(w["path"], w["message"].split(" (OKF")[0]) for w in report["warnings"]}
    assert ("tables/good.md", "broken link: /tables/gone.md") in warnings
    assert ("tables/good.md", "stale_after 'someday' is not an ISO 8601 instant") in warnings
    assert any(p == "notitle.md" and m.startswith("no title") for p, m in warnings)
    assert report["concepts"] == 2
    text = cli("check", str(broken_bundle))
    assert text.returncode == 1 and "NOT conformant" in text.stdout


def test_check_says_why_a_bare_date_or_naive_stale_after_is_not_stale(tmp_path: Path) -> None:
    root = tmp_path / "dates"
    root.mkdir()
    for name, value in (("bare", "2020-09-23"), ("naive", "2020-12-07T10:00:00")):
        (root / f"{name}.md").write_text(
            f"---\ntype: Metric\ntitle: {name}\nstale_after: {value}\n---\nbody\n"
        )
    (root / "instant.md").write_text(
        "---\ntype: Metric\ntitle: instant\nstale_after: 2020-01-01T00:00:00Z\n---\nbody\n"
    )
    report = json.loads(cli("check", str(root), "--json").stdout)
    assert report["conformant"] is True and report["stale"] == ["instant"]
    warnings = {w["path"]: w["message"] for w in report["warnings"]}
    assert warnings["bare.md"].startswith("stale_after '2020-09-23' is a date without a time")
    assert warnings["bare.md"].endswith("write 2020-09-23T00:00:00Z")
    assert warnings["naive.md"].startswith("stale_after '2020-12-07T10:00:00' has no UTC offset")
    assert "write 2020-12-07T10:00:00Z if it is UTC" in warnings["naive.md"]
    assert "instant.md" not in warnings
    text = cli("check", str(root)).stdout
    assert "warning bare.md: stale_after '2020-09-23' is a date without a time" in text
    legacy = json.loads(cli("check", str(root), "--json", "--legacy-dates").stdout)
    assert legacy["stale"] == ["bare", "instant"]  # the naive value is never read


def test_check_unknown_scheme_is_a_clear_error() -> None:
    result = cli("check", "ftp://host/kb")
    assert result.returncode != 0
    assert "Unknown document store scheme 'ftp'" in result.stderr


def test_schema_search_fetch_browse_print_what_the_tools_return() -> None:
    schema = json.loads(cli("schema", str(okf_bundle("ga4"))).stdout)
    assert schema["ga4"]["concepts"] == 9
    found = cli("search", str(okf_bundle("ga4")), "purchasers audience", "-n", "2").stdout
    assert found.startswith("- [references/metrics/purchasers]")
    assert len(found.strip().splitlines()) == 2
    fetched = cli("fetch", str(okf_bundle("ga4")), "references/metrics/purchasers,nope")
    assert "in_app_purchase" in fetched.stdout and fetched.returncode == 1
    assert fetched.stderr.startswith("Not found: nope (")
    root = cli("browse", str(okf_bundle("ga4"))).stdout
    assert root.startswith("[index] index.md of the bundle root (verbatim):")


def test_ask_without_a_model_answers_retrieval_only() -> None:
    result = cli("ask", "How do I recover when the nightly load fails?", str(EXAMPLE))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.startswith("No model configured (set OPENAI_API_KEY, or pass --model)")
    assert "- [runbooks/nightly_load_failure] Nightly load failure (Playbook; human-reviewed" in out
    assert "## bundle: fetched" in out and "dbt build --select" in out


def test_ask_prefers_the_current_concept_and_labels_the_deprecated_one() -> None:
    result = cli("ask", "How is gross margin computed?", str(EXAMPLE), "--fetch", "1")
    assert result.returncode == 0, result.stderr
    matches, _, fetched = result.stdout.partition("## bundle: fetched")
    lines = [line for line in matches.splitlines() if line.startswith("- [")]
    assert lines[0].startswith("- [metrics/gross_margin] Gross margin (Metric; human-reviewed")
    legacy = next(line for line in lines if "[metrics/gross_margin_legacy]" in line)
    assert "; deprecated)" in legacy  # still found, and labelled
    assert "status: stable" in fetched and "status: deprecated" not in fetched
    asked = cli("search", str(EXAMPLE), "legacy gross margin", "-n", "1").stdout
    assert asked.startswith("- [metrics/gross_margin_legacy] Gross margin (legacy) (Metric;")


def test_ask_with_a_config_and_an_agent(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        f"okf:\n  databases:\n    roastery:\n      type: local\n      uri: {EXAMPLE}\n"
        "      consumer: [Support]\n"
    )
    result = cli("ask", "roast yield", "--config", str(config), "--agent", "Support")
    assert result.returncode == 0, result.stderr
    assert "## roastery: best matches" in result.stdout
    assert "[metrics/roast_yield]" in result.stdout
    wrong = cli("ask", "x", "--config", str(config), "--agent", "Nobody")
    assert wrong.returncode == 2 and "Agent 'Nobody' holds no role" in wrong.stderr


def test_ask_with_a_model_streams_tool_calls() -> None:
    require_extra("agents", "openai")
    from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call

    from agentkernel.cli._sources import Sources
    from agentkernel.cli.ask import run_agent
    from agentkernel.knowledgebase import KnowledgeBuilder, LocalDocumentStore, OKFManager

    kb = OKFManager(LocalDocumentStore(EXAMPLE, writable=False), name="OKF")
    sources = Sources(KnowledgeBuilder([kb]).build(writable=False), ["OKF"])
    model = ScriptedModel(
        [
            [function_call("search_kb", {"backend": "OKF", "query": "nightly load"}, call_id="c1")],
            [
                function_call(
                    "fetch_kb",
                    {"backend": "OKF", "ids": "runbooks/nightly_load_failure"},
                    call_id="c2",
                )
            ],
            ModelStep.respond(
                lambda call: [
                    assistant_message("Rerun failed models [runbooks/nightly_load_failure].")
                ]
            ),
        ]
    )
    lines: list[str] = []
    answer = asyncio.run(run_agent("nightly load failed?", sources, model=model, out=lines.append))
    assert answer == "Rerun failed models [runbooks/nightly_load_failure]."
    assert lines[0].startswith("-> search_kb(") and '"nightly load"' in lines[0]
    assert "[runbooks/nightly_load_failure]" in lines[1]
    assert lines[2].startswith("-> fetch_kb(")
    assert "PagerDuty alert `dw-nightly-failed`" in "\n".join(lines[3:])
    assert lines[-1] == answer


def test_serve_speaks_mcp_over_stdio(tmp_path: Path) -> None:
    require_extra("mcp", "mcp")
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async def session() -> tuple[list[str], str]:
        params = StdioServerParameters(
            command=str(SCRIPT), args=["serve", str(okf_bundle("ga4"))], env=dict(os.environ)
        )
        # the server's stderr goes to a real file: another test may leave sys.stderr without
        # a file descriptor, which the SDK's default errlog needs
        with (tmp_path / "server.log").open("w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as client,
            ):
                await client.initialize()
                tools = [tool.name for tool in (await client.list_tools()).tools]
                result = await client.call_tool(
                    "search_kb", {"backend": "ga4", "query": "purchasers audience"}
                )
                return tools, result.content[0].text  # type: ignore[union-attr]

    tools, found = asyncio.run(session())
    assert tools == [
        "get_schemas",
        "read_kb",
        "get_all_kb_descriptions",
        "search_kb",
        "fetch_kb",
        "browse_kb",
    ]
    assert found.startswith("- [references/metrics/purchasers]")


def test_usage_errors_exit_2() -> None:
    assert cli("ask", "question").returncode == 2
    assert cli("nonsense").returncode == 2
    assert cli("--help").returncode == 0
