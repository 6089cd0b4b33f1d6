"""A local server speaking OpenAI's embeddings wire protocol (``POST /v1/embeddings``).

Real HTTP on 127.0.0.1, real vectors (computed by the embedder it is given, e.g. MiniLM). It
follows the API's request and response shapes: ``{"model", "input": str | [str],
"encoding_format"}`` in; ``{"object": "list", "data": [{"object": "embedding", "index",
"embedding"}], "model", "usage"}`` out; errors as ``{"error": {"message", "type", "param",
"code"}}`` with 400 (bad request), 401 (wrong key) or 500. ``fail_next`` makes the following
requests answer 500, like an outage.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agentkernel.retrieval import Embedder

MAX_INPUTS = 2048  # the API's own limit per request


@dataclass
class EmbeddingsServer:
    """The running server and what it saw."""

    url: str
    requests: list[list[str]] = field(default_factory=list)
    failing: bool = False


def _error(status: int, message: str, kind: str) -> tuple[int, dict[str, Any]]:
    return status, {"error": {"message": message, "type": kind, "param": None, "code": None}}


@contextmanager
def serve(embedder: Embedder, model: str, api_key: str | None = None) -> Iterator[EmbeddingsServer]:
    """Serve ``embedder`` as ``model`` on 127.0.0.1 until the block ends.

    Args:
        embedder: What computes the vectors.
        model: The only model name accepted.
        api_key: The bearer key required, or ``None`` for none.

    Yields:
        The server's state (base URL ends in ``/v1``).
    """
    state = EmbeddingsServer(url="")

    def answer(handler: BaseHTTPRequestHandler) -> tuple[int, dict[str, Any]]:
        if handler.path != "/v1/embeddings":
            return _error(
                404, f"Unknown request URL: POST {handler.path}.", "invalid_request_error"
            )
        if api_key is not None and handler.headers.get("Authorization") != f"Bearer {api_key}":
            return _error(401, "Incorrect API key provided.", "invalid_request_error")
        if state.failing:
            return _error(500, "The server had an error processing your request.", "server_error")
        try:
            body = json.loads(handler.rfile.read(int(handler.headers["Content-Length"])))
        except (KeyError, ValueError):
            return _error(
                400, "We could not parse the JSON body of your request.", "invalid_request_error"
            )
        if body.get("model") != model:
            return _error(
                404, f"The model `{body.get('model')}` does not exist.", "invalid_request_error"
            )
        inputs = body.get("input")
        if isinstance(inputs, str):
            inputs = [inputs]
        if (
            not isinstance(inputs, list)
            or not inputs
            or not all(isinstance(t, str) and t for t in inputs)
        ):
            return _error(
                400,
                "'input' must be a non-empty string or array of strings.",
                "invalid_request_error",
            )
        if len(inputs) > MAX_INPUTS:
            return _error(
                400, f"'input' holds more than {MAX_INPUTS} items.", "invalid_request_error"
            )
        state.requests.append(list(inputs))
        vectors = embedder.embed(inputs)
        data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
        data.reverse()  # the client must order by index, not by position
        tokens = sum(len(t.split()) for t in inputs)
        return 200, {
            "object": "list",
            "data": data,
            "model": model,
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            status, payload = answer(self)
            raw = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
