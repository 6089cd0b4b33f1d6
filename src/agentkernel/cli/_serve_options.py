"""The options of ``serve`` (and the access options ``store serve`` shares), SDK-free.

They live outside :mod:`agentkernel.mcp` (whose import needs the ``mcp`` extra) so that
``agentkernel-kb serve --help`` lists every option whether or not the extra is installed;
running without it says which extra to install.
"""

from __future__ import annotations

import argparse
from typing import Any

from agentkernel.cli._options import add_options

__all__ = [
    "LOG_LEVELS",
    "add_access_arguments",
    "add_serve_arguments",
    "add_transport_arguments",
]

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def add_serve_arguments(parser: argparse.ArgumentParser) -> Any:
    """Add the ``serve`` options to a parser.

    Args:
        parser: The parser (or sub-command parser) to extend.

    Returns:
        The mutually exclusive group holding the knowledge sources (``--bundle``,
        ``--factory``), so a caller can add another source to it.
    """
    from agentkernel.cli._bundle import add_name_argument

    sources = parser.add_argument_group("knowledge source (exactly one)")
    group = sources.add_mutually_exclusive_group()
    # fmt: off
    add_options(
        group,
        ("--bundle", "PATH_OR_URI",
         "An OKF bundle: a directory, file:///..., s3://bucket/prefix or python:pkg.Store."),
        ("--factory", "MODULE:FUNCTION",
         "A function returning a KnowledgeBuilder, a KnowledgeBase or a list of them."),
    )
    add_name_argument(parser, "--kb-name")
    add_options(
        parser.add_mutually_exclusive_group(),
        ("--writable", None,
         "Offer write_kb. Without it the server is read-only: write_kb is not offered and "
         "bundles are opened read-only."),
        # the default now; still accepted so that existing client entries keep working
        ("--read-only", None, argparse.SUPPRESS),
    )
    add_transport_arguments(parser, server_name_help="The MCP server name (default: knowledge).")
    add_options(
        parser,
        ("--max-concurrency", "N",
         "How many tool calls may run at once (default 1: one at a time).",
         {"type": int, "default": 1}),
    )
    # fmt: on
    add_access_arguments(parser)
    return group


def add_transport_arguments(parser: argparse.ArgumentParser, *, server_name_help: str) -> None:
    """Add ``--http``, ``--server-name`` and ``--log-level``, which both servers take.

    Args:
        parser: The ``serve`` or ``store serve`` parser.
        server_name_help: The help of ``--server-name`` (``argparse.SUPPRESS`` hides it).
    """
    # fmt: off
    add_options(
        parser,
        ("--http", "HOST:PORT",
         "Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio (:0 for any free "
         "port on 127.0.0.1); the URL is printed on stderr. Beyond loopback it needs an auth "
         "option (--auth-tokens or --auth-jwks)."),
        ("--stateless", None,
         "With --http: keep no MCP session between requests (no Mcp-Session-Id), so "
         "replicas behind a round-robin load balancer need no affinity; see "
         "docs/deployment.md."),
    )
    # fmt: on
    parser.add_argument("--server-name", default="knowledge", help=server_name_help)
    parser.add_argument(
        "--log-level",
        type=str.upper,
        choices=LOG_LEVELS,
        default=None,
        help="Logging on stderr (default WARNING; DEBUG adds the SDK's own lines). The "
        "startup line is printed whatever the level.",
    )


def add_access_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the authentication, TLS, audit and limit options.

    Args:
        parser: The ``serve`` or ``store serve`` parser.
    """
    # fmt: off
    add_options(
        parser.add_argument_group("who may connect (HTTP)"),
        ("--auth-tokens", "FILE|env:VAR",
         "Bearer tokens you issue: a file (or variable) of 'IDENTITY sha256:HEX' lines."),
        ("--auth-jwks", "FILE|URL",
         "Accept JWT access tokens signed by these keys (with --auth-issuer)."),
        ("--auth-issuer", "URL", "The issuer JWTs must name (iss)."),
        ("--auth-audience", "AUD", "The audience JWTs must name (aud); default: the endpoint URL."),
        ("--auth-identity-claim", "CLAIM", "The JWT claim naming the caller (default: sub).",
         {"default": "sub"}),
        ("--no-auth", None,
         "Serve HTTP without authentication (loopback only; the default there)."),
        ("--public-url", "URL",
         "The endpoint's URL as clients reach it (behind a proxy); names the resource."),
        ("--tls-cert", "FILE", "Serve https with this certificate."),
        ("--tls-key", "FILE", "The certificate's private key."),
    )
    add_options(
        parser.add_argument_group("audit and limits"),
        ("--audit", "FILE|-",
         "Append one JSON line per tool call and refusal to FILE ('-': stderr)."),
        ("--max-calls-per-identity", "N",
         "Calls one caller may have in flight; one more is refused at once (default 4).",
         {"type": int, "default": 4}),
        ("--max-request-bytes", "N",
         "The largest request body accepted over HTTP (default 1 MiB); a larger one gets 413.",
         {"type": int, "default": 1024 * 1024}),
        ("--header-timeout", "SECONDS",
         "Seconds a request's headers may take over HTTP; a slower connection is closed "
         "(default 10).",
         {"type": float, "default": 10.0}),
        ("--max-connections", "N",
         "HTTP connections open at once, kept under the open-file limit; past it, the "
         "connection waiting longest for its headers is closed (default 1000).",
         {"type": int, "default": 1000}),
    )
    # fmt: on
