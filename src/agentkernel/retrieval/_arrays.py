"""The numpy side of the lexical index: per-term arrays, saturated frequencies, top-k.

A search scores each query term from two arrays (the slots holding it, their weighted
frequencies), kept per term once built, and from the term's *impacts* (BM25's saturated
frequency per slot), kept while the length normalisation is unchanged. An add or a remove
marks the term's arrays stale: they are patched in a vectorised pass at their next use
instead of rebuilt from the postings dict (a Python-speed pass over every document holding
the term, which is most of them for a common word).
"""

from __future__ import annotations

from typing import Any

from agentkernel.retrieval._postings import Postings, TopQuery


class TermArrays:
    """Arrays per term and per slot for the vectorised scorer (see the module docstring)."""

    def __init__(self) -> None:
        """Start with nothing built."""
        self._arrays: dict[str, tuple[Any, Any]] = {}  # term -> (slots, frequencies)
        self._stale: dict[str, set[int]] = {}  # term -> slots changed since its arrays
        # term -> (slots, saturated tf), valid while the length normalisation is unchanged
        self._impacts: dict[str, tuple[Any, Any]] = {}
        self._impact_norms: tuple[float, float] | None = None
        self._length_array: Any = None

    def changed(self, term: str, slots: int | list[int]) -> None:
        """Note that documents holding ``term`` were added or removed.

        Args:
            term: The term.
            slots: The slot or slots that changed.
        """
        self._impacts.pop(term, None)
        if term in self._arrays:
            stale = self._stale.setdefault(term, set())
            if isinstance(slots, int):
                stale.add(slots)
            else:
                stale.update(slots)

    def forget(self, term: str) -> None:
        """Drop a term no document holds any more.

        Args:
            term: The term.
        """
        self._arrays.pop(term, None)
        self._stale.pop(term, None)
        self._impacts.pop(term, None)

    def set_length(self, slot: int, length: float) -> None:
        """Record a slot's new weighted length.

        Args:
            slot: The slot.
            length: Its length (0 when freed).
        """
        if self._length_array is None:
            return
        if slot < len(self._length_array):
            self._length_array[slot] = length
        else:
            self._length_array = None  # rebuilt, larger, at the next vectorized search

    def top(
        self, np: Any, postings: Postings, lengths: list[float], query: TopQuery
    ) -> list[tuple[int, float]]:
        """The ``pool`` best slots by plain BM25, best first, ties by slot, with numpy.

        Args:
            np: The numpy module.
            postings: The postings.
            lengths: Slot to weighted length (its length is the number of slots).
            query: The terms, how many slots, and BM25's parameters.

        Returns:
            ``(slot, score)`` pairs: the answer of
            :func:`~agentkernel.retrieval._postings.top_pruned`, every slot scored at once.
        """
        ranked, pool, k1, norms = query
        norm_base, norm_scale = norms
        size = len(lengths)
        length = self._lengths(np, lengths)
        scores = np.zeros(size)
        gain_scale = k1 + 1.0
        impacts = self._impacts
        if self._impact_norms != norms:
            impacts.clear()  # the average length moved: every saturated tf changes
            self._impact_norms = norms
        sample: Any = None  # the shortest postings holding at least ``pool`` documents
        for idf, term in ranked:
            cached = impacts.get(term)
            if cached is None:
                slots, frequencies = self.arrays(np, postings, term)
                denominator = frequencies + norm_base + norm_scale * length[slots]
                cached = impacts[term] = (slots, gain_scale * frequencies / denominator)
            slots, impact = cached
            scores[slots] += idf * impact
            if len(slots) >= pool and (sample is None or len(slots) < len(sample)):
                sample = slots
        if sample is not None:
            # the pool-th best score among those documents is a floor for the pool: only
            # documents at or above it are candidates (a compare, not a scan for non-zeros)
            values = scores[sample]
            floor = np.partition(values, len(values) - pool)[len(values) - pool]
            candidates = np.flatnonzero(scores >= floor)
        else:
            candidates = np.flatnonzero(scores)
        if len(candidates) > pool:
            values = scores[candidates]
            kth = np.partition(values, len(values) - pool)[len(values) - pool]
            candidates = candidates[values >= kth]
        order = candidates[np.lexsort((candidates, -scores[candidates]))][:pool]
        return list(zip(order.tolist(), scores[order].tolist(), strict=True))

    def arrays(self, np: Any, postings: Postings, term: str) -> tuple[Any, Any]:
        """A term's (slots, frequencies), built or patched now when needed.

        Args:
            np: The numpy module.
            postings: The postings.
            term: A term some document holds.

        Returns:
            The two arrays.
        """
        cached = self._arrays.get(term)
        stale = self._stale.pop(term, None)
        if cached is not None and stale:
            bucket = postings[term]
            slots, frequencies = cached
            changed = np.fromiter(stale, dtype=np.int64, count=len(stale))
            keep = ~np.isin(slots, changed)
            now = [slot for slot in stale if slot in bucket]
            cached = self._arrays[term] = (
                np.concatenate((slots[keep], np.array(now, dtype=np.int64))),
                np.concatenate(
                    (frequencies[keep], np.array([bucket[s] for s in now], dtype=np.float64))
                ),
            )
        if cached is None and (packed := postings.packed(term)) is not None:
            cached = self._arrays[term] = packed
        if cached is None:
            bucket = postings[term]
            slots = np.fromiter(bucket.keys(), dtype=np.int64, count=len(bucket))
            frequencies = np.fromiter(bucket.values(), dtype=np.float64, count=len(bucket))
            cached = self._arrays[term] = (slots, frequencies)
        return cached

    def _lengths(self, np: Any, lengths: list[float]) -> Any:
        size = len(lengths)
        if self._length_array is None or len(self._length_array) < size:
            array = np.zeros(max(size * 2, 1024))
            array[:size] = lengths
            self._length_array = array
        return self._length_array


_NUMPY: list[Any] = []


def numpy_or_none() -> Any | None:
    """Import numpy on first use (never at module import).

    Returns:
        The numpy module, or ``None`` when it is not installed.
    """
    if not _NUMPY:
        try:
            import numpy
        except ImportError:
            _NUMPY.append(None)
        else:
            _NUMPY.append(numpy)
    return _NUMPY[0]
