"""``serve``: the knowledge tools as an MCP server, over stdio or streamable HTTP.

Sources: bundle paths, ``--config FILE`` (with ``--agent NAME``, that agent's role-filtered
tools; without, every configured database, read-only), or the MCP module's ``--bundle`` and
``--factory``. Needs the ``mcp`` extra.
"""

from __future__ import annotations

import argparse
import logging
from typing import Any

from agentkernel.errors import AKConfigError, MissingExtraError


def register(subparsers: Any) -> None:
    """Register the ``serve`` subcommand.

    Args:
        subparsers: The top-level parser's subparsers.
    """
    parser = subparsers.add_parser(
        "serve",
        help="serve the knowledge tools over MCP (read-only unless --writable)",
        description="Serve the knowledge tools over MCP, on stdio or streamable HTTP. The "
        "server is read-only unless --writable (or, with --config --agent, the agent's role) "
        "grants writes; its startup line on stderr says which.",
    )
    parser.set_defaults(handler=run)
    try:
        from agentkernel.mcp._cli import add_serve_arguments
    except MissingExtraError:
        parser.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
        return
    from agentkernel.cli._sources import add_source_arguments

    add_serve_arguments(parser)
    add_source_arguments(parser, names=False)


def run(args: argparse.Namespace) -> int:
    """Serve until the client disconnects or a signal stops the server.

    Args:
        args: The parsed arguments.

    Returns:
        0 after a clean shutdown.

    Raises:
        MissingExtraError: The ``mcp`` extra is not installed.
        AKConfigError: The sources or options do not describe a server.
    """
    from agentkernel.mcp._cli import apply_log_level, serve_from_args

    # stdout is the protocol stream on stdio: logs go to stderr only
    apply_log_level(args.log_level or logging.getLevelName(logging.getLogger().level))
    try:
        if args.bundle or args.factory:
            if args.paths or args.config:
                raise AKConfigError("Give one source: PATH..., --config, --bundle or --factory.")
            serve_from_args(args)
            return 0
        from agentkernel.cli._sources import resolve_sources

        if args.config and args.writable:
            raise AKConfigError(
                "With --config, an agent's role grants writes (--agent NAME), not --writable."
            )
        sources = resolve_sources(args, writable=args.writable)
        serve_from_args(args, sources.builder, tools=sources.tools, writes=sources.writes)
    except KeyboardInterrupt:
        pass
    return 0
