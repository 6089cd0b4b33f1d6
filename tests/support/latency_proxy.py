"""An HTTP proxy on 127.0.0.1 in front of the S3 API server: a delay, counts, lost answers.

A real bucket answers in 10-30 ms; the S3 API server on loopback answers in well under one,
which hides what a request costs. This proxy forwards every request to the real server
(moto) after ``delay`` seconds and counts it by method, so tests and benches see the round
trips a pod would pay and how many requests it sends. Lance and boto3 both reach it as their
S3 endpoint (``aws_endpoint`` / ``endpoint_url``). Used by the ``s3_latency_endpoint``
fixture and by ``bench/`` (``bench/_proxy.py``).
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlparse

_HOP = ("transfer-encoding", "connection", "content-length", "keep-alive")
_CHUNK = 1 << 20


LoseAnswer = Callable[[str, str], bool]
"""Told a request's method and path once the server has answered it; True: the client never
gets that answer (its connection is closed instead), as when a network drops it."""


class LatencyProxy:
    """Forward HTTP to ``upstream`` after ``delay`` seconds, counting requests by method.

    ``endpoint`` is its URL; :meth:`take` returns and resets the counts, ``bytes_out`` the
    response bytes sent since the last :meth:`take`. With ``lose_answer``, a request it
    chooses is still forwarded and done by the server, but its answer is dropped: the proxy
    closes the client's connection without a byte; with ``lose_request``, a request it
    chooses never reaches the server (the connection is closed the same way). ``lost`` lists
    both.
    """

    def __init__(
        self,
        upstream: str,
        delay: float = 0.0,
        lose_answer: LoseAnswer | None = None,
        lose_request: LoseAnswer | None = None,
    ) -> None:
        target = urlparse(upstream)
        self.delay = delay
        self.lose_answer = lose_answer
        self.lose_request = lose_request
        self.lost: list[tuple[str, str]] = []
        self.counts: Counter[str] = Counter()
        self.bytes_out = 0
        self.paths: list[tuple[str, str]] = []
        lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # headers and body leave in two writes: with Nagle's algorithm on, a kept-alive
            # client's delayed ACK added ~40 ms to each back-to-back request (a real
            # endpoint sends without that wait; the delay is ``delay``, nothing else)
            disable_nagle_algorithm = True
            upstream_conn: http.client.HTTPConnection | None = None

            def log_message(self, *args: Any) -> None:
                pass

            def _connection(self) -> http.client.HTTPConnection:
                if self.upstream_conn is None:
                    host = target.hostname or "127.0.0.1"
                    self.upstream_conn = http.client.HTTPConnection(host, target.port, timeout=120)
                return self.upstream_conn

            def _exchange(self, body: bytes | None) -> http.client.HTTPResponse:
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
                if body is not None:
                    headers["Content-Length"] = str(len(body))
                for attempt in range(2):
                    conn = self._connection()
                    try:
                        conn.request(self.command, self.path, body=body, headers=headers)
                        return conn.getresponse()
                    except (http.client.HTTPException, OSError):
                        conn.close()
                        self.upstream_conn = None
                        if attempt:
                            raise
                raise AssertionError("unreachable")

            def _forward(self) -> None:
                with lock:
                    proxy.counts[self.command] += 1
                    proxy.paths.append((self.command, self.path))
                if proxy.delay:
                    time.sleep(proxy.delay)
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                if proxy.lose_request is not None and proxy.lose_request(self.command, self.path):
                    with lock:
                        proxy.lost.append((self.command, self.path))
                    self._hang_up()  # the server never sees it
                    return
                reply = self._exchange(body)
                if proxy.lose_answer is not None and proxy.lose_answer(self.command, self.path):
                    reply.read()  # the server did the request; its answer goes nowhere
                    with lock:
                        proxy.lost.append((self.command, self.path))
                    self._hang_up()
                    return
                length = reply.getheader("Content-Length")
                data = b"" if length is not None or self.command == "HEAD" else reply.read()
                self.send_response(reply.status)
                for key, value in reply.getheaders():
                    if key.lower() not in _HOP:
                        self.send_header(key, value)
                self.send_header("Content-Length", length if length is not None else str(len(data)))
                self.end_headers()
                if self.command == "HEAD":
                    reply.read()
                    return
                sent = len(data)
                self.wfile.write(data)
                while length is not None and (chunk := reply.read(_CHUNK)):
                    self.wfile.write(chunk)  # streamed: a large object is never held whole
                    sent += len(chunk)
                with lock:
                    proxy.bytes_out += sent

            def _hang_up(self) -> None:
                self.close_connection = True
                with contextlib.suppress(OSError):
                    self.connection.shutdown(socket.SHUT_RDWR)

            do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _forward

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def take(self) -> dict[str, int]:
        """Return the request counts by method since the last call, and reset them."""
        found = dict(self.counts)
        self.counts.clear()
        self.paths.clear()
        self.bytes_out = 0
        return found

    def close(self) -> None:
        """Stop serving."""
        self._server.shutdown()
        self._server.server_close()
