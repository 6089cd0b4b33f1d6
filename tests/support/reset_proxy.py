"""An HTTP proxy on 127.0.0.1 in front of the S3 API server that cuts chosen answers short.

A network fails in the middle of an answer: the status line and the headers arrived, part
of the body too, then the connection is reset. The client's own retries never see it (the
request "succeeded"); only the reader of the body does. This proxy forwards every request
to the real server (moto) and, for a ``GET`` whose path holds a chosen key while cuts for it
remain, sends the headers and half the body, waits a moment (so the client is reading the
body), then resets the connection (``SO_LINGER`` 0: the client reads ``ECONNRESET``).
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlparse

_HOP = ("transfer-encoding", "connection", "content-length", "keep-alive")
_PAUSE = 0.2  # between the half body and the reset: the client is reading the body by then


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a connection this proxy reset on purpose is no error


class ResetProxy:
    """Forward HTTP to ``upstream``; reset the answers of chosen ``GET`` requests midway.

    ``endpoint`` is its URL. :meth:`cut` arms it for a key, :meth:`clear` disarms it;
    ``resets`` counts the answers cut so far.
    """

    def __init__(self, upstream: str) -> None:
        target = urlparse(upstream)
        self._cuts: dict[str, int] = {}
        self._lock = threading.Lock()
        self.resets = 0
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
                upstream_conn = http.client.HTTPConnection(
                    target.hostname or "127.0.0.1", target.port, timeout=60
                )
                try:
                    upstream_conn.request(self.command, self.path, body=body, headers=headers)
                    reply = upstream_conn.getresponse()
                    data = reply.read()
                finally:
                    upstream_conn.close()
                cut = self.command == "GET" and proxy._take(self.path)
                self.send_response(reply.status)
                for key, value in reply.getheaders():
                    if key.lower() not in _HOP:
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if not cut:
                    self.wfile.write(data)
                    return
                self.wfile.write(data[: len(data) // 2])
                self.wfile.flush()
                time.sleep(_PAUSE)
                self.connection.setsockopt(
                    socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                )
                self.close_connection = True
                self.connection.close()

            def finish(self) -> None:
                with contextlib.suppress(OSError):  # the connection was reset on purpose
                    super().finish()

            do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _forward

        self._server = _Server(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def cut(self, key: str, times: int = 1) -> None:
        """Cut the next ``times`` answers to a ``GET`` whose path holds ``key``.

        Args:
            key: A part of the request path (an object key such as ``concepts/tides.md``).
            times: How many answers to cut.
        """
        with self._lock:
            self._cuts[key] = times

    def clear(self) -> None:
        """Cut nothing from now on."""
        with self._lock:
            self._cuts.clear()

    def _take(self, path: str) -> bool:
        with self._lock:
            for key, left in self._cuts.items():
                if key in path and left > 0:
                    self._cuts[key] = left - 1
                    self.resets += 1
                    return True
        return False

    def close(self) -> None:
        """Stop serving."""
        self._server.shutdown()
        self._server.server_close()
