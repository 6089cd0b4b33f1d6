"""When an ``OKFManager`` refreshes its view, and that one caller at a time does it.

A call crossing the ``refresh_seconds`` boundary refreshes the view; another caller meanwhile
keeps serving the current state instead of waiting. A view waiting for something (a bundle
index's next version) asks to be refreshed sooner; the background thread of a polled index
refreshes it at its own pace, and a call does so only when that thread fell a whole interval
behind.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable

from agentkernel.knowledgebase.okf._views import BundleView, RefreshStats

__all__ = ["RefreshSchedule"]


class RefreshSchedule:
    """The next refresh's time, the latest refresh's statistics, and the lock between callers."""

    def __init__(self, refresh_seconds: float | None, clock: Callable[[], float]) -> None:
        """Schedule nothing yet (the first refresh is scheduled by the first one that runs).

        Args:
            refresh_seconds: Seconds between refreshes; ``None``: only when asked.
            clock: Seconds since the epoch.
        """
        self.seconds = None if refresh_seconds is None else float(refresh_seconds)
        self.last: RefreshStats | None = None
        self._clock = clock
        self._next = math.inf
        self._lock = threading.Lock()

    def due(self) -> bool:
        """Whether a call should refresh the view now."""
        return self._clock() >= self._next

    def start(self) -> None:
        """Schedule the first refresh one interval from now (a freshly opened index)."""
        if self.seconds is not None:
            self._next = self._clock() + self.seconds

    def run(
        self, view: BundleView, *, raise_errors: bool, polled: bool = False
    ) -> RefreshStats | None:
        """Refresh ``view`` unless another caller is doing it, then schedule the next refresh.

        Args:
            view: The view served now.
            raise_errors: Raise a failed refresh (and wait for a running one) instead of
                recording it in the diagnostics.
            polled: A background thread's refresh (it waits for a running one).

        Returns:
            What the refresh did; ``None`` when another caller was refreshing or it failed.
        """
        if not self._lock.acquire(blocking=raise_errors or polled):
            return None  # another caller is refreshing; keep serving the current state
        try:
            stats = view.refresh(raise_errors=raise_errors)
            if stats is not None:
                self.last = stats
            return stats
        finally:
            if self.seconds is not None:
                retry = math.inf if polled else view.retry_after or math.inf
                self._next = self._clock() + min(self.seconds, retry)
            self._lock.release()
