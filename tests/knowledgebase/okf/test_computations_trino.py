"""Attested Computations on Trino: ``:name`` placeholders bound by the client's ``?`` style.

Real: the example bundle of ``examples/okf/computations`` (copied, so a test may edit it)
served by ``OKFManager``; ``StarburstManager`` with the official ``trino`` client, talking
HTTP to the Trino-protocol test server of ``tests/support/trino_server.py`` on 127.0.0.1 (it
stands in for a Trino coordinator, which cannot run here) over a DuckDB database holding the
example warehouse from the shipped ``warehouse.sql``. The client sends the values as Trino's
prepared-statement parameters: ``EXECUTE IMMEDIATE '...' USING ...``, or the legacy
``PREPARE`` / ``EXECUTE ... USING``; the server records every statement it receives.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import require_extra, require_module

require_extra("trino", "trino")
require_extra("sqlglot", "sql")
require_module("duckdb")

from agentkernel._tooling.result import is_error  # noqa: E402
from agentkernel.knowledgebase import LocalDocumentStore, OKFManager  # noqa: E402
from agentkernel.knowledgebase.okf.computation import Computations  # noqa: E402
from agentkernel.knowledgebase.starburst import StarburstManager  # noqa: E402
from tests.knowledgebase.okf.computations_support import EXAMPLE, statements  # noqa: E402

REVENUE_2024 = 300.25 + 980.00 + 120.00 + 4500.75 + 99.25


@pytest.fixture(scope="module")
def warehouse_server() -> Iterator[Any]:
    import duckdb

    from tests.support.trino_server import TrinoTestServer

    db = duckdb.connect()
    db.execute("ATTACH ':memory:' AS wh")
    db.execute("CREATE SCHEMA wh.sales")
    db.execute("USE wh.sales")
    for statement in statements():
        db.execute(statement)
    server = TrinoTestServer(db, page_size=2).start()
    yield server
    server.stop()


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    root = tmp_path / "bundle"
    shutil.copytree(EXAMPLE / "bundle", root)
    return root


def _trino(server: Any, legacy: bool) -> StarburstManager:
    return StarburstManager(
        host="127.0.0.1", port=server.port, user="analyst", catalog="wh", schema="sales",
        http_scheme="http", legacy_prepared_statements=legacy,
    )  # fmt: skip


@pytest.fixture(params=[False, True], ids=["execute-immediate", "legacy-prepare"])
def runner(request: pytest.FixtureRequest, warehouse_server: Any, bundle: Path) -> Computations:
    kb = OKFManager(LocalDocumentStore(str(bundle), writable=False), name="warehouse")
    return Computations(kb, {"sql": _trino(warehouse_server, request.param)})


def test_a_sanctioned_run_on_trino_binds_by_position_and_attests(
    runner: Computations, warehouse_server: Any
) -> None:
    receipt = runner.run("computations/regional-sales", {"region": "US", "since": "2024-01-01"})
    assert receipt.rows and int(receipt.rows[0][1]) == 2
    assert float(receipt.rows[0][2]) == pytest.approx(1100)
    assert "WHERE region = ? AND sold_on >= ?" in receipt.executed_sql
    assert list(receipt.bound_order) == ["region", "since"]
    assert receipt.backend == "starburst (trino)"
    sent = " ".join(warehouse_server.statements()[-3:])
    assert "USING 'US',DATE '2024-01-01'" in sent  # the client's own parameters
    assert runner.attest(receipt, receipt.result).ok
    answer = runner.answer("computations/revenue", {"year": 2024})
    assert not is_error(answer) and "Verdict: ATTESTED by binding-equality" in answer
    assert f"revenue: {REVENUE_2024:.2f}" in answer
    customers = runner.run("computations/active-customers", {"active": True, "min_amount": 100})
    assert [row[0] for row in customers.rows] == ["Umbrella", "Globex", "Acme"]


def test_a_value_smuggling_sql_stays_a_value_on_trino(
    runner: Computations, warehouse_server: Any
) -> None:
    smuggled = "US' OR '1'='1"
    receipt = runner.run("computations/regional-sales", {"region": smuggled, "since": "2000-01-01"})
    assert receipt.rows == []  # no region has that name: the quote was data
    assert smuggled not in receipt.executed_sql
    assert runner.attest(receipt, receipt.result).ok


def test_swapped_placeholders_fail_provenance_though_the_text_is_the_same(
    runner: Computations, bundle: Path
) -> None:
    receipt = runner.run("computations/regional-sales", {"region": "EU", "since": "2023-01-01"})
    sql_file = bundle / "references" / "computations" / "regional_sales.sql"
    swapped = sql_file.read_text().replace(":region", ":TMP").replace(":since", ":region")
    sql_file.write_text(swapped.replace(":TMP", ":since"))
    # with '?' written for each name the statement text is unchanged; the order is not
    verdict = runner.attest(receipt, receipt.result)
    assert not verdict.ok
    assert "in an order the computation as it stands now does not give" in verdict.reason


def test_a_question_mark_in_a_computation_is_refused_on_trino(
    runner: Computations, bundle: Path
) -> None:
    concept = bundle / "computations" / "revenue.md"
    concept.write_text(concept.read_text().replace("fiscal_year = :year", "fiscal_year = ?"))
    answer = runner.answer("computations/revenue", {"year": 2024})
    assert is_error(answer) and "holds a '?' placeholder, a value no parameter names" in answer


def test_a_trino_url_binds_a_runtime_as_config_and_the_cli_give_it(
    warehouse_server: Any, bundle: Path
) -> None:
    from agentkernel.errors import AKConfigError
    from agentkernel.roles.runtimes import open_runtime

    url = f"trino://analyst@127.0.0.1:{warehouse_server.port}/wh/sales?http_scheme=http"
    trino = open_runtime(url, name="lake")
    kb = OKFManager(LocalDocumentStore(str(bundle), writable=False), name="warehouse")
    answer = Computations(kb, {"sql": trino}).answer("computations/revenue", {"year": 2024})
    assert "backend lake (trino)" in answer and "Verdict: ATTESTED" in answer
    assert warehouse_server.received[-1]["user"] == "analyst"
    with pytest.raises(AKConfigError, match="password is read from STARBURST_PASSWORD"):
        open_runtime(f"trino://analyst:s3cret@127.0.0.1:{warehouse_server.port}/wh/sales")
