"""When an OKF manager loads: its view now or on a thread, its vectors when search needs them.

Loading has two parts. The view (the walk of the store, or the bundle index opened) is what
every operation needs: by default ``OKFManager()`` opens it before it returns; with
``background=True`` a thread opens it and every operation waits for it (a server listens at
once, its readiness saying how far the load is). The vectors of hybrid search are the other
part, and only search needs them: nothing embeds before the first search (fetch, browse, the
schema never embed). Then, in the foreground, that search fills every missing vector before it
answers (the command line's first search, with its progress bar); in the background, a thread
fills them while searches answer lexically, each saying so, until every concept holds its
vector. Each step logs its progress (:mod:`~agentkernel.knowledgebase.okf._warming`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from agentkernel.knowledgebase.errors import KnowledgeError
from agentkernel.knowledgebase.model import Readiness, Record
from agentkernel.knowledgebase.okf._warming import Warming

if TYPE_CHECKING:
    from agentkernel.knowledgebase.okf._views import BundleView
    from agentkernel.knowledgebase.okf.concept import Concept
    from agentkernel.retrieval.semantic import SemanticIndex

logger = logging.getLogger(__name__)

Fill = Callable[[Callable[[int, int], None] | None], None]
"""Fills the missing vectors; reports ``(done, total)`` when given a callback."""


class Loading:
    """One manager's loading: the view, then the vectors (see the module docstring)."""

    def __init__(self, name: str, *, background: bool) -> None:
        """Nothing loaded yet.

        Args:
            name: The manager's backend name (progress lines, errors).
            background: Load on threads (a server) instead of in the caller.
        """
        self.name = name
        self.background = background
        self.warming = Warming(name)
        self._filling = threading.Lock()
        self._stopped = False
        self.thread: threading.Thread | None = None

    def open(self, connect: Callable[[], None], fill: Fill | None) -> None:
        """Open the view now, or start the thread that opens it and then fills the vectors.

        Args:
            connect: Opens the view (the manager's ``connect``, which reports its steps).
            fill: Fills the vectors, when search is hybrid.

        Raises:
            Exception: (in the foreground) what ``connect`` raised.
        """
        if not self.background:
            connect()
            return

        def load() -> None:
            try:
                connect()
            except Exception:  # reported by connect (readiness, the log); operations raise it
                logger.exception("OKF bundle %s: loading failed", self.name)
                return
            if fill is not None:
                self._fill_now(fill)

        self.thread = threading.Thread(
            target=load, name=f"agentkernel-load {self.name}", daemon=True
        )
        self.thread.start()

    def opening(self, connect: Callable[[Warming], None]) -> None:
        """Open the view, keeping :attr:`warming` in step (the load's steps, its failure).

        Args:
            connect: Opens it, reporting its steps to the warming it is given.

        Raises:
            Exception: What ``connect`` raised (also kept: readiness says it).
        """
        warming = self.warming
        try:
            connect(warming)
        except Exception as exc:
            warming.fail(f"{type(exc).__name__}: {exc}")
            raise
        warming.recovered()
        warming.end()
        warming.loaded.set()

    def wait(self) -> None:
        """Wait until every operation can answer (at once after a foreground load).

        Raises:
            KnowledgeError: The load failed (the manager has nothing to serve).
        """
        self.warming.loaded.wait()
        error = self.warming.error
        if error:
            raise KnowledgeError(
                f"OKF bundle '{self.name}' could not be loaded: {error}. Fix the store (or "
                "the index) and reload."
            )

    def dense(self, complete: Callable[[], bool], fill: Fill) -> bool:
        """Whether this search may fuse the vectors: all held (filled first in the foreground).

        Args:
            complete: Whether every concept holds its vector now.
            fill: Fills the missing ones.

        Returns:
            ``True`` to search hybrid; ``False`` to answer lexically (the background is
            filling them, or embedding failed).
        """
        if complete():
            return True
        if not self.background:
            with self._filling:
                if not complete():
                    fill(None)  # the embedding runs' reporter draws the command line's bar
            return complete()
        if self._filling.acquire(blocking=False):  # the load's fill ended; new concepts since
            self._filling.release()
            threading.Thread(
                target=self._fill_now,
                args=(fill,),
                name=f"agentkernel-vectors {self.name}",
                daemon=True,
            ).start()
        return False

    def search(
        self,
        view: BundleView,
        semantic: SemanticIndex | None,
        lock: threading.RLock,
        query: str,
        limit: int,
    ) -> tuple[list[tuple[Concept, float]], str, bool]:
        """Search hybrid when every vector is held (filled first in the foreground), else lexically.

        Args:
            view: The manager's view.
            semantic: Its dense index, ``None`` for lexical search.
            lock: The manager's lock.
            query: The query.
            limit: The most results.

        Returns:
            The ranked concepts, what answered (:meth:`engine`), and whether the answer is
            lexical though search is hybrid (still filling, or the embedder failing).
        """
        dense = semantic is not None and self.dense(view.vectors_complete, view.fill_vectors)
        found = view.search(query, limit, dense=dense)
        lexical = semantic is not None and (not dense or bool(semantic.degraded))
        return found, self.engine(view, semantic, lock, dense), lexical

    def engine(
        self, view: BundleView, semantic: SemanticIndex | None, lock: threading.RLock, dense: bool
    ) -> str:
        """What answers a search, truthfully: the engines, or why lexically though hybrid.

        Args:
            view: The manager's view.
            semantic: Its dense index.
            lock: The manager's lock.
            dense: Whether the search fused the vectors.

        Returns:
            For example ``lexical (BM25F) while the vectors are built (120/2000 so far);
            hybrid once they are``.
        """
        if semantic is None or dense:
            return view.engine(dense=dense)
        lexical = view.engine(dense=False)
        if semantic.degraded:
            return f"{lexical} only: the vectors cannot be built ({semantic.degraded})"
        state = self.readiness(view, semantic, lock)
        return (
            f"{lexical} while the vectors are built ({state.vectors}/{state.vectors_total} "
            "so far); hybrid once they are"
        )

    def hybrid_now(self, view: BundleView, semantic: SemanticIndex | None) -> bool:
        """Whether a search now fuses the vectors (in the foreground, it fills them first)."""
        if semantic is None:
            return False
        return not self.background or view.vectors_complete()

    def readiness(
        self, view: BundleView, semantic: SemanticIndex | None, lock: threading.RLock
    ) -> Readiness:
        """The manager's readiness (see ``OKFManager.readiness``).

        Args:
            view: The manager's view.
            semantic: Its dense index.
            lock: The manager's lock.

        Returns:
            The state now.
        """
        vectors = semantic.count if semantic is not None else 0
        with lock:
            total = len(view.contents.concepts)
            complete = view.vectors_complete()
        return self.warming.readiness(vectors, total, complete, semantic is not None)

    def stop(self) -> None:
        """Stop loading: a fill under way ends after its current batch (``close()``)."""
        self._stopped = True

    def _fill_now(self, fill: Fill) -> None:
        if not self._filling.acquire(blocking=False):
            return  # another thread fills them
        try:
            if self._stopped:
                return
            warming = self.warming
            warming.begin("vectors")
            fill(lambda done, total: warming.advance(done, total))
        except Exception:  # the embedder's failures are reported by the index; this is a bug
            logger.exception("OKF bundle %s: filling the vectors failed", self.name)
        finally:
            self.warming.end()
            self._filling.release()


def with_search_note(rows: Sequence[Record], text: str) -> str:
    """A search's rendering, opening with what answered when it was lexical though hybrid.

    Args:
        rows: The records rendered (a lexical answer's carry ``lexical_only``).
        text: Their rendering.

    Returns:
        ``(search: ...)`` and the rendering, or the rendering alone.
    """
    metadata = rows[0].get("metadata") if rows else None
    lexical = metadata.get("lexical_only") if isinstance(metadata, Mapping) else None
    return f"(search: {lexical})\n{text}" if lexical else text
