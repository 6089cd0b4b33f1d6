"""Bind a socket, then serve an ASGI app on it with uvicorn: the URL is known before serving.

Binding first lets ``HOST:0`` name the port it got; listening before the URL is announced
queues a client that connects at once instead of refusing it. With a certificate and key
the socket speaks TLS (uvicorn's ``ssl_certfile``/``ssl_keyfile``) and the URL is https.
Connections are bounded as :mod:`agentkernel.mcp._conn` describes (a header deadline, a
connection cap under the open-file limit, which is raised to its hard limit first).
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agentkernel.errors import AKConfigError
from agentkernel.mcp._conn import (
    MAX_HEADER_BYTES,
    ConnectionLimits,
    connection_plan,
    protocol_class,
    raise_descriptor_limit,
)

logger = logging.getLogger(__name__)

__all__ = ["Listener", "TLSFiles"]


@dataclass(frozen=True)
class TLSFiles:
    """A PEM certificate (chain) and its private key.

    Attributes:
        cert: The certificate file.
        key: The private key file.
    """

    cert: str
    key: str


class Listener:
    """A bound, listening socket and the URL it serves."""

    def __init__(
        self,
        host: str,
        port: int,
        path: str,
        tls: TLSFiles | None = None,
        limits: ConnectionLimits | None = None,
    ) -> None:
        """Bind and listen.

        Args:
            host: The interface to bind.
            port: The port; 0 picks a free one.
            path: The endpoint path (for :attr:`url`).
            tls: Serve TLS with these files.
            limits: The header deadline and the connection cap (defaults: 10 s, 1000).

        Raises:
            OSError: The address cannot be bound.
            AKConfigError: The TLS files cannot be read as a certificate and key.
        """
        if tls is not None:
            _check_tls(tls)
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        # IPPROTO_TCP named, so asyncio sets TCP_NODELAY on every connection it accepts: it
        # checks the protocol, and with 0 a response's body waited ~40 ms for the client's
        # delayed ACK of its headers on every request after a connection's first
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
            sock.listen(128)
        except OSError:
            sock.close()
            raise
        self.sock = sock
        self.host = host
        self.tls = tls
        self.limits = limits or ConnectionLimits()
        shown = f"[{host}]" if family == socket.AF_INET6 else host
        scheme = "https" if tls is not None else "http"
        self.url = f"{scheme}://{shown}:{sock.getsockname()[1]}{path}"

    async def serve(self, app: Any, on_ready: Callable[[str], None] | None = None) -> None:
        """Serve ``app`` until cancelled.

        Args:
            app: The ASGI application.
            on_ready: Called with :attr:`url` just before serving.
        """
        import uvicorn  # a dependency of the mcp SDK

        options: dict[str, Any] = {}
        if self.tls is not None:
            options = {"ssl_certfile": self.tls.cert, "ssl_keyfile": self.tls.key}
        cap, backlog = connection_plan(self.limits, raise_descriptor_limit())
        config = uvicorn.Config(
            app,
            log_level="warning",
            lifespan="on",
            http=protocol_class(self.limits.header_timeout, cap),
            h11_max_incomplete_event_size=MAX_HEADER_BYTES,
            backlog=backlog,
            **options,
        )
        server = uvicorn.Server(config)
        if on_ready is not None:
            on_ready(self.url)
        with self.sock:
            await server.serve(sockets=[self.sock])


def _check_tls(tls: TLSFiles) -> None:
    import ssl

    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        context.load_cert_chain(tls.cert, tls.key)
    except (OSError, ssl.SSLError) as exc:
        raise AKConfigError(
            f"--tls-cert {tls.cert!r} / --tls-key {tls.key!r} are not a PEM certificate and its "
            f"key: {exc}"
        ) from exc
