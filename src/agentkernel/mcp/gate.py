"""One HTTP endpoint for many callers: authenticate each request, then serve its identity.

:func:`gated_app` is the ASGI application of an authenticated server. For each request to
the MCP endpoint it

1. takes the bearer token from ``Authorization`` and asks the :class:`Authenticator` who
   presented it; without a valid token the answer is ``401`` with a ``WWW-Authenticate:
   Bearer`` header naming the protected-resource metadata (RFC 9728), and nothing runs;
2. refuses a body larger than the per-request bound with ``413`` (read no further);
3. hands the request to that identity's own MCP server: one :class:`KnowledgeServer` and
   one SDK session manager per identity, made on the identity's first request from
   ``make_server(identity)``. Its tools are the ones the identity may see and call, so
   ``tools/list`` and ``tools/call`` are decided per caller on one server, a session opened
   by one identity is unknown to every other, and each identity's calls are bounded on
   their own.

The metadata document is served without authentication at
``/.well-known/oauth-protected-resource`` followed by the endpoint path, as RFC 9728 and the
MCP authorization specification describe, so a client that speaks OAuth finds the
authorization server (the JWT issuer). The mcp SDK's own middleware stops at "a valid token
or 401"; this gate also needs the refusal's reason (for the audit trail) and the identity
(to route), so it is written here, and it hands the SDK the SDK's ``AuthenticatedUser`` so
the SDK's session-ownership checks apply too.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

import anyio
import anyio.abc
import anyio.to_thread

from agentkernel.mcp import _sdk
from agentkernel.mcp.audit import AuditLog
from agentkernel.mcp.auth import Authenticator
from agentkernel.mcp.server import KnowledgeServer

logger = logging.getLogger(__name__)

__all__ = ["METADATA_PREFIX", "gated_app", "metadata_path"]

METADATA_PREFIX = "/.well-known/oauth-protected-resource"
_AUTH_THREADS = 8  # token checks may block on a JWKS fetch; never more than this at once


def metadata_path(path: str) -> str:
    """Where the protected-resource metadata of the endpoint at ``path`` is served.

    Args:
        path: The MCP endpoint path (``/mcp``).

    Returns:
        ``/.well-known/oauth-protected-resource/mcp`` (RFC 9728 §3.1).
    """
    return METADATA_PREFIX + (path if path != "/" else "")


class _IdentityApps:
    """One MCP server and session manager per identity, started inside the app's lifespan."""

    def __init__(self, make_server: Callable[[str], KnowledgeServer], host: str, path: str) -> None:
        self._make = make_server
        self._host = host
        self._path = path
        self._apps: dict[str, Any] = {}
        self._lock = anyio.Lock()
        self._group: anyio.abc.TaskGroup | None = None
        self._stop = anyio.Event()

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async with anyio.create_task_group() as group:
            self._group = group
            try:
                yield
            finally:
                self._stop.set()
                self._group = None

    async def app_for(self, identity: str) -> Any:
        found = self._apps.get(identity)
        if found is not None:
            return found
        async with self._lock:
            if identity not in self._apps:
                self._apps[identity] = await self._start(identity)
            return self._apps[identity]

    async def _start(self, identity: str) -> Any:
        if self._group is None:
            raise RuntimeError("The gated app serves only while its lifespan runs.")
        server = await anyio.to_thread.run_sync(self._make, identity)
        manager = _sdk.session_manager(server.sdk_server, host=self._host)
        stop = self._stop

        async def hold(*, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
            async with manager.run():
                task_status.started()
                await stop.wait()

        await self._group.start(hold)
        logger.info("MCP: first request from %r: %d tools", identity, len(server.tool_names))

        async def endpoint(scope: Any, receive: Any, send: Any) -> None:
            await manager.handle_request(scope, receive, send)

        return _sdk.answering_unreadable(endpoint, self._path)


@dataclass(eq=False)  # an app, compared and hashed by identity
class _Gate:
    """The ASGI app: metadata, authentication, the size bound, then the identity's server."""

    apps: _IdentityApps
    authenticator: Authenticator
    _: KW_ONLY
    path: str
    resource_url: Callable[[], str]
    authorization_servers: list[str]
    audit: AuditLog | None
    max_request_bytes: int
    on_refusal: Callable[[], None] | None
    _auth_limiter: anyio.CapacityLimiter | None = field(default=None, init=False)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        kind = scope.get("type")
        if kind == "lifespan":
            await self._lifespan(receive, send)
            return
        if kind != "http":
            return
        path = scope.get("path", "")
        if path in (METADATA_PREFIX, metadata_path(self.path)):
            await self._metadata(scope, send)
            return
        if path != self.path:
            await _json(send, 404, {"error": "not_found", "error_description": "No such path."})
            return
        identity = await self._identity(scope, send)
        if identity is None:
            return
        headers = dict(scope.get("headers") or ())
        length = headers.get(b"content-length", b"")
        if length.isdigit() and int(length) > self.max_request_bytes:
            await self._too_large(send, identity)
            return
        scope = dict(scope)
        scope["user"] = _sdk.authenticated_user(identity)
        app = await self.apps.app_for(identity)
        await app(scope, self._bounded(receive, send, identity), send)

    async def _identity(self, scope: Any, send: Any) -> str | None:
        header = b""
        for key, value in scope.get("headers") or ():
            if key.lower() == b"authorization":
                header = value
                break
        scheme, _, token = header.decode("latin-1").partition(" ")
        token = token.strip()
        if not header:
            reason = "missing"
        elif scheme.lower() != "bearer" or not token or " " in token:
            reason = "malformed"
        else:
            if self._auth_limiter is None:
                self._auth_limiter = anyio.CapacityLimiter(_AUTH_THREADS)
            verdict = await anyio.to_thread.run_sync(
                self.authenticator.authenticate, token, limiter=self._auth_limiter
            )
            if verdict.identity is not None:
                return verdict.identity
            reason = verdict.reason
        if self.on_refusal is not None:
            self.on_refusal()
        if self.audit is not None:
            client = scope.get("client") or ("?", 0)
            self.audit.refused_authentication(
                reason=reason, client=str(client[0]), method=str(scope.get("method"))
            )
        challenge = f'Bearer resource_metadata="{self._metadata_url()}"'
        if reason != "missing":
            described = reason.replace('"', "'")
            challenge = (
                f'Bearer error="invalid_token", error_description="{described}", '
                f'resource_metadata="{self._metadata_url()}"'
            )
        body = {
            "error": "invalid_token" if reason != "missing" else "unauthorized",
            "error_description": f"Authentication required ({reason}): send "
            "'Authorization: Bearer <token>'. Nothing was run.",
        }
        await _json(send, 401, body, [(b"www-authenticate", challenge.encode("latin-1"))])
        return None

    def _metadata_url(self) -> str:
        base, _, _ = self.resource_url().partition(self.path)
        return base + metadata_path(self.path)

    async def _metadata(self, scope: Any, send: Any) -> None:
        if scope.get("method") not in ("GET", "HEAD"):
            await _json(send, 405, {"error": "method_not_allowed"})
            return
        document: dict[str, Any] = {
            "resource": self.resource_url(),
            "bearer_methods_supported": ["header"],
            "resource_name": "agentkernel knowledge server",
        }
        if self.authorization_servers:
            document["authorization_servers"] = self.authorization_servers
        await _json(send, 200, document)

    async def _too_large(self, send: Any, identity: str) -> None:
        if self.audit is not None:
            self.audit.write(
                {
                    "event": "request",
                    "identity": identity,
                    "outcome": "limit",
                    "reason": "too large",
                }
            )
        await _json(
            send,
            413,
            {
                "jsonrpc": "2.0",
                "id": None,
                "error": {
                    "code": -32600,
                    "message": f"Request larger than {self.max_request_bytes} bytes, the bound per "
                    "request. Nothing was run.",
                },
            },
        )

    def _bounded(self, receive: Any, send: Any, identity: str) -> Any:
        """A ``receive`` that ends a body sent without a length once it passes the bound.

        Past the bound the request reads as a client that went away: nothing runs.
        """
        seen = 0
        limit = self.max_request_bytes

        async def bounded() -> Any:
            nonlocal seen
            if seen > limit:
                return {"type": "http.disconnect"}
            event = await receive()
            if event.get("type") == "http.request":
                seen += len(event.get("body", b""))
                if seen > limit:
                    logger.warning("MCP: a request body from %r passed %d bytes", identity, limit)
                    return {"type": "http.disconnect"}
            return event

        return bounded

    async def _lifespan(self, receive: Any, send: Any) -> None:
        event = await receive()
        if event.get("type") != "lifespan.startup":
            return
        async with self.apps.running():
            await send({"type": "lifespan.startup.complete"})
            while (await receive()).get("type") != "lifespan.shutdown":
                pass
        await send({"type": "lifespan.shutdown.complete"})


async def _json(
    send: Any,
    status: int,
    body: dict[str, Any],
    headers: list[tuple[bytes, bytes]] = (),  # type: ignore[assignment]
) -> None:
    await _sdk.send_json(send, status, body, [(b"cache-control", b"no-store"), *headers])


def gated_app(
    make_server: Callable[[str], KnowledgeServer],
    authenticator: Authenticator,
    *,
    host: str,
    path: str = "/mcp",
    resource_url: Callable[[], str],
    authorization_servers: list[str] | None = None,
    audit: AuditLog | None = None,
    max_request_bytes: int = 1024 * 1024,
    on_refusal: Callable[[], None] | None = None,
) -> Any:
    """Build the ASGI app of an authenticated MCP endpoint serving each identity its tools.

    Args:
        make_server: Makes the server one identity gets (its tools, its limits, its audit
            name); called once per identity, in a worker thread.
        authenticator: Tells who presented a bearer token.
        host: The host the app is bound to (loopback turns on DNS-rebinding protection).
        path: The MCP endpoint path.
        resource_url: The endpoint's public URL (the metadata's ``resource``), asked when
            needed: it is known once the socket is bound.
        authorization_servers: The issuers that grant tokens for this resource (listed in
            the metadata document).
        audit: Where refused authentications (and oversized requests) are recorded.
        max_request_bytes: The largest request body accepted.
        on_refusal: Called for every refused authentication (a counter, in tests).

    Returns:
        The ASGI application (it runs its own lifespan).
    """
    return _Gate(
        _IdentityApps(make_server, host, path),
        authenticator,
        path=path,
        resource_url=resource_url,
        authorization_servers=list(authorization_servers or []),
        audit=audit,
        max_request_bytes=max_request_bytes,
        on_refusal=on_refusal,
    )
