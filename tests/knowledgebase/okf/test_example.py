"""The checked-in example bundle and the demo script: the README's main job, run as a user would.

Real: the bundle on disk, the read-only LocalDocumentStore, the tools, and the demo run as a
subprocess with the test interpreter (offline, no API key).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from agentkernel.knowledgebase import KnowledgeBuilder, LocalDocumentStore, OKFManager
from agentkernel.knowledgebase.okf._walkthrough import best_id, render, retrieval_run
from agentkernel.knowledgebase.testing import assert_backend_contract

EXAMPLE = Path(__file__).resolve().parents[3] / "examples/cli/knowledgebase/openai/okf"


def example() -> OKFManager:
    return OKFManager(LocalDocumentStore(EXAMPLE / "bundle", writable=False), name="OKF")


def test_example_bundle_has_what_the_readme_promises() -> None:
    kb = example()
    schema = kb.schema()
    assert schema["concepts"] == 34 and schema["diagnostics"] == 0
    assert len(schema["types"]) == 7
    assert {"index.md", "log.md", "runbooks/log.md", "warehouse/log.md"} <= set(
        schema["reserved_files"]
    )
    rows = kb.search("table metric playbook glossary dashboard source computation", 100)
    assert len(rows) == 34
    statuses = {r["metadata"]["id"]: r["metadata"]["status"] for r in rows}
    assert set(statuses.values()) == {"stable", "deprecated"}  # absent status reads stable
    assert [i for i, s in statuses.items() if s == "deprecated"] == ["metrics/gross_margin_legacy"]
    assert {r["metadata"]["trust"] for r in rows} == {
        "unverified",
        "machine-confirmed",
        "human-reviewed",
    }
    assert [r["metadata"]["id"] for r in rows if r["metadata"]["stale"]] == ["metrics/roast_yield"]
    for record in kb.fetch([r["metadata"]["id"] for r in rows]):
        assert record["metadata"]["broken_links"] == []
    assert kb.browse("glossary")[0]["metadata"]["kind"] == "Glossary Term"  # derived
    assert kb.browse("runbooks")[0]["metadata"]["kind"] == "index"  # verbatim
    assert_backend_contract(kb, search_query="nightly load", browse_path="glossary")


def test_retrieval_run_fetches_the_best_search_hit() -> None:
    tools = KnowledgeBuilder([example()]).build()
    calls = retrieval_run(tools, "OKF", "How do I recover when the nightly load fails?")
    assert [c.name for c in calls] == ["get_schemas", "browse_kb", "search_kb", "fetch_kb"]
    assert calls[3].arguments["ids"] == "runbooks/nightly_load_failure"
    assert "Steps to recover" in calls[3].result
    assert "[4] fetch_kb(backend='OKF', ids='runbooks/nightly_load_failure')" in render(calls)
    assert best_id("No results.") is None
    nothing = retrieval_run(tools, "OKF", "zzzz qqqq")
    assert [c.name for c in nothing] == ["get_schemas", "browse_kb", "search_kb"]


def test_demo_script_runs_offline() -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE / "demo.py"), "is", "pausing", "churn?"],
        env={k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"},  # stay offline
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "[3] search_kb(backend='OKF', query='is pausing churn?', limit=3)" in done.stdout
    assert "[4] fetch_kb(backend='OKF', ids='metrics/churn_rate')" in done.stdout
