"""An OpenAI-compatible embeddings endpoint (``POST {base}/embeddings``).

The request is OpenAI's: ``{"model": ..., "input": [texts], "encoding_format": "float"}``
with ``Authorization: Bearer <key>``; the response's ``data[i].embedding`` (ordered by
``data[i].index``) are the vectors. Inputs go in batches of :attr:`OpenAIEmbedder.batch_size`.
HTTP is httpcore's (the engine of httpx) under one total deadline (:mod:`agentkernel._http`),
over connections kept alive between requests.

What the endpoint is trusted with, and what it is not:

* **The key** is the embedder's own: ``api_key``, else ``$AGENTKERNEL_EMBEDDINGS_API_KEY``.
  The LLM's ``OPENAI_API_KEY`` is sent only when the user names it
  (``AGENTKERNEL_EMBEDDINGS_API_KEY_ENV=OPENAI_API_KEY``, or ``api_key_env=``).
* A key never travels over plain ``http://`` beyond loopback (refused when the embedder is
  built), and no redirect is followed (a ``3xx`` is an error naming the other origin only).
* One request, from looking up the host to the last byte and with its retries, takes at most
  ``timeout_seconds``, whatever the server does (drips headers or body, closes or keeps the
  connection, never answers); its answer at most ``max_response_bytes``.
* ``429`` and ``5xx`` answers are retried (:data:`RETRIES` times at most), after the server's
  ``Retry-After`` when it gives one (up to :data:`MAX_RETRY_AFTER` seconds), else after a
  doubling back-off; never past the deadline.
* The environment's proxy (``HTTPS_PROXY`` / ``HTTP_PROXY`` / ``ALL_PROXY``, ``NO_PROXY``) is
  used, except for an endpoint on this machine's loopback, which is always reached directly.
* The dimension is checked: against the model's when the model is a known OpenAI one, and
  within :data:`MAX_DIMENSION` otherwise; every vector must have it.
* No error, log line or diagnostic holds the key, a header, or the URL's user info or query:
  the server's own error text is cut to 300 characters with the key removed.

The model id names the endpoint (origin and path) as well as the model, so vectors cached or
indexed through one endpoint never serve another.
"""

from __future__ import annotations

import email.utils
import hashlib
import json
import logging
import math
import os
import random
import time
import urllib.parse
import weakref
from collections.abc import Sequence
from typing import Any

import httpcore

from agentkernel import _http
from agentkernel._loopback import is_loopback
from agentkernel.retrieval._embedding import EmbedderError

logger = logging.getLogger(__name__)

KEY_ENV = "AGENTKERNEL_EMBEDDINGS_API_KEY"
"""The environment variable holding the endpoint's key."""

KEY_ENV_NAME = "AGENTKERNEL_EMBEDDINGS_API_KEY_ENV"
"""Names another variable to read the key from instead (``OPENAI_API_KEY`` to share the LLM's)."""

MAX_DIMENSION = 16_384
"""The longest vector accepted from a model whose dimension is not known here."""

KNOWN_DIMENSIONS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}
"""OpenAI's models and their default dimensions: a probe must agree."""

RETRIES = 2
"""Times a ``429`` or ``5xx`` answer is retried (within the request's deadline)."""

MAX_RETRY_AFTER = 20.0
"""The longest ``Retry-After`` waited for, in seconds; a longer one ends the request."""

_BACKOFF = 0.5  # seconds before the first retry without Retry-After; doubled each time


class OpenAIEmbedder:
    """Embed through an OpenAI-compatible endpoint.

    Example:
        >>> embedder = OpenAIEmbedder("https://api.openai.com/v1")  # doctest: +SKIP
        >>> embedder.model_id  # doctest: +SKIP
        'openai:text-embedding-3-small:1536:api.openai.com/v1/embeddings#3b1f...'
    """

    def __init__(
        self,
        base_url: str = "https://api.openai.com/v1",
        model: str = "text-embedding-3-small",
        *,
        api_key: str | None = None,
        api_key_env: str | None = None,
        dimension: int | None = None,
        batch_size: int = 128,
        timeout_seconds: float = 30.0,
        max_response_bytes: int = 64 * 1024 * 1024,
    ) -> None:
        """Configure the endpoint and learn the dimension (one probe request unless given).

        Args:
            base_url: The API base, ending before ``/embeddings`` (``.../v1``).
            model: The model name sent with every request.
            api_key: The bearer key; else the variable ``api_key_env`` names; else none.
            api_key_env: The environment variable holding the key; default
                ``$AGENTKERNEL_EMBEDDINGS_API_KEY_ENV``, else :data:`KEY_ENV`.
            dimension: The vector length; when given, no probe request is made.
            batch_size: Texts per request.
            timeout_seconds: Seconds one request may take in all (name lookup to last
                byte, retries included), whatever the server does.
            max_response_bytes: The largest answer read.

        Raises:
            EmbedderError: A bad URL, a key over plain http beyond loopback, a proxy that is
                not http(s), or a failed probe (unreachable, refused, malformed, past the
                deadline, a dimension out of bounds).
        """
        parsed = urllib.parse.urlsplit(base_url.strip())
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise EmbedderError(
                f"An embeddings endpoint is an http(s) URL, got {_http.shown(base_url)!r}."
            )
        path = parsed.path.rstrip("/")
        if not path.endswith("/embeddings"):
            path += "/embeddings"
        self._path = path + (f"?{parsed.query}" if parsed.query else "")
        self.url = f"{parsed.scheme}://{_http.netloc(parsed)}{path}"
        """The endpoint as shown in messages: no user info, no query."""
        self._target = httpcore.URL(
            scheme=parsed.scheme,
            host=parsed.hostname,
            port=parsed.port or (443 if parsed.scheme == "https" else 80),
            target=self._path,
        )
        self._host_header = _http.netloc(parsed)
        self.model = model
        variable = api_key_env or os.environ.get(KEY_ENV_NAME) or KEY_ENV
        self._key = api_key if api_key is not None else os.environ.get(variable)
        if self._key and parsed.scheme == "http" and not is_loopback(parsed.hostname):
            raise EmbedderError(
                f"{self.url}: an API key is never sent over plain http beyond this machine. "
                "Use https://, or an endpoint on 127.0.0.1 / localhost."
            )
        self.batch_size = max(1, batch_size)
        self.timeout_seconds = timeout_seconds
        self.max_response_bytes = max_response_bytes
        proxy = _http.environment_proxy(parsed.scheme, parsed.hostname)
        self._proxy = _http.shown(proxy) if proxy else None
        try:
            self._pool = _http.pool(proxy)
        except ValueError as exc:
            raise EmbedderError(f"{self.url}: {exc}") from None
        weakref.finalize(self, self._pool.close)
        if dimension is None:
            dimension = len(self._request(["dimension probe"])[0])
        self._check_dimension(dimension)
        self.dimension: int = dimension
        endpoint = f"{_http.netloc(parsed)}{self._path}"
        digest = hashlib.sha256(f"{parsed.scheme}://{endpoint}".encode()).hexdigest()[:10]
        self.model_id: str = f"openai:{model}:{dimension}:{_http.netloc(parsed)}{path}#{digest}"

    def _check_dimension(self, dimension: int) -> None:
        known = KNOWN_DIMENSIONS.get(self.model)
        if known is not None and dimension != known:
            raise EmbedderError(
                f"{self.url} returned {dimension}-dimensional vectors for {self.model}, "
                f"which gives {known}"
            )
        if not 1 <= dimension <= MAX_DIMENSION:
            raise EmbedderError(
                f"{self.url} returned {dimension}-dimensional vectors: more than "
                f"{MAX_DIMENSION}, not an embedding model's answer"
            )

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed texts, batch by batch.

        Args:
            texts: The texts.

        Returns:
            One unit vector per text.

        Raises:
            EmbedderError: A request failed, or a vector has the wrong length.
        """
        rows: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])
            for vector in self._request(batch):
                if len(vector) != self.dimension:
                    raise EmbedderError(
                        f"{self.url} returned a {len(vector)}-dimensional vector; "
                        f"{self.model_id} gives {self.dimension}"
                    )
                rows.append(_unit(vector))
        return rows

    def _request(self, texts: list[str]) -> list[list[float]]:
        body = json.dumps({"model": self.model, "input": texts, "encoding_format": "float"})
        raw = body.encode()
        headers = [
            ("Host", self._host_header),
            ("Content-Type", "application/json"),
            ("Content-Length", str(len(raw))),
            ("Accept", "application/json"),
            ("User-Agent", "agentkernel"),
        ]
        if self._key:
            headers.append(("Authorization", f"Bearer {self._key}"))
        deadline = time.monotonic() + self.timeout_seconds
        attempt = 0
        while True:
            status, answer, answer_headers = self._exchange(raw, headers, deadline)
            if status != 429 and not 500 <= status < 600:
                break
            wait, why_not = self._retry_wait(attempt, answer_headers.get("retry-after"), deadline)
            if wait is None:
                raise EmbedderError(
                    f"embeddings endpoint {self.url} answered HTTP {status}{why_not}: "
                    f"{self._scrub(_error_message(answer))}"
                )
            logger.info("%s answered HTTP %d: retrying in %.2f s", self.url, status, wait)
            time.sleep(wait)
            attempt += 1
        if 300 <= status < 400:
            raise EmbedderError(
                f"embeddings endpoint {self.url} answered HTTP {status}, a redirect to "
                f"{_origin(answer_headers.get('location', ''))}: redirects are not followed; "
                "configure the final URL"
            )
        if status != 200:
            raise EmbedderError(
                f"embeddings endpoint {self.url} answered HTTP {status}: "
                f"{self._scrub(_error_message(answer))}"
            )
        try:
            payload = json.loads(answer)
        except (ValueError, RecursionError) as exc:
            raise EmbedderError(
                f"embeddings endpoint {self.url} sent a body that is not JSON"
            ) from exc
        return _vectors(self.url, payload, len(texts))

    def _retry_wait(
        self, attempt: int, retry_after: str | None, deadline: float
    ) -> tuple[float | None, str]:
        """Seconds to wait before retrying, or ``None`` and why the request ends now."""
        if attempt >= RETRIES:
            return None, f" {attempt + 1} times"
        asked = _seconds(retry_after) if retry_after is not None else None
        if asked is not None and asked > MAX_RETRY_AFTER:
            return None, f" and asked to retry after {asked:g} s (more than {MAX_RETRY_AFTER:g})"
        # without Retry-After: a doubling back-off, spread so a crowd does not retry in step
        wait = asked if asked is not None else _BACKOFF * 2**attempt * random.uniform(0.75, 1)
        if time.monotonic() + wait >= deadline:
            return None, (
                f" and a retry in {wait:.3g} s would pass the {self.timeout_seconds:g} s deadline"
            )
        return wait, ""

    def _exchange(
        self, body: bytes, headers: list[tuple[str, str]], deadline: float
    ) -> tuple[int, bytes, dict[str, str]]:
        """One request under the deadline: status, body (capped), headers (lower-cased names)."""
        try:
            with (
                _http.within(deadline),
                self._pool.stream(
                    "POST",
                    self._target,
                    headers=headers,
                    content=body,
                    extensions={"timeout": {"pool": max(0.0, deadline - time.monotonic())}},
                ) as response,
            ):
                answer_headers = {
                    name.decode("latin-1").lower(): value.decode("latin-1")
                    for name, value in response.headers
                }
                declared = answer_headers.get("content-length", "")
                if declared.isdigit() and int(declared) > self.max_response_bytes:
                    raise EmbedderError(self._too_big())
                chunks: list[bytes] = []
                size = 0
                for chunk in response.iter_stream():
                    size += len(chunk)
                    if size > self.max_response_bytes:
                        raise EmbedderError(self._too_big())
                    chunks.append(chunk)
                return response.status, b"".join(chunks), answer_headers
        except httpcore.TimeoutException:
            raise EmbedderError(self._timed_out()) from None
        except httpcore.ProxyError as exc:
            raise EmbedderError(
                f"embeddings endpoint {self.url}: the proxy {self._proxy} refused the "
                f"connection: {self._scrub(str(exc))}"
            ) from None
        except (
            httpcore.NetworkError,
            httpcore.ProtocolError,
            httpcore.UnsupportedProtocol,
            OSError,
            ValueError,
        ) as exc:
            via = f" (through the proxy {self._proxy})" if self._proxy else ""
            reason = self._scrub(_reason(exc))
            raise EmbedderError(f"embeddings endpoint {self.url} failed{via}: {reason}") from None

    def _too_big(self) -> str:
        return (
            f"embeddings endpoint {self.url} sent more than {self.max_response_bytes} bytes; "
            "the answer was dropped"
        )

    def _timed_out(self) -> str:
        return (
            f"embeddings endpoint {self.url} did not answer within {self.timeout_seconds:g} s "
            "(the whole request, not one read); the connection was closed"
        )

    def _scrub(self, text: str) -> str:
        """Server or socket text made safe to show: no key, no bearer token, 300 chars at most."""
        if self._key:
            text = text.replace(self._key, "***")
        lowered = text.lower()
        at = lowered.find("bearer ")
        while at >= 0:
            end = at + 7
            while end < len(text) and not text[end].isspace() and text[end] not in "\"',;}":
                end += 1
            text = text[: at + 7] + "***" + text[end:]
            lowered = text.lower()
            at = lowered.find("bearer ", at + 10)
        return text[:300]

    def __repr__(self) -> str:
        return f"OpenAIEmbedder({self.url!r}, {self.model!r})"


def _origin(location: str) -> str:
    try:
        parsed = urllib.parse.urlsplit(location)
    except ValueError:
        return "an unparsable location"
    if not parsed.hostname:
        return "another path of the same origin"
    return f"{parsed.scheme}://{_http.netloc(parsed)}"


def _seconds(retry_after: str) -> float | None:
    """A ``Retry-After`` value (seconds, or an HTTP date) in seconds from now."""
    text = retry_after.strip()
    if text.isdigit():
        return float(text)
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - time.time())


def _reason(exc: Exception) -> str:
    """What failed, for a message: the socket's own error (``ConnectionRefusedError: ...``)."""
    if isinstance(exc, httpcore.NetworkError) and str(exc):
        return str(exc)  # agentkernel._http names the OSError behind it
    return f"{type(exc).__name__}: {exc}"


def _error_message(raw: bytes) -> str:
    try:
        message = json.loads(raw)["error"]["message"]
        return str(message)
    except Exception:
        return raw[:300].decode("utf-8", "replace") or "no message"


def _vectors(url: str, payload: Any, count: int) -> list[list[float]]:
    try:
        data = sorted(payload["data"], key=lambda item: int(item["index"]))
        vectors = [[float(x) for x in item["embedding"]] for item in data]
    except (KeyError, TypeError, ValueError) as exc:
        raise EmbedderError(f"embeddings endpoint {url} sent a malformed response") from exc
    if len(vectors) != count or not vectors or not vectors[0]:
        raise EmbedderError(
            f"embeddings endpoint {url} returned {len(vectors)} vectors for {count} inputs"
        )
    if not all(math.isfinite(x) for vector in vectors for x in vector):
        raise EmbedderError(f"embeddings endpoint {url} returned a vector that is not finite")
    return vectors


def _unit(vector: list[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector] if norm > 0 else vector
