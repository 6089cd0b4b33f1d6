"""What an agent searching the real bundles gets: stems, titles first, status, bad input.

Real: the shared third-party bundles (ga4, crypto_bitcoin) and the example bundle, read in
place by the LocalDocumentStore; OKFManager and the tool layer (``search_kb``) on top.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agentkernel.knowledgebase import KnowledgeBuilder, LocalDocumentStore, OKFManager
from tests.support import REPO, okf_bundle

ROOT = REPO
EXAMPLE = ROOT / "examples" / "cli" / "knowledgebase" / "openai" / "okf" / "bundle"


def manager(root: Path) -> OKFManager:
    return OKFManager(LocalDocumentStore(root, writable=False), name="OKF", refresh_seconds=None)


def ids(kb: OKFManager, query: str, limit: int = 3) -> list[str]:
    return [str(row["metadata"]["id"]) for row in kb.search(query, limit)]


def test_inflected_words_find_the_purchase_concepts() -> None:
    kb = manager(okf_bundle("ga4"))
    assert ids(kb, "purchased", 1) == ["references/metrics/purchasers"]
    assert ids(kb, "how many users purchased something?", 1) == ["references/metrics/purchasers"]
    assert ids(kb, "user_pseudo_id", 1) == ["tables/events_"]


def test_exact_identifiers_rank_first_in_the_bitcoin_bundle() -> None:
    kb = manager(okf_bundle("crypto_bitcoin"))
    assert ids(kb, "spent_output_index", 1) == ["tables/inputs"]
    assert ids(kb, "duplicate transactions", 1) == ["references/metrics/duplicate_transactions"]


def test_a_title_that_is_the_query_ranks_first() -> None:
    kb = manager(EXAMPLE)
    assert ids(kb, "roast yield", 2)[0] == "metrics/roast_yield"
    assert ids(kb, "Roast yields?", 1) == ["metrics/roast_yield"]
    assert ids(kb, "fct_orders", 1) == ["warehouse/marts/fct_orders"]


def test_deprecated_ranks_below_current_and_says_so_on_every_line() -> None:
    kb = manager(EXAMPLE)
    rows = kb.search("how is gross margin computed", 5)
    order = [row["metadata"]["id"] for row in rows]
    assert order[0] == "metrics/gross_margin"
    assert "metrics/gross_margin_legacy" in order  # ranked lower, never filtered
    legacy = rows[order.index("metrics/gross_margin_legacy")]
    assert legacy["metadata"]["status"] == "deprecated"
    assert rows[0]["metadata"]["status"] == "stable"
    text = kb.format_results(rows)
    assert "(Metric; unverified; fresh; deprecated): The pre-2026 gross margin" in text
    fetched = kb.fetch(["metrics/gross_margin_legacy"])[0]
    assert fetched["metadata"]["status"] == "deprecated"
    assert "; deprecated)" in kb.format_results([fetched])
    assert kb.browse("metrics/gross_margin_legacy")[0]["metadata"]["status"] == "deprecated"
    assert ids(kb, "legacy gross margin", 1) == ["metrics/gross_margin_legacy"]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("", "query must not be empty."),
        ("   \n\t", "query must not be empty."),
        (b"roast yield", "query must be a string, got bytes."),
    ],
)
def test_empty_and_non_text_queries_get_a_clear_message(query: object, expected: str) -> None:
    tools = {t.__name__: t for t in KnowledgeBuilder([manager(EXAMPLE)]).build()}
    assert expected in tools["search_kb"]("OKF", query, 3)


def test_huge_and_binary_queries_answer_and_break_nothing() -> None:
    kb = manager(EXAMPLE)
    tools = {t.__name__: t for t in KnowledgeBuilder([kb]).build()}
    huge = ("roast yield " + "x" * 50 + " ") * 16_000  # about 1 MB
    assert len(huge) > 1_000_000
    assert "[metrics/roast_yield]" in tools["search_kb"]("OKF", huge, 3)
    binary = bytes(range(256)).decode("latin-1") * 4 + "\x00\udcff roast"
    assert isinstance(tools["search_kb"]("OKF", binary, 3), str)
    assert tools["search_kb"]("OKF", "\x00\x01\x02", 3) == "No results."
    assert ids(kb, "roast yield", 1) == ["metrics/roast_yield"]  # the index is unharmed
