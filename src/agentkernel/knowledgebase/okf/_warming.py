"""What an OKF manager is still loading, and the progress lines it logs while it does.

A manager loads in steps: the walk (or the bundle index's opening), then, when search is
hybrid, the concepts' vectors. :class:`Warming` holds the step under way and how far it got;
:meth:`Warming.readiness` turns that into the :class:`~agentkernel.knowledgebase.model.
Readiness` a server reads on every probe (a few attribute reads under a lock, no scan).
Each step logs progress lines on the ``agentkernel.progress`` logger (counts, rate, ETA),
terminal or not: a pod's log shows how far the vectors are.
"""

from __future__ import annotations

import logging
import threading
import time

from agentkernel.knowledgebase.model import PROGRESS_LOGGER, Readiness

progress_logger = logging.getLogger(PROGRESS_LOGGER)

PROGRESS_EVERY = 5.0
"""Seconds between two progress lines of one step (a step that ends sooner logs none)."""


class Warming:
    """The loading state of one manager: written by its loader, read by ``readiness()``."""

    def __init__(self, name: str) -> None:
        """Start before loading: nothing answers yet.

        Args:
            name: The manager's backend name, for the progress lines.
        """
        self.name = name
        self.loaded = threading.Event()
        """Set once every operation can answer (the walk or the index opening ended)."""
        self._lock = threading.Lock()
        self._step = "walk"
        self._done = 0
        self._total = 0
        self._error = ""
        self._started = time.monotonic()
        self._logged = self._started
        self._said = False  # whether the step under way has logged a progress line

    def begin(self, step: str, total: int = 0) -> None:
        """A step starts.

        Args:
            step: ``"walk"``, ``"index"`` or ``"vectors"``.
            total: Its units, when known.
        """
        now = time.monotonic()
        with self._lock:
            self._step, self._done, self._total = step, 0, total
            self._started = self._logged = now
            self._said = False

    def advance(self, done: int, total: int | None = None) -> None:
        """The step has done ``done`` units (of ``total``, when that became known).

        Logs a progress line at most every :data:`PROGRESS_EVERY` seconds.

        Args:
            done: Units done so far.
            total: The step's units, when known now.
        """
        now = time.monotonic()
        with self._lock:
            self._done = done
            if total is not None:
                self._total = total
            if now - self._logged < PROGRESS_EVERY:
                return
            self._logged, self._said = now, True
            step, total_now, elapsed = self._step, self._total, now - self._started
        progress_logger.info("%s: %s", self.name, _progress_line(step, done, total_now, elapsed))

    def end(self) -> None:
        """The step under way ended: log how long it took; nothing is warming now."""
        now = time.monotonic()
        with self._lock:
            step, done, elapsed = self._step, self._done, now - self._started
            self._step, self._done, self._total = "", 0, 0
            said, self._said = self._said, False
        if not step or not (said or elapsed >= PROGRESS_EVERY):
            return  # a step short enough to show no progress ends silently
        if done:
            progress_logger.info(
                "%s: %s: %d done in %.1f s (%.0f/s)",
                self.name,
                _WHAT[step],
                done,
                elapsed,
                done / elapsed if elapsed > 0 else 0.0,
            )
        else:
            progress_logger.info("%s: %s: done in %.1f s", self.name, _WHAT[step], elapsed)

    def fail(self, error: str) -> None:
        """Loading failed: the manager cannot answer until a reload succeeds.

        Args:
            error: Why, in one line.
        """
        with self._lock:
            self._error = error
            self._step = ""
        self.loaded.set()  # waiting callers get the error instead of waiting on

    def recovered(self) -> None:
        """A later load succeeded: forget the failure."""
        with self._lock:
            self._error = ""

    @property
    def error(self) -> str:
        """Why loading failed, or ``""``."""
        with self._lock:
            return self._error

    def readiness(
        self, vectors: int, vectors_total: int, complete: bool, hybrid: bool
    ) -> Readiness:
        """The state now.

        Args:
            vectors: Concepts holding a vector.
            vectors_total: Concepts served.
            complete: Whether every vector there is to hold is held.
            hybrid: Whether search wants vectors (an embedder was given).

        Returns:
            The readiness.
        """
        with self._lock:
            step, done, total, error = self._step, self._done, self._total, self._error
        lexical = self.loaded.is_set() and not error
        if not hybrid:
            vectors = vectors_total = 0
        return Readiness(
            warming=step,
            done=done,
            total=total,
            lexical_ready=lexical,
            vectors_ready=lexical and (not hybrid or complete),
            vectors=vectors,
            vectors_total=vectors_total,
            error=error,
        )


_WHAT = {
    "walk": "walking the bundle",
    "index": "opening the bundle index",
    "vectors": "embedding concepts",
    "": "loading",
}


def _progress_line(step: str, done: int, total: int, elapsed: float) -> str:
    """``embedding concepts: 120/2000 (6%), 40/s, about 47 s left``."""
    rate = done / elapsed if elapsed > 0 else 0.0
    if not total:
        return f"{_WHAT[step]}: {done} so far, {rate:.0f}/s"
    left = f", about {(total - done) / rate:.0f} s left" if rate > 0 else ""
    return f"{_WHAT[step]}: {done}/{total} ({100 * done // total}%), {rate:.0f}/s{left}"
