"""An OpenAI-compatible embeddings endpoint (``POST {base}/embeddings``), standard library only.

The request is OpenAI's: ``{"model": ..., "input": [texts], "encoding_format": "float"}``
with ``Authorization: Bearer <key>``; the response's ``data[i].embedding`` (ordered by
``data[i].index``) are the vectors. Inputs go in batches of :attr:`OpenAIEmbedder.batch_size`.

What the endpoint is trusted with, and what it is not:

* **The key** is the embedder's own: ``api_key``, else ``$AGENTKERNEL_EMBEDDINGS_API_KEY``.
  The LLM's ``OPENAI_API_KEY`` is sent only when the user names it
  (``AGENTKERNEL_EMBEDDINGS_API_KEY_ENV=OPENAI_API_KEY``, or ``api_key_env=``).
* A key never travels over plain ``http://`` beyond loopback (refused when the embedder is
  built), and no redirect is followed (a ``3xx`` is an error naming the other origin only).
* One request, from connecting to the last byte, takes at most ``timeout_seconds`` (a server
  that drips bytes is cut off), and its answer at most ``max_response_bytes``.
* The dimension is checked: against the model's when the model is a known OpenAI one, and
  within :data:`MAX_DIMENSION` otherwise; every vector must have it.
* No error, log line or diagnostic holds the key, a header, or the URL's user info or query:
  the server's own error text is cut to 300 characters with the key removed.

The model id names the endpoint (origin and path) as well as the model, so vectors cached or
indexed through one endpoint never serve another.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import ipaddress
import json
import math
import os
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Sequence
from typing import Any

from agentkernel.retrieval.embedding import EmbedderError

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

_LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


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
            timeout_seconds: Seconds one request may take in all (connect to last byte).
            max_response_bytes: The largest answer read.

        Raises:
            EmbedderError: A bad URL, a key over plain http beyond loopback, or a failed
                probe (unreachable, refused, malformed, a dimension out of bounds).
        """
        parsed = urllib.parse.urlsplit(base_url.strip())
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise EmbedderError(
                f"An embeddings endpoint is an http(s) URL, got {_shown_url(base_url)!r}."
            )
        path = parsed.path.rstrip("/")
        if not path.endswith("/embeddings"):
            path += "/embeddings"
        self._scheme = parsed.scheme
        self._host = parsed.hostname
        self._port = parsed.port or (443 if parsed.scheme == "https" else 80)
        self._path = path + (f"?{parsed.query}" if parsed.query else "")
        self.url = f"{parsed.scheme}://{_netloc(parsed)}{path}"
        """The endpoint as shown in messages: no user info, no query."""
        self.model = model
        variable = api_key_env or os.environ.get(KEY_ENV_NAME) or KEY_ENV
        self._key = api_key if api_key is not None else os.environ.get(variable)
        if self._key and parsed.scheme == "http" and not _is_loopback(self._host):
            raise EmbedderError(
                f"{self.url}: an API key is never sent over plain http beyond this machine. "
                "Use https://, or an endpoint on 127.0.0.1 / localhost."
            )
        self.batch_size = max(1, batch_size)
        self.timeout_seconds = timeout_seconds
        self.max_response_bytes = max_response_bytes
        if dimension is None:
            dimension = len(self._request(["dimension probe"])[0])
        self._check_dimension(dimension)
        self.dimension: int = dimension
        endpoint = f"{_netloc(parsed)}{self._path}"
        digest = hashlib.sha256(f"{parsed.scheme}://{endpoint}".encode()).hexdigest()[:10]
        self.model_id: str = f"openai:{model}:{dimension}:{_netloc(parsed)}{path}#{digest}"

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
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        status, raw, location = self._exchange(body.encode(), headers)
        if 300 <= status < 400:
            raise EmbedderError(
                f"embeddings endpoint {self.url} answered HTTP {status}, a redirect to "
                f"{_origin(location)}: redirects are not followed; configure the final URL"
            )
        if status != 200:
            raise EmbedderError(
                f"embeddings endpoint {self.url} answered HTTP {status}: "
                f"{self._scrub(_error_message(raw))}"
            )
        try:
            payload = json.loads(raw)
        except ValueError as exc:
            raise EmbedderError(
                f"embeddings endpoint {self.url} sent a body that is not JSON"
            ) from exc
        return _vectors(self.url, payload, len(texts))

    def _exchange(self, body: bytes, headers: dict[str, str]) -> tuple[int, bytes, str]:
        """One request under a total deadline: status, body (capped), ``Location``."""
        deadline = time.monotonic() + self.timeout_seconds
        connection: http.client.HTTPConnection
        if self._scheme == "https":
            connection = http.client.HTTPSConnection(
                self._host,
                self._port,
                timeout=self.timeout_seconds,
                context=ssl.create_default_context(),
            )
        else:
            connection = http.client.HTTPConnection(
                self._host, self._port, timeout=self.timeout_seconds
            )
        expired = threading.Event()

        def cut_off() -> None:
            expired.set()
            sock = connection.sock
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

        watchdog = threading.Timer(self.timeout_seconds, cut_off)
        watchdog.daemon = True
        watchdog.start()
        try:
            connection.request("POST", self._path, body=body, headers=headers)
            response = connection.getresponse()
            status = response.status
            location = response.getheader("Location") or ""
            declared = response.getheader("Content-Length")
            if declared and declared.isdigit() and int(declared) > self.max_response_bytes:
                raise EmbedderError(self._too_big())
            chunks: list[bytes] = []
            size = 0
            while True:
                chunk = response.read1(65_536)
                if not chunk:
                    break
                size += len(chunk)
                if size > self.max_response_bytes:
                    raise EmbedderError(self._too_big())
                chunks.append(chunk)
            if expired.is_set() or time.monotonic() > deadline:
                raise EmbedderError(self._timed_out())
            return status, b"".join(chunks), location
        except EmbedderError:
            raise
        except (OSError, http.client.HTTPException, ValueError) as exc:
            if expired.is_set():
                raise EmbedderError(self._timed_out()) from None
            reason = self._scrub(f"{type(exc).__name__}: {exc}")
            raise EmbedderError(f"embeddings endpoint {self.url} failed: {reason}") from None
        finally:
            watchdog.cancel()
            connection.close()

    def _too_big(self) -> str:
        return (
            f"embeddings endpoint {self.url} sent more than {self.max_response_bytes} bytes; "
            "the answer was dropped"
        )

    def _timed_out(self) -> str:
        return (
            f"embeddings endpoint {self.url} did not answer within {self.timeout_seconds:g} s "
            "(the whole request, not one read)"
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


def _netloc(parsed: urllib.parse.SplitResult) -> str:
    host = parsed.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    return f"{host}:{parsed.port}" if parsed.port else host


def _shown_url(url: str) -> str:
    try:
        parsed = urllib.parse.urlsplit(url)
        return f"{parsed.scheme}://{_netloc(parsed)}{parsed.path}" if parsed.scheme else url[:40]
    except ValueError:
        return "<unparsable URL>"


def _origin(location: str) -> str:
    try:
        parsed = urllib.parse.urlsplit(location)
    except ValueError:
        return "an unparsable location"
    if not parsed.hostname:
        return "another path of the same origin"
    return f"{parsed.scheme}://{_netloc(parsed)}"


def _is_loopback(host: str) -> bool:
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


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
