"""Attested Computations from config.yaml: runtimes, on_stale and attesters per database.

Real: ``config.yaml`` files loaded by ``load_config`` and ``OKFCapability`` over the example
bundle of ``examples/okf/computations`` and its warehouse in a real SQLite file (built from
the shipped ``warehouse.sql``, and the shipped ``warehouse.sqlite`` itself); ``SQLManager``
with its guard and read-only session; the operator's attester is ordinary Python imported by
its ``python:module:callable`` name. Nothing is mocked.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support import REPO, require_extra

require_extra("sqlalchemy", "sql")
require_extra("sqlglot", "sql")

from agentkernel._tooling.factory import reads_only  # noqa: E402
from agentkernel._tooling.result import is_error  # noqa: E402
from agentkernel.errors import AKConfigError  # noqa: E402
from agentkernel.roles import OKFCapability  # noqa: E402
from tests.knowledgebase.okf.computations_support import EXAMPLE, SCRIPT, warehouse  # noqa: E402

POLICY = "python:tests.knowledgebase.okf.computations_support:finance_policy"


def write_config(folder: Path, okf: dict[str, Any]) -> Path:
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump({"okf": okf}))
    return path


def computing(uri: str, **settings: Any) -> dict[str, Any]:
    return {"type": "local", "uri": uri, "runtimes": {"sql": "warehouse_db"}, **settings}


def test_a_consumer_gets_run_computation_and_a_run_attests_opening_nothing_before(
    tmp_path: Path,
) -> None:
    later = tmp_path / "deploy"
    later.mkdir()
    config = write_config(
        later,
        {
            "sql_databases": {"warehouse_db": {"url": "sqlite:///warehouse.sqlite"}},
            "attesters": {"finance-policy": POLICY},
            "databases": {
                "warehouse": computing(
                    "./bundle", attesters=["finance-policy"], consumer=["Analyst"]
                )
            },
        },
    )
    okf = OKFCapability.from_config(config)
    assert okf is not None
    # neither the bundle nor the warehouse exists yet: deciding tools opens nothing
    tools = {t.__name__: t for t in okf.tools_for("Analyst")}
    assert "run_computation" in tools and "write_kb" not in tools
    assert reads_only(tools["run_computation"]) is True  # a consumer's read
    shutil.copytree(EXAMPLE / "bundle", later / "bundle")
    warehouse("sqlite", later)  # relative to the config file, not the working directory
    answer = tools["run_computation"]("warehouse", "computations/revenue", '{"year": 2024}')
    assert not is_error(answer), answer
    assert "Verdict: ATTESTED by binding-equality, finance-policy" in answer
    assert "backend warehouse_db (sqlite)" in answer and "revenue: 6000.25" in answer
    refused = tools["run_computation"]("warehouse", "computations/revenue", '{"year": 2019}')
    assert is_error(refused) and "NOT attested" in refused
    assert "finance-policy: years before 2020 are not sanctioned" in refused
    assert "revenue:" not in refused  # no value is shown


def test_the_shipped_example_config_runs_and_writes_nothing() -> None:
    folder = REPO / "examples" / "okf" / "computations"
    before = sorted(p.relative_to(folder) for p in folder.rglob("*"))
    okf = OKFCapability.from_config(folder / "config.yaml")
    assert okf is not None
    tools = {t.__name__: t for t in okf.tools_for("Analyst")}
    answer = tools["run_computation"](
        "warehouse", "computations/regional-sales", '{"region": "US", "since": "2024-01-01"}'
    )
    assert "Verdict: ATTESTED" in answer and "orders: 2" in answer
    assert sorted(p.relative_to(folder) for p in folder.rglob("*")) == before


def test_the_shipped_warehouse_is_the_script() -> None:
    shipped = sqlite3.connect(f"file:{EXAMPLE / 'warehouse.sqlite'}?mode=ro", uri=True)
    fresh = sqlite3.connect(":memory:")
    fresh.executescript(SCRIPT)
    assert list(shipped.iterdump()) == list(fresh.iterdump())


def test_only_agents_of_a_database_with_a_bound_runtime_get_the_tool(tmp_path: Path) -> None:
    okf = OKFCapability.from_config(
        {
            "okf": {
                "sql_databases": {"warehouse_db": {"url": "sqlite:///nowhere.sqlite"}},
                "databases": {
                    "warehouse": computing(str(tmp_path / "a"), consumer=["Analyst"]),
                    "policies": {"type": "local", "uri": str(tmp_path / "b"),
                                 "consumer": ["Reader", "Analyst"]},
                },
            }
        }
    )  # fmt: skip
    assert okf is not None
    reader = [t.__name__ for t in okf.tools_for("Reader")]
    assert "run_computation" not in reader and len(reader) == 6
    analyst = {t.__name__: t for t in okf.tools_for("Analyst")}
    assert "run_computation" in analyst
    answer = analyst["run_computation"]("policies", "computations/revenue", "{}")
    assert is_error(answer) and "Backends with computations: ['warehouse']" in answer


def test_a_stale_computation_is_refused_when_the_config_says_so(tmp_path: Path) -> None:
    url = warehouse("sqlite", tmp_path)
    okf = OKFCapability.from_config(
        {
            "okf": {
                "databases": {
                    "warehouse": {"type": "local", "uri": str(EXAMPLE / "bundle"),
                                  "runtimes": {"sql": url}, "on_stale": "refuse",
                                  "consumer": ["Analyst"]},
                },
            }
        }
    )  # fmt: skip
    assert okf is not None
    run = {t.__name__: t for t in okf.tools_for("Analyst")}["run_computation"]
    stale = run("warehouse", "computations/active-customers", '{"active": true, "min_amount": 1}')
    assert is_error(stale) and "is stale" in stale and "Nothing was run" in stale
    assert "Verdict: ATTESTED" in run("warehouse", "computations/revenue", '{"year": 2024}')


def test_an_attester_that_cannot_be_imported_fails_the_attestation(tmp_path: Path) -> None:
    okf = OKFCapability.from_config(
        {
            "okf": {
                "attesters": {"policy": "python:no_such_module_for_ak_tests:check"},
                "databases": {
                    "warehouse": {"type": "local", "uri": str(EXAMPLE / "bundle"),
                                  "runtimes": {"sql": warehouse("sqlite", tmp_path)},
                                  "attesters": ["policy"], "consumer": ["Analyst"]},
                },
            }
        }
    )  # fmt: skip
    assert okf is not None
    run = {t.__name__: t for t in okf.tools_for("Analyst")}["run_computation"]
    answer = run("warehouse", "computations/revenue", '{"year": 2024}')
    assert is_error(answer) and "NOT attested" in answer
    assert "cannot import 'no_such_module_for_ak_tests'" in answer


@pytest.mark.parametrize(
    ("okf", "said"),
    [
        (
            {"databases": {"kb": computing("./kb", consumer=["A"])}},
            "runtime 'sql' is bound to 'warehouse_db', which is neither a URL nor a SQL "
            "database of okf.sql_databases (defined: [])",
        ),
        (
            {
                "sql_databases": {"warehouse_db": {"url": "sqlite:///w.sqlite"}},
                "databases": {"kb": computing("./kb", attesters=["audit"], consumer=["A"])},
            },
            "attester 'audit' is not registered under okf.attesters (registered: [])",
        ),
        (
            {"databases": {"kb": {"type": "local", "uri": "./kb", "on_stale": "maybe",
                                  "consumer": ["A"]}}},
            "okf database 'kb', field 'on_stale': Input should be 'warn' or 'refuse'",
        ),
        (
            {"attesters": {"audit": "references/attesters/sql_equality.py"},
             "databases": {"kb": {"type": "local", "uri": "./kb", "consumer": ["A"]}}},
            "an attester is named python:package.module:callable",
        ),
        (
            {"sql_databases": {"warehouse_db": {"url": "warehouse.sqlite"}},
             "databases": {"kb": {"type": "local", "uri": "./kb", "consumer": ["A"]}}},
            "must be a URL such as sqlite:///warehouse.sqlite",
        ),
    ],
    ids=["unknown-sql-database", "unknown-attester", "on_stale-maybe", "attester-a-path",
         "sql-url-not-a-url"],
)  # fmt: skip
def test_a_bad_computation_config_is_a_configuration_error(okf: dict[str, Any], said: str) -> None:
    with pytest.raises(AKConfigError) as caught:
        OKFCapability.from_config({"okf": okf})
    assert said in str(caught.value)
