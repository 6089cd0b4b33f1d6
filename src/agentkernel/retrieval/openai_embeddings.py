"""An OpenAI-compatible embeddings endpoint (``POST {base}/embeddings``), standard library only.

The request is OpenAI's: ``{"model": ..., "input": [texts], "encoding_format": "float"}``
with ``Authorization: Bearer <key>``; the response's ``data[i].embedding`` (ordered by
``data[i].index``) are the vectors. Inputs go in batches of :attr:`OpenAIEmbedder.batch_size`.
An error response (``{"error": {"message": ...}}``), a timeout or a malformed body raises
:class:`~agentkernel.retrieval.embedders.EmbedderError` naming the endpoint and the reason;
the key is never echoed.
"""

from __future__ import annotations

import json
import math
import os
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any

from agentkernel.retrieval.embedders import EmbedderError


class OpenAIEmbedder:
    """Embed through an OpenAI-compatible endpoint.

    Example:
        >>> embedder = OpenAIEmbedder("https://api.openai.com/v1")  # doctest: +SKIP
        >>> embedder.model_id  # doctest: +SKIP
        'openai:text-embedding-3-small:1536'
    """

    def __init__(
        self,
        base_url: str = "https://api.openai.com/v1",
        model: str = "text-embedding-3-small",
        *,
        api_key: str | None = None,
        dimension: int | None = None,
        batch_size: int = 128,
        timeout_seconds: float = 30.0,
    ) -> None:
        """Configure the endpoint and learn the dimension (one probe request unless given).

        Args:
            base_url: The API base, ending before ``/embeddings`` (``.../v1``).
            model: The model name sent with every request.
            api_key: The bearer key; else ``OPENAI_API_KEY``; none for a local server.
            dimension: The vector length; when given, no probe request is made.
            batch_size: Texts per request.
            timeout_seconds: Seconds one request may take.

        Raises:
            EmbedderError: The endpoint failed the probe (unreachable, refused, malformed).
        """
        if not base_url.startswith(("http://", "https://")):
            raise EmbedderError(f"An embeddings endpoint is an http(s) URL, got {base_url!r}.")
        self.url = base_url.rstrip("/") + "/embeddings"
        if base_url.rstrip("/").endswith("/embeddings"):
            self.url = base_url.rstrip("/")
        self.model = model
        self._key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self.batch_size = max(1, batch_size)
        self.timeout_seconds = timeout_seconds
        if dimension is None:
            dimension = len(self._request(["dimension probe"])[0])
        self.dimension: int = dimension
        self.model_id: str = f"openai:{model}:{dimension}"

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
        headers = {"Content-Type": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        request = urllib.request.Request(
            self.url, data=body.encode(), headers=headers, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_seconds) as response:
                payload = json.loads(response.read())
        except urllib.error.HTTPError as exc:
            raise EmbedderError(
                f"embeddings endpoint {self.url} answered HTTP {exc.code}: {_error_message(exc)}"
            ) from exc
        except (OSError, ValueError) as exc:
            raise EmbedderError(
                f"embeddings endpoint {self.url} failed: {type(exc).__name__}: {exc}"
            ) from exc
        return _vectors(self.url, payload, len(texts))


def _error_message(exc: urllib.error.HTTPError) -> str:
    try:
        payload = json.loads(exc.read())
        message = payload["error"]["message"]
        return str(message)[:300]
    except Exception:
        return str(exc.reason)[:300]


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
    return vectors


def _unit(vector: list[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector] if norm > 0 else vector
