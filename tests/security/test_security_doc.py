"""docs/security.md names, for every promise, a test that exists.

What is real: the page itself and the test modules it names, parsed with ``ast`` (nothing is
imported or run here; the named tests run in their own sessions). A promise row whose test was
renamed or removed fails this test, so the page cannot drift from the suite.
"""

from __future__ import annotations

from tests.support.doc_tests import ROOT, TEST_REF, absent_tests

PAGE = ROOT / "docs" / "security.md"


def _promise_rows() -> list[str]:
    """Table rows of the promise sections: every row under a '## ' heading after 'Promises'."""
    rows, in_promises = [], False
    for line in PAGE.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            in_promises = in_promises or line.lower().startswith("## promises")
        elif line.startswith("### "):
            continue
        if in_promises and line.startswith("|") and not set(line) <= set("|-: "):
            rows.append(line)
    return [row for row in rows if row.replace(" ", "").lower() != "|surface|promise|test|"]


def test_every_promise_names_a_test() -> None:
    rows = _promise_rows()
    assert len(rows) >= 20, "the promise tables were not found"
    missing = [row for row in rows if not TEST_REF.search(row)]
    assert not missing, f"promises without a test: {missing}"


def test_every_named_test_exists() -> None:
    absent = absent_tests(PAGE.read_text(encoding="utf-8"))
    assert not absent, f"docs/security.md names tests that do not exist: {absent}"
