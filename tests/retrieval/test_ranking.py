"""The one ranking rule set (``agentkernel.retrieval.ranking``) and the searches that apply it.

Pure code and in-memory indexes: the engine, the curated SQLite store on ``tmp_path`` (a real
SQLite file); no server, no model. Runs in ``nox -s unit``.
"""

from __future__ import annotations

from pathlib import Path

from agentkernel.knowledgestore import SQLiteKnowledgeStore
from agentkernel.retrieval import SearchIndex
from agentkernel.retrieval.ranking import (
    HEAD_POOL,
    TIER_ALIAS,
    TIER_NONE,
    TIER_TITLE,
    Candidate,
    fused,
    head_scorer,
    head_terms,
    rank,
    status_factor,
    title_match,
)


def test_a_higher_tier_ranks_first_whatever_the_scores() -> None:
    hits = rank(
        [
            Candidate("body", 50.0),
            Candidate("alias", 0.1, TIER_ALIAS),
            Candidate("t", 0.0, TIER_TITLE),
        ]
    )
    assert [h.key for h in hits] == ["t", "alias", "body"]
    assert [h.tier for h in hits] == [TIER_TITLE, TIER_ALIAS, TIER_NONE]


def test_status_lowers_a_score_and_never_filters() -> None:
    hits = rank([Candidate("old", 10.0, status="Deprecated"), Candidate("new", 8.0)])
    assert [h.key for h in hits] == ["new", "old"]
    assert hits[1].score == 10.0 * status_factor("deprecated") == 7.0
    assert status_factor("superseded") < 1.0 and status_factor("stable") == 1.0


def test_trust_breaks_ties_then_the_callers_tiebreak() -> None:
    hits = rank(
        [
            Candidate("u", 1.0, trust="unverified", tiebreak=0),
            Candidate("m", 1.0, trust="machine-confirmed", tiebreak=1),
            Candidate("h", 1.0, trust="human-reviewed", tiebreak=2),
            Candidate("z", 1.0, tiebreak=-1),
        ]
    )
    assert [h.key for h in hits] == ["h", "m", "z", "u"]


def test_a_title_inside_the_query_is_boosted_by_its_share() -> None:
    query = frozenset({"gross", "margin", "legacy"})
    assert title_match(frozenset({"gross", "margin", "legacy"}), query) == (TIER_TITLE, 0.0)
    tier, share = title_match(frozenset({"margin"}), query)
    assert tier == TIER_NONE and share == 1 / 3
    assert title_match(frozenset({"revenue"}), query) == (TIER_NONE, 0.0)
    [hit] = rank([Candidate("m", 3.0, share=share)], title_boost=0.5)
    assert hit.score == 3.0 * (1 + 0.5 / 3)


def test_fused_scores_come_back_in_tier_order() -> None:
    hits = fused([("a", 1.0), ("b", 0.5), ("t", 0.0)], {"t": TIER_TITLE})
    assert [h.key for h in hits] == ["t", "a", "b"]


def test_the_engine_hits_carry_their_tier() -> None:
    index = SearchIndex()
    index.add("orders", {"title": "Orders", "body": "one row"})
    index.add("facts", {"title": "Facts", "body": "orders orders orders orders"})
    hits = index.search("orders", 2)
    assert [(h.key, h.tier) for h in hits] == [("orders", TIER_TITLE), ("facts", TIER_NONE)]


def test_the_curated_store_orders_by_the_same_rules(tmp_path: Path) -> None:
    store = SQLiteKnowledgeStore(tmp_path / "kb.sqlite")
    store.create("concept", "orders", "Orders", "Butter and cream, nothing else.")
    store.create(
        "concept", "order-facts", "Order facts", "Orders placed, orders shipped, returned."
    )
    hits = store.search("orders")
    assert [h.title for h in hits][:2] == ["Orders", "Order facts"]


def test_query_words_in_the_head_fields_raise_a_score_by_their_share() -> None:
    head = head_terms({"title": "wget", "tags": ["web"], "description": "retrieves files"})
    assert {"wget", "web", "file", "retriev"} <= set(head)  # stems, analysed as documents are
    assert head_scorer({"file": 1.0, "=files": 1.0, "web": 1.0, "http": 1.0})(head) == 0.5
    assert head_scorer({})(head) == 0.0
    [hit] = rank([Candidate("w", 3.0, head=0.5)], head_boost=2.0)
    assert hit.score == 3.0 * (1 + 2.0 * 0.5)


def test_the_document_that_says_what_it_is_ranks_above_one_that_mentions_it() -> None:
    index = SearchIndex()
    index.add(
        "web/wget",
        {
            "title": "wget",
            "description": "retrieves files from the web",  # what it is, said up front
            "body": "A network utility to fetch pages over HTTP, HTTPS and FTP. It resumes "
            "broken transfers, follows links to make local copies of whole sites, converts "
            "links for offline viewing, honours robots exclusion, and runs from scripts and "
            "cron jobs without a display or any interaction, in the background.",
        },
    )
    index.add(
        "net/mirror-tools",
        {
            "title": "mirror-tools",
            "description": "keeps remote sites in sync",
            "body": "Changed files on the web are retrieved from it again.",  # in passing
        },
    )
    for n in range(30):  # other packages, so that the words above are rare
        index.add(f"misc/p{n}", {"title": f"p{n}", "body": f"package number {n}"})
    hits = index.search("a tool that retrieves files from the web", 2)
    assert [h.key for h in hits] == ["web/wget", "net/mirror-tools"]


def test_a_longer_result_list_starts_with_the_shorter_one() -> None:
    index = SearchIndex()
    for n in range(3 * HEAD_POOL):
        # every document holds the query's words; the few with them up front come last by BM25
        up_front = n % 7 == 0
        index.add(
            f"d{n}",
            {
                "title": f"item {n}",
                "description": "orders shipped late" if up_front else "a record",
                "body": " ".join(["orders shipped late"] * (1 + n % 5)) + " filler" * n,
            },
        )
    query = "which orders shipped late"
    longest = [h.key for h in index.search(query, 3 * HEAD_POOL)]
    for limit in (1, 3, 10, HEAD_POOL, 2 * HEAD_POOL):
        assert [h.key for h in index.search(query, limit)] == longest[:limit]
