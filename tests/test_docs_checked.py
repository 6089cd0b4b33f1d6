"""Every block of the docs that is not a script runs here, through the check its flag names.

``tests/test_docs.py`` runs the script blocks (python, shell, yaml, json) as they stand; a
block marked ``check=NAME`` is exercised by ``CHECKS[NAME]`` (``tests/docs_checks.py``,
``tests/docs_scenarios.py``), which says in its docstring what is real: servers started from
the page's command lines, probed by the mcp SDK's clients over stdio and HTTP and stopped; the
moto S3 API server and PostgreSQL for the pages about buckets and databases; sample outputs
compared with the output of the command they show. No block is left out: a block whose
language no runner takes and that names no check fails ``test_every_block_is_exercised``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests import docs_checks as checks
from tests import docs_scenarios as scenarios
from tests.docs_support import Workdir
from tests.support import require_extra
from tests.test_docs import RUNNABLE, all_blocks

CHECKS: dict[str, Any] = {
    "make": checks.check_make,
    "nox": checks.check_nox,
    "install": checks.check_install,
    "diagram": checks.check_diagram,
    "signature": checks.check_signature,
    "contract-test": checks.check_contract_test,
    "conformance": checks.check_conformance,
    "serve": checks.check_serve,
    "mcp-serve": scenarios.check_mcp_serve,
    "deployment": scenarios.check_deployment,
    "team": scenarios.check_team,
    "warehouse": scenarios.check_warehouse,
    "index-refusal": scenarios.check_index_refusal,
    "sql-cap": scenarios.check_sql_cap,
    "sql-admin": scenarios.check_sql_admin,
    "pg-store": scenarios.check_pg_store,
}
# what a check needs installed beyond the core (a skip locally, an error under CI)
NEEDS = {
    "serve": "mcp",
    "mcp-serve": "mcp",
    "deployment": "mcp",
    "team": "mcp",
    "warehouse": "mcp",
    "sql-admin": "psycopg",
    "pg-store": "psycopg",
}
MARKS = {
    "mcp-serve": [pytest.mark.s3],
    "warehouse": [pytest.mark.s3],
    "team": [pytest.mark.s3],
    "sql-admin": [pytest.mark.postgres],
    "pg-store": [pytest.mark.postgres],
}


def blocks_checked_by(name: str) -> list[Any]:
    return [block for block in all_blocks() if block.flags.get("check") == name]


def test_every_block_is_exercised() -> None:
    idle = [
        block.where
        for block in all_blocks()
        if block.lang not in RUNNABLE and "check" not in block.flags
    ]
    assert not idle, (
        "These blocks are neither scripts the docs test runs nor named by a check: make them "
        f"runnable, or add '```<lang> check=NAME' and a check in tests/docs_checks.py: {idle}"
    )
    named = {block.flags["check"] for block in all_blocks() if "check" in block.flags}
    assert named <= set(CHECKS), f"unknown checks: {named - set(CHECKS)}"
    assert set(CHECKS) <= named, f"checks no block uses: {set(CHECKS) - named}"


@pytest.mark.parametrize(
    "name", [pytest.param(name, marks=MARKS.get(name, [])) for name in sorted(CHECKS)]
)
def test_check(name: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    if name in NEEDS:
        require_extra(NEEDS[name], NEEDS[name])
    blocks = blocks_checked_by(name)
    assert blocks, f"no block names check={name}"
    CHECKS[name](blocks, Workdir.make(tmp_path / "work"), request)
