"""``store serve LOCATION``: a curated store's tools as an MCP server named ``knowledge``.

The location is a knowledge folder (a path or ``file:///path``), ``s3://bucket/prefix`` or
``sqlite:///path`` (``--sqlite`` reads a path as a SQLite file): the URIs a bundle takes.

It serves like ``serve`` does: stdio by default or ``--http HOST:PORT``, read-only unless
``--writable``, the same authentication, TLS, audit and limit options, and the same startup
line on stderr (name, transport and URL, mode, who may connect, audit).
"""

from __future__ import annotations

import argparse
import logging
from typing import Any

from agentkernel.cli._options import add_options
from agentkernel.cli._serve_options import add_access_arguments, add_transport_arguments


def register(subparsers: Any) -> None:
    """Register the ``store`` subcommand group.

    Args:
        subparsers: The top-level parser's subparsers.
    """
    parser = subparsers.add_parser("store", help="the curated knowledge store")
    actions = parser.add_subparsers(dest="store_command", metavar="ACTION", required=True)
    serve = actions.add_parser(
        "serve",
        help="serve a knowledge store over MCP (read-only unless --writable)",
        description="Serve a knowledge store's knowledge_* tools over MCP, on stdio or "
        "streamable HTTP. Read-only unless --writable; the startup line on stderr says which.",
    )
    # fmt: off
    add_options(
        serve,
        ("directory", "LOCATION",
         "the knowledge folder, s3://bucket/prefix, sqlite:///path/pages.sqlite or "
         "postgresql://user:password@host/database"),
        ("--sqlite", None, "keep pages in SQLite instead"),
        ("--writable", None,
         "offer the tools that change pages (create, edit, rewrite, supersede, log)"),
        ("--interactive", None, "with --writable: offer knowledge_retire, asking a person first"),
    )
    # fmt: on
    add_transport_arguments(serve, server_name_help=argparse.SUPPRESS)
    add_access_arguments(serve)
    serve.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Serve the store until the client disconnects or a signal stops the server.

    Args:
        args: The parsed arguments.

    Returns:
        The exit status.

    Raises:
        MissingExtraError: The ``mcp`` extra is not installed.
        AKConfigError: The options do not describe a server.
    """
    from agentkernel.cli.serving import apply_log_level
    from agentkernel.errors import AKConfigError
    from agentkernel.mcp.access import check
    from agentkernel.mcp.access import run as run_server
    from agentkernel.mcp.store import create_knowledge_server

    apply_log_level(args.log_level or logging.getLevelName(logging.getLogger().level))
    if args.interactive and not args.writable:
        raise AKConfigError("--interactive offers knowledge_retire, a write: add --writable.")
    check(args)  # refuse bad options before the store is opened
    store = _open(args)
    try:

        def make(identity: str, options: dict[str, Any]) -> Any:
            return create_knowledge_server(
                store, args.interactive, writable=args.writable, **options
            )

        tools = make("startup", {}).tool_names
        mode = f"{len(tools)} tools over {_described(args, store)}; " + (
            "writable" if args.writable else "read-only: pass --writable to offer the edits"
        )
        databases = {_location(args, store): store}
        run_server(args, make, name=args.server_name, mode=mode, databases=databases)
    except KeyboardInterrupt:
        pass
    finally:
        store.close()
    return 0


def _open(args: argparse.Namespace) -> Any:
    from agentkernel.knowledgestore.locations import open_store

    return open_store(args.directory, sqlite=args.sqlite)


def _location(args: argparse.Namespace, store: Any) -> str:
    """The store's location as messages show it: a database URL without user or password."""
    location = str(args.directory)
    if location.partition("://")[0].lower().split("+")[0] in ("postgresql", "postgres"):
        return str(store.backend.label)
    return location


def _described(args: argparse.Namespace, store: Any) -> str:
    """What the startup line says the store is kept in."""
    location = _location(args, store)
    scheme = location.partition("://")[0].lower() if "://" in location else ""
    if scheme == "postgresql":
        return f"the PostgreSQL database {location}"
    if args.sqlite or scheme == "sqlite":
        return f"the SQLite file {location}"
    if scheme == "s3":
        return f"the S3 prefix {location}"
    return f"the folder {location}"
