"""The example warehouse of ``examples/okf/computations``, built at test time, and an MCP factory.

``warehouse(engine, folder)`` creates the database from the shipped ``warehouse.sql`` (SQLite,
DuckDB; PostgreSQL is made by the test from the ``postgres_server`` fixture with the same
script). ``mcp_builder`` is ``agentkernel-mcp --factory`` target serving the bundle named by
``AK_TEST_COMPUTE_BUNDLE`` with runtime ``sql`` bound to ``AK_TEST_COMPUTE_DB``.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "okf" / "computations"
SCRIPT = (EXAMPLE / "warehouse.sql").read_text()


def statements() -> list[str]:
    """The script's statements (comments dropped)."""
    lines = [line for line in SCRIPT.splitlines() if not line.startswith("--")]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]


def warehouse(engine: str, folder: Path) -> str:
    """Create the warehouse for ``engine`` (``sqlite`` or ``duckdb``) in ``folder``; its URL."""
    if engine == "sqlite":
        path = folder / "warehouse.sqlite"
        with sqlite3.connect(path) as conn:
            for statement in statements():
                conn.execute(statement)
        return f"sqlite:///{path}"
    import duckdb

    path = folder / "warehouse.duckdb"
    conn = duckdb.connect(str(path))
    for statement in statements():
        conn.execute(statement)
    conn.close()
    return f"duckdb:///{path}"


def mcp_builder() -> Any:
    """The builder ``agentkernel-mcp --factory`` serves in the MCP test."""
    from agentkernel.knowledgebase import KnowledgeBuilder, LocalDocumentStore, OKFManager
    from agentkernel.knowledgebase.okf.computation import Computations
    from agentkernel.knowledgebase.sql import SQLManager

    bundle = OKFManager(
        LocalDocumentStore(os.environ["AK_TEST_COMPUTE_BUNDLE"], writable=False), name="warehouse"
    )
    runner = Computations(bundle, {"sql": SQLManager(os.environ["AK_TEST_COMPUTE_DB"])})
    return KnowledgeBuilder([bundle], computations=[runner])


def finance_policy(receipt: Any, contract: Any) -> tuple[bool, str]:
    """An operator's attester, registered in config.yaml as ``python:...:finance_policy``."""
    year = receipt.parameters.get("year")
    if isinstance(year, int) and year < 2020:
        return False, f"years before 2020 are not sanctioned for {contract.concept_id}"
    return True, "a sanctioned year"
