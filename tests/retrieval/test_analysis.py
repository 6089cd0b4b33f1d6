"""The one analysis documents and queries share: stemming, folding, identifiers, stop words.

Pure computation with the real Snowball stemmer (PyStemmer); nothing to start.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agentkernel.retrieval.analysis import (
    QUERY_STOPWORDS,
    analyze,
    analyze_query,
    plain_key,
    split_identifier,
)


def test_inflected_forms_meet_in_one_stem() -> None:
    assert analyze("purchased purchases purchasing purchase") == ["purchas"] * 4
    assert analyze("Users user's USERS") == ["user", "user", "s", "user"]
    assert analyze_query("roast yields") == analyze("Roast yield")


def test_accents_and_case_fold() -> None:
    assert analyze("Café CAFÉ cafe") == ["cafe"] * 3
    assert analyze("Straße") == analyze("strasse")


def test_identifiers_are_kept_whole_and_split() -> None:
    assert analyze("fct_orders") == ["fct_orders", "fct", "order"]
    assert analyze("VoteTypeId") == ["votetypeid", "vote", "type", "id"]
    assert analyze("user_pseudo_id") == ["user_pseudo_id", "user", "pseudo", "id"]
    assert analyze("posts_answers__posts_questions") == [
        "posts_answers__posts_questions",
        "post",
        "answer",
        "post",
        "question",
    ]
    assert split_identifier("HTTPServerError") == ["http", "server", "error"]
    assert analyze("tables/customer_orders-v2") == [
        "tabl",
        "customer_orders",
        "custom",
        "order",
        "v2",
    ]


def test_question_words_are_dropped_from_queries_but_kept_in_documents() -> None:
    assert analyze_query("How many users purchased something?") == ["user", "purchas"]
    assert analyze_query("which table has the event timestamp") == ["tabl", "event", "timestamp"]
    assert "which" in analyze("which")
    assert plain_key("What is the roast yield?") == ("roast", "yield")


@given(st.lists(st.sampled_from(sorted(QUERY_STOPWORDS)), min_size=1, max_size=6).map(" ".join))
def test_the_stop_list_never_empties_a_query(query: str) -> None:
    assert analyze_query(query) == analyze(query) != []


@given(st.text(max_size=60))
def test_any_text_analyses_without_error_and_queries_are_a_subset(text: str) -> None:
    terms = analyze(text)
    assert set(analyze_query(text)) <= set(terms)
    assert all(t and t == t.lower() for t in terms)
