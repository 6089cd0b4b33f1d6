"""A bundle index refreshed off the call path, so a pod serves a new version within the interval.

A manager serving a bundle index with ``refresh_seconds=R`` starts one daemon thread that asks
the index for a newer version on the manager's clock, often enough that finding a version and
switching to it fit in ``R``: it polls every ``min(R / 2, R - 2 * S)`` seconds, ``S`` the
longest of its last :data:`SWITCHES_KEPT` switches, never more often than every ``R / 10`` (an
unchanged poll is one small request). A switch is prepared while the old version keeps serving
and swapped in under the manager's lock, so no tool call waits for it. A version committed
fully indexed at ``t`` is served by ``t + R`` whenever a switch takes at most ``R / 2`` (see
:func:`poll_interval`).

The thread writes nothing but the node cache the refresh always wrote; a failed poll is
reported as every refresh failure is (the diagnostics) and the thread goes on. It stops on
:meth:`BackgroundRefresh.stop` (the manager's ``close()``), when the manager is collected, and
at interpreter exit, and never keeps a process alive.
"""

from __future__ import annotations

import atexit
import logging
import threading
import weakref
from collections import deque
from collections.abc import Callable

logger = logging.getLogger(__name__)

SWITCHES_KEPT = 3
"""How many recent switch durations size the poll interval."""

_EXIT_WAIT = 10.0  # seconds a poll under way may hold up the interpreter's exit

_RUNNING: weakref.WeakSet[BackgroundRefresh] = weakref.WeakSet()


def poll_interval(seconds: float, switches: list[float]) -> float:
    """Seconds between polls so that a poll and the switch it finds fit in ``seconds``.

    Args:
        seconds: The refresh interval ``R`` (the staleness bound).
        switches: Recent switch durations, on the manager's clock.

    Returns:
        ``min(R / 2, R - 2 * max(switches))``, at least ``R / 10``.
    """
    longest = max(switches, default=0.0)
    return max(seconds / 10, min(seconds / 2, seconds - 2 * longest))


class BackgroundRefresh:
    """One daemon thread polling a bundle index for newer versions (see the module docstring)."""

    def __init__(
        self,
        poll: Callable[[], tuple[bool, float | None]],
        seconds: float,
        clock: Callable[[], float],
        name: str,
        replacing: BackgroundRefresh | None = None,
    ) -> None:
        """Start polling (after stopping the thread this one replaces).

        Args:
            poll: Refreshes once; says whether it switched version and how soon the view
                wants the next poll (``None``: the interval). A bound method is held weakly:
                the thread ends when its manager is collected.
            seconds: The refresh interval ``R``.
            clock: The manager's clock.
            name: The index, for the thread's name and the logs.
            replacing: The manager's previous thread (a second ``connect()``), stopped first.
        """
        if replacing is not None:
            replacing.stop()
        self._poll: Callable[[], Callable[[], tuple[bool, float | None]] | None]
        if hasattr(poll, "__self__"):
            self._poll = weakref.WeakMethod(poll)  # type: ignore[arg-type]
        else:
            self._poll = lambda: poll
        self.seconds = seconds
        self._clock = clock
        self._name = name
        self._switches: deque[float] = deque(maxlen=SWITCHES_KEPT)
        self._wake = threading.Condition()
        self._stopped = False
        self.polls = 0  # polls done, for tests and the bench
        self.due = clock() + poll_interval(seconds, [])
        self.thread = threading.Thread(
            target=self._run, name=f"agentkernel-index-refresh {name}", daemon=True
        )
        _RUNNING.add(self)
        self.thread.start()

    @property
    def interval(self) -> float:
        """The current seconds between polls (:func:`poll_interval`)."""
        return poll_interval(self.seconds, list(self._switches))

    def wake(self) -> None:
        """Have the thread look at the clock now (a poll runs if one is due)."""
        with self._wake:
            self._wake.notify_all()

    def wait_polls(self, count: int, timeout: float) -> bool:
        """Wait until ``count`` polls have run (tests, the bench).

        Args:
            count: Polls to wait for, counted from the start.
            timeout: Seconds to wait at most.

        Returns:
            Whether they ran.
        """
        with self._wake:
            return self._wake.wait_for(lambda: self.polls >= count or self._stopped, timeout)

    def stop(self, timeout: float | None = None) -> None:
        """Stop the thread; a poll under way finishes first. Idempotent.

        Args:
            timeout: Seconds to wait for a poll under way; ``None``: until it ends.
        """
        with self._wake:
            self._stopped = True
            self._wake.notify_all()
        if self.thread is not threading.current_thread() and self.thread.is_alive():
            self.thread.join(timeout)
        _RUNNING.discard(self)

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._stopped and (wait := self.due - self._clock()) > 0:
                    self._wake.wait(min(wait, self.seconds))
                if self._stopped:
                    return
            poll = self._poll()
            if poll is None:  # the manager was collected
                return
            self._step(poll)
            del poll

    def _step(self, poll: Callable[[], tuple[bool, float | None]]) -> None:
        """Poll once and schedule the next poll, start to start."""
        started = self._clock()
        switched, retry = False, None
        try:
            switched, retry = poll()
        except Exception:  # the refresh reports its own failures; this is a bug's last stop
            logger.exception("OKF bundle index %s: the background refresh failed", self._name)
        if switched:
            self._switches.append(max(0.0, self._clock() - started))
        self.due = started + min(self.interval, retry if retry is not None else self.seconds)
        with self._wake:
            self.polls += 1
            self._wake.notify_all()


@atexit.register
def _stop_all() -> None:
    """Stop every thread before the interpreter finalizes (a poll may be inside Lance)."""
    for refresher in list(_RUNNING):
        refresher.stop(timeout=_EXIT_WAIT)
