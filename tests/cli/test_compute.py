"""``agentkernel-kb compute``: an Attested Computation run from the command line.

Real: the installed console script in a subprocess, as a user runs it; the example bundle of
``examples/okf/computations`` with its shipped SQLite warehouse (read in place: nothing may
change there), and a config.yaml in a temporary directory whose okf block binds the runtime and
registers an operator's attester (ordinary Python imported by its ``python:`` name).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.support import REPO, require_extra

require_extra("sqlalchemy", "sql")
require_extra("sqlglot", "sql")

SCRIPT = Path(sys.executable).parent / "agentkernel-kb"
EXAMPLE = REPO / "examples" / "okf" / "computations"
BUNDLE = str(EXAMPLE / "bundle")
RUNTIME = f"sql=sqlite:///{EXAMPLE / 'warehouse.sqlite'}"
POLICY = "python:tests.knowledgebase.okf.computations_support:finance_policy"


def compute(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH", "")]))
    return subprocess.run(
        [str(SCRIPT), "compute", *args],
        capture_output=True, text=True, timeout=120, env=env, cwd=REPO,
    )  # fmt: skip


def one_line(result: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.fixture(scope="module")
def example_untouched() -> object:
    before = sorted((p.relative_to(EXAMPLE), p.stat().st_size) for p in EXAMPLE.rglob("*"))
    yield None
    after = sorted((p.relative_to(EXAMPLE), p.stat().st_size) for p in EXAMPLE.rglob("*"))
    assert after == before, "compute wrote into the example"


@pytest.fixture
def config(tmp_path: Path) -> Path:
    shutil.copy(EXAMPLE / "warehouse.sqlite", tmp_path / "warehouse.sqlite")
    okf = {
        "sql_databases": {"warehouse_db": {"url": "sqlite:///warehouse.sqlite"}},
        "attesters": {"finance-policy": POLICY},
        "databases": {
            "warehouse": {
                "type": "local", "uri": BUNDLE, "runtimes": {"sql": "warehouse_db"},
                "attesters": ["finance-policy"], "consumer": ["Analyst"],
            },
            "notes": {"type": "local", "uri": str(tmp_path), "consumer": ["Scribe"]},
        },
    }  # fmt: skip
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({"okf": okf}))
    return path


def test_a_bundle_and_a_runtime_url_give_the_attested_value(example_untouched: object) -> None:
    result = compute(BUNDLE, "computations/revenue", "--runtime", RUNTIME, "--param", "year=2024")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert "Verdict: ATTESTED by binding-equality" in result.stdout
    assert result.stdout.rstrip().endswith("- revenue: 6000.25")


def test_json_gives_the_verdict_checks_and_the_receipt(example_untouched: object) -> None:
    result = compute(
        BUNDLE, "computations/regional-sales", "--runtime", RUNTIME, "--json",
        "--params-json", '{"region": "US"}', "--param", "since=2024-01-01",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    outcome = json.loads(result.stdout)
    assert outcome["attested"] is True and outcome["error"] is None
    assert [c["name"] for c in outcome["verdict"]["checks"]] == [
        "seal", "result digest", "provenance", "fidelity",
    ]  # fmt: skip
    receipt = outcome["receipt"]
    assert receipt["parameters"] == {"region": "US", "since": "2024-01-01"}
    assert receipt["rows"] == [["US", 2, 1100]]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["computations/revenue", "--param", "year=twenty"], "is of type integer"),
        (["computations/revenue"], "needs a value for year"),
        (["computations/revenue", "--param", "year=2024", "--param", "region=US"],
         "has no parameter 'region'"),
        (["computations/nope"], "No computation 'computations/nope' in bundle 'bundle'"),
        (["computations", "--param", "active=true", "--param", "min_amount=0"],
         "No computation 'computations' in bundle 'bundle'"),
        (["metrics/revenue"], "not an Attested Computation"),
        (["computations/active-customers", "--param", "active=true", "--param",
          "min_amount=1", "--refuse-stale"], "is stale: now >= stale_after"),
    ],
    ids=["wrong-type", "missing", "unknown-parameter", "unknown-concept", "a-folder",
         "not-a-computation", "stale-refused"],
)  # fmt: skip
def test_a_refused_or_unknown_computation_exits_1_with_one_line(
    args: list[str], said: str, example_untouched: object
) -> None:
    result = compute(BUNDLE, args[0], "--runtime", RUNTIME, *args[1:])
    assert result.returncode == 1
    assert said in one_line(result)
    assert result.stdout == ""  # no value


def test_a_failed_attestation_exits_1_and_shows_no_value(config: Path) -> None:
    ok = compute("--config", str(config), "--agent", "Analyst", "warehouse",
                 "computations/revenue", "--param", "year=2024")  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    assert "ATTESTED by binding-equality, finance-policy" in ok.stdout
    failed = compute("--config", str(config), "--agent", "Analyst", "warehouse",
                     "computations/revenue", "--param", "year=2019", "--json")  # fmt: skip
    assert failed.returncode == 1
    line = one_line(failed)
    assert "was NOT attested: finance-policy: years before 2020 are not sanctioned" in line
    outcome = json.loads(failed.stdout)
    assert outcome["attested"] is False and "rows" not in outcome["receipt"]
    assert [c["name"] for c in outcome["verdict"]["checks"] if not c["ok"]] == ["finance-policy"]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        ([BUNDLE, "computations/revenue"], "Bind the runtime the computations name"),
        ([BUNDLE, "computations/revenue", "--runtime", "sql"], "--runtime takes NAME=URL"),
        ([BUNDLE, "computations/revenue", "--runtime", RUNTIME, "--params-json", "{year"],
         "--params-json is not JSON"),
        ([BUNDLE, "computations/revenue", "--runtime", RUNTIME, "--params-json",
          '{"year": 2024}', "--param", "year=2023"], "parameter 'year' is given twice"),
        ([BUNDLE, "computations/revenue", "--runtime", "sql=mysql+nosuchdriver://x/y"],
         "SQLManager"),
        ([str(EXAMPLE / "missing"), "computations/revenue", "--runtime", RUNTIME], "missing"),
        (["--config", "CONFIG", "nowhere", "computations/revenue"],
         "No okf database named 'nowhere'"),
        (["--config", "CONFIG", "--agent", "Scribe", "warehouse", "computations/revenue"],
         "Agent 'Scribe' holds no role in 'warehouse'"),
        (["--config", "CONFIG", "notes", "computations/revenue"],
         "okf database 'notes' binds no runtime"),
        (["--config", "CONFIG", "warehouse", "computations/revenue", "--runtime", RUNTIME],
         "With --config the okf block binds runtimes"),
    ],
    ids=["no-runtime", "runtime-not-a-url", "params-json-bad", "given-twice", "bad-url",
         "no-bundle", "unknown-database", "agent-without-role", "no-runtime-in-config",
         "runtime-with-config"],
)  # fmt: skip
def test_a_usage_or_config_error_exits_2_with_one_line(
    args: list[str], said: str, config: Path, example_untouched: object
) -> None:
    result = compute(*[str(config) if a == "CONFIG" else a for a in args])
    assert result.returncode == 2, result.stderr
    line = one_line(result)
    assert line.startswith("agentkernel-kb compute: error: ") and said in line
