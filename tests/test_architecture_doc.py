"""docs/architecture.md names, for every claim in its closing table, a check that exists.

What is real: the page itself and the test modules it names, parsed with ``ast`` (nothing is
imported or run here; the named tests run in their own sessions).
"""

from __future__ import annotations

from tests.support.doc_tests import ROOT, TEST_REF, absent_tests

PAGE = ROOT / "docs" / "architecture.md"


def _claim_rows() -> list[str]:
    text = PAGE.read_text(encoding="utf-8")
    table = text.split("## What this page claims, and what checks it", 1)[1]
    return [
        line
        for line in table.splitlines()
        if line.startswith("|") and not set(line) <= set("|-: ") and "| claim |" not in line
    ]


def test_every_claim_names_its_check() -> None:
    rows = _claim_rows()
    assert len(rows) >= 15, "the claims table was not found"
    unchecked = [row for row in rows if not TEST_REF.search(row) and "tests/" not in row]
    assert not unchecked, f"claims without a check: {unchecked}"


def test_every_named_test_exists() -> None:
    absent = absent_tests(PAGE.read_text(encoding="utf-8"))
    assert not absent, f"docs/architecture.md names tests that do not exist: {absent}"
