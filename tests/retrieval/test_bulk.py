"""Bulk indexing and saved index state: the same index as adding documents one by one.

Pure computation on the real engine (PyStemmer, numpy); nothing to start. Hypothesis generates
corpora large enough (32 documents and more) for the vectorised count, with titles, statuses,
identifiers, list fields and accents, and the index is compared slot for slot and search for
search with one built document by document, and with itself saved and loaded.
"""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentkernel.retrieval import SearchIndex
from agentkernel.retrieval import _bulk as bulk_module
from agentkernel.retrieval import index as index_module
from agentkernel.retrieval.index import PHRASE_BOOST
from agentkernel.retrieval.indexfile import export_state, import_state
from tests.support import examples

_WORDS = """alpha beta gamma delta orders ordered order the of how which fct_orders VoteTypeId
café Straße naïve Purchases purchasing x1 2026"""
VOCABULARY = _WORDS.split()
texts = st.lists(st.sampled_from(VOCABULARY), max_size=14).map(" ".join)
document = st.fixed_dictionaries(
    {
        "title": texts,
        "aliases": st.lists(texts, max_size=3),
        "description": texts,
        "body": texts,
        "extra": texts,  # a field with no weight of its own: weighs 1
    }
)
statuses = st.sampled_from([None, "deprecated", "Stable", " retired "])
corpora = st.lists(st.tuples(document, statuses), min_size=32, max_size=70)
queries = st.lists(texts, min_size=1, max_size=6)


def one_by_one(monkeypatch: pytest.MonkeyPatch, phrase: float | None = None) -> SearchIndex:
    """An index whose queue is counted document by document (the small-batch path)."""
    monkeypatch.setattr(index_module, "_BULK_AT", 10**9)
    return SearchIndex(phrase_boost=phrase)


def fill(index: SearchIndex, corpus: list[tuple[dict[str, object], str | None]]) -> SearchIndex:
    for n, (fields, status) in enumerate(corpus):
        index.add(f"k{n}", fields, status=status)  # type: ignore[arg-type]
    index.flush()
    return index


def same_state(a: SearchIndex, b: SearchIndex) -> None:
    assert a._slots.key_of == b._slots.key_of
    assert a._doc_length == b._doc_length and a._total_length == b._total_length
    assert a._title_key == b._title_key and a._pairs == b._pairs
    assert a._status == b._status
    assert a._titles.anchor == b._titles.anchor
    assert set(a._postings) == set(b._postings)
    for term in a._postings:
        assert a._postings[term] == b._postings[term], term


@settings(max_examples=examples(40), deadline=None)
@given(corpora, queries, st.sampled_from([None, PHRASE_BOOST]))
def test_bulk_count_equals_one_by_one(corpus, asked, phrase) -> None:  # type: ignore[no-untyped-def]
    bulk = fill(SearchIndex(phrase_boost=phrase), corpus)
    with pytest.MonkeyPatch.context() as patch:
        single = fill(one_by_one(patch, phrase), corpus)
    same_state(bulk, single)
    for query in asked:
        assert bulk.search(query, 10) == single.search(query, 10)


@settings(max_examples=examples(30), deadline=None)
@given(corpora, queries)
def test_documents_filed_in_bulk_are_removed_and_replaced_as_if_filed_one_by_one(
    corpus, asked
) -> None:  # type: ignore[no-untyped-def]
    """A walk files its documents without their term lists; removing one works them out."""
    bulk = fill(SearchIndex(), corpus)
    with pytest.MonkeyPatch.context() as patch:
        single = fill(one_by_one(patch), corpus)
    for index in (bulk, single):
        assert index.remove("k3") and index.remove("k30")
        index.add("k7", {"title": "replaced", "body": "an other text entirely"})
        index.flush()
    same_state(bulk, single)
    for query in [*asked, "replaced", "other text"]:
        assert bulk.search(query, 10) == single.search(query, 10)


@settings(max_examples=examples(40), deadline=None)
@given(corpora, st.integers(1, 40))
def test_counting_in_runs_gives_the_same_count_as_one_run(corpus, run) -> None:  # type: ignore[no-untyped-def]
    """A batch counted in runs of a few words (a walk's are bounded so) is the one-run count."""
    import numpy as np

    documents = [fields for fields, _status in corpus]
    weights = SearchIndex()._weights
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bulk_module, "_RUN", 10**9)
        whole = bulk_module.count_batch(np, documents, weights)
        patch.setattr(bulk_module, "_RUN", run)
        runs = bulk_module.count_batch(np, documents, weights)
    assert runs.terms == whole.terms and runs.starts == whole.starts
    assert runs.lengths == whole.lengths and runs.doc_terms == whole.doc_terms
    for got, want in [
        (runs.entry_term, whole.entry_term),
        (runs.entry_doc, whole.entry_doc),
        (runs.entry_tf, whole.entry_tf),
    ]:
        assert got.dtype == want.dtype and got.tolist() == want.tolist()


@settings(max_examples=examples(40), deadline=None)
@given(corpora, queries, st.sampled_from([None, PHRASE_BOOST]), st.data())
def test_a_loaded_index_ranks_exactly_like_the_saved_one(corpus, asked, phrase, data) -> None:  # type: ignore[no-untyped-def]
    saved = fill(SearchIndex(phrase_boost=phrase), corpus)
    for n in data.draw(st.lists(st.integers(0, len(corpus) - 1), max_size=8)):
        saved.remove(f"k{n}")  # holes in the slots: a saved index is compacted
    saved.add("late", {"title": "Late arrival", "body": "orders of alpha"})
    for query in asked:
        saved.search(query, 5)  # arrays built and patched before the export
    state = pickle.loads(pickle.dumps(export_state(saved)))
    loaded = SearchIndex(phrase_boost=phrase)
    import_state(loaded, state)
    assert len(loaded) == len(saved)
    for query in [*asked, "late arrival"]:
        assert loaded.search(query, 10) == saved.search(query, 10)
        assert [(h.key, h.score) for h in loaded.search(query, 100)] == [
            (h.key, h.score) for h in saved.search(query, 100)
        ]
    # a loaded index keeps changing like any other: remove and replace loaded documents
    fresh = SearchIndex(phrase_boost=phrase)
    for key in [k for k in saved._slots.key_of if k is not None]:
        if key in ("k3", "k5"):
            continue
        fields, status = ({"title": "same"}, None) if key == "k7" else _document(corpus, key)
        fresh.add(key, fields, status=status)  # type: ignore[arg-type]
    for target in (loaded, saved):
        target.remove("k3")
        target.remove("k5")
        if "k7" in target:
            target.add("k7", {"title": "same"})
    for query in [*asked, "same"]:
        want = {h.key: round(h.score, 9) for h in fresh.search(query, 200)}
        assert {h.key: round(h.score, 9) for h in loaded.search(query, 200)} == want


def _document(
    corpus: list[tuple[dict[str, object], str | None]], key: str
) -> tuple[dict[str, object], str | None]:
    if key == "late":
        return {"title": "Late arrival", "body": "orders of alpha"}, None
    return corpus[int(key[1:])]


def test_import_refuses_a_full_index_other_settings_and_bad_state() -> None:
    saved = SearchIndex()
    saved.add("a", {"title": "Orders", "body": "one row per order"})
    state = export_state(saved)
    with pytest.raises(ValueError, match="empty"):
        import_state(saved, state)
    with pytest.raises(ValueError, match="settings"):
        import_state(SearchIndex(phrase_boost=PHRASE_BOOST), state)
    with pytest.raises(ValueError, match="settings"):
        import_state(SearchIndex({"title": 2.0}), state)
    broken = dict(state, docs=b"\xff\xff\xff\x7f" * (len(state["docs"]) // 4))
    target = SearchIndex()
    with pytest.raises(ValueError, match="malformed"):
        import_state(target, broken)
    assert len(target) == 0 and target.search("orders", 3) == []
    import_state(target, state)
    assert [h.key for h in target.search("orders", 3)] == ["a"]


def test_queued_documents_count_and_answer_before_any_search() -> None:
    index = SearchIndex()
    for n in range(40):
        index.add(f"k{n}", {"title": f"Doc {n}", "body": "alpha beta"}, status="deprecated")
    assert len(index) == 40 and "k3" in index and "k40" not in index
    assert index.status("k3") == "deprecated"  # a read counts the queue first
    assert index.capacity == 40
    index.add("k3", {"title": "Replaced", "body": "gamma"})  # a replacement goes in at once
    assert [h.key for h in index.search("gamma", 3)] == ["k3"]
    assert index.remove("k39") and not index.remove("k39") and len(index) == 39
