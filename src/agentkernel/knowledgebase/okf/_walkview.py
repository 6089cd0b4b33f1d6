"""The walk: a bundle read into an in-process manifest and retrieval index.

The first refresh walks the whole store; later ones list it and re-read only the documents
whose change token moved (:func:`~agentkernel.knowledgebase.okf.scan.scan`). A failed refresh
keeps the last good manifest and records a diagnostic. A refresh embeds nothing: a new or
changed concept holds no vector until :meth:`WalkView.fill_vectors` (when search needs them,
:mod:`~agentkernel.knowledgebase.okf._loading`). With every vector held, search is hybrid: the
lexical hits (with their tiers) fused with the concepts' cosine similarity.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agentkernel.knowledgebase.okf._views import (
    RefreshStats,
    ViewContext,
    ViewState,
    lexical_description,
)
from agentkernel.knowledgebase.okf.concept import Concept
from agentkernel.knowledgebase.okf.manifest import Manifest
from agentkernel.knowledgebase.okf.scan import ScanResult, scan

if TYPE_CHECKING:
    import numpy as np


class WalkView(ViewState):
    """A bundle walked into memory (see the module docstring)."""

    def __init__(self, context: ViewContext) -> None:
        """Start empty; :meth:`refresh` walks the store.

        Args:
            context: What the view shares with its manager.
        """
        super().__init__(context)
        self.manifest = Manifest(context.semantic)

    @property
    def contents(self) -> Manifest:
        """The manifest."""
        return self.manifest

    def search(self, query: str, limit: int, *, dense: bool) -> list[tuple[Concept, float]]:
        """Rank concepts with the retrieval engine, fused with the dense ranking when hybrid.

        Arguments and result as for :meth:`~.views.BundleView.search`.
        """
        semantic = self.context.semantic
        lock = self.context.lock
        held = self.manifest.concepts
        if semantic is None or not dense:
            with lock:
                hits = self.manifest.index.search(query, limit)
                return [(held[str(hit.key)], hit.score) for hit in hits]
        with lock:
            hits = self.manifest.index.search(query, semantic.pool(limit))
        ranked = semantic.rerank(query, hits, limit)
        with lock:
            return [(held[key], hit.score) for hit in ranked if (key := str(hit.key)) in held]

    def engine(self, *, dense: bool) -> str:
        """BM25F, fused with the vectors when hybrid (see :meth:`~.views.BundleView.engine`)."""
        semantic = self.context.semantic
        if semantic is None or not dense:
            return lexical_description()
        return semantic.describe(lexical_description())

    def vectors_complete(self) -> bool:
        """Whether every concept holds its vector."""
        semantic = self.context.semantic
        if semantic is None:
            return True
        with self.context.lock:
            return semantic.count >= len(self.manifest.concepts)

    def fill_vectors(self, progress: Callable[[int, int], None] | None) -> None:
        """Embed the concepts without a vector (the cache first); see the protocol."""
        semantic = self.context.semantic
        if semantic is None:
            return
        from agentkernel.knowledgebase.okf.vectors import embed_concepts

        manifest = self.manifest
        with self.context.lock:
            todo = [manifest.concepts[k] for k in semantic.missing(list(manifest.concepts))]
        if not todo:
            return
        counted = None if progress is None else (lambda done: progress(done, len(todo)))
        vectors = embed_concepts(semantic, todo, counted)  # outside the lock: slow
        with self.context.lock:
            for concept in todo:
                vector = vectors.get(concept.id)
                if vector is not None and manifest.concepts.get(concept.id) is concept:
                    semantic.put(concept.id, vector)  # a concept replaced since keeps none

    def types(self) -> Counter[str]:
        """Concepts per type."""
        with self.context.lock:
            return Counter(c.type for c in self.manifest.concepts.values())

    def prefetch(self, ids: list[str]) -> None:
        """Nothing to read ahead: every summary is in memory.

        Args:
            ids: Concept ids.
        """

    def all_concepts(self) -> list[Concept]:
        """Every concept served, in no order."""
        with self.context.lock:
            return list(self.manifest.concepts.values())

    def put_concept(self, concept: Concept, vector: np.ndarray | None) -> None:
        """Serve a concept just written (indexed and, when hybrid, its vector held).

        Args:
            concept: The concept.
            vector: Its unit vector, or ``None``.
        """
        with self.context.lock:
            self.manifest.put_concept(concept, vector)

    def diagnostics(self) -> list[str]:
        """Skipped documents, the walk's notes, refresh failures."""
        return self.listed(self.manifest)

    def schema(self) -> dict[str, Any]:
        """The search mode."""
        semantic = self.context.semantic
        return {"search": self.engine(dense=semantic is not None)}

    def refresh(self, *, raise_errors: bool) -> RefreshStats | None:
        """List the store and re-read what changed since the last walk.

        Args:
            raise_errors: Raise a failed listing instead of noting it.

        Returns:
            What the walk did, or ``None`` when it failed quietly.
        """
        started = time.perf_counter()
        manifest = self.manifest
        with self.context.lock:
            known = {path: manifest.token_of(path) or "" for path in manifest.paths()}
        try:
            result = scan(self.context.store, known, self.context.limits)
        except Exception as exc:
            self.note_failure("refresh", "the last good manifest", exc)
            if raise_errors:
                raise
            return None
        return self._apply(result, known, started)

    def _apply(self, result: ScanResult, known: dict[str, str], started: float) -> RefreshStats:
        manifest = self.manifest
        context = self.context
        with context.lock:

            def untouched(path: str) -> bool:
                # a write since the snapshot wins over what the walk saw
                return (manifest.token_of(path) or "") == known.get(path, "")

            dropped = 0
            for path in result.drops:
                if untouched(path) and manifest.drop(path):
                    dropped += 1
            changed = 0
            for concept in result.concepts:
                if untouched(concept.path):
                    manifest.put_concept(concept)  # its vector: when search needs it
                    changed += 1
            for reserved in result.reserved:
                if untouched(reserved.path):
                    manifest.put_reserved(reserved)
            for skipped in result.skipped:
                if untouched(skipped.path):
                    manifest.put_skipped(skipped)
            manifest.truncated = result.truncated
            self.notes = result.store_diagnostics + result.errors
            if result.truncated:
                self.notes.append(
                    "truncated: the bundle holds more than "
                    f"max_concepts={context.limits.max_concepts} concepts; the rest are not "
                    "served"
                )
            self.refresh_error = None
        seconds = time.perf_counter() - started
        return RefreshStats(result.listed, result.reads, changed, dropped, seconds)
