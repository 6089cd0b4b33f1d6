"""Progress on stderr: the bundle-wide bar, and the report of embedding runs.

One progress bar for the commands that work through a whole bundle (check, index, embed), and
:class:`EmbeddingProgress` for the embedding runs inside any command (a first hybrid search, a
``serve`` warm-up).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any, Protocol

SUMMARY_AFTER = 1.0
"""Seconds an embedding run must last before it is shown (a bar, or a summary line);
``$AGENTKERNEL_PROGRESS_AFTER`` overrides it (0: every run)."""


class Update(Protocol):
    """Moves the bar: ``done`` of ``total`` (0: not known yet); a ``phase`` renames the step."""

    def __call__(self, done: int, total: int, phase: str | None = None) -> None: ...


@contextlib.contextmanager
def progress_bar(description: str, *, show: bool = True, from_total: int = 0) -> Iterator[Update]:
    """Show a transient progress bar on stderr while the block runs.

    Nothing is drawn when stderr is no terminal (a pipe, a CI log) or ``show`` is false.

    Args:
        description: What is being done, shown before the bar.
        show: Whether to draw the bar at all (``--quiet`` and ``--json`` say no).
        from_total: The least total worth a bar: smaller jobs finish before it would help.

    Yields:
        ``update(done, total, phase=None)``: moves the bar; a ``phase`` replaces the
        description (a new step of the job).
    """
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    console = Console(stderr=True)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
    with Progress(
        *columns,
        TimeRemainingColumn(),
        console=console,
        disable=not show or not console.is_terminal,
        transient=True,
    ) as bar:
        task = bar.add_task(description, total=None, visible=from_total == 0)

        def update(done: int, total: int, phase: str | None = None) -> None:
            if total >= from_total:
                bar.update(task, completed=done, total=total or None, visible=True)
            if phase is not None:
                bar.update(task, description=phase)

        yield update


class EmbeddingProgress:
    """Reports embedding runs on stderr, once a run lasts over :data:`SUMMARY_AFTER` seconds.

    In a terminal, a transient bar; then, terminal or not, one summary line when the run ends:
    ``embedded N texts (M from the cache) in S s``.

    An :class:`~agentkernel.retrieval.semantic.EmbeddingReporter`; install it with
    :func:`agentkernel.retrieval.semantic.reporting`.
    """

    def __init__(self, *, show: bool = True, stream: Any = None) -> None:
        """Configure the report.

        Args:
            show: ``False`` reports nothing (``--quiet``).
            stream: Where to write; stderr when ``None``.
        """
        self._show = show
        try:
            self._after = float(os.environ.get("AGENTKERNEL_PROGRESS_AFTER", SUMMARY_AFTER))
        except ValueError:
            self._after = SUMMARY_AFTER
        self._stream = stream if stream is not None else sys.stderr
        self._lock = threading.Lock()
        self._started = 0.0
        self._total = 0
        self._bar: Any = None
        self._task: Any = None

    def _terminal(self) -> bool:
        isatty = getattr(self._stream, "isatty", None)
        return bool(isatty and isatty())

    def begin(self, to_embed: int, cached: int) -> None:
        """A run starts (see the class docstring)."""
        with self._lock:
            self._started = time.monotonic()
            self._total = to_embed

    def advance(self, embedded: int) -> None:
        """Move the bar, starting it once the run has lasted :data:`SUMMARY_AFTER` seconds."""
        if not self._show or not self._terminal():
            return
        with self._lock:
            if self._bar is None and time.monotonic() - self._started >= self._after:
                from rich.console import Console
                from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

                console = Console(file=self._stream)
                self._bar = Progress(
                    TextColumn("embedding"),
                    BarColumn(),
                    MofNCompleteColumn(),
                    console=console,
                    transient=True,
                )
                self._bar.start()
                self._task = self._bar.add_task("embedding", total=self._total)
            if self._bar is not None:
                self._bar.update(self._task, completed=embedded)

    def end(self, embedded: int, cached: int) -> None:
        """Close the bar; print the summary line when the run lasted long enough."""
        with self._lock:
            if self._bar is not None:
                self._bar.stop()
                self._bar = None
            elapsed = time.monotonic() - self._started
        if self._show and elapsed >= self._after:
            print(
                f"embedded {embedded} texts ({cached} from the cache) in {elapsed:.1f} s",
                file=self._stream,
                flush=True,
            )
