"""An incremental BM25 index with field weights, in pure Python.

Each document is a handful of named fields (title, description, tags, type, id, body); a
term's frequency in a document is the weighted sum of its frequencies in the fields, and the
document length is the weighted sum of the field lengths (a single-normalisation BM25F).
Adding, replacing and removing a document touch only that document's postings, so a write
or a refresh never rebuilds the index.

Search is exact top-k BM25 with *max-score* pruning: query terms are visited rarest first,
and once the best score the remaining terms could still give a new document falls below the
current k-th score, those terms only update documents already in the running. Known-item
queries (a few rare words) therefore touch a few postings, not the whole collection.
"""

from __future__ import annotations

import heapq
import math
import re
from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable, Mapping
from typing import Any

DEFAULT_WEIGHTS: dict[str, float] = {
    "title": 2.0,
    "description": 1.5,
    "tags": 1.5,
    "type": 1.0,
    "id": 1.0,
    "body": 1.0,
}
"""Field weights used by ``OKFManager``; a field not named here weighs 1.

Chosen with ``DEFAULT_B`` on 10,000 Debian package concepts against four query sets (body
phrases: the bench's 200 and 1,000 held-out; package names; short descriptions): light
weights with ``b=0.5`` were best or tied on all four (heavier title/id weights over-reward
short fields once the query is a phrase from the body).
"""

DEFAULT_K1 = 1.2
DEFAULT_B = 0.5

_WORD = re.compile(r"[^\W_]+")

_STOPWORD_TEXT = """a an and are as at be but by for from has have in into is it its of on or that
the their then there these this to was were will with"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())


# ASCII text takes a faster road to the same words: one table maps A-Z to a-z and every byte
# that is not a letter or digit to a space, then ``split`` cuts at the spaces
_ASCII_FOLD = bytes(
    c + 32 if 65 <= c <= 90 else c if 97 <= c <= 122 or 48 <= c <= 57 else 32 for c in range(256)
)


def _words(text: str) -> list[str]:
    """Lower-case words of ``text`` (letters and digits of any script), stopwords kept."""
    if text.isascii():
        return text.encode("ascii").translate(_ASCII_FOLD).decode("ascii").split()
    return _WORD.findall(text.lower())


def tokenize(text: str) -> list[str]:
    """Split text into lower-case word tokens, dropping a short list of English stopwords.

    Letters and digits of any script form words; everything else (punctuation, ``_``,
    ``/``, ``-``) separates them, so ``tables/customer_orders`` gives three tokens.

    Args:
        text: Any text.

    Returns:
        The tokens, in order.
    """
    return [w for w in _words(text) if w not in STOPWORDS]


class LexicalIndex:
    """BM25 over weighted fields, updated document by document.

    Not thread-safe by itself: ``OKFManager`` serialises access with its own lock.

    Example:
        >>> index = LexicalIndex()
        >>> index.add("a", {"title": "Orders table", "body": "one row per order"})
        >>> index.add("b", {"title": "Customers", "body": "one row per customer"})
        >>> [key for key, _ in index.search("order rows", 1)]
        ['a']
    """

    def __init__(
        self,
        weights: Mapping[str, float] | None = None,
        *,
        k1: float = DEFAULT_K1,
        b: float = DEFAULT_B,
        vectorized: bool | None = None,
    ) -> None:
        """Create an empty index.

        Args:
            weights: Field name to weight; defaults to :data:`DEFAULT_WEIGHTS`.
            k1: BM25 term-frequency saturation.
            b: BM25 length normalisation (0 = none, 1 = full).
            vectorized: Score with numpy (same results, several times faster on large
                bundles). ``None`` uses numpy when it is installed; ``False`` never does.
        """
        self._weights = dict(DEFAULT_WEIGHTS if weights is None else weights)
        # a weight splits into whole repeats of the field's text (counted in C, in one pass)
        # and a fractional rest added token by token; for the default weights only the short
        # description and tags fields take the slow road, and every count stays exact
        self._whole = {name: int(w) if w > 0 else 0 for name, w in self._weights.items()}
        self._fraction = {
            name: w - int(w) for name, w in self._weights.items() if w > 0 and w != int(w)
        }
        self._k1 = k1
        self._b = b
        # a defaultdict so that add() is one subscript per term; reads check membership first
        self._postings: defaultdict[str, dict[int, float]] = defaultdict(dict)
        self._doc_terms: dict[int, tuple[str, ...]] = {}
        self._doc_length: dict[int, float] = {}
        self._slot_of: dict[Hashable, int] = {}
        self._key_of: dict[int, Hashable] = {}
        self._next_slot = 0
        self._total_length = 0.0
        self._vectorized = vectorized
        self._arrays: dict[str, tuple[Any, Any]] = {}  # term -> (slots, frequencies), numpy
        self._length_array: Any = None

    def __len__(self) -> int:
        return len(self._doc_terms)

    def __contains__(self, key: object) -> bool:
        return key in self._slot_of

    def add(self, key: Hashable, fields: Mapping[str, str | Iterable[str]]) -> None:
        """Index a document, replacing any earlier version under the same key.

        Args:
            key: The document's identity (a concept id).
            fields: Field name to text, or to already-split tokens.
        """
        self.remove(key)
        counts, length = self._count(fields)
        slot = self._next_slot
        self._next_slot += 1
        self._slot_of[key] = slot
        self._key_of[slot] = key
        self._doc_terms[slot] = tuple(counts)
        self._doc_length[slot] = length
        self._total_length += length
        postings = self._postings
        arrays = self._arrays
        for token, frequency in counts.items():
            postings[token][slot] = frequency
        if arrays:
            for token in counts:
                arrays.pop(token, None)
        if self._length_array is not None:
            self._set_length(slot, length)

    def _count(self, fields: Mapping[str, str | Iterable[str]]) -> tuple[dict[str, float], float]:
        """Weighted term frequencies and the weighted length of one document."""
        whole = self._whole
        texts: list[str] = []
        split: list[str] = []
        rest: list[tuple[float, str | Iterable[str]]] = []
        for name, value in fields.items():
            if not value:
                continue
            repeat = whole.get(name, 1)  # a field not named in the weights weighs 1
            if repeat:
                if isinstance(value, str):
                    texts.extend([value] * repeat)
                else:
                    value = list(value)
                    split.extend(value * repeat)
            fraction = self._fraction.get(name)
            if fraction:
                rest.append((fraction, value))
        tokens = _words(" ".join(texts))
        if split:
            tokens += split
        tally: dict[str, float] = Counter(tokens)  # type: ignore[assignment]
        length = float(len(tokens))
        for stopword in STOPWORDS.intersection(tally):
            length -= tally.pop(stopword)
        get = tally.get
        for fraction, value in rest:
            for token in _words(value) if isinstance(value, str) else value:
                if token not in STOPWORDS:
                    tally[token] = get(token, 0) + fraction
                    length += fraction
        return tally, length

    def remove(self, key: Hashable) -> bool:
        """Drop a document from the index.

        Args:
            key: The document's identity.

        Returns:
            Whether it was indexed.
        """
        slot = self._slot_of.pop(key, None)
        if slot is None:
            return False
        del self._key_of[slot]
        self._total_length -= self._doc_length.pop(slot)
        if self._length_array is not None:
            self._set_length(slot, 0.0)
        for token in self._doc_terms.pop(slot):
            self._arrays.pop(token, None)
            bucket = self._postings.get(token)
            if bucket is None:
                continue
            bucket.pop(slot, None)
            if not bucket:
                del self._postings[token]
        return True

    def search(self, query: str, limit: int) -> list[tuple[Hashable, float]]:
        """Return the ``limit`` best documents for ``query`` with their BM25 scores.

        Args:
            query: Free text; tokenised like the documents.
            limit: The most results.

        Returns:
            ``(key, score)`` pairs, best first; ties broken by key order of insertion.
        """
        count = len(self._doc_terms)
        if limit <= 0 or count == 0:
            return []
        postings = self._postings
        terms = [t for t in dict.fromkeys(tokenize(query)) if t in postings]
        if not terms:
            return []
        k1, b = self._k1, self._b
        average = self._total_length / count if self._total_length > 0 else 1.0
        norm_base = k1 * (1.0 - b)
        norm_scale = k1 * b / average
        lengths = self._doc_length
        ranked: list[tuple[float, str]] = []
        for term in terms:
            frequency = len(postings[term])
            ranked.append((math.log(1.0 + (count - frequency + 0.5) / (frequency + 0.5)), term))
        ranked.sort(key=lambda pair: -pair[0])  # rarest (largest bound) first
        np = _numpy() if self._vectorized is not False else None
        if np is not None:
            return self._search_vectorized(np, ranked, limit, norm_base, norm_scale)
        weighted = [(idf, postings[term]) for idf, term in ranked]
        bounds = [idf * (k1 + 1.0) for idf, _ in weighted]
        remaining = [0.0] * (len(bounds) + 1)
        for i in range(len(bounds) - 1, -1, -1):
            remaining[i] = remaining[i + 1] + bounds[i]

        scores: dict[int, float] = {}
        for i, (idf, bucket) in enumerate(weighted):
            gain = idf * (k1 + 1.0)
            if len(scores) >= limit:
                threshold = heapq.nlargest(limit, scores.values())[-1]
                admit_new = remaining[i] > threshold
            else:
                admit_new = True
            if admit_new:
                for slot, tf in bucket.items():
                    part = gain * tf / (tf + norm_base + norm_scale * lengths[slot])
                    scores[slot] = scores.get(slot, 0.0) + part
            else:
                # only documents already in the running can still reach the top k
                floor = threshold - remaining[i]
                alive = {s: v for s, v in scores.items() if v >= floor}
                for slot in alive:
                    found = bucket.get(slot)
                    if found is not None:
                        norm = norm_base + norm_scale * lengths[slot]
                        alive[slot] += gain * found / (found + norm)
                scores = alive
        best = heapq.nsmallest(limit, scores.items(), key=lambda item: (-item[1], item[0]))
        key_of = self._key_of
        return [(key_of[slot], score) for slot, score in best]

    # -- the numpy scorer ---------------------------------------------------------------

    def _search_vectorized(
        self,
        np: Any,
        ranked: list[tuple[float, str]],
        limit: int,
        norm_base: float,
        norm_scale: float,
    ) -> list[tuple[Hashable, float]]:
        size = self._next_slot
        lengths = self._lengths(np, size)
        scores = np.zeros(size)
        gain_scale = self._k1 + 1.0
        for idf, term in ranked:
            slots, frequencies = self._term_arrays(np, term)
            denominator = frequencies + norm_base + norm_scale * lengths[slots]
            scores[slots] += idf * gain_scale * frequencies / denominator
        candidates = np.flatnonzero(scores)
        if len(candidates) > limit:
            values = scores[candidates]
            kth = np.partition(values, len(values) - limit)[len(values) - limit]
            candidates = candidates[values >= kth]
        order = candidates[np.lexsort((candidates, -scores[candidates]))][:limit]
        key_of = self._key_of
        return [(key_of[int(slot)], float(scores[slot])) for slot in order]

    def _term_arrays(self, np: Any, term: str) -> tuple[Any, Any]:
        cached = self._arrays.get(term)
        if cached is None:
            bucket = self._postings[term]
            slots = np.fromiter(bucket.keys(), dtype=np.int64, count=len(bucket))
            frequencies = np.fromiter(bucket.values(), dtype=np.float64, count=len(bucket))
            cached = self._arrays[term] = (slots, frequencies)
        return cached

    def _lengths(self, np: Any, size: int) -> Any:
        if self._length_array is None or len(self._length_array) < size:
            array = np.zeros(max(size * 2, 1024))
            for slot, length in self._doc_length.items():
                array[slot] = length
            self._length_array = array
        return self._length_array

    def _set_length(self, slot: int, length: float) -> None:
        if slot < len(self._length_array):
            self._length_array[slot] = length
        else:
            self._length_array = None  # rebuilt, larger, at the next vectorized search


_NUMPY: list[Any] = []


def _numpy() -> Any | None:
    """Import numpy on first use (never at module import); ``None`` when it is absent."""
    if not _NUMPY:
        try:
            import numpy
        except ImportError:
            _NUMPY.append(None)
        else:
            _NUMPY.append(numpy)
    return _NUMPY[0]
