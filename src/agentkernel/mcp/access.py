"""Who may connect, and how a server is run: the options both ``serve`` commands share.

``agentkernel-kb serve`` and ``agentkernel-kb store serve`` take the same access options and
run through :func:`run`, so they announce themselves alike (one startup line on stderr: name,
transport and URL, mode, authentication, audit) and refuse alike:

- over HTTP on an address beyond loopback, a server starts only with authentication
  (``--auth-tokens`` and/or ``--auth-jwks``); without it the command refuses and says how to
  add it. On loopback, no auth option (or ``--no-auth``) serves without authentication and
  the startup line says so;
- the auth, TLS and public-URL options need ``--http``; ``--no-auth`` is refused beside an
  auth option and beyond loopback;
- plain HTTP beyond loopback (behind a TLS-terminating proxy) is served with a warning;
- in every HTTP mode a body over ``--max-request-bytes`` gets ``413``, headers must be complete
  within ``--header-timeout`` seconds, at most ``--max-connections`` are open, and on loopback
  a request naming another host is refused (DNS rebinding).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Mapping
from typing import Any

import anyio

from agentkernel._loopback import is_loopback
from agentkernel.errors import AKConfigError
from agentkernel.mcp._audit import AuditLog
from agentkernel.mcp._auth import Authenticator, Authenticators, JWTVerifier, TokenTable
from agentkernel.mcp._conn import ConnectionLimits
from agentkernel.mcp._limits import SharedLimiter
from agentkernel.mcp._listen import Listener, TLSFiles
from agentkernel.mcp._observe import Observer
from agentkernel.mcp.server import KnowledgeServer

logger = logging.getLogger(__name__)

__all__ = ["MakeServer", "check", "parse_http", "run"]

#: Makes the server one identity gets, given the options every server takes.
MakeServer = Callable[[str, dict[str, Any]], KnowledgeServer]

_HOW = (
    "add --auth-tokens FILE (hashes of tokens you issue: python -m agentkernel.mcp.tokens NAME) "
    "or --auth-jwks FILE_OR_URL --auth-issuer URL (your identity provider), or bind to "
    "127.0.0.1; see docs/deployment.md"
)


def parse_http(value: str) -> tuple[str, int]:
    """Split ``HOST:PORT`` (``[::1]:PORT`` for IPv6; ``:PORT`` for 127.0.0.1).

    Args:
        value: The ``--http`` value.

    Returns:
        ``(host, port)``.

    Raises:
        AKConfigError: The value is not ``HOST:PORT`` with a port from 0 to 65535.
    """
    host, sep, port_text = value.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if sep and not host:
        host = "127.0.0.1"
    if not sep or not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise AKConfigError(
            f"--http takes HOST:PORT (for example 127.0.0.1:8765, or :0 for any free port on "
            f"127.0.0.1), got {value!r}."
        )
    return host, int(port_text)


def _auth_requested(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "auth_tokens", None) or getattr(args, "auth_jwks", None))


def check(args: argparse.Namespace) -> tuple[str, int] | None:
    """Refuse option combinations that cannot serve, before anything is opened.

    Args:
        args: Parsed arguments (with :func:`add_access_arguments`'s options and ``--http``).

    Returns:
        ``(host, port)`` over HTTP, ``None`` on stdio.

    Raises:
        AKConfigError: The options do not describe a server (the message says what to do).
    """
    if args.max_calls_per_identity < 1 or args.max_request_bytes < 1024:
        raise AKConfigError(
            "--max-calls-per-identity takes at least 1 and --max-request-bytes at least 1024."
        )
    if not args.header_timeout > 0 or args.max_connections < 1:
        raise AKConfigError(
            "--header-timeout takes a number of seconds above 0 and --max-connections at least 1."
        )
    http_only = [
        flag
        for flag, value in (
            ("--auth-tokens", args.auth_tokens),
            ("--auth-jwks", args.auth_jwks),
            ("--no-auth", args.no_auth),
            ("--public-url", args.public_url),
            ("--tls-cert", args.tls_cert),
            ("--tls-key", args.tls_key),
            ("--stateless", getattr(args, "stateless", False)),
        )
        if value
    ]
    if not args.http:
        if http_only:
            raise AKConfigError(
                f"{', '.join(http_only)} applies to HTTP: add --http HOST:PORT "
                "(stdio serves one local client, the process that started the server)."
            )
        return None
    host, port = parse_http(args.http)
    if bool(args.tls_cert) != bool(args.tls_key):
        raise AKConfigError("Give both --tls-cert FILE and --tls-key FILE, or neither.")
    if args.auth_jwks and not args.auth_issuer:
        raise AKConfigError("--auth-jwks needs --auth-issuer URL (the iss tokens must carry).")
    if (args.auth_issuer or args.auth_audience) and not args.auth_jwks:
        raise AKConfigError("--auth-issuer and --auth-audience go with --auth-jwks FILE_OR_URL.")
    if args.no_auth and _auth_requested(args):
        raise AKConfigError("--no-auth contradicts --auth-tokens/--auth-jwks: give one.")
    if not _auth_requested(args) and not is_loopback(host):
        raise AKConfigError(
            f"Refusing to serve {host}:{port} without authentication: anyone who can reach it "
            f"could call every tool. To serve beyond this machine, {_HOW}."
        )
    return host, port


def _authenticator(args: argparse.Namespace, resource: str) -> tuple[Authenticator, str, list[str]]:
    members: list[Authenticator] = []
    described: list[str] = []
    issuers: list[str] = []
    if args.auth_tokens:
        table = TokenTable.load(args.auth_tokens)
        members.append(table)
        described.append(f"tokens ({len(table.identities)} identities)")
    if args.auth_jwks:
        verifier = JWTVerifier(
            args.auth_jwks,
            issuer=args.auth_issuer,
            audience=args.auth_audience or resource,
            identity_claim=args.auth_identity_claim,
        )
        members.append(verifier)
        issuers.append(args.auth_issuer)
        described.append(f"JWT from {args.auth_issuer} (identity: {args.auth_identity_claim})")
    return Authenticators(members), " + ".join(described), issuers


def run(
    args: argparse.Namespace,
    make_server: MakeServer,
    *,
    name: str,
    mode: str,
    on_ready: Callable[[str], None] | None = None,
    on_refusal: Callable[[], None] | None = None,
    databases: Mapping[str, Any] | None = None,
) -> None:
    """Serve on stdio or HTTP as the options say, after one startup line on stderr.

    Args:
        args: Parsed arguments (``--http`` and :func:`add_access_arguments`'s options).
        make_server: Makes the server of one identity (over stdio: ``local``; over HTTP
            without authentication: ``anonymous``).
        name: The server name, for the startup line.
        mode: What it serves and whether it writes, for the startup line.
        on_ready: Called with the endpoint URL once an HTTP server is bound.
        on_refusal: Called for every refused authentication.
        databases: The served databases by name, for ``/readyz`` and ``/metrics``.

    Raises:
        AKConfigError: The options do not describe a server.
    """
    bound = check(args)
    audit = AuditLog(args.audit) if args.audit else None
    limiter = SharedLimiter(getattr(args, "max_concurrency", 1) or 1)
    observer = Observer(databases) if bound is not None else None

    def options(identity: str) -> dict[str, Any]:
        return {
            "identity": identity,
            "audit": audit,
            "max_calls": args.max_calls_per_identity,
            "limiter": limiter,
            "observer": observer,
        }

    trail = f"audit: {'stderr' if args.audit == '-' else args.audit}" if audit else "audit: off"
    try:
        if bound is None:
            server = make_server("local", options("local"))
            _announce(f"Serving MCP {name!r} on stdio ({mode}; {trail})")
            server.run_stdio()
            return
        host, port = bound
        tls = TLSFiles(args.tls_cert, args.tls_key) if args.tls_cert else None
        limits = ConnectionLimits(args.header_timeout, args.max_connections)
        stateless = bool(getattr(args, "stateless", False))
        listener = Listener(host, port, "/mcp", tls, limits)
        resource = args.public_url or listener.url
        if tls is None and not is_loopback(host):
            logger.warning(
                "MCP server %r serves plain HTTP on %s: tokens cross the network in clear. "
                "Give --tls-cert and --tls-key, or terminate TLS at a proxy in front.",
                name,
                host,
            )
        if not _auth_requested(args):
            server = make_server("anonymous", options("anonymous"))
            app = server.http_app(
                host=host,
                path="/mcp",
                max_request_bytes=args.max_request_bytes,
                public_url=args.public_url,
                stateless=stateless,
            )
            access = "authentication off (loopback only)"
        else:
            authenticator, access, issuers = _authenticator(args, resource)
            from agentkernel.mcp._gate import gated_app

            app = gated_app(
                lambda identity: make_server(identity, options(identity)),
                authenticator,
                host=host,
                resource_url=lambda: resource,
                authorization_servers=issuers,
                audit=audit,
                max_request_bytes=args.max_request_bytes,
                on_refusal=on_refusal,
                public_url=args.public_url,
                stateless=stateless,
                observer=observer,
            )
            access = f"authentication: {access}"

        def ready(url: str) -> None:
            sessions = "; stateless (no MCP sessions)" if stateless else ""
            _announce(f"Serving MCP {name!r} at {url} ({mode}; {access}{sessions}; {trail})")
            if on_ready is not None:
                on_ready(url)

        anyio.run(lambda: listener.serve(app, ready))
    finally:
        if audit is not None:
            audit.close()


def _announce(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
