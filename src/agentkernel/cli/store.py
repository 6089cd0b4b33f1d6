"""``store serve DIR``: a curated knowledge store's tools as an MCP server named ``knowledge``."""

from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any) -> None:
    """Register the ``store`` subcommand group.

    Args:
        subparsers: The top-level parser's subparsers.
    """
    parser = subparsers.add_parser("store", help="the curated knowledge store")
    actions = parser.add_subparsers(dest="store_command", metavar="ACTION", required=True)
    serve = actions.add_parser("serve", help="serve a knowledge folder over MCP (stdio)")
    serve.add_argument("directory", metavar="DIR", help="the knowledge folder")
    serve.add_argument("--sqlite", action="store_true", help="keep pages in SQLite instead")
    serve.add_argument(
        "--interactive", action="store_true", help="offer knowledge_retire, asking a person first"
    )
    serve.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Serve the store until the client disconnects.

    Args:
        args: The parsed arguments.

    Returns:
        The exit status.
    """
    from agentkernel.knowledgestore.__main__ import main as serve_store

    argv = [args.directory]
    if args.sqlite:
        argv.append("--sqlite")
    if args.interactive:
        argv.append("--interactive")
    serve_store(argv)
    return 0
