"""How ``OKFManager`` reads a bundle: one protocol over the walk and the bundle index.

A :class:`BundleView` is what the manager serves from. Two implement it:
:class:`~agentkernel.knowledgebase.okf._walkview.WalkView` (the store walked into an in-process
manifest and retrieval index) and :class:`~agentkernel.knowledgebase.okf._lanceview.LanceView`
(a Lance bundle index built by ``agentkernel-kb index``). The manager holds one and never asks
which: search, browse, fetch, write, refresh, the schema and the diagnostics go through the
protocol, so every operation works alike in both modes.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from agentkernel.knowledgebase.okf.concept import Concept
from agentkernel.knowledgebase.okf.manifest import BundleContents
from agentkernel.knowledgebase.okf.scan import ScanLimits
from agentkernel.storage.base import DocumentStore

if TYPE_CHECKING:
    import numpy as np

    from agentkernel.retrieval.semantic import SemanticIndex

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class RefreshStats:
    """What the last refresh did.

    Attributes:
        listed: Files the listing returned (0 for a bundle index).
        reads: Documents read (bounded leading reads).
        changed: Concepts added or replaced.
        dropped: Documents that left the manifest.
        seconds: Wall time of the refresh.
    """

    listed: int
    reads: int
    changed: int
    dropped: int
    seconds: float


@dataclass
class ViewContext:
    """What a view shares with its manager.

    Attributes:
        store: The bundle's document store.
        lock: The manager's lock; a view takes it around every change of what it serves.
        clock: Seconds since the epoch.
        limits: The walk's bounds (and the most concepts written).
        semantic: The dense index when search is hybrid, else ``None``.
        notes: Diagnostics the manager adds (a fallback from the index to the walk).
    """

    store: DocumentStore
    lock: threading.RLock
    clock: Callable[[], float]
    limits: ScanLimits
    semantic: SemanticIndex | None = None
    notes: list[str] = field(default_factory=list)

    def now(self) -> datetime:
        """The clock as a UTC datetime."""
        return datetime.fromtimestamp(self.clock(), UTC)

    def embed(self, concepts: Sequence[Concept]) -> dict[str, np.ndarray]:
        """Vectors of concepts by id when search is hybrid (empty otherwise or on failure).

        Args:
            concepts: The concepts.

        Returns:
            Concept id to unit vector.
        """
        if self.semantic is None or not concepts:
            return {}
        from agentkernel.knowledgebase.okf.vectors import embed_concepts

        return embed_concepts(self.semantic, concepts)


class BundleView(Protocol):
    """What ``OKFManager`` serves from: a walk of the store, or a bundle index."""

    retry_after: float | None
    """Seconds until the next refresh, when the view wants it sooner than the interval."""

    @property
    def contents(self) -> BundleContents:
        """The served tree: concepts, reserved files, skipped documents, directories."""

    def search(self, query: str, limit: int, *, dense: bool) -> list[tuple[Concept, float]]:
        """Rank concepts for a query (hybrid when asked and the context has a dense index).

        Args:
            query: Free text.
            limit: The most results.
            dense: Fuse the vectors (``False``: lexical, while they are not all held).

        Returns:
            ``(concept, score)`` best first.
        """

    def engine(self, *, dense: bool) -> str:
        """What answers a search, as the schema and the command line say it.

        Args:
            dense: Whether the search fuses the vectors.
        """

    def vectors_complete(self) -> bool:
        """Whether every served concept holds its vector (``True`` without a dense index)."""

    def fill_vectors(self, progress: Callable[[int, int], None] | None) -> None:
        """Embed (or read from the index) the vectors concepts lack; never under the lock.

        Args:
            progress: Called with ``(done, total)`` concepts as they come; ``None`` leaves
                the report to the embedding runs' reporter (the command line's bar).
        """

    def types(self) -> Counter[str]:
        """Concepts per type (no zero counts)."""

    def prefetch(self, ids: list[str]) -> None:
        """Read ahead the summaries of concepts about to be shown (a no-op in memory).

        Args:
            ids: Concept ids.
        """

    def all_concepts(self) -> list[Concept]:
        """Every concept served, in no order."""

    def refresh(self, *, raise_errors: bool) -> RefreshStats | None:
        """Catch up with the bundle (or its index).

        Args:
            raise_errors: Raise a failure instead of noting it (the last good state serves).

        Returns:
            What the refresh did; ``None`` when it failed and ``raise_errors`` is false.
        """

    def put_concept(self, concept: Concept, vector: np.ndarray | None) -> None:
        """Serve a concept this process has just written to the store.

        Args:
            concept: The concept.
            vector: Its unit vector when search is hybrid.
        """

    def diagnostics(self) -> list[str]:
        """Every current problem: skipped documents, walk or index notes, refresh failures."""

    def schema(self) -> dict[str, Any]:
        """What the schema says of this mode: ``search`` always, ``index`` for an index."""

    def read_document(self, concept: Concept) -> bytes:
        """A concept's whole document, for fetch.

        Args:
            concept: A served concept.
        """


class ViewState:
    """The diagnostics bookkeeping both views share: notes and the last refresh failure."""

    def __init__(self, context: ViewContext) -> None:
        """Start with no notes.

        Args:
            context: What the view shares with its manager.
        """
        self.context = context
        self.notes: list[str] = []  # the walk's (or the index's) own diagnostics
        self.refresh_error: str | None = None
        # seconds until the next refresh when sooner than the manager's interval
        self.retry_after: float | None = None

    def note_failure(self, what: str, serving: str, exc: Exception) -> None:
        """Log a failed refresh and keep its message; the old state keeps serving.

        Args:
            what: What failed (``refresh``, ``index refresh``).
            serving: What is served instead.
            exc: The failure.
        """
        message = (
            f"{what} failed at {self.context.now().strftime('%Y-%m-%dT%H:%M:%SZ')}, "
            f"serving {serving}: {type(exc).__name__}: {exc}"
        )
        logger.warning("OKF bundle %s: %s", self.context.store.location, message)
        with self.context.lock:
            self.refresh_error = message

    def read_document(self, concept: Concept) -> bytes:
        """A concept's whole document, read from the bundle's store.

        Args:
            concept: A served concept.

        Returns:
            The document's bytes.
        """
        return self.context.store.read_bounded(concept.path, self.context.limits.max_document_bytes)

    def listed(self, contents: BundleContents) -> list[str]:
        """The diagnostics in their order: skipped, own notes, manager's, failure.

        Args:
            contents: The served tree (its skipped documents).

        Returns:
            The diagnostics.
        """
        with self.context.lock:
            found = sorted(f"{s.path}: {s.reason}" for s in contents.skipped.values())
            found += self.notes
            found += self.context.notes
            if self.refresh_error:
                found.append(self.refresh_error)
        return found


def lexical_description() -> str:
    """What the schema says of lexical search."""
    return "lexical (BM25F)"
