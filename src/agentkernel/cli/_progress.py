"""One progress bar for the commands that work through a whole bundle (check, index, embed)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Protocol


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
