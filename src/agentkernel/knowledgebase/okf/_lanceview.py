"""The bundle index: a bundle served from a Lance dataset built by ``agentkernel-kb index``.

Nothing is walked: search, browse and the schema come from the dataset
(:class:`~agentkernel.knowledgebase.okf.bundleindex.view.IndexView`), a refresh asks it for its
latest version (one small request when nothing moved), and a write updates the document, then
its row, before it is acknowledged. With a dense index too, hybrid search takes the concepts'
vectors from the dataset (built with ``--embedder``, the same model), loaded on the first
search; an index without them is served lexically, said in the schema and the diagnostics.
The ``lancedb`` SDK is imported on first use, by the bundle index's own modules.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from agentkernel.knowledgebase.errors import KnowledgeError
from agentkernel.knowledgebase.okf._views import (
    RefreshStats,
    ViewContext,
    ViewState,
)
from agentkernel.knowledgebase.okf.concept import Concept

if TYPE_CHECKING:
    import numpy as np

    from agentkernel.knowledgebase.okf.bundleindex.view import IndexView

logger = logging.getLogger(__name__)

INDEX_RANKING = "lexical (Lance's BM25 over the index's analysed terms, one field; not BM25F)"
"""What search ranks with when serving a bundle index (docs/index.md, "What the index holds")."""

_SCAN_BATCH = 8192

INDEXING_RETRY_SECONDS = 5.0
"""How soon a refresh that found a newer version not fully indexed yet tries again."""

INDEXING_GRACE_SECONDS = 120.0
"""How long a pod waits for a newer version's indexes before serving it anyway.

An indexer folds its rows into the indexes seconds after committing them; one killed in
between, or a write through a manager (which does not fold), leaves the newest version
partly indexed until the next indexer run, still correct, only slower to search.
"""


class IndexUnavailable(KnowledgeError):
    """The bundle index cannot be opened (missing, unreadable, wrong options)."""


class LanceView(ViewState):
    """One bundle index, kept at its latest version (see the module docstring)."""

    def __init__(self, context: ViewContext, uri: str, options: Mapping[str, str]) -> None:
        """Open the index at its latest version.

        Args:
            context: What the view shares with its manager.
            uri: The index (``s3://bucket/kb.lance`` or a local folder).
            options: Object-store options, as Lance names them.

        Raises:
            IndexUnavailable: The index cannot be opened.
            IndexModelError: The index holds another model's vectors.
        """
        from agentkernel._libc import release_memory
        from agentkernel.knowledgebase.okf.bundleindex import lancesdk
        from agentkernel.knowledgebase.okf.bundleindex.identity import check_serving
        from agentkernel.knowledgebase.okf.bundleindex.opener import index_opener
        from agentkernel.knowledgebase.okf.bundleindex.view import IndexView

        super().__init__(context)
        self.uri = uri
        self.options = dict(options)
        self.lexical_only: str | None = None  # why an index with an embedder serves lexically
        self.vectors: Any = None  # dense.IndexVectors: the index's vectors, when hybrid
        self._writer: Any = None  # the lancedb table writes commit to, on the first write
        self._waiting_since: float | None = None  # a newer version is not fully indexed
        self._refreshing = threading.Lock()
        self._reading_vectors = threading.Lock()
        try:
            # the source keeps an object-store index's files in the node cache
            self.source: Any = index_opener(uri, self.options)
            view = IndexView(self.source.open())
        except Exception as exc:
            raise IndexUnavailable(lancesdk.one_line(exc)) from exc
        # an index built from another bundle is refused, whatever the fallback
        check_serving(view.meta, context.store, self.location)
        self.lexical_only = self._check_vectors(view, raise_errors=True)
        self.view = view
        self._take_notes(view)
        release_memory()  # the load's Arrow buffers, freed

    @property
    def location(self) -> str:
        """The index's location, as logs and messages show it (no credentials)."""
        from agentkernel.knowledgebase.okf.bundleindex import lancesdk

        return lancesdk.describe(self.uri)

    @property
    def contents(self) -> IndexView:
        """The served version of the index."""
        return self.view

    def search(self, query: str, limit: int, *, dense: bool) -> list[tuple[Concept, float]]:
        """Rank concepts over the index's full-text index, fused with its vectors when hybrid.

        Arguments and result as for :meth:`~.views.BundleView.search`. A read error on an
        index served from the node cache has its files checked again (hashed, the damaged
        ones fetched) and the search run once more on the repaired files.
        """
        try:
            return self._search(query, limit, dense)
        except (OSError, RuntimeError, ValueError) as exc:  # Lance's read errors
            if not self._repaired(exc):
                raise
        return self._search(query, limit, dense)

    def engine(self, *, dense: bool) -> str:
        """Lance's BM25, fused with the index's vectors when hybrid."""
        semantic = self.context.semantic
        if semantic is None or not dense:
            return INDEX_RANKING
        if self.lexical_only:
            return f"lexical only: {self.lexical_only}"
        return semantic.describe(INDEX_RANKING)

    def vectors_complete(self) -> bool:
        """Whether the served version's vectors are read (or there are none to read)."""
        with self.context.lock:
            if self.context.semantic is None or self.lexical_only:
                return True
            return self.vectors is not None and self.vectors.version == self.view.version

    def fill_vectors(self, progress: Callable[[int, int], None] | None) -> None:
        """Read the served version's vectors (all at first, then those that changed)."""
        with self.context.lock:
            view, vectors = self.view, self._hybrid_vectors()
        if vectors is None:
            return
        total = len(view.concepts)
        with self._reading_vectors:  # IndexVectors is not thread-safe; searches wait on it
            vectors.sync(view)
        if progress is not None:
            progress(total, total)

    def _repaired(self, exc: Exception) -> bool:
        """Repair the served version's cached files after ``exc``; whether any was damaged."""
        from agentkernel.knowledgebase.okf.bundleindex.view import IndexView

        repair = getattr(self.source, "repair", None)
        if repair is None:
            return False
        with self._refreshing:
            current = self.view
            try:
                dataset = repair(current.dataset)
            except Exception as failed:  # the repair's own failure: the first error stands
                logger.warning("OKF bundle index %s: repair failed: %s", self.location, failed)
                return False
            if dataset is None:
                return False
            fresh = IndexView(dataset)
            with self.context.lock:
                if self.view is current:
                    self.view = fresh
        logger.warning("OKF bundle index %s: a read failed (%s); repaired", self.location, exc)
        return True

    def _search(self, query: str, limit: int, dense: bool) -> list[tuple[Concept, float]]:
        lock = self.context.lock
        semantic = self.context.semantic
        with lock:
            view = self.view
            if semantic is None or self.lexical_only or not dense:
                return view.records(view.ranked(query, limit))
            hits = view.ranked(query, semantic.pool(limit))
            with self._reading_vectors:
                self.vectors.sync(view)  # the vectors of a version switched to since, if any
        ranked = semantic.rerank(query, hits, limit)
        with lock:
            return view.records(ranked)

    def types(self) -> Counter[str]:
        """Concepts per type."""
        with self.context.lock:
            return +self.view.types  # drops the zero counts of removed types

    def prefetch(self, ids: list[str]) -> None:
        """Read the rows of concepts about to be shown, in as few requests as possible.

        Args:
            ids: Concept ids.
        """
        with self.context.lock:
            self.view.prefetch(ids)

    def all_concepts(self) -> list[Concept]:
        """Every concept of the served version (one scan of the summary columns)."""
        with self.context.lock:
            view = self.view
        return list(_scan_concepts(view))

    def put_concept(self, concept: Concept, vector: np.ndarray | None) -> None:
        """Write a concept's row (and its vector) to the index, then serve it.

        The vector goes in only when the index holds this embedder's vectors: an index
        without vectors gets none from one writer (the indexer embeds them all, with one
        model).

        Args:
            concept: The concept just written to the store.
            vector: Its unit vector, or ``None``.
        """
        from agentkernel.knowledgebase.okf.bundleindex import rows
        from agentkernel.knowledgebase.okf.bundleindex.indexer import commit, open_table

        if self._writer is None:
            self._writer = open_table(self.uri, self.options)
        hybrid = self._hybrid_vectors()
        commit(self._writer, [rows.concept_row(concept, vector if hybrid else None)], [])
        # serve the version holding the row: search runs over the dataset, not this process
        self.refresh(raise_errors=True)
        with self.context.lock:
            self.view.put_concept(concept)
            if (held := self._hybrid_vectors()) is not None:
                held.put(concept.id, concept.token, vector)

    def diagnostics(self) -> list[str]:
        """Skipped documents, the indexer's notes, failures."""
        return self.listed(self.view)

    def schema(self) -> dict[str, Any]:
        """The index's location and version, and the search mode."""
        search = self.engine(dense=True)
        with self.context.lock:
            view = self.view
        return {
            "index": {
                "location": self.location,
                "version": view.version,
                "indexed_at": view.meta.get("indexed_at"),
            },
            "search": search,
        }

    def refresh(self, *, raise_errors: bool) -> RefreshStats | None:
        """Open the index's latest version if it moved (one small request when it has not).

        An explicit reload costs what the background refresh costs: one listing of the
        index's versions when nothing moved, the files a newer version added when one did.
        It never lists the bundle (a read-only pod needs no list permission on it). The
        periodic refresh (``raise_errors=False``) does not serve a newer version whose
        indexes do not cover all its rows yet (the indexer folds them in after committing):
        the current one stays, and :attr:`retry_after` asks the manager to try again in
        :data:`INDEXING_RETRY_SECONDS`, up to :data:`INDEXING_GRACE_SECONDS`. An explicit
        reload and a write (``raise_errors=True``) serve the newest version.

        Args:
            raise_errors: Raise a failure instead of noting it (a reload, or a write).

        Returns:
            What the refresh did, or ``None`` when it failed quietly.
        """
        with self._refreshing:  # a write's refresh and the background poll, one at a time
            return self._refresh(raise_errors=raise_errors)

    def _refresh(self, *, raise_errors: bool) -> RefreshStats | None:
        from agentkernel._libc import release_memory
        from agentkernel.knowledgebase.okf.bundleindex.view import IndexView

        started = time.perf_counter()
        current = self.view
        self.retry_after = None
        try:
            newer = self.source.newer(current.dataset)  # one listing of the versions
            if newer is not None and not raise_errors and not self._indexed(newer, current):
                newer = None  # keep serving the current version; try again soon
            fresh = current if newer is None else IndexView(newer)
            lexical = self._check_vectors(fresh, raise_errors=False)
        except Exception as exc:
            self.note_failure("index refresh", f"index version {current.version}", exc)
            if raise_errors:
                raise
            return None
        with self.context.lock:
            self.view = fresh
            self.lexical_only = lexical
            self._take_notes(fresh)
            self.refresh_error = None
        if fresh is not current:
            self._waiting_since = None
            del current, newer, fresh  # the previous version goes with its last reference
            release_memory()
        return RefreshStats(0, 0, 0, 0, time.perf_counter() - started)

    def read_document(self, concept: Concept) -> bytes:
        """A concept's document: from the node cache at its indexed token, when there is one.

        Args:
            concept: A served concept.

        Returns:
            The document's bytes.
        """
        store = self.context.store
        limit = self.context.limits.max_document_bytes

        def fetch() -> bytes:
            return store.read_bounded(concept.path, limit)

        documents = getattr(self.source, "documents", None)
        if documents is None:
            return fetch()
        return bytes(documents(store.location).read(concept.path, concept.token, fetch))

    # -- internals ------------------------------------------------------------------------

    def _indexed(self, newer: Any, current: IndexView) -> bool:
        """Whether to serve ``newer``: fully indexed, or waited for long enough."""
        from agentkernel.knowledgebase.okf.bundleindex.opener import fully_indexed, index_names

        if fully_indexed(newer, index_names(current.dataset)):
            return True
        now = self.context.clock()
        if self._waiting_since is None:
            self._waiting_since = now
        if now - self._waiting_since >= INDEXING_GRACE_SECONDS:
            logger.warning(
                "OKF bundle index %s: version %d is still not fully indexed after %.0f s; "
                "serving it (searches over its unindexed rows are slower)",
                self.location,
                newer.version,
                now - self._waiting_since,
            )
            return True
        logger.info(
            "OKF bundle index %s: version %d is not fully indexed yet; serving version %d",
            self.location,
            newer.version,
            current.version,
        )
        self.retry_after = INDEXING_RETRY_SECONDS
        return False

    def _take_notes(self, view: IndexView) -> None:
        self.notes = list(view.meta.get("diagnostics") or [])
        if view.truncated:
            self.notes.append(
                "truncated: the bundle holds more than "
                f"max_concepts={self.context.limits.max_concepts} concepts; the rest are not "
                "in the index"
            )

    def _hybrid_vectors(self) -> Any:
        """The index's vectors (``dense.IndexVectors``) while search is hybrid over them."""
        return None if self.lexical_only else self.vectors

    def _check_vectors(self, view: IndexView, *, raise_errors: bool) -> str | None:
        """Check the index's vectors against the embedder; why search is lexical, or ``None``.

        Raises:
            IndexModelError: (``raise_errors``) the index holds another model's vectors.
        """
        semantic = self.context.semantic
        if semantic is None:
            return None
        from agentkernel.knowledgebase.okf.bundleindex import dense

        where = self.location
        recorded = view.meta.get("embedder") if dense.has_vectors(view.dataset) else None
        reason = None
        if recorded is None:
            reason = (
                f"the bundle index {where} holds no vectors (it was built without an "
                f"embedder); index it with --embedder {semantic.embedder.model_id}"
            )
        else:
            try:
                dense.check_model(recorded, semantic, where)
            except dense.IndexModelError as exc:
                if raise_errors:
                    raise
                reason = str(exc)
        if reason is not None:
            if reason != self.lexical_only:
                logger.warning("OKF bundle %s: search is lexical only: %s", where, reason)
            return reason
        if self.vectors is None:
            self.vectors = dense.IndexVectors(semantic)
        return None


def open_index(
    context: ViewContext,
    uri: str,
    options: Mapping[str, str],
    fallback: str | None,
    backend: str,
) -> LanceView | None:
    """Open a manager's bundle index; ``None`` when it falls back to the walk (as asked).

    Args:
        context: What the view shares with its manager.
        uri: The index.
        options: Object-store options, as Lance names them.
        fallback: ``"walk"`` to walk the store when the index cannot be opened.
        backend: The manager's name, for the error.

    Returns:
        The view, or ``None`` (the reason is in ``context.notes``).

    Raises:
        KnowledgeError: The index is missing or unreadable and no fallback was asked for.
    """
    from agentkernel.knowledgebase.okf.bundleindex.lancesdk import describe

    try:
        return LanceView(context, uri, options)
    except IndexUnavailable as exc:
        where = describe(uri)
        if fallback != "walk":
            raise KnowledgeError(
                f"OKF bundle '{backend}': the bundle index {where} cannot be opened ({exc}). "
                f"Build it with 'agentkernel-kb index {context.store.location} --to {uri}', "
                "fix the index options, or pass index_fallback='walk' to walk the bundle "
                "instead."
            ) from exc.__cause__
        note = (
            f"bundle index {where} could not be opened ({exc}); serving a walk of the "
            "bundle instead (index_fallback='walk')"
        )
        logger.warning("OKF bundle %s: %s", context.store.location, note)
        context.notes = [note]
        return None


def _scan_concepts(view: IndexView) -> Iterator[Concept]:
    """Every concept row of a version, as the walk's concepts (without their body heads)."""
    from agentkernel.knowledgebase.okf.bundleindex import rows

    held = view.concepts
    for batch in view.dataset.to_batches(columns=rows.SUMMARY_COLUMNS, batch_size=_SCAN_BATCH):
        for row in batch.to_pylist():
            if row.get("kind") == rows.KIND_CONCEPT and row["id"] in held:
                yield rows.concept_from_row(row)
