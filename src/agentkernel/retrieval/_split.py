"""A second thread for one forward pass: two halves of a layer at once.

A query is one short text: its forward pass cannot be split by texts, and its matrix products
(a few rows against ~7 MB of weights per layer) are bound by reading the weights. The default
embedder cuts each layer into two halves that need no exchange until their sums (half the
attention heads and the rows of the output projection they feed; half the feed-forward
columns and the rows of the down projection they feed), and :func:`both` runs one half on the
calling thread and the other on a helper thread, so two cores each read half the weights.

The helper is one daemon thread per process, started by the first call that asks for it. A
half it has not begun when the caller finishes its own is taken back and run by the caller:
a busy or descheduled helper never makes a caller wait longer than doing both halves itself,
and concurrent callers cannot deadlock on it. Nothing process-wide is set (numpy releases the
GIL in its products, which is where the halves overlap).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")

_tasks: queue.SimpleQueue[_Task[object]] = queue.SimpleQueue()
_start_lock = threading.Lock()
_helper: threading.Thread | None = None


class _Task(Generic[T]):
    """One half handed to the helper: run once, by whichever thread claims it first."""

    __slots__ = ("claim", "done", "error", "function", "result")

    def __init__(self, function: Callable[[], T]) -> None:
        self.function = function
        self.claim = threading.Lock()  # acquired by the thread that runs the half
        self.done = threading.Lock()  # held until the half has run
        self.done.acquire()
        self.result: T | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.result = self.function()
        except BaseException as exc:  # handed to the caller, which raises it
            self.error = exc
        finally:
            self.done.release()


def _serve() -> None:
    while True:
        task = _tasks.get()
        if task.claim.acquire(blocking=False):
            task.run()


def _start() -> None:
    global _helper
    with _start_lock:
        if _helper is None or not _helper.is_alive():
            _helper = threading.Thread(target=_serve, name="minilm-half", daemon=True)
            _helper.start()


def both(mine: Callable[[], T], other: Callable[[], T]) -> tuple[T, T]:
    """Run ``mine`` here and ``other`` on the helper thread (or here, if it is busy).

    Args:
        mine: The half the calling thread runs.
        other: The half offered to the helper.

    Returns:
        Both results, ``mine``'s first.

    Raises:
        BaseException: What either half raised.
    """
    if _helper is None or not _helper.is_alive():  # first call, or a forked child
        _start()
    task: _Task[T] = _Task(other)
    _tasks.put(task)  # type: ignore[arg-type]
    try:
        first = mine()
    finally:
        if task.claim.acquire(blocking=False):
            task.run()  # the helper had not begun it: run it here
        task.done.acquire()
    if task.error is not None:
        raise task.error
    return first, task.result  # type: ignore[return-value]
