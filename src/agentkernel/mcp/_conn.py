"""Connections a slow or hostile client cannot hoard: a header deadline and a connection cap.

uvicorn (the HTTP server behind every ``--http``) keeps a connection that never finishes its
request headers forever: its keep-alive timer runs only between requests and any byte
received cancels it, and ``limit_concurrency`` answers ``503`` only once headers are
complete, counting the unfinished connections too (so a flood of them turns every real
caller away). So the protocol uvicorn would pick (``httptools`` where installed, else
``h11``) is extended here:

- **a header deadline**: from the moment a connection opens, and again each time a response
  is complete, the next request's headers must be complete within ``header_timeout``
  seconds, however the bytes are dribbled; otherwise the connection is closed. A request
  being served is never cut by it;
- **a header size bound**: more than :data:`MAX_HEADER_BYTES` without the end of the headers
  gets ``431`` and the connection is closed (h11 has its own bound; httptools has none);
- **a connection cap**: with ``max_connections`` open, a new connection closes the one that
  has waited longest for its headers (or sat idle longest between requests); only when
  every connection is serving a request is the new one answered ``503``. A flood of
  connections that never finish their headers therefore never locks out a caller who sends
  a whole request.

:func:`raise_descriptor_limit` raises the soft limit on open files to the hard limit, and
:func:`connection_plan` keeps the cap (and the accept backlog) under what the descriptors
allow, so that a flood never makes ``accept`` fail for want of one.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

logger = logging.getLogger(__name__)

__all__ = [
    "MAX_HEADER_BYTES",
    "ConnectionLimits",
    "connection_plan",
    "protocol_class",
    "raise_descriptor_limit",
]

#: The most bytes a request's line and headers may take.
MAX_HEADER_BYTES = 64 * 1024

_BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\ncontent-length: 37\r\n"
    b"connection: close\r\n\r\nEvery connection is serving a request."
)
_TOO_LARGE = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: text/plain\r\n"
    b"content-length: 24\r\nconnection: close\r\n\r\nRequest headers too long"
)


@dataclass(frozen=True)
class ConnectionLimits:
    """How long headers may take and how many connections may be open.

    Attributes:
        header_timeout: Seconds a request's headers may take, from the connection's opening
            (or the previous response's end) to their last byte.
        max_connections: Connections open at once (further bounded by the descriptor limit).
    """

    header_timeout: float = 10.0
    max_connections: int = 1000


def raise_descriptor_limit() -> int | None:
    """Raise this process's soft limit on open files to its hard limit.

    Returns:
        The soft limit now in force, or ``None`` where there is no such limit (Windows).
    """
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError) as exc:  # e.g. macOS caps it below the hard limit
            logger.info("Could not raise the open-file limit from %d to %d: %s", soft, hard, exc)
    return None if soft == resource.RLIM_INFINITY else int(soft)


def connection_plan(limits: ConnectionLimits, descriptors: int | None) -> tuple[int, int]:
    """How many connections may be open, and the accept backlog, under the descriptor limit.

    The event loop accepts up to ``backlog`` connections at a time before any of them is
    counted, and a closed connection gives its descriptor back a loop turn later, so the cap
    leaves room for three such batches, plus an eighth of the descriptors (at least 64) for
    everything else the server opens (backends, files, the listening socket).

    Args:
        limits: The configured limits.
        descriptors: The soft limit on open files (``None``: unbounded).

    Returns:
        ``(cap, backlog)``: the cap is at least 1, the backlog between 8 and 128.
    """
    if descriptors is None:
        return limits.max_connections, 128
    backlog = max(8, min(128, descriptors // 8))
    room = descriptors - max(64, descriptors // 8) - 3 * backlog
    cap = max(1, min(limits.max_connections, room))
    if cap < limits.max_connections:
        logger.info(
            "Serving at most %d connections at once (the open-file limit is %d).", cap, descriptors
        )
    return cap, backlog


def protocol_class(header_timeout: float, cap: int) -> type[asyncio.Protocol]:
    """The HTTP protocol class uvicorn picks, with the header deadline and the connection cap.

    Each call makes a class of its own, whose connections share one cap.

    Args:
        header_timeout: Seconds a request's headers may take.
        cap: Connections open at once.

    Returns:
        The class to give ``uvicorn.Config(http=...)``.
    """
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    # the connections waiting for headers (or idle between requests), oldest first
    waiting: dict[Any, None] = {}
    live: set[Any] = set()  # open and not being closed (uvicorn's own set keeps the closing)
    base: Any = AutoHTTPProtocol

    class Bounded(base):  # type: ignore[misc, valid-type]
        _deadline: asyncio.TimerHandle | None = None
        _header_bytes = 0

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            live.add(self)
            self._wait_for_headers()
            if len(live) > cap and not _evict_one(self):
                logger.warning("MCP: %d connections are serving requests; refused one", cap)
                self._close(_BUSY)

        def data_received(self, data: bytes) -> None:
            if self in waiting:
                self._header_bytes += len(data)
            super().data_received(data)
            if self in waiting and not self._idle():
                self._stop_waiting()  # the headers are complete: a request is being served
            elif self in waiting and self._header_bytes > MAX_HEADER_BYTES:
                self._close(_TOO_LARGE)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing() and self._idle():
                self._wait_for_headers()

        def connection_lost(self, exc: Exception | None) -> None:
            self._stop_waiting()
            live.discard(self)
            super().connection_lost(exc)

        def _close(self, answer: bytes = b"") -> None:
            self._stop_waiting()
            live.discard(self)
            if not self.transport.is_closing():
                if answer:
                    self.transport.write(answer)
                self.transport.close()

        def _idle(self) -> bool:
            cycle = self.cycle
            return cycle is None or bool(cycle.response_complete)

        def _wait_for_headers(self) -> None:
            self._stop_waiting()
            waiting[self] = None
            self._header_bytes = 0
            self._deadline = self.loop.call_later(header_timeout, self._deadline_passed)

        def _stop_waiting(self) -> None:
            waiting.pop(self, None)
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _deadline_passed(self) -> None:
            self._deadline = None
            if self in waiting and self._idle():
                self._close()

    def _evict_one(newcomer: Any) -> bool:
        for oldest in waiting:
            if oldest is not newcomer:
                oldest._close()
                return True
        return False

    return Bounded
