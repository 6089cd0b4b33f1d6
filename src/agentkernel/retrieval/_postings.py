"""The postings of the lexical index: term to ``{slot: weighted frequency}``.

Documents filed in bulk (a walk's batch, a saved index loaded) leave each of their terms
*packed*: two numpy arrays (slots, frequencies) instead of a dict. A search scores a packed
term from its arrays as they are; the dict is built only when something changes the term or
reads one slot of it (an add, a remove, the pure-Python scorer). A loaded 10,000-concept index
so builds none of its 40,000 dicts before its first search.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterator
from typing import Any, NamedTuple

Bucket = dict[int, float]


class Postings:
    """Term to slot to weighted frequency, some terms packed (see the module docstring)."""

    def __init__(self) -> None:
        """Start empty."""
        self._dicts: dict[str, Bucket] = {}
        # packed term -> (base, start, end): its entries are base[start:end]
        self._packed: dict[str, tuple[int, int, int]] = {}
        self._bases: list[tuple[Any, Any]] = []  # (slots, frequencies) of each bulk filing

    def __len__(self) -> int:
        return len(self._dicts) + len(self._packed)

    def __contains__(self, term: object) -> bool:
        return term in self._dicts or term in self._packed

    def __getitem__(self, term: str) -> Bucket:
        bucket = self._dicts.get(term)
        if bucket is None:
            slots, tfs = self._arrays_of(self._packed.pop(term))  # KeyError: held nowhere
            bucket = self._dicts[term] = dict(zip(slots.tolist(), tfs.tolist(), strict=True))
        return bucket

    def __setitem__(self, term: str, bucket: Bucket) -> None:
        self._packed.pop(term, None)
        self._dicts[term] = bucket

    def __delitem__(self, term: str) -> None:
        if self._packed.pop(term, None) is None:
            del self._dicts[term]

    def __iter__(self) -> Iterator[str]:
        return itertools.chain(list(self._dicts), list(self._packed))

    def get(self, term: str) -> Bucket | None:
        """The term's dict (unpacked on the way), or ``None``.

        Args:
            term: A term.

        Returns:
            Slot to frequency, or ``None`` when no document holds the term.
        """
        try:
            return self[term]
        except KeyError:
            return None

    def pack(
        self, np: Any, terms: list[str], numbers: list[int], slots: Any, tfs: Any, starts: list[int]
    ) -> None:
        """File terms no document held yet, as slices of two arrays.

        Args:
            np: The numpy module.
            terms: Terms whose entries are grouped in ``slots`` and ``tfs``, in order.
            numbers: Which of ``terms`` to file (none of them held yet).
            slots: Every entry's slot (a numpy int64 array).
            tfs: Every entry's weighted frequency (a numpy float64 array).
            starts: Where each term's entries start, and the end of the last.
        """
        if not numbers:
            return
        if len(numbers) < len(terms):  # keep only the entries of the terms filed here
            keep = np.concatenate([np.arange(starts[i], starts[i + 1]) for i in numbers])
            sizes = [starts[i + 1] - starts[i] for i in numbers]
            terms, slots, tfs = [terms[i] for i in numbers], slots[keep], tfs[keep]
            starts = np.concatenate(([0], np.cumsum(sizes))).tolist()
        base = len(self._bases)
        self._bases.append((slots, tfs))
        self._packed.update(
            zip(terms, zip(itertools.repeat(base), starts[:-1], starts[1:]), strict=False)
        )

    def packed(self, term: str) -> tuple[Any, Any] | None:
        """A packed term's arrays, or ``None`` when it is a dict (or held by no document).

        Args:
            term: A term.

        Returns:
            ``(slots, frequencies)``.
        """
        where = self._packed.get(term)
        return None if where is None else self._arrays_of(where)

    def _arrays_of(self, where: tuple[int, int, int]) -> tuple[Any, Any]:
        base, start, end = where
        slots, tfs = self._bases[base]
        return slots[start:end], tfs[start:end]

    def count(self, term: str) -> int:
        """How many documents hold the term (its document frequency).

        Args:
            term: A term held by some document.

        Returns:
            The count.
        """
        where = self._packed.get(term)
        return where[2] - where[1] if where is not None else len(self._dicts[term])

    def flat(self, np: Any) -> tuple[list[str], Any, Any, Any]:
        """Every posting as arrays: terms, each term's count, then slots and frequencies.

        Args:
            np: The numpy module.

        Returns:
            ``(terms, counts, slots, frequencies)``, the entries grouped by term in order.
        """
        dicts = self._dicts
        terms = [*dicts, *self._packed]
        counts = np.fromiter(
            itertools.chain(map(len, dicts.values()), (e - s for _, s, e in self._packed.values())),
            dtype=np.int64,
            count=len(terms),
        )
        loose = sum(map(len, dicts.values()))
        slots = np.concatenate(
            [
                np.fromiter(itertools.chain.from_iterable(dicts.values()), np.int64, loose),
                *(self._arrays_of(where)[0] for where in self._packed.values()),
            ]
        )
        tfs = np.concatenate(
            [
                np.fromiter(
                    itertools.chain.from_iterable(b.values() for b in dicts.values()),
                    np.float64,
                    loose,
                ),
                *(self._arrays_of(where)[1] for where in self._packed.values()),
            ]
        )
        return terms, counts, slots, tfs


class TopQuery(NamedTuple):
    """One exact top-k question to the postings, as both scorers take it.

    Attributes:
        ranked: ``(query weight x idf, term)``, highest first.
        pool: How many documents to return.
        k1: BM25 term-frequency saturation.
        norms: The length normalisation's base and scale.
    """

    ranked: list[tuple[float, str]]
    pool: int
    k1: float
    norms: tuple[float, float]


def top_pruned(
    postings: Postings, lengths: list[float], query: TopQuery
) -> list[tuple[int, float]]:
    """Max-score top-k in pure Python: terms rarest first; stop admitting once none can enter.

    Args:
        postings: The postings.
        lengths: Slot to weighted document length.
        query: The terms, how many documents, and BM25's parameters.

    Returns:
        The ``pool`` best ``(slot, score)``, best first, ties by slot.
    """
    ranked, pool, k1, norms = query
    norm_base, norm_scale = norms
    weighted = [(idf, postings[term]) for idf, term in ranked]
    bounds = [idf * (k1 + 1.0) for idf, _ in weighted]
    remaining = [0.0] * (len(bounds) + 1)
    for i in range(len(bounds) - 1, -1, -1):
        remaining[i] = remaining[i + 1] + bounds[i]
    scores: dict[int, float] = {}
    for i, (idf, bucket) in enumerate(weighted):
        gain = idf * (k1 + 1.0)
        threshold = 0.0
        admit_new = True
        if len(scores) >= pool:
            threshold = heapq.nlargest(pool, scores.values())[-1]
            admit_new = remaining[i] > threshold
        if admit_new:
            get = scores.get
            for slot, tf in bucket.items():
                part = gain * tf / (tf + norm_base + norm_scale * lengths[slot])
                scores[slot] = get(slot, 0.0) + part
        else:
            floor = threshold - remaining[i]
            alive = {s: v for s, v in scores.items() if v >= floor}
            for slot in alive:
                found = bucket.get(slot)
                if found is not None:
                    norm = norm_base + norm_scale * lengths[slot]
                    alive[slot] += gain * found / (found + norm)
            scores = alive
    return heapq.nsmallest(pool, scores.items(), key=lambda item: (-item[1], item[0]))
