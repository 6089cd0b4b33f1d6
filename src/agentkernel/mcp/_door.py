"""The checks every HTTP request passes before an MCP server sees it, in every serving mode.

- :class:`HostGuard`: on a loopback address (any of ``127.0.0.0/8``, ``::1``,
  ``localhost``), a request whose ``Host`` or ``Origin`` names anything but this server is
  refused (``421``/``403``). A web page the user visits can make the browser send requests
  to a loopback port through a name its owner points at ``127.0.0.x`` (DNS rebinding); the
  browser then sends that name, never the loopback address, so it is refused here.
- :class:`BodyBound`: a request body larger than the bound gets ``413`` and an audit line,
  whether it announced its length or came in chunks; a chunked body is read at most to the
  bound, never further.

Both answer with a JSON body saying what happened and that nothing was run.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from agentkernel._loopback import host_names, is_loopback, normal_host
from agentkernel.mcp._audit import AuditLog

logger = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_MAX_REQUEST_BYTES",
    "BodyBound",
    "HostGuard",
    "guard_host",
    "replay",
    "send_json",
    "too_large",
]

#: The largest request body accepted unless configured (``--max-request-bytes``).
DEFAULT_MAX_REQUEST_BYTES = 1024 * 1024


def _header(scope: Any, name: bytes) -> bytes | None:
    for key, value in scope.get("headers") or ():
        if key.lower() == name:
            return bytes(value)
    return None


def _host_of(value: str) -> str | None:
    """The host of a ``Host`` header (``name``, ``name:port``, ``[v6]:port``), or ``None``."""
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        host, rest = value[1:end], value[end + 1 :]
        if rest and not (rest.startswith(":") and rest[1:].isdigit()):
            return None
        return host
    host, sep, port = value.rpartition(":")
    if not sep:
        return value
    return host if port.isdigit() and ":" not in host else None


async def send_json(
    send: Any, status: int, body: Mapping[str, Any], headers: Sequence[tuple[bytes, bytes]] = ()
) -> None:
    """Send one whole ASGI HTTP response whose body is ``body`` as JSON.

    Args:
        send: The ASGI ``send`` callable.
        status: The HTTP status.
        body: The JSON object.
        headers: More headers, after ``content-type`` and ``content-length``.
    """
    payload = json.dumps(body).encode("utf-8")
    start = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(payload)).encode("ascii")),
        *headers,
    ]
    await send({"type": "http.response.start", "status": status, "headers": start})
    await send({"type": "http.response.body", "body": payload})


async def _json(send: Any, status: int, body: dict[str, Any], *, close: bool = False) -> None:
    headers = [(b"cache-control", b"no-store")]
    if close:
        headers.append((b"connection", b"close"))
    await send_json(send, status, body, headers)


class HostGuard:
    """ASGI middleware: serve only requests that name this loopback server (DNS rebinding)."""

    def __init__(self, app: Any, names: Iterable[str], audit: AuditLog | None = None) -> None:
        """Wrap ``app``.

        Args:
            app: The ASGI app to guard.
            names: The host names that reach this server (see
                :func:`agentkernel._loopback.host_names`, plus a public URL's host).
            audit: Where refusals are recorded.
        """
        self._app = app
        self._names = frozenset(normal_host(name) for name in names)
        self._audit = audit

    def _refusal(self, scope: Any) -> tuple[int, str] | None:
        raw = _header(scope, b"host")
        host = _host_of(raw.decode("latin-1").strip()) if raw is not None else None
        if host is None or normal_host(host) not in self._names:
            return 421, "foreign host"
        origin = _header(scope, b"origin")
        if origin is not None:
            try:
                parts = urlsplit(origin.decode("latin-1").strip())
                origin_host = parts.hostname
            except ValueError:
                origin_host = None
            if (
                parts.scheme not in ("http", "https")
                or origin_host is None
                or normal_host(origin_host) not in self._names
            ):
                return 403, "foreign origin"
        return None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") not in ("http", "websocket"):
            await self._app(scope, receive, send)
            return
        refusal = self._refusal(scope)
        if refusal is None:
            await self._app(scope, receive, send)
            return
        status, reason = refusal
        client = scope.get("client") or ("?", 0)
        logger.warning("MCP: refused a request from %s: %s", client[0], reason)
        if self._audit is not None:
            self._audit.write(
                {"event": "request", "outcome": "refused", "reason": reason, "client": client[0]}
            )
        if scope.get("type") != "http":
            await send({"type": "websocket.close", "code": 1008})
            return
        what = "Host" if status == 421 else "Origin"
        await _json(
            send,
            status,
            {
                "error": "misdirected_request" if status == 421 else "forbidden_origin",
                "error_description": f"The request's {what} header does not name this server, "
                "which serves only its own loopback address (DNS-rebinding protection). "
                "Nothing was run.",
            },
            close=True,
        )


def guard_host(
    app: Any, host: str, *, public_url: str | None = None, audit: AuditLog | None = None
) -> Any:
    """``app`` behind a :class:`HostGuard` when ``host`` is loopback; else ``app`` itself.

    Args:
        app: The ASGI app.
        host: The address it is bound to.
        public_url: The URL a proxy in front serves it at (its host is accepted too).
        audit: Where refusals are recorded.

    Returns:
        The guarded app.
    """
    if not is_loopback(host):
        return app
    names = set(host_names(host))
    public_host = urlsplit(public_url).hostname if public_url else None
    if public_host:
        names.add(public_host)
    return HostGuard(app, names, audit)


async def too_large(send: Any, limit: int, identity: str, audit: AuditLog | None) -> None:
    """Answer ``413`` for a body over ``limit`` and record it.

    Args:
        send: The ASGI ``send``.
        limit: The bound, in bytes.
        identity: Who sent it (``anonymous`` without authentication).
        audit: Where it is recorded.
    """
    logger.warning("MCP: a request body from %r passed %d bytes", identity, limit)
    if audit is not None:
        audit.write(
            {"event": "request", "identity": identity, "outcome": "limit", "reason": "too large"}
        )
    await _json(
        send,
        413,
        {
            "jsonrpc": "2.0",
            "id": None,
            "error": {
                "code": -32600,
                "message": f"Request larger than {limit} bytes, the bound per request. "
                "Nothing was run.",
            },
        },
        close=True,
    )


class BodyBound:
    """ASGI middleware: a request body over the bound gets ``413``, read no further."""

    def __init__(
        self, app: Any, limit: int, *, identity: str = "anonymous", audit: AuditLog | None = None
    ) -> None:
        """Wrap ``app``.

        Args:
            app: The ASGI app.
            limit: The largest body accepted, in bytes.
            identity: Who the requests come from, for the audit line.
            audit: Where refusals are recorded.
        """
        self._app = app
        self._limit = limit
        self._identity = identity
        self._audit = audit

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            await self._app(scope, receive, send)
            return
        length = _header(scope, b"content-length")
        if length is not None:
            # the server frames the body by its length: nothing beyond it is ever read
            if length.strip().isdigit() and int(length) > self._limit:
                await too_large(send, self._limit, self._identity, self._audit)
                return
            await self._app(scope, receive, send)
            return
        if _header(scope, b"transfer-encoding") is None:  # no body at all
            await self._app(scope, receive, send)
            return
        chunks: list[bytes] = []
        seen = 0
        while True:
            event = await receive()
            if event.get("type") != "http.request":
                return  # the client went away before its body ended: nothing to answer
            chunk = event.get("body", b"")
            seen += len(chunk)
            if seen > self._limit:
                await too_large(send, self._limit, self._identity, self._audit)
                return
            chunks.append(chunk)
            if not event.get("more_body"):
                break
        await self._app(scope, replay(b"".join(chunks), receive), send)


def replay(body: bytes, receive: Any) -> Any:
    """An ASGI ``receive`` that hands over ``body`` once, then defers to the real one.

    Args:
        body: The request body already read.
        receive: The connection's own ``receive``.

    Returns:
        The replaying ``receive``.
    """
    sent = False

    async def replay() -> Any:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay
