"""``serve``: the knowledge tools as an MCP server, over stdio or streamable HTTP.

Sources: bundle paths, ``--config FILE`` (with ``--agent NAME``, that agent's role-filtered
tools; without, every configured database, read-only), or the MCP module's ``--bundle`` and
``--factory``. Needs the ``mcp`` extra.
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any

from agentkernel.errors import AKConfigError, MissingExtraError


def register(subparsers: Any) -> None:
    """Register the ``serve`` subcommand.

    Args:
        subparsers: The top-level parser's subparsers.
    """
    parser = subparsers.add_parser("serve", help="serve the knowledge tools over MCP")
    parser.set_defaults(handler=run)
    try:
        from agentkernel.mcp._cli import add_serve_arguments
    except MissingExtraError:
        parser.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
        return
    from agentkernel.cli._sources import add_source_arguments

    add_serve_arguments(parser)
    add_source_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Serve until the client disconnects or a signal stops the server.

    Args:
        args: The parsed arguments.

    Returns:
        0 after a clean shutdown; 2 for a configuration problem or a missing extra.
    """
    try:
        from agentkernel.mcp._cli import serve_from_args
        from agentkernel.mcp.server import create_server
    except MissingExtraError as exc:
        print(f"agentkernel-kb serve: {exc}", file=sys.stderr)
        return 2
    # stdout is the protocol stream on stdio: logs go to stderr only
    logging.getLogger("mcp").setLevel(logging.WARNING)
    try:
        if args.bundle or args.factory:
            if args.paths or args.config:
                raise AKConfigError("Give one source: PATH..., --config, --bundle or --factory.")
            serve_from_args(args)
            return 0
        from agentkernel.cli._sources import resolve_sources

        sources = resolve_sources(args, writable=not args.read_only)
        server = create_server(
            sources.tools,
            name=args.name,
            writable=not args.read_only,
            max_concurrency=args.max_concurrency,
        )
        if args.http:
            import anyio

            from agentkernel.mcp._cli import parse_http

            host, port = parse_http(args.http)
            anyio.run(lambda: server.serve_http(host, port))
        else:
            server.run_stdio()
    except AKConfigError as exc:
        print(f"agentkernel-kb serve: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        pass
    return 0
