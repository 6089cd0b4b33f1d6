"""One HTTP endpoint for many callers: authenticate each request, then serve its identity.

:func:`gated_app` is the ASGI application of an authenticated server. For each request to
the MCP endpoint it

1. takes the bearer token from ``Authorization`` and asks the :class:`Authenticator` who
   presented it; without a valid token the answer is ``401`` with a ``WWW-Authenticate:
   Bearer`` header naming the protected-resource metadata (RFC 9728), and nothing runs;
2. refuses a body larger than the per-request bound with ``413`` and an audit line, whether
   its length was announced or it came in chunks (read no further than the bound);
3. hands the request to that identity's own MCP server: one :class:`KnowledgeServer` and
   one SDK session manager per identity, made on the identity's first request from
   ``make_server(identity)``. Its tools are the ones the identity may see and call, so
   ``tools/list`` and ``tools/call`` are decided per caller on one server, a session opened
   by one identity is unknown to every other, and each identity's calls are bounded on
   their own.

On a loopback address, a request whose ``Host`` or ``Origin`` names anything but this server
is refused before any of this (DNS rebinding; see :mod:`agentkernel.mcp._door`).

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
from agentkernel.mcp._audit import AuditLog
from agentkernel.mcp._auth import Authenticator, Authenticators, Verdict
from agentkernel.mcp._door import DEFAULT_MAX_REQUEST_BYTES, BodyBound, guard_host, send_json
from agentkernel.mcp._observe import METRICS, PROBE_PATHS, Observer, answer_probe
from agentkernel.mcp.server import KnowledgeServer

logger = logging.getLogger(__name__)

__all__ = ["METADATA_PREFIX", "gated_app", "metadata_path"]

METADATA_PREFIX = "/.well-known/oauth-protected-resource"
#: JWT checks may wait on the identity provider: never more than this at once, in a pool of
#: their own (tokens a table knows are checked at once, outside it).
_AUTH_THREADS = 4


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

    def __init__(
        self, make_server: Callable[[str], KnowledgeServer], path: str, stateless: bool = False
    ) -> None:
        self._make = make_server
        self._path = path
        self._stateless = stateless
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
        manager = _sdk.session_manager(server.sdk_server, stateless=self._stateless)
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
    observer: Observer | None = None
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
        if self.observer is not None and path in PROBE_PATHS:
            # liveness and readiness are open (probes carry no token); metrics name the
            # tools and databases, so they take a valid token like the endpoint does
            if path != METRICS or await self._identity(scope, send) is not None:
                await answer_probe(path, scope, send, self.observer)
            return
        if path != self.path:
            await _json(send, 404, {"error": "not_found", "error_description": "No such path."})
            return
        identity = await self._identity(scope, send)
        if identity is None:
            return
        scope = dict(scope)
        scope["user"] = _sdk.authenticated_user(identity)
        app = await self.apps.app_for(identity)
        bounded = BodyBound(app, self.max_request_bytes, identity=identity, audit=self.audit)
        await bounded(scope, receive, send)

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
            verdict = await self._verdict(token)
            if verdict.identity is not None:
                return verdict.identity
            reason = verdict.reason
        if self.on_refusal is not None:
            self.on_refusal()
        if self.observer is not None:
            self.observer.auth_failed(reason)
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

    async def _verdict(self, token: str) -> Verdict:
        """Ask the token tables at once; only then, in the blocking pool, the JWT verifier."""
        if self._auth_limiter is None:
            self._auth_limiter = anyio.CapacityLimiter(_AUTH_THREADS)
        checks = self.authenticator
        if not isinstance(checks, Authenticators):
            if getattr(checks, "blocks", True):
                return await anyio.to_thread.run_sync(
                    checks.authenticate, token, limiter=self._auth_limiter
                )
            return checks.authenticate(token)
        verdict = checks.quick(token)
        if verdict.identity is not None or not checks.needs_blocking(token):
            return verdict
        return await anyio.to_thread.run_sync(
            checks.blocking, token, verdict, limiter=self._auth_limiter
        )

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
    await send_json(send, status, body, [(b"cache-control", b"no-store"), *headers])


def gated_app(
    make_server: Callable[[str], KnowledgeServer],
    authenticator: Authenticator,
    *,
    host: str,
    path: str = "/mcp",
    resource_url: Callable[[], str],
    authorization_servers: list[str] | None = None,
    audit: AuditLog | None = None,
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
    on_refusal: Callable[[], None] | None = None,
    public_url: str | None = None,
    stateless: bool = False,
    observer: Observer | None = None,
) -> Any:
    """Build the ASGI app of an authenticated MCP endpoint serving each identity its tools.

    Args:
        make_server: Makes the server one identity gets (its tools, its limits, its audit
            name); called once per identity, in a worker thread.
        authenticator: Tells who presented a bearer token.
        host: The host the app is bound to (on loopback, a request whose ``Host`` or
            ``Origin`` names anything but this server is refused: DNS rebinding).
        path: The MCP endpoint path.
        resource_url: The endpoint's public URL (the metadata's ``resource``), asked when
            needed: it is known once the socket is bound.
        authorization_servers: The issuers that grant tokens for this resource (listed in
            the metadata document).
        audit: Where refused authentications (and oversized requests) are recorded.
        max_request_bytes: The largest request body accepted.
        on_refusal: Called for every refused authentication (a counter, in tests).
        public_url: The URL a proxy in front serves the endpoint at (its host is accepted
            by the loopback ``Host`` check too).
        stateless: Keep no MCP session between requests (no ``Mcp-Session-Id``), so
            replicas behind a round-robin balancer need no affinity.
        observer: Answers ``/healthz`` and ``/readyz`` (open) and ``/metrics`` (with a valid
            token), and counts refused authentications by reason.

    Returns:
        The ASGI application (it runs its own lifespan).
    """
    gate = _Gate(
        _IdentityApps(make_server, path, stateless),
        authenticator,
        path=path,
        resource_url=resource_url,
        authorization_servers=list(authorization_servers or []),
        audit=audit,
        max_request_bytes=max_request_bytes,
        on_refusal=on_refusal,
        observer=observer,
    )
    return guard_host(gate, host, public_url=public_url, audit=audit)
