"""Dense retrieval next to the lexical index: live vectors, cached embedding, fusion.

:class:`SemanticIndex` holds one unit vector per live document (along the weighted sum of the
unit vectors of its texts, :meth:`SemanticIndex.document_vectors`), embeds through a
:class:`~agentkernel.retrieval._vectorcache.VectorCache` (a text already embedded by this model,
in any process, is never embedded again), ranks by cosine similarity and fuses a dense ranking
with a lexical one (:func:`blend`). When the embedder fails after construction (an endpoint
down), the index says so in :attr:`SemanticIndex.degraded`, logs a WARNING, and its owner
serves lexical results; documents left without a vector are embedded by the next embedding
that succeeds.

Fusion is chosen by measurement on held-out paraphrase queries (``bench/fusion_heldout_bench.py``,
seeds 99, 7 and 3; never the question set): a weighted sum of standardised scores
(:func:`blend`: each list's scores as z-scores over its top :data:`CANDIDATES`, lexical weight
:data:`LEXICAL_WEIGHT`) beat min-max normalised sums and reciprocal-rank fusion (:func:`fuse`,
any constant) on top-1 at equal or better recall (``bench/RESULTS.md``, issue 16). A fused
ranking is then ordered by the ranking rules (:func:`agentkernel.retrieval.ranking.fused`): the
lexical hits carry their tier, so a title match still ranks first after fusion.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import Protocol

import numpy as np

from agentkernel.retrieval._slots import SlotKeyed, Slots
from agentkernel.retrieval._vectorcache import VectorCache, default_cache_dir
from agentkernel.retrieval.embedders import Embedder, EmbedderError, load_embedder, text_hash
from agentkernel.retrieval.ranking import Hit, fused

logger = logging.getLogger(__name__)

RRF_K = 60
"""Reciprocal-rank fusion's usual constant (Cormack et al.), for :func:`fuse`."""

LEXICAL_WEIGHT = 0.45
"""The lexical share of a blended score (:func:`blend`); the dense share is the rest."""

CANDIDATES = 100
"""Documents each ranking contributes to a fused one."""

TEXT_WEIGHTS = (0.8, 0.2)
"""The weights of a document's texts (:func:`~agentkernel.retrieval.embedders.document_texts`:
the whole, then the name) in its vector, the unit vector along their weighted sum. Chosen on
held-out data only (``bench/multivec_heldout_bench.py``): the held-out paraphrase seeds and
the dev questions over the Debian bundle (``bench/RESULTS.md``, issue 16 session 5)."""

_EMBED_BATCH = 256
_QUERY_MEMO = 256

Progress = Callable[[int], None]


class EmbeddingReporter(Protocol):
    """Watches the embedding runs nobody else reports (a first search, a warm-up, a refresh).

    A command line installs one with :func:`reporting` to draw a bar or print a summary.
    """

    def begin(self, to_embed: int, cached: int) -> None:
        """A run starts: ``to_embed`` texts go to the embedder, ``cached`` come from the cache."""

    def advance(self, embedded: int) -> None:
        """``embedded`` of the run's texts are done."""

    def end(self, embedded: int, cached: int) -> None:
        """The run ended (``embedded`` less than announced when the embedder failed)."""


_reporter: EmbeddingReporter | None = None


@contextlib.contextmanager
def reporting(reporter: EmbeddingReporter | None) -> Iterator[None]:
    """Report, while the block runs, every embedding run whose caller passes no ``progress``.

    Args:
        reporter: The reporter; ``None`` for none.

    Yields:
        Nothing; the previous reporter is put back after the block.
    """
    global _reporter
    previous, _reporter = _reporter, reporter
    try:
        yield
    finally:
        _reporter = previous


def fuse(
    rankings: Sequence[Sequence[Hashable]], limit: int, k: int = RRF_K
) -> list[tuple[Hashable, float]]:
    """Reciprocal-rank fusion: a key scores ``sum(1 / (k + rank))`` over the rankings.

    Args:
        rankings: Keys best first, one list per ranker.
        limit: The most keys returned.
        k: The fusion constant.

    Returns:
        ``(key, score)`` best first; ties keep the first ranking's order.
    """
    scores: dict[Hashable, float] = {}
    for ranking in rankings:
        for rank, key in enumerate(ranking, start=1):
            scores[key] = scores.get(key, 0.0) + 1.0 / (k + rank)
    ordered = sorted(scores.items(), key=lambda item: -item[1])
    return ordered[:limit]


def blend(
    lexical: Sequence[tuple[str, float]] | Sequence[Hit],
    dense: Sequence[tuple[str, float]],
    limit: int,
    lexical_weight: float = LEXICAL_WEIGHT,
) -> list[tuple[str, float]]:
    """Fuse two scored candidate lists by a weighted sum of standardised scores.

    Each list's scores become z-scores over that list (BM25F and cosine live on different
    scales, and a z-score does not hang on one outlier as a min-max span does). A document
    missing from a list gets that list's lowest z-score: it scored no better than the last
    candidate. A list whose scores are all equal gives its documents 1 and the rest 0. The
    fused scores are then rescaled to ``[0, 1]`` (the order is unchanged).

    Args:
        lexical: ``(key, score)`` best first (BM25F); a :class:`Hit`'s tier is ignored here
            (:func:`fuse_hits` keeps it).
        dense: ``(key, cosine)`` best first.
        limit: The most keys returned.
        lexical_weight: The lexical share, in ``[0, 1]``.

    Returns:
        ``(key, fused score in [0, 1])`` best first.
    """
    standardised: list[tuple[dict[str, float], float, float]] = []
    for ranking, weight in ((lexical, lexical_weight), (dense, 1.0 - lexical_weight)):
        if not ranking:
            continue
        names = [str(item[0]) for item in ranking]
        values = np.asarray([item[1] for item in ranking], dtype=np.float64)
        spread = float(values.std())
        if spread > 0:
            z = (values - values.mean()) / spread
            scores = {key: float(v) for key, v in zip(names, z, strict=True)}
            standardised.append((scores, float(z.min()), weight))
        else:
            standardised.append((dict.fromkeys(names, 1.0), 0.0, weight))
    keys = dict.fromkeys(
        key for scores, _, _ in standardised for key in scores
    )  # ties: lexical order
    fused = {
        key: sum(weight * scores.get(key, floor) for scores, floor, weight in standardised)
        for key in keys
    }
    if not fused:
        return []
    high, low = max(fused.values()), min(fused.values())
    span = (high - low) or 1.0
    ordered = sorted(fused.items(), key=lambda item: -item[1])
    return [(key, (value - low) / span if high > low else 1.0) for key, value in ordered[:limit]]


def fuse_hits(lexical: Sequence[Hit], dense: Sequence[tuple[str, float]], limit: int) -> list[Hit]:
    """Blend a lexical ranking with a dense one, then order by the ranking rules.

    Every candidate is blended (:func:`blend`), then the lexical hits' tiers put title
    matches first (:func:`agentkernel.retrieval.ranking.fused`), then the list is cut: a
    title match is never lost to a fused score.

    Args:
        lexical: Lexical hits best first, with their tiers.
        dense: ``(key, cosine)`` best first.
        limit: The most hits returned.

    Returns:
        Hits (string keys, fused scores in ``[0, 1]``, tiers kept), best first.
    """
    tiers: dict[Hashable, int] = {str(hit.key): hit.tier for hit in lexical if hit.tier}
    mixed = blend(lexical, dense, len(lexical) + len(dense))
    return fused(mixed, tiers)[:limit]


class SemanticIndex(SlotKeyed):
    """Unit vectors of live documents, ranked by cosine similarity to a query.

    Thread-safe.
    """

    def __init__(
        self,
        embedder: Embedder | str,
        cache_dir: str | os.PathLike[str] | None = None,
        *,
        preload_cache: bool = True,
    ) -> None:
        """Build the embedder (when named) and open its vector cache.

        Args:
            embedder: The embedder (documents and queries), or a name, model folder or
                endpoint URL for :func:`~agentkernel.retrieval.embedders.load_embedder`.
            cache_dir: The vector cache root; ``None`` for :func:`default_cache_dir`.
            preload_cache: Load the cache's vectors now (``False``: on the first lookup).

        Raises:
            EmbedderError: The embedder cannot be built, or the cache holds vectors of
                another dimension under its model id.
        """
        embedder = load_embedder(embedder)
        self.embedder = embedder
        self.cache = VectorCache(
            cache_dir if cache_dir is not None else default_cache_dir(),
            embedder.model_id,
            int(embedder.dimension),
            preload=preload_cache,
        )
        self.dimension = int(embedder.dimension)
        self.embedded = 0
        """Texts this index sent to the embedder (cache misses), for tests and benches."""
        self.degraded: str | None = None
        self._lock = threading.RLock()
        self._slots: Slots[str] = Slots()
        self._matrix = np.zeros((0, self.dimension), dtype=np.float32)
        self._queries: OrderedDict[str, np.ndarray] = OrderedDict()

    @property
    def count(self) -> int:
        """Documents holding a vector now."""
        with self._lock:
            return len(self._slots)

    @property
    def description(self) -> str:
        """What the schema says about search over BM25F (:meth:`describe`)."""
        return self.describe("lexical (BM25F)")

    def describe(self, lexical: str) -> str:
        """What the schema says about search: hybrid with the model, or why lexical only.

        Args:
            lexical: The lexical engine fused with the vectors, as the schema names it.

        Returns:
            For example ``hybrid: lexical (BM25F) and dense (MODEL), fused by score``.
        """
        if self.degraded:
            return f"lexical only: semantic search is unavailable ({self.degraded})"
        return f"hybrid: {lexical} and dense ({self.embedder.model_id}), fused by score"

    def vectors_for(
        self, texts: Sequence[str], progress: Progress | None = None
    ) -> list[np.ndarray] | None:
        """Vectors of texts: from the cache, embedding (and caching) only the missing ones.

        Args:
            texts: Document texts.
            progress: Called with the count of texts done after each batch.

        Returns:
            One vector per text, or ``None`` when the embedder failed (logged, and
            :attr:`degraded` set until an embedding succeeds).
        """
        keys = [text_hash(t) for t in texts]
        found = self.cache.get(keys)
        missing: dict[bytes, str] = {}
        for key, text in zip(keys, texts, strict=True):
            if key not in found and key not in missing:
                missing[key] = text
        done = len(texts) - len(missing)
        if progress is not None:
            progress(done)
        todo = list(missing.items())
        reporter = _reporter if progress is None and todo else None
        cached, embedded = done, 0
        if reporter is not None:
            reporter.begin(len(todo), cached)
        try:
            for start in range(0, len(todo), _EMBED_BATCH):
                batch = todo[start : start + _EMBED_BATCH]
                array = self._embed([text for _, text in batch])
                if array is None:
                    return None
                self.cache.put([key for key, _ in batch], array)
                for (key, _), row in zip(batch, array, strict=True):
                    found[key] = row
                done += len(batch)
                embedded += len(batch)
                if progress is not None:
                    progress(done)
                if reporter is not None:
                    reporter.advance(embedded)
        finally:
            if reporter is not None:
                reporter.end(embedded, cached)
        return [found[key] for key in keys]

    def document_vectors(
        self, documents: Sequence[Sequence[str]], progress: Progress | None = None
    ) -> list[np.ndarray] | None:
        """One unit vector per document: along the weighted sum of its texts' unit vectors.

        The whole of a document (title, description, body head) mean-pooled into one vector
        blurs what the document *is* among what its body says; mixing in its name (title and
        description) by :data:`TEXT_WEIGHTS` sharpens that, and one vector per document is
        still kept and searched. Each text is cached on its own (a changed body re-embeds
        the whole, not the name).

        Args:
            documents: Each document's texts, as many as :data:`TEXT_WEIGHTS`
                (:func:`~agentkernel.retrieval.embedders.document_texts`).
            progress: Called with the count of documents done after each batch.

        Returns:
            One unit vector per document, or ``None`` when the embedder failed (see
            :meth:`vectors_for`).

        Raises:
            ValueError: A document has another count of texts.
        """
        width = len(TEXT_WEIGHTS)
        if not documents:
            return []
        if any(len(texts) != width for texts in documents):
            raise ValueError(f"each document needs {width} texts (see document_texts)")
        flat = [text for texts in documents for text in texts]
        counted = None if progress is None else (lambda done: progress(done // width))
        vectors = self.vectors_for(flat, counted)
        if vectors is None:
            return None
        weights = np.asarray(TEXT_WEIGHTS, dtype=np.float32)
        rows = np.asarray(vectors, dtype=np.float32).reshape(len(documents), width, -1)
        mixed = np.einsum("w,dwk->dk", weights, rows)
        norms = np.linalg.norm(mixed, axis=1, keepdims=True)
        return list(mixed / np.where(norms > 0, norms, 1.0))

    def _embed(self, texts: list[str]) -> np.ndarray | None:
        try:
            rows = self.embedder.embed(texts)
            array = np.asarray(rows, dtype=np.float32)
            if array.shape != (len(texts), self.dimension):
                raise EmbedderError(
                    f"the embedder returned shape {array.shape} for {len(texts)} texts; "
                    f"expected {self.dimension} values per text"
                )
        except Exception as exc:
            reason = f"{type(exc).__name__}: {exc}"
            if self.degraded != reason:
                logger.warning(
                    "embedding with %s failed, serving lexical results only: %s",
                    self.embedder.model_id,
                    reason,
                )
            self.degraded = reason
            return None
        self.embedded += len(texts)
        if self.degraded:
            logger.warning("embedding with %s works again", self.embedder.model_id)
        self.degraded = None
        norms = np.linalg.norm(array, axis=1, keepdims=True)
        return array / np.where(norms > 0, norms, 1.0)

    def put(self, key: str, vector: np.ndarray) -> None:
        """Add or replace a document's vector.

        Args:
            key: The document key.
            vector: Its unit vector (:meth:`document_vectors`).
        """
        with self._lock:
            slot = self._slots.slot_of.get(key)
            if slot is None:
                slot = self._slots.take(key)
                if slot >= len(self._matrix):
                    grown = np.zeros((max(64, 2 * len(self._matrix)), self.dimension), "f4")
                    grown[: len(self._matrix)] = self._matrix
                    self._matrix = grown
            self._matrix[slot] = vector

    def remove(self, key: str) -> None:
        """Forget a document's vector, if it has one.

        Args:
            key: The document key.
        """
        with self._lock:
            slot = self._slots.release(key)
            if slot is not None:
                self._matrix[slot] = 0.0

    def missing(self, keys: Sequence[str]) -> list[str]:
        """The keys among ``keys`` that have no vector yet (after a failed embedding).

        Args:
            keys: Live document keys.

        Returns:
            Those without a vector.
        """
        with self._lock:
            return [k for k in keys if k not in self._slots]

    def search(self, query: str, limit: int) -> list[tuple[str, float]] | None:
        """Rank documents by cosine similarity to the query.

        Args:
            query: The query text.
            limit: The most documents.

        Returns:
            ``(key, similarity)`` best first, or ``None`` when the query could not be
            embedded (see :attr:`degraded`).
        """
        vector = self._query_vector(query)
        if vector is None:
            return None
        with self._lock:
            used = len(self._slots.key_of)
            if not self._slots or limit < 1:
                return []
            scores = self._matrix[:used] @ vector
            keys = list(self._slots.key_of)
            free = list(self._slots.free)
        for slot in free:
            if slot < used:
                scores[slot] = -np.inf
        take = min(limit, used)
        top = np.argpartition(-scores, take - 1)[:take]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [
            (key, float(scores[i]))
            for i in top
            if (key := keys[i]) is not None and np.isfinite(scores[i])
        ]

    def _query_vector(self, query: str) -> np.ndarray | None:
        with self._lock:
            memo = self._queries.get(query)
            if memo is not None:
                self._queries.move_to_end(query)
                return memo
        array = self._embed([query])
        if array is None:
            return None
        vector: np.ndarray = array[0]
        with self._lock:
            self._queries[query] = vector
            while len(self._queries) > _QUERY_MEMO:
                self._queries.popitem(last=False)
        return vector

    @staticmethod
    def pool(limit: int) -> int:
        """How many lexical hits a hybrid search of ``limit`` results fuses (:data:`CANDIDATES`).

        Args:
            limit: The most results asked for.

        Returns:
            The lexical pool size.
        """
        return max(limit, CANDIDATES)

    def rerank(self, query: str, lexical: Sequence[Hit], limit: int) -> list[Hit]:
        """The one hybrid orchestration: fuse the lexical pool, or serve it when embedding fails.

        Every hybrid search (the OKF walk, the Lance bundle index, the curated stores) asks the
        engine for :meth:`pool` hits and hands them here.

        Args:
            query: The query.
            lexical: Lexical hits best first, with their tiers.
            limit: The most hits returned.

        Returns:
            Fused hits (title matches first), or the lexical ones when the query could not be
            embedded (see :attr:`degraded`).
        """
        fused = self.hybrid(query, lexical, limit)
        return list(lexical[:limit]) if fused is None else fused

    def hybrid(self, query: str, lexical: Sequence[Hit], limit: int) -> list[Hit] | None:
        """Fuse a lexical ranking with the dense one (:func:`fuse_hits`: tiers kept).

        Args:
            query: The query.
            lexical: Hits best first (the top :data:`CANDIDATES` when there are).
            limit: The most hits returned.

        Returns:
            Hits (fused scores) best first, or ``None`` when the query could not be
            embedded (the caller serves the lexical ranking).
        """
        dense = self.search(query, CANDIDATES)
        if dense is None:
            return None
        return fuse_hits(lexical, dense, limit)
