"""An identity provider's signing keys, fetched from its JWKS URL without letting an outage spread.

The identity provider's availability is not trusted. A hanging or failing JWKS URL must not
hold the threads that check tokens, nor be fetched once per presented token (any caller can
present a JWT-shaped junk token naming a key id nobody has). So:

- **one fetch at a time.** A fetch runs in a thread of its own; callers that need the keys
  meanwhile wait for it at most :attr:`RemoteKeys.timeout` seconds, then are told the keys
  are unavailable. A fetch that hangs longer holds that one thread, never theirs, and no
  second fetch starts beside it;
- **a failed fetch backs off**: no new fetch for 30 s, doubling with each failure in a row up
  to 5 minutes; meanwhile the keys last fetched (if any) keep serving;
- **an unknown key id refetches at most every 30 s** (a key rotation is picked up; a flood of
  made-up key ids is not a flood of fetches), and keys are refreshed after 5 minutes;
- the document is read to at most 1 MiB.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

logger = logging.getLogger(__name__)

__all__ = ["RemoteKeys"]

_MAX_BYTES = 1024 * 1024


class RemoteKeys:
    """The signing keys published at a JWKS URL, fetched one at a time, with backoff."""

    def __init__(
        self,
        url: str,
        *,
        timeout: float = 10.0,
        lifespan: float = 300.0,
        min_refetch: float = 30.0,
        backoff: tuple[float, float] = (30.0, 300.0),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Keep the URL and the rules; nothing is fetched until a key is asked for.

        Args:
            url: The JWKS URL.
            timeout: Seconds a fetch may wait on the network per read, and a caller on a fetch.
            lifespan: Seconds fetched keys are used before they are refreshed.
            min_refetch: The least seconds between two fetches for a key id not found.
            backoff: The first and the longest pause after a failed fetch.
            clock: The monotonic clock.
        """
        import jwt  # PyJWT: the mcp SDK depends on it

        self._jwt = jwt
        self.url = url
        self.timeout = timeout
        self._lifespan = lifespan
        self._min_refetch = min_refetch
        self._backoff = backoff
        self._clock = clock
        self._lock = threading.Lock()
        self._keys: list[Any] | None = None
        self._fetched_at = 0.0
        self._attempted_at: float | None = None
        self._retry_at = 0.0
        self._failures = 0
        self._running: threading.Event | None = None
        #: How many fetches were started (for the startup line and tests).
        self.fetches = 0

    def keys(self, kid: str | None) -> list[Any] | None:
        """The keys to look ``kid`` up in, fetching them when that is allowed.

        Args:
            kid: The key id a token names (``None`` for none).

        Returns:
            The keys known (possibly stale, during an outage), or ``None`` when none are.
        """
        with self._lock:
            now = self._clock()
            known = self._keys
            if not self._should_fetch(now, kid):
                return known
            running = self._running
            if running is None:
                running = self._start(now)
        running.wait(self.timeout)
        with self._lock:
            return self._keys

    def _should_fetch(self, now: float, kid: str | None) -> bool:
        if self._running is not None:
            # wait for the fetch under way only when the keys at hand can't answer
            return not any(getattr(key, "key_id", None) == kid for key in self._keys or ())
        if now < self._retry_at:
            return False  # backing off after a failure
        if self._keys is None or now - self._fetched_at >= self._lifespan:
            return True
        if any(getattr(key, "key_id", None) == kid for key in self._keys):
            return False
        last = self._attempted_at
        return last is None or now - last >= self._min_refetch

    def _start(self, now: float) -> threading.Event:
        running = threading.Event()
        self._running = running
        self._attempted_at = now
        self.fetches += 1
        fetch = threading.Thread(target=self._fetch, args=(running,), name="jwks", daemon=True)
        fetch.start()
        return running

    def _fetch(self, running: threading.Event) -> None:
        keys: list[Any] | None = None
        problem = ""
        try:
            keys = self._download()
        except Exception as exc:  # a fetch failure of any kind is an outage, never a crash
            problem = f"{type(exc).__name__}: {exc}"
        with self._lock:
            now = self._clock()
            if keys is not None:
                self._keys, self._fetched_at, self._failures = keys, now, 0
            else:
                self._failures += 1
                first, longest = self._backoff
                pause = min(longest, first * 2 ** (self._failures - 1))
                self._retry_at = now + pause
                logger.warning(
                    "JWKS %s could not be fetched (%s); next attempt in %.0f s, meanwhile %s",
                    self.url,
                    problem,
                    pause,
                    "the keys fetched earlier serve" if self._keys else "JWTs are refused",
                )
            self._running = None
        running.set()

    def _download(self) -> list[Any]:
        jwt = self._jwt
        request = urllib.request.Request(self.url, headers={"accept": "application/json"})
        # no redirect is followed: the URL checked at start (https, or http on loopback) is
        # the only one fetched
        with _NO_REDIRECTS.open(request, timeout=self.timeout) as response:
            body = response.read(_MAX_BYTES + 1)
        if len(body) > _MAX_BYTES:
            raise ValueError(f"the JWKS is larger than {_MAX_BYTES} bytes")
        found = jwt.PyJWKSet.from_dict(json.loads(body)).keys
        return list(found)


class _RefuseRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect is an error: the JWKS is fetched from the configured URL or not at all."""

    def redirect_request(
        self, req: urllib.request.Request, fp: Any, code: int, msg: str, headers: Any, newurl: str
    ) -> urllib.request.Request | None:
        raise urllib.error.HTTPError(newurl, code, f"redirect refused ({msg})", headers, fp)


_NO_REDIRECTS = urllib.request.build_opener(_RefuseRedirects())
