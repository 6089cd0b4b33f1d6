"""Counting the terms of many documents at once, with numpy.

:meth:`SearchIndex.add <agentkernel.retrieval.index.SearchIndex.add>` counts one document's
terms in a Python loop over its distinct words; a walk adds thousands of documents in a row,
and that loop was most of a 10,000-concept walk. Here the words of every document are split
(in C), each distinct word is expanded into its terms once for the whole batch, and the
weighted term frequencies are summed with numpy: the same numbers (field weights are multiples
of 1/1024, so every sum is exact in any order), a fraction of the time.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentkernel.retrieval.analysis import expand, expansions, word_counts_of, words

Fields = Mapping[str, "str | Iterable[str] | None"]
_RUN = 1 << 15
"""Words (about) counted in one run: bounds the per-entry arrays of a count (see count_batch)."""


@dataclass
class Counted:
    """The analysed batch, documents in the order given.

    Attributes:
        terms: Term id to term.
        lengths: Each document's weighted length.
        doc_terms: Each document's distinct terms (``None``: not listed; the index works
            them out from the entries if a document is removed).
        entry_term: Term id of every (term, document) entry, entries sorted by term then
            document.
        entry_doc: The document (its position in the batch) of every entry.
        entry_tf: The weighted term frequency of every entry.
        starts: Where each term id's entries start (one more value at the end: the count).
    """

    terms: list[str]
    lengths: list[float]
    doc_terms: list[tuple[str, ...]] | None
    entry_term: Any
    entry_doc: Any
    entry_tf: Any
    starts: list[int]


def check_weights(weights: Iterable[float]) -> None:
    """Accept weights that are multiples of 1/1024, whose weighted counts add up exactly.

    Args:
        weights: Field weights.

    Raises:
        ValueError: A weight is not such a multiple.
    """
    if not all(float(w * 1024).is_integer() for w in weights):
        raise ValueError("field weights must be multiples of 1/1024 (0.5, 1.25, 3 ...)")


def _field_words(fields: Fields, weights: Mapping[str, float]) -> Iterator[tuple[list[str], float]]:
    """The words of each field that is read (not empty, weight above 0), with its weight."""
    for name, value in fields.items():
        if not value:
            continue
        weight = weights.get(name, 1.0)
        if weight > 0:
            yield words(value if isinstance(value, str) else "\n".join(value)), weight


def count_document(fields: Fields, weights: Mapping[str, float]) -> tuple[dict[str, float], float]:
    """Weighted term frequencies and the weighted length of one document.

    All words are counted once, in C, as if every field weighed 1; a field of another weight
    (a short title or description, in practice) then adds its difference. Each distinct word
    is expanded into its terms once. Weights are multiples of 1/1024, so the sums are exact.

    Args:
        fields: The document's fields.
        weights: Field name to weight (a field not named weighs 1; 0 or less: not read).

    Returns:
        Term to weighted frequency, and the document's weighted length.
    """
    tokens: list[str] = []
    adjustments: list[tuple[Counter[str], float]] = []
    for found, weight in _field_words(fields, weights):
        tokens += found
        if weight != 1:
            adjustments.append((Counter(found), weight - 1))
    counts = word_counts_of([(Counter(tokens), 1), *adjustments])
    return counts, sum(counts.values())


def count_batch(np: Any, documents: Sequence[Fields], weights: Mapping[str, float]) -> Counted:
    """Weighted term frequencies and lengths of many documents, as ``SearchIndex._count`` gives.

    The documents are counted in runs of about :data:`_RUN` words sharing one vocabulary
    (word and term ids in first-seen order, the same as counting them all at once), so the
    per-entry arrays of a count, most of a walk's peak memory, are bounded by one run
    whatever the batch's size; the runs' entries are then merged by term.

    Args:
        np: The numpy module.
        documents: Each document's fields.
        weights: Field name to weight (a field not named weighs 1; 0 or less: not read).

    Returns:
        The counts.
    """
    vocabulary = _Vocabulary(np)
    run = _Run()
    parts: tuple[list[Any], list[Any], list[Any]] = ([], [], [])  # runs' term, doc, tf
    lengths: list[float] = []

    def count_run(end: int) -> None:
        first = len(lengths)
        entry_term, entry_doc, tf = vocabulary.count(run, end - first)
        lengths.extend(np.bincount(entry_doc, weights=tf, minlength=end - first).tolist())
        entry_doc += first
        for part, array in zip(parts, (entry_term, entry_doc, tf), strict=True):
            part.append(array)
        run.clear()

    for position, fields in enumerate(documents):
        for found, weight in _field_words(fields, weights):
            if found:
                run.add(found, weight, position - len(lengths))
        if len(run.tokens) >= _RUN:
            count_run(position + 1)
    if len(lengths) < len(documents) or not parts[0]:
        count_run(len(documents))
    terms = vocabulary.terms
    # each run is sorted by term then document, and a later run's documents come later: a
    # stable sort by term merges them; one array at a time, each run's part dropped once used
    order = np.argsort(np.concatenate(parts[0]), kind="stable") if len(parts[0]) > 1 else None
    entry_term, entry_doc, tf = (_merged(np, part, order) for part in parts)
    starts = np.searchsorted(entry_term, np.arange(len(terms) + 1)).tolist()
    # no per-document tuple of terms: the index works them out from the entries if a
    # document is ever removed (4 MB at 10,000 concepts, 16 MB at 40,000, for the walk's life)
    return Counted(terms, lengths, None, entry_term, entry_doc, tf, starts)


def _merged(np: Any, part: list[Any], order: Any) -> Any:
    """The runs' arrays of one kind as one array in ``order`` (``None``: the one run's)."""
    if order is None:
        return part.pop()
    merged = np.concatenate(part)
    part.clear()
    return merged[order]


class _Run:
    """The words of a run of documents, not yet counted: each field's words and weight."""

    def __init__(self) -> None:
        self.tokens: list[str] = []
        self.sizes: list[int] = []
        self.weights: list[float] = []
        self.docs: list[int] = []  # each field's document, counted from the run's first

    def add(self, found: list[str], weight: float, doc: int) -> None:
        self.tokens += found
        self.sizes.append(len(found))
        self.weights.append(weight)
        self.docs.append(doc)

    def clear(self) -> None:
        self.tokens.clear()
        self.sizes.clear()
        self.weights.clear()
        self.docs.clear()


class _Vocabulary:
    """Word and term ids shared by a batch's runs, each word expanded into its terms once."""

    def __init__(self, np: Any) -> None:
        self.np = np
        self.word_id: dict[str, int] = {}  # first-seen order: the same ids in every process
        self.term_id: dict[str, int] = {}
        self.terms: list[str] = []  # term id to term
        self.pointer = np.zeros(1, dtype=np.int32)  # word id to its first expanded entry
        self.expanded = np.zeros(0, dtype=np.int64)  # the term ids of every word, in order

    def ids(self, tokens: list[str]) -> Any:
        """The tokens' word ids, new words filed and expanded."""
        np = self.np
        word_id, term_id, terms = self.word_id, self.term_id, self.terms
        cache = expansions()
        pointers: list[int] = []
        expanded: list[int] = []
        base = len(self.expanded)
        for word in dict.fromkeys(tokens):
            if word in word_id:
                continue
            word_id[word] = len(word_id)
            found_terms = cache.get(word)
            if found_terms is None:
                found_terms = expand(word)
            for term in found_terms:
                known = term_id.get(term)
                if known is None:
                    known = term_id[term] = len(terms)
                    terms.append(term)
                expanded.append(known)
            pointers.append(base + len(expanded))
        if pointers:
            self.pointer = np.concatenate((self.pointer, np.asarray(pointers, dtype=np.int32)))
            self.expanded = np.concatenate((self.expanded, np.asarray(expanded, dtype=np.int64)))
        return np.fromiter(map(word_id.__getitem__, tokens), np.int32, len(tokens))

    def count(self, run: _Run, count: int) -> tuple[Any, Any, Any]:
        """A run's (term, document, weighted frequency) entries, sorted by term then document.

        Args:
            run: The run's words (documents numbered from its first).
            count: How many documents the run holds.

        Returns:
            Term ids (int64), documents (int64, from the run's first) and frequencies.
        """
        np = self.np
        # int32 per token and entry, every intermediate dropped once used
        token_word = self.ids(run.tokens)
        weight_values = sorted(set(run.weights))  # a handful: sorted with the keys as a code
        code_of = {weight: code for code, weight in enumerate(weight_values)}
        bits = max(1, (len(weight_values) - 1).bit_length())
        sizes = run.sizes
        token_code = np.repeat(np.asarray([code_of[w] for w in run.weights], dtype=np.int8), sizes)
        token_doc = np.repeat(np.asarray(run.docs, dtype=np.int32), sizes)
        pointer = self.pointer
        per_token = (pointer[1:] - pointer[:-1])[token_word]
        source = np.repeat(np.arange(len(token_word), dtype=np.int32), per_token)
        offset = np.arange(len(source), dtype=np.int32) - np.repeat(
            np.cumsum(per_token, dtype=np.int32) - per_token, per_token
        )
        del per_token
        index = pointer[:-1][token_word][source]
        del token_word
        index += offset
        del offset
        entry_terms = self.expanded[index]
        del index
        # one sort of (term, document, field weight) keys groups the entries by term then document
        width = max(count, 1)
        entry_terms *= width
        entry_terms += token_doc[source]
        del token_doc
        entry_terms <<= bits
        entry_terms |= token_code[source]
        del token_code, source
        entry_terms.sort()
        keys = entry_terms
        weight = np.asarray(weight_values or [1.0], dtype=np.float64)[keys & ((1 << bits) - 1)]
        keys >>= bits
        changed = np.concatenate(([True], keys[1:] != keys[:-1]))
        first = np.flatnonzero(changed) if len(keys) else keys
        tf = np.add.reduceat(weight, first) if len(keys) else np.zeros(0)
        unique = keys[first]
        return unique // width, unique % width, tf


def doc_terms_of(
    np: Any, terms: list[str], entry_term: Any, entry_doc: Any, count: int
) -> list[tuple[str, ...]]:
    """Each document's distinct terms, from the (term, document) entries.

    Args:
        np: The numpy module.
        terms: Term id to term.
        entry_term: The term id of each entry.
        entry_doc: The document of each entry (``0 <= doc < count``).
        count: How many documents.

    Returns:
        One tuple of terms per document.
    """
    by_doc = np.argsort(entry_doc, kind="stable")
    names = np.asarray(terms, dtype=object)[entry_term[by_doc]].tolist() if terms else []
    bounds = np.searchsorted(entry_doc[by_doc], np.arange(count + 1)).tolist()
    return [tuple(names[bounds[i] : bounds[i + 1]]) for i in range(count)]
