"""A counting HTTP proxy in front of the S3 API server: how many requests a Lance reader sends.

LanceDB talks to S3 from Rust, so boto3's event hooks cannot see its requests; this proxy,
run in the measuring process, forwards every request to the real server (moto) and counts it
by method.
"""

from __future__ import annotations

import http.client
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlparse


class CountingProxy:
    """Forward HTTP to ``upstream``, counting requests by method; ``endpoint`` is its URL."""

    def __init__(self, upstream: str) -> None:
        target = urlparse(upstream)
        self.counts: Counter[str] = Counter()
        lock = threading.Lock()
        counts = self.counts

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _forward(self) -> None:
                with lock:
                    counts[self.command] += 1
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                upstream_conn = http.client.HTTPConnection(target.hostname, target.port, timeout=60)
                headers = {k: v for k, v in self.headers.items() if k.lower() != "connection"}
                upstream_conn.request(self.command, self.path, body=body, headers=headers)
                reply = upstream_conn.getresponse()
                data = reply.read()
                self.send_response(reply.status)
                for key, value in reply.getheaders():
                    if key.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
                upstream_conn.close()

            do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _forward

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def take(self) -> dict[str, int]:
        """Return the counts since the last call and reset them."""
        found = dict(self.counts)
        self.counts.clear()
        return found

    def close(self) -> None:
        """Stop serving."""
        self._server.shutdown()
        self._server.server_close()
