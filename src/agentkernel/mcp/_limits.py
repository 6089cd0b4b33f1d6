"""How many blocking tool calls run at once, shared by every server over the same backends."""

from __future__ import annotations

import anyio

__all__ = ["SharedLimiter"]


class SharedLimiter:
    """One capacity limiter, created in the event loop that first needs it.

    Over HTTP each identity has a server of its own, but the backends behind them are shared,
    and the ``KnowledgeBase`` contract promises no thread safety: every server hands its
    blocking calls to the same limiter. It is FIFO, so with each identity's calls bounded
    (``max_calls``), one caller can hold at most that many places in the queue.
    """

    def __init__(self, total: int) -> None:
        """Keep the bound.

        Args:
            total: How many blocking calls may run at once (at least 1).
        """
        self.total = total
        self._limiter: anyio.CapacityLimiter | None = None

    def get(self) -> anyio.CapacityLimiter:
        """The limiter (created lazily: it must belong to the running event loop).

        Returns:
            The shared limiter.
        """
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(self.total)
        return self._limiter
