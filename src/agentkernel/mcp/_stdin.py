"""stdin's lines for the SDK's stdio reader, less the requests whose id JSON-RPC forbids.

The SDK reads a request whose id is an object, a list, a boolean or a fraction as a
notification and never answers it. :class:`IdCheckedLines` answers such a line itself
(``-32600``, ``id: null``, see :func:`agentkernel.mcp._wire.bad_id`) and does not hand it
over; every other line passes unchanged. Nothing here imports the SDK.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Coroutine
from typing import Any

import anyio.from_thread

from agentkernel.mcp._wire import bad_id

logger = logging.getLogger(__name__)

__all__ = ["IdCheckedLines"]


class IdCheckedLines:
    """A text file's lines, read in the worker thread the SDK's reader uses."""

    def __init__(self, inner: Any) -> None:
        """Wrap a text file.

        Args:
            inner: The file the lines come from (stdin as UTF-8 text).
        """
        self._inner = inner
        self._send: Callable[[dict[str, Any]], Coroutine[Any, Any, None]] | None = None
        self._ready = threading.Event()

    def answer_with(self, send: Callable[[dict[str, Any]], Coroutine[Any, Any, None]]) -> None:
        """Send answers with ``send`` (set once the transport's write stream exists).

        Args:
            send: Sends one wire-form answer on the transport.
        """
        self._send = send
        self._ready.set()

    def readline(self, *args: Any) -> str:
        """The next line the SDK may read (answering the ones it may not).

        Args:
            *args: As ``TextIOBase.readline``.

        Returns:
            The line, or ``""`` at the end.
        """
        while True:
            line: str = self._inner.readline(*args)
            answer = _bad_id_answer(line)
            if answer is None:
                return line
            self._ready.wait()
            try:
                assert self._send is not None
                anyio.from_thread.run(self._send, answer)
            except Exception:  # answering must never end the server
                logger.exception("could not answer a request with a bad id")

    def __iter__(self) -> Any:
        return iter(self.readline, "")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _bad_id_answer(line: str) -> dict[str, Any] | None:
    if '"id"' not in line:
        return None
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return None  # the SDK's reader refuses it, and the server answers it
    return bad_id(message)
