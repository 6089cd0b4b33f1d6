"""The one analysis documents and queries share: stemming, folding, identifiers, stop words.

Pure computation with the real Snowball stemmer (PyStemmer); nothing to start.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agentkernel.retrieval.analysis import (
    QUERY_STOPWORDS,
    STEM_WEIGHT,
    SURFACE,
    analyze,
    analyze_query,
    plain_key,
    query_weights,
    split_identifier,
)


def stems(text: str) -> list[str]:
    return [t for t in analyze(text) if not t.startswith(SURFACE)]


def test_inflected_forms_meet_in_one_stem_and_keep_their_own_form() -> None:
    assert stems("purchased purchases purchasing purchase") == ["purchas"] * 4
    assert analyze("purchased") == ["purchas", "=purchased"]
    assert analyze("purchase") == ["purchas", "=purchase"]
    assert analyze("order") == ["order"]  # the word is its own stem: one term
    assert stems("Users user's USERS") == ["user", "user", "s", "user"]
    assert plain_key("roast yields") == plain_key("Roast yield") == ("roast", "yield")


def test_a_query_weighs_the_word_asked_for_above_its_stem() -> None:
    assert query_weights("How many users purchased something?") == {
        "user": STEM_WEIGHT,
        "=users": 1.0,
        "purchas": STEM_WEIGHT,
        "=purchased": 1.0,
    }
    assert query_weights("order fct_orders") == {
        "order": 1.0,
        "fct_orders": 1.0,
        "fct": 1.0,
    }


def test_accents_and_case_fold() -> None:
    assert analyze("Café CAFÉ cafe") == ["cafe"] * 3
    assert analyze("Straße") == analyze("STRASSE") == ["strass", "=strasse"]


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
        "=tables",
        "customer_orders",
        "custom",
        "order",
        "v2",
    ]


def test_question_words_are_dropped_from_queries_but_kept_in_documents() -> None:
    assert plain_key("How many users purchased something?") == ("user", "purchas")
    assert plain_key("which table has the event timestamp") == ("tabl", "event", "timestamp")
    assert "which" in analyze("which")
    # function words stay in the query (they tell phrases apart) but not in the title key
    assert "the" in query_weights("the orders") and plain_key("the orders") == ("order",)
    assert plain_key("What is the roast yield?") == ("roast", "yield")


@given(st.lists(st.sampled_from(sorted(QUERY_STOPWORDS)), min_size=1, max_size=6).map(" ".join))
def test_the_stop_list_never_empties_a_query(query: str) -> None:
    assert set(analyze_query(query)) == set(analyze(query)) != set()


@given(st.text(max_size=60))
def test_any_text_analyses_without_error_and_queries_are_a_subset(text: str) -> None:
    terms = analyze(text)
    assert set(analyze_query(text)) <= set(terms)
    assert all(t and t == t.casefold() for t in terms)  # case folded (Cherokee folds up)
