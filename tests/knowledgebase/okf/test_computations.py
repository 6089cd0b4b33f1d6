"""Attested Computations run end to end (OKF 0.2, section 10) on SQLite, DuckDB and PostgreSQL.

Real: the example bundle of ``examples/okf/computations`` (copied to a temporary directory so a
test may edit it) served by ``OKFManager`` over a ``LocalDocumentStore``; the warehouse built
from the shipped ``warehouse.sql`` in a SQLite file, a DuckDB file (queried in DuckDB's own
worker process) and a PostgreSQL database of the ``postgres_server`` fixture, read as the
least-privilege role; ``SQLManager`` with its guard and limits; the ``KnowledgeBuilder`` tools.
Nothing is a stand-in. The bundle names runner and attester modules that write a marker file
when imported; no marker may ever appear.
"""

from __future__ import annotations

import dataclasses
import runpy
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.support import require_extra, require_module

require_extra("sqlalchemy", "sql")
require_extra("sqlglot", "sql")

from agentkernel._tooling.factory import reads_only  # noqa: E402
from agentkernel._tooling.result import is_error  # noqa: E402
from agentkernel.knowledgebase import KnowledgeBuilder, LocalDocumentStore, OKFManager  # noqa: E402
from agentkernel.knowledgebase.okf.computation import (  # noqa: E402
    BindingError,
    Computations,
)
from agentkernel.knowledgebase.sql import SQLManager  # noqa: E402
from tests.knowledgebase.okf.computations_support import EXAMPLE, statements, warehouse  # noqa: E402

MARKERS = ("IMPORTED-run_sql", "IMPORTED-sql_equality")
REVENUE_2024 = 300.25 + 980.00 + 120.00 + 4500.75 + 99.25


@pytest.fixture(scope="module")
def postgres_warehouse(postgres_server: Any) -> str:
    psycopg = require_module("psycopg", "psycopg[binary]")
    with psycopg.connect(postgres_server.conninfo(), autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS kb_compute")
        conn.execute("CREATE DATABASE kb_compute")
    with psycopg.connect(postgres_server.conninfo("kb_compute"), autocommit=True) as conn:
        for statement in statements():
            conn.execute(statement)
    return str(postgres_server.reader_url("kb_compute"))


@pytest.fixture(params=["sqlite", "duckdb", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "postgresql":
        return str(request.getfixturevalue("postgres_warehouse"))
    if request.param == "duckdb":
        require_module("duckdb")
        require_module("duckdb_engine", "duckdb-engine")
    return warehouse(request.param, tmp_path)


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    root = tmp_path / "bundle"
    shutil.copytree(EXAMPLE / "bundle", root)
    return root


@pytest.fixture
def runner(bundle: Path, url: str) -> Iterator[Computations]:
    sql = SQLManager(url)
    kb = OKFManager(LocalDocumentStore(str(bundle), writable=False), name="warehouse")
    yield Computations(kb, {"sql": sql})
    sql.close()
    assert not [m for m in MARKERS if list(bundle.rglob(m))], "bundle code ran"


def _value(receipt: Any, column: str) -> float:
    return float(receipt.rows[0][list(receipt.columns).index(column)])


def test_a_sanctioned_run_attests(runner: Computations) -> None:
    receipt = runner.run("computations/revenue", {"year": 2024})
    assert _value(receipt, "revenue") == pytest.approx(REVENUE_2024)
    assert receipt.executed_sql.startswith(
        "SELECT SUM(amount) AS revenue FROM sales WHERE fiscal_year = :year"
    )
    assert receipt.parameters == {"year": 2024}
    assert "job_id" in receipt.unavailable  # asked for by executor.receipt, not invented
    assert set(receipt.fields()) == {"executed_sql", "result"}
    verdict = runner.attest(receipt, receipt.result)
    assert verdict.ok, verdict.reason
    answer = runner.answer("computations/revenue", {"year": 2024})
    assert not is_error(answer)
    assert "Verdict: ATTESTED by binding-equality" in answer
    assert "Trust: human-reviewed; last verified by human:finance-lead" in answer
    assert "Not available: job_id" in answer


def test_every_example_computation_attests(runner: Computations) -> None:
    regional = runner.run("computations/regional-sales", {"region": "US", "since": "2024-01-01"})
    assert int(regional.rows[0][1]) == 2 and _value(regional, "amount") == pytest.approx(1100)
    customers = runner.run("computations/active-customers", {"active": True, "min_amount": 100})
    assert [row[0] for row in customers.rows] == ["Umbrella", "Globex", "Acme"]
    for receipt in (regional, customers):
        assert runner.attest(receipt, receipt.result).ok


def test_a_changed_computation_file_fails_attestation(runner: Computations, bundle: Path) -> None:
    receipt = runner.run("computations/regional-sales", {"region": "EU", "since": "2023-01-01"})
    sql_file = bundle / "references" / "computations" / "regional_sales.sql"
    sql_file.write_text(sql_file.read_text().replace("sold_on >= :since", "sold_on > :since"))
    verdict = runner.attest(receipt, receipt.result)
    assert not verdict.ok
    assert verdict.reason.startswith("provenance: the statement that ran is not the computation")


def test_a_parameter_smuggling_sql_is_bound_as_a_value(runner: Computations) -> None:
    smuggled = "US' OR '1'='1"
    receipt = runner.run("computations/regional-sales", {"region": smuggled, "since": "2000-01-01"})
    assert receipt.rows == []  # no region is called that: the text matched nothing
    assert smuggled not in receipt.executed_sql and ":region" in receipt.executed_sql
    assert receipt.parameters["region"] == smuggled
    assert runner.attest(receipt, receipt.result).ok
    refused = runner.answer("computations/revenue", {"year": "2024; DROP TABLE sales"})
    assert is_error(refused) and "is of type integer" in refused and "Nothing was run" in refused
    assert _value(runner.run("computations/revenue", {"year": 2024}), "revenue") == pytest.approx(
        REVENUE_2024
    )


def test_an_unknown_parameter_is_refused(runner: Computations) -> None:
    answer = runner.answer("computations/revenue", {"year": 2024, "region": "US"})
    assert is_error(answer)
    assert "has no parameter 'region'; it declares: year (integer, required)" in answer
    missing = runner.answer("computations/revenue", {})
    assert is_error(missing) and "needs a value for year" in missing


@pytest.mark.parametrize(
    ("concept", "values", "parameter"),
    [
        ("computations/revenue", {"year": "2024"}, "year"),
        ("computations/revenue", {"year": True}, "year"),
        ("computations/revenue", {"year": 2024.5}, "year"),
        ("computations/regional-sales", {"region": "US", "since": "2024-13-01"}, "since"),
        ("computations/regional-sales", {"region": 7, "since": "2024-01-01"}, "region"),
        ("computations/active-customers", {"active": "true", "min_amount": 1}, "active"),
        ("computations/active-customers", {"active": True, "min_amount": "1"}, "min_amount"),
    ],
)
def test_a_wrong_type_is_refused(
    runner: Computations, concept: str, values: dict[str, Any], parameter: str
) -> None:
    with pytest.raises(BindingError, match=f"parameter '{parameter}' .* is of type"):
        runner.run(concept, values)


def test_a_result_edited_after_the_run_fails(runner: Computations) -> None:
    receipt = runner.run("computations/revenue", {"year": 2024})
    edited = dataclasses.replace(receipt, rows=[["9999999.00"]])
    verdict = runner.attest(edited)
    assert not verdict.ok
    assert {c.name for c in verdict.checks if not c.ok} == {"seal", "result digest"}
    # recomputing the digest to match the edit does not help: the seal covers it
    from agentkernel.knowledgebase.okf.computation._receipt import result_digest

    forged = dataclasses.replace(edited, result_digest=result_digest(["revenue"], [["9999999.00"]]))
    verdict = runner.attest(forged)
    assert [c.name for c in verdict.checks if not c.ok] == ["seal"]
    # a shown result that differs from the receipt's fails fidelity
    shown = {"columns": ["revenue"], "rows": [["9999999.00"]]}
    verdict = runner.attest(receipt, shown)
    assert [c.name for c in verdict.checks if not c.ok] == ["fidelity"]
    assert "not the result the run returned" in verdict.reason


def test_a_stale_concept_warns_by_default_and_is_refused_when_configured(
    runner: Computations, bundle: Path, url: str
) -> None:
    answer = runner.answer("computations/active-customers", {"active": True, "min_amount": 100})
    assert not is_error(answer)
    assert "WARNING: stale: now >= stale_after (2025-01-01T00:00:00Z)" in answer
    assert "Verdict: ATTESTED" in answer
    sql = SQLManager(url)
    kb = OKFManager(LocalDocumentStore(str(bundle), writable=False), name="warehouse")
    strict = Computations(kb, {"sql": sql}, on_stale="refuse")
    refused = strict.answer("computations/active-customers", {"active": True, "min_amount": 1})
    sql.close()
    assert is_error(refused)
    assert "is stale: now >= stale_after (2025-01-01T00:00:00Z)" in refused
    assert "Nothing was run" in refused


def test_a_stale_after_without_offset_is_ignored_not_stale(
    runner: Computations, bundle: Path
) -> None:
    concept = bundle / "computations" / "active-customers.md"
    concept.write_text(concept.read_text().replace("2025-01-01T00:00:00Z", "2025-01-01"))
    answer = runner.answer("computations/active-customers", {"active": False, "min_amount": 1})
    assert "WARNING: stale" not in answer
    assert "stale_after '2025-01-01' has no UTC offset; ignored" in answer


def test_the_bundle_marker_modules_are_live(tmp_path: Path) -> None:
    """The probe is real: importing the bundle's module does write its marker."""
    copy = tmp_path / "probe"
    shutil.copytree(EXAMPLE / "bundle" / "references", copy)
    runpy.run_path(str(copy / "runners" / "run_sql.py"))
    assert (copy / "runners" / "IMPORTED-run_sql").exists()


# -- discovery and the tool (SQLite suffices: the engine is exercised above) -------------


@pytest.fixture
def sqlite_tools(bundle: Path, tmp_path: Path) -> Iterator[tuple[dict[str, Any], OKFManager]]:
    sql = SQLManager(warehouse("sqlite", tmp_path))
    kb = OKFManager(LocalDocumentStore(str(bundle), writable=False), name="warehouse")
    runner = Computations(kb, {"sql": sql})
    tools = KnowledgeBuilder([kb], computations=[runner]).build()
    yield {t.__name__: t for t in tools}, kb
    sql.close()
    assert not [m for m in MARKERS if list(bundle.rglob(m))], "bundle code ran"


def test_the_tool_is_emitted_only_where_a_runtime_is_bound(bundle: Path, tmp_path: Path) -> None:
    sql = SQLManager(warehouse("sqlite", tmp_path))
    kb = OKFManager(LocalDocumentStore(str(bundle), writable=False), name="warehouse")
    plain = [t.__name__ for t in KnowledgeBuilder([kb]).build()]
    assert "run_computation" not in plain and len(plain) == 7
    unbound = Computations(kb, {"bigquery": sql})
    names = [t.__name__ for t in KnowledgeBuilder([kb], computations=[unbound]).build()]
    assert names == plain
    bound = KnowledgeBuilder([kb], computations=[Computations(kb, {"sql": sql})]).build()
    assert [t.__name__ for t in bound] == [*plain, "run_computation"]
    assert reads_only(bound[-1]) is True  # running a computation is a read
    sql.close()


def test_the_tool_answers_attested_values_and_refusals(
    sqlite_tools: tuple[dict[str, Any], OKFManager],
) -> None:
    tools, _ = sqlite_tools
    run = tools["run_computation"]
    answer = run("warehouse", "computations/revenue", '{"year": 2024}')
    assert not is_error(answer) and "revenue: 6000.25" in answer and "ATTESTED" in answer
    assert is_error(run("warehouse", "computations/revenue", '{"year": "x"}'))
    assert is_error(run("warehouse", "computations/nope", "{}"))
    assert is_error(run("elsewhere", "computations/revenue", '{"year": 2024}'))
    assert is_error(run("warehouse", "computations/revenue", "{year"))
    assert is_error(run("warehouse", "metrics/revenue", "{}"))  # not a computation


def test_schema_browse_and_fetch_name_the_computations(
    sqlite_tools: tuple[dict[str, Any], OKFManager],
) -> None:
    tools, kb = sqlite_tools
    listed = kb.schema()["computations"]
    assert listed["computations/revenue"]["parameters"] == ["year (integer, required)"]
    assert listed["computations/regional-sales"]["runtime"] == "sql"
    browsed = tools["browse_kb"]("warehouse", "computations")
    assert "parameters: region (string, required), since (date, required)" in browsed
    fetched = tools["fetch_kb"]("warehouse", "metrics/revenue")
    assert "computations: computations/revenue" in fetched


def test_the_clock_decides_staleness(bundle: Path, tmp_path: Path) -> None:
    sql = SQLManager(warehouse("sqlite", tmp_path))
    kb = OKFManager(LocalDocumentStore(str(bundle), writable=False), name="warehouse")
    before = Computations(kb, {"sql": sql}, clock=lambda: datetime(2024, 12, 31, tzinfo=UTC))
    answer = before.answer("computations/active-customers", {"active": True, "min_amount": 1})
    assert "WARNING: stale" not in answer and "Lifecycle: fresh" in answer
    sql.close()
