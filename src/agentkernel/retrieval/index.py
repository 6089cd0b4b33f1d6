"""An incremental BM25F-style index over weighted fields, with title matches and status.

Each document is a handful of named fields (by default ``title``, ``aliases``, ``tags``,
``id``, ``description``, ``type`` and ``body``, the title weighing most and the body least:
see :data:`DEFAULT_WEIGHTS`). A term's frequency in a document is the weighted sum of its
frequencies in the fields, and the document's length the weighted sum of the field lengths
(BM25F with one length normalisation). Adding, replacing and removing a document
touch only its own postings; a removed document's slot is reused by the next add, so the
scorer's arrays stay the size of the live collection however many rewrites there were.

On top of BM25 these rules order the results:

* **Title first.** A document whose title says exactly what the query says (the same
  stems in any order, stop words aside: ``roast yields`` for *Roast yield*, ``legacy gross
  margin`` for *Gross margin (legacy)*) ranks above every document that does not; a title
  whose words are all in the query (*Purchasers* in "how many users purchased something?")
  multiplies the score by ``1 + title_boost * share``, where ``share`` is the fraction of the
  query's words the title covers.
* **Words in order** (off unless ``phrase_boost`` is given: the curated stores use
  :data:`PHRASE_BOOST`). Among the best candidates by BM25 (the limit plus 8, or
  ``phrase_pool``), a document holding pairs of the query's consecutive words next to each
  other in one field (``programming language``, stems compared; pairs with a question word
  are not looked for) has its score multiplied by ``1 + phrase_boost * share``, ``share``
  being the fraction of the query's word pairs it holds: BM25 counts words but not their
  order, and a quoted line should find the page that says it. Each document keeps a filter
  of its adjacent word pairs (2 to 4 bytes a word).
* **Said up front** (:mod:`.ranking`'s head rule). Among the best
  :data:`~.ranking.HEAD_POOL` documents by BM25 (a second pass), a document whose head fields
  (:data:`~.ranking.HEAD_FIELDS`: title, aliases, tags, description) hold query words has
  its score multiplied by ``1 + head_boost * share``, ``share`` being the part of the
  query's term weight they hold. Each document keeps the terms of its head fields.
* **Status.** A document added with a status in :data:`STATUS_PENALTY` (``deprecated``,
  ``superseded``, ``retired``) has its score multiplied by the penalty: it ranks below a
  current document of equal relevance, and is never filtered out.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any, cast

from agentkernel.retrieval._arrays import TermArrays, numpy_or_none
from agentkernel.retrieval._bulk import (
    Counted,
    check_weights,
    count_batch,
    count_document,
    doc_terms_of,
)
from agentkernel.retrieval._pairs import pairs_of, query_pairs, raise_by_pairs
from agentkernel.retrieval._postings import Postings, TopQuery, top_pruned
from agentkernel.retrieval._slots import Slots
from agentkernel.retrieval._titles import TitleAnchors
from agentkernel.retrieval.analysis import parse_query, title_key
from agentkernel.retrieval.ranking import (
    DEFAULT_HEAD_BOOST,
    DEFAULT_TITLE_BOOST,
    HEAD_FIELDS,
    HEAD_POOL,
    TIER_NONE,
    TIER_TITLE,
    Hit,
    head_scorer,
    head_terms,
    rank,
)

DEFAULT_WEIGHTS: dict[str, float] = {
    "title": 1.25,
    "aliases": 1.125,
    "tags": 1.125,
    "description": 1.0625,
    "id": 1.0,
    "type": 1.0,
    "body": 1.0,
}
"""Field weights; a field not named here weighs 1.

A word counts most in the title, then in aliases and tags, then in the description, then in
the body: among documents alike but for where a query word sits, that is the order they
rank in. The steps are small by measurement: on held-out Debian known-item queries
(``bench/heldout_bench.py``, seeds 99, 7 and 3, 600 queries each, k1 0.4) these weights tie
flat ones (MRR@10 0.865 against 0.865 at 10,000 concepts), while heavier ones (3, 2, 2, 1.5
for the title, aliases, tags and description) ranked a package whose *name* holds a query
word above the package whose text the query quotes (0.749 against 0.752 flat at 40,000).
An exact or contained title match still ranks first through the title rules, not through
BM25. An owner may pass other weights.
"""


DEFAULT_K1 = 0.4
DEFAULT_B = 0.5
PHRASE_BOOST = 0.25
"""The measured strength of the rule for words in order (what the curated stores use).

Chosen on 1,800 held-out Debian known-item queries (seeds 99, 7, 3; 10,000 concepts): MRR@10
0.865 without the rule, 0.873 at 0.1, 0.878 at 0.25, 0.880 at 0.5 (``bench/heldout_bench.py``);
on the questions (checked, not tuned) 0.25 gave top-1 0.814 and MRR@10 0.884 against 0.807 and
0.881 without it, 0.5 gave 0.800 and 0.877 (under the 0.88 target), so 0.25.
"""
DEFAULT_PHRASE_BOOST = 0.0
"""Off unless asked for: looking for the word pairs costs about 50 us per search, which an
index searched in 0.2 ms (``OKFManager`` at 10,000 concepts, against tantivy's 0.16 ms)
cannot afford under its 1.5x target; a store's search of 1-2 ms can."""
DEFAULT_PHRASE_POOL = 0
WARM_DOCUMENTS = 64
"""Words held by this many documents get their arrays at :meth:`SearchIndex.warm_up`."""
_BULK_AT = 32  # queued documents counted with numpy in one pass from this many on
_NO_TITLE: frozenset[str] = frozenset()


Fields = Mapping[str, "str | Iterable[str] | None"]


class SearchIndex:
    """BM25F over weighted fields, updated document by document.

    Not thread-safe by itself, searches included (they fill caches): its owner serialises
    every call (``OKFManager`` holds a lock).

    Example:
        >>> index = SearchIndex()
        >>> index.add("a", {"title": "Orders table", "body": "one row per order"})
        >>> index.add("b", {"title": "Customers", "body": "one row per customer"})
        >>> [hit.key for hit in index.search("which table has the orders?", 1)]
        ['a']
    """

    def __init__(
        self,
        weights: Mapping[str, float] | None = None,
        *,
        k1: float = DEFAULT_K1,
        b: float = DEFAULT_B,
        title_boost: float = DEFAULT_TITLE_BOOST,
        phrase_boost: float | None = None,
        phrase_pool: int | None = None,
        title_field: str = "title",
        vectorized: bool | None = None,
        head_boost: float = DEFAULT_HEAD_BOOST,
        head_fields: Sequence[str] = HEAD_FIELDS,
    ) -> None:
        """Create an empty index.

        Args:
            weights: Field name to weight (a multiple of 1/1024); defaults to
                :data:`DEFAULT_WEIGHTS`.
            k1: BM25 term-frequency saturation.
            b: BM25 length normalisation (0 = none, 1 = full).
            title_boost: How much a title found inside the query raises a score.
            phrase_boost: How much holding the query's words in order raises a score (0: the
                word pairs are neither kept nor looked for); ``None``: the default (0; the
                stores pass :data:`PHRASE_BOOST`).
            phrase_pool: The fewest BM25 candidates the phrase rule looks at; ``None``: the
                default.
            title_field: The field the title rules read.
            vectorized: Score with numpy (same results, faster on large indexes). ``None``
                uses numpy when it is installed; ``False`` never does.
            head_boost: How much query words in the head fields raise a score (0: the
                head terms are neither kept nor looked at).
            head_fields: The head fields.
        """
        self._weights = dict(DEFAULT_WEIGHTS if weights is None else weights)
        check_weights(self._weights.values())
        self._k1 = k1
        self._b = b
        self._title_boost = title_boost
        self._phrase_boost = DEFAULT_PHRASE_BOOST if phrase_boost is None else phrase_boost
        self._phrase_pool = DEFAULT_PHRASE_POOL if phrase_pool is None else phrase_pool
        self._pairs: list[bytes] = []  # slot -> a bit set of its adjacent word pairs (a filter)
        self._title_field = title_field
        self._head_boost = head_boost
        self._head_fields = tuple(head_fields) if head_boost else ()
        self._heads: list[tuple[str, ...]] = []  # slot -> the terms of its head fields
        self._vectorized = vectorized
        self._postings = Postings()
        self._doc_terms: list[tuple[str, ...] | None] = []  # None: in self._unlisted
        # documents filed without their term lists: (terms, entry term ids, entry slots)
        self._unlisted: list[tuple[list[str], Any, Any]] = []
        self._doc_length: list[float] = []
        self._title_key: list[frozenset[str]] = []
        self._status: dict[int, str] = {}
        self._slots: Slots[Hashable] = Slots()
        # documents added but not yet counted (see flush): key -> (fields, status)
        self._pending: dict[Hashable, tuple[Fields, str | None]] = {}
        self._titles = TitleAnchors()
        self._total_length = 0.0
        self._scorer = TermArrays()  # numpy arrays per term, built on first use

    @property
    def capacity(self) -> int:
        """Slots allocated: the most documents ever live at once (freed slots are reused)."""
        self.flush()
        return len(self._slots.key_of)

    def __len__(self) -> int:
        return len(self._slots) + len(self._pending)

    def __contains__(self, key: object) -> bool:
        return key in self._slots or key in self._pending

    def status(self, key: Hashable) -> str | None:
        """Return the status a document was added with, or ``None``.

        Args:
            key: The document's key.

        Returns:
            The status, lower-cased, when one was given.
        """
        self.flush()
        slot = self._slots.slot_of.get(key)
        return None if slot is None else self._status.get(slot)

    def add(self, key: Hashable, fields: Fields, *, status: str | None = None) -> None:
        """Index a document, replacing any earlier version under the same key.

        Args:
            key: The document's identity (a concept id, a page slug).
            fields: Field name to text, or to a list of texts (aliases, tags).
            status: Its lifecycle status; ``deprecated``, ``superseded`` and ``retired``
                lower its rank (see :data:`STATUS_PENALTY`), any other value is kept only.
        """
        if key in self._slots or key in self._pending:
            self.remove(key)  # a replacement: applied now, so slots go as one by one
        self._pending[key] = (
            {name: v if v is None or isinstance(v, str) else list(v) for name, v in fields.items()},
            status,
        )

    def flush(self) -> None:
        """Index the documents added since the last search, all at once.

        :meth:`add` only queues a new document; the next search (or any other read) counts
        the terms of everything queued in one vectorised pass (:mod:`._bulk`), which is
        several times faster than counting document by document. A caller that adds a
        whole bundle can call this to pay that pass now rather than in its first search.
        The index is the same either way, slot for slot.
        """
        pending = self._pending
        if not pending:
            return
        self._pending = {}
        np = numpy_or_none() if self._vectorized is not False else None
        documents = list(pending.values())
        titles = [self._title_of(fields) for fields, _status in documents]
        pairs = [pairs_of(fields) if self._phrase_boost else b"" for fields, _status in documents]
        heads = [self._head_of(fields) for fields, _status in documents]
        statuses = [status for _fields, status in documents]
        if np is None or len(pending) < _BULK_AT:
            for i, (key, (fields, _status)) in enumerate(pending.items()):
                counts, length = self._count(fields)
                slot = self._place(
                    key, statuses[i], titles[i], pairs[i], tuple(counts), length, heads[i]
                )
                self._post(slot, counts.items())
            return
        counted = count_batch(np, [fields for fields, _status in documents], self._weights)
        self.file_counted(np, list(pending), statuses, titles, pairs, counted, heads)

    def file_counted(
        self,
        np: Any,
        keys: list[Hashable],
        statuses: list[str | None],
        titles: list[frozenset[str]],
        pairs: list[bytes],
        counted: Counted,
        heads: Sequence[tuple[str, ...]] | None = None,
    ) -> None:
        """Index new documents already analysed (a bulk count, or a saved copy of one).

        Args:
            np: The numpy module.
            keys: The documents' keys, none of them indexed yet, in the slot order wanted.
            statuses: Their statuses.
            titles: Their title keys (:meth:`_title_of`).
            pairs: Their word-pair filters (empty without the phrase rule).
            counted: Their terms, in the same order.
            heads: The terms of their head fields (:meth:`_head_of`; ``None``: none).
        """
        listed = counted.doc_terms
        held: list[tuple[str, ...]] = list(heads) if heads is not None else [()] * len(keys)
        slots: Sequence[int] | None = self._place_all(keys, statuses, titles, pairs, counted, held)
        if slots is None:
            slots = [
                self._place(
                    key,
                    statuses[i],
                    titles[i],
                    pairs[i],
                    listed[i] if listed else None,
                    length,
                    held[i],
                )
                for i, (key, length) in enumerate(zip(keys, counted.lengths, strict=True))
            ]
        entry_slot = np.asarray(slots, dtype=np.int64)[counted.entry_doc]
        tfs = counted.entry_tf
        if listed is None:  # each document's terms are worked out if it is ever removed
            # int32 term ids (half the bytes); entry_slot is the postings' own array
            self._unlisted.append(
                (counted.terms, counted.entry_term.astype(np.int32, copy=False), entry_slot)
            )
        starts = counted.starts
        postings = self._postings
        fresh: list[int] = []  # the numbers of the terms no document held yet
        for number, term in enumerate(counted.terms):
            if term not in postings:
                fresh.append(number)
                continue
            begin, end = starts[number], starts[number + 1]
            more = entry_slot[begin:end].tolist()
            postings[term].update(zip(more, tfs[begin:end].tolist(), strict=True))
            self._scorer.changed(term, more)
        postings.pack(np, counted.terms, fresh, entry_slot, tfs, starts)

    def _title_of(self, fields: Fields) -> frozenset[str]:
        title = fields.get(self._title_field)
        return title_key(title) if isinstance(title, str) else _NO_TITLE

    def _head_of(self, fields: Fields) -> tuple[str, ...]:
        """The distinct terms of a document's head fields (empty without the head rule)."""
        return head_terms(fields, self._head_fields)

    def _place(
        self,
        key: Hashable,
        status: str | None,
        title_key: frozenset[str],
        pairs: bytes,
        terms: tuple[str, ...] | None,
        length: float,
        head: tuple[str, ...] = (),
    ) -> int:
        """Give a new document its slot and everything but its postings; return the slot."""
        slot = self._slots.take(key)
        state = (status or "").strip().lower()
        if slot == len(self._doc_terms):
            self._doc_terms.append(terms)
            self._doc_length.append(length)
            self._title_key.append(title_key)
            self._pairs.append(pairs)
            self._heads.append(head)
        else:
            self._doc_terms[slot] = terms
            self._doc_length[slot] = length
            self._title_key[slot] = title_key
            self._pairs[slot] = pairs
            self._heads[slot] = head
        if state:
            self._status[slot] = state
        self._total_length += length
        if title_key:
            self._titles.file(slot, title_key)
        self._scorer.set_length(slot, length)
        return slot

    def _place_all(
        self,
        keys: list[Hashable],
        statuses: list[str | None],
        titles: list[frozenset[str]],
        pairs: list[bytes],
        counted: Counted,
        heads: list[tuple[str, ...]],
    ) -> range | None:
        """:meth:`_place` for many documents at the end of the slots (``None``: a slot is free)."""
        slots = self._slots.extend(keys)
        if slots is None:
            return None
        states = [(status or "").strip().lower() for status in statuses]
        self._doc_terms.extend(counted.doc_terms or [None] * len(keys))
        self._doc_length.extend(counted.lengths)
        self._title_key.extend(titles)
        self._pairs.extend(pairs)
        self._heads.extend(heads)
        self._status.update(
            (slot, state) for slot, state in zip(slots, states, strict=True) if state
        )
        self._total_length += sum(counted.lengths)  # exact in any order (see _count)
        for slot, title in zip(slots, titles, strict=True):
            if title:
                self._titles.file(slot, title)
            self._scorer.set_length(slot, counted.lengths[slot - slots.start])
        return slots

    def _list_terms(self, slot: int) -> tuple[str, ...]:
        """The terms of a document filed without them, worked out for every such document."""
        np = numpy_or_none()
        for terms, entry_term, entry_slot in self._unlisted:
            found = doc_terms_of(np, terms, entry_term, entry_slot, len(self._doc_terms))
            for other, terms_found in enumerate(found):
                if self._doc_terms[other] is None and terms_found:
                    self._doc_terms[other] = terms_found
        self._unlisted.clear()
        for other, held in enumerate(self._doc_terms):
            if held is None:
                self._doc_terms[other] = ()
        return self._doc_terms[slot] or ()

    def _post(self, slot: int, counts: Iterable[tuple[str, float]]) -> None:
        """File one document's term frequencies in the postings."""
        postings = self._postings
        scorer = self._scorer
        for term, frequency in counts:
            bucket = postings.get(term)
            if bucket is None:
                postings[term] = {slot: frequency}
            else:
                bucket[slot] = frequency
                scorer.changed(term, slot)

    def remove(self, key: Hashable) -> bool:
        """Drop a document; its slot is reused by a later add.

        Args:
            key: The document's identity.

        Returns:
            Whether it was indexed.
        """
        self.flush()
        slot = self._slots.release(key)
        if slot is None:
            return False
        self._total_length -= self._doc_length[slot]
        self._doc_length[slot] = 0.0
        self._status.pop(slot, None)
        self._titles.unfile(slot, self._title_key[slot])
        self._title_key[slot] = _NO_TITLE
        self._pairs[slot] = b""
        self._heads[slot] = ()
        self._scorer.set_length(slot, 0.0)
        postings = self._postings
        terms = self._doc_terms[slot]
        for term in self._list_terms(slot) if terms is None else terms:
            self._scorer.changed(term, slot)
            bucket = postings.get(term)
            if bucket is None:
                continue
            bucket.pop(slot, None)
            if not bucket:
                del postings[term]
                self._scorer.forget(term)
        self._doc_terms[slot] = ()
        if not self._slots:
            self._total_length = 0.0  # no float drift carried into the next collection
        return True

    def warm_up(self, min_documents: int = WARM_DOCUMENTS) -> None:
        """Build the scoring arrays of every word held by ``min_documents`` documents or more.

        A search builds a word's arrays the first time it scores the word, in a pass over
        every document holding it; for a common word that is most of the index, and the
        first searches after loading pay it word by word. A caller that loaded many
        documents at once can pay it here, once (the arrays are then kept up to date through
        :meth:`add` and :meth:`remove`). Nothing happens without numpy or when scoring in
        pure Python.

        Args:
            min_documents: The least number of documents a word is held by to be built now.
        """
        self.flush()
        np = numpy_or_none() if self._vectorized is not False else None
        if np is None:
            return
        postings = self._postings
        for term in postings:
            if postings.count(term) >= min_documents:
                self._scorer.arrays(np, postings, term)

    def search(self, query: str, limit: int) -> list[Hit]:
        """Return the ``limit`` best documents for ``query``.

        Args:
            query: Free text or a question; analysed like the documents, stop words aside.
            limit: The most results.

        Returns:
            Hits, best first; ties broken by slot order.
        """
        self.flush()
        if limit <= 0 or not self._slots:
            return []
        postings = self._postings
        weights, query_key = parse_query(query)
        terms = {t: w for t, w in weights.items() if t in postings}
        if not terms:
            return []
        exact, contained = self._titles.matches(frozenset(query_key), self._title_key)
        needles = query_pairs(query) if self._phrase_boost else []
        pool = max(limit + 8, self._phrase_pool) if needles else limit + 8
        weighted: dict[str, float] = {}
        if self._head_boost:
            pool = max(pool, HEAD_POOL)
            weighted = terms
        while True:
            raw = self._top(terms, pool)
            candidates = dict(raw)
            for slot in exact | contained.keys():
                if slot not in candidates:
                    candidates[slot] = self._score(slot, terms)
            if needles:
                raise_by_pairs(self._pairs, candidates, needles, self._phrase_boost)
            headed = {slot for slot, _score in raw[:HEAD_POOL]} if weighted else set()
            ranked = self._rank(candidates, exact, contained, limit, weighted, headed)
            complete = len(raw) < pool or len(self._slots) <= pool
            # a document outside the pool scored at most the pool's last raw score, and only
            # title matches (all already candidates) can rise above what they scored (the
            # phrase and head rules lift candidates only: they re-rank the pool)
            if complete or (
                len(ranked) >= limit
                and (ranked[limit - 1].tier or ranked[limit - 1].score >= raw[-1][1])
            ):
                break
            pool *= 4
        key_of = self._slots.key_of
        # the rules ranked slots: each hit's key is a slot
        return [Hit(key_of[cast(int, hit.key)], hit.score, hit.tier) for hit in ranked[:limit]]

    # -- scoring ------------------------------------------------------------------------

    def _count(self, fields: Fields) -> tuple[dict[str, float], float]:
        """Weighted term frequencies and the weighted length of one document."""
        return count_document(fields, self._weights)

    def _rank(
        self,
        candidates: dict[int, float],
        exact: set[int],
        contained: dict[int, float],
        limit: int,
        weighted: dict[str, float],
        headed: set[int],
    ) -> list[Hit]:
        """The best ``limit`` candidate slots by the one rule set (:func:`.ranking.rank`).

        The head rule reads ``weighted`` (the query's terms) for the ``headed`` slots only:
        the best :data:`~.ranking.HEAD_POOL` by BM25, whatever the limit, so a longer
        result list starts with the shorter one.
        """
        status = self._status
        heads = self._heads
        share_of = head_scorer(weighted)
        rows = [
            (
                slot,
                score,
                TIER_TITLE if slot in exact else TIER_NONE,
                contained.get(slot, 0.0),
                status.get(slot),
                None,  # no trust tier in this engine's documents
                None,  # ties: slot order
                share_of(heads[slot]) if slot in headed else 0.0,
            )
            for slot, score in candidates.items()
        ]
        return rank(rows, limit, title_boost=self._title_boost, head_boost=self._head_boost)

    def _idf(self, term: str) -> float:
        count = len(self._slots)
        frequency = self._postings.count(term)
        return math.log(1.0 + (count - frequency + 0.5) / (frequency + 0.5))

    def _norms(self) -> tuple[float, float]:
        count = len(self._slots)
        average = self._total_length / count if self._total_length > 0 else 1.0
        return self._k1 * (1.0 - self._b), self._k1 * self._b / average

    def _score(self, slot: int, terms: dict[str, float]) -> float:
        """BM25 of one document (a title match found outside the pool)."""
        norm_base, norm_scale = self._norms()
        norm = norm_base + norm_scale * self._doc_length[slot]
        total = 0.0
        for term, weight in terms.items():
            tf = self._postings[term].get(slot)
            if tf:
                total += weight * self._idf(term) * (self._k1 + 1.0) * tf / (tf + norm)
        return total

    def _top(self, terms: dict[str, float], pool: int) -> list[tuple[int, float]]:
        """The ``pool`` best slots by plain BM25, best first, exact."""
        ranked = sorted(
            ((w * self._idf(t), t) for t, w in terms.items()), key=lambda pair: -pair[0]
        )
        norm_base, norm_scale = self._norms()
        query = TopQuery(ranked, pool, self._k1, (norm_base, norm_scale))
        np = numpy_or_none() if self._vectorized is not False else None
        if np is not None:
            return self._scorer.top(np, self._postings, self._doc_length, query)
        return top_pruned(self._postings, self._doc_length, query)
