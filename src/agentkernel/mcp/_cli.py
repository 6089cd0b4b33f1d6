"""The command line of ``python -m agentkernel.mcp``, reusable by ``agentkernel-kb serve``.

::

    python -m agentkernel.mcp --bundle ./bundle                 # stdio, an OKF bundle
    python -m agentkernel.mcp --bundle s3://bucket/kb --read-only
    python -m agentkernel.mcp --factory myapp.kb:make --http 127.0.0.1:8765

``--factory MODULE:FUNCTION`` names a function taking no arguments that returns a
``KnowledgeBuilder``, one ``KnowledgeBase`` or a list of them; the current directory is
importable, as it is for ``python -m``. Over HTTP the endpoint is ``http://HOST:PORT/mcp``;
port 0 picks a free port, and the URL is logged to stderr once the socket is bound.

A later command adds its own sources (a config file, say) to the group
:func:`add_serve_arguments` returns, builds the builder itself and calls
:func:`serve_from_args` with it.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from agentkernel.errors import AKConfigError
from agentkernel.knowledgebase.base import KnowledgeBase
from agentkernel.knowledgebase.errors import KnowledgeError
from agentkernel.knowledgebase.knowledgebuilder import KnowledgeBuilder
from agentkernel.mcp.server import KnowledgeServer, create_server

logger = logging.getLogger(__name__)

__all__ = ["add_serve_arguments", "builder_from_args", "main", "parse_http", "serve_from_args"]


def add_serve_arguments(parser: argparse.ArgumentParser) -> Any:
    """Add the ``serve`` options to a parser.

    Args:
        parser: The parser (or sub-command parser) to extend.

    Returns:
        The mutually exclusive group holding the knowledge sources (``--bundle``,
        ``--factory``), so a caller can add another source to it.
    """
    sources = parser.add_argument_group("knowledge source (exactly one)")
    group = sources.add_mutually_exclusive_group()
    group.add_argument(
        "--bundle",
        metavar="PATH_OR_URI",
        help="An OKF bundle: a directory, file:///..., s3://bucket/prefix or python:pkg.Store.",
    )
    group.add_argument(
        "--factory",
        metavar="MODULE:FUNCTION",
        help="A function returning a KnowledgeBuilder, a KnowledgeBase or a list of them.",
    )
    parser.add_argument(
        "--kb-name",
        metavar="NAME",
        help="The backend name of a --bundle (default: derived from its location).",
    )
    parser.add_argument(
        "--http",
        metavar="HOST:PORT",
        help="Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio (port 0: any).",
    )
    parser.add_argument(
        "--read-only",
        action="store_true",
        help="Leave write_kb out (and open a --bundle read-only).",
    )
    parser.add_argument("--name", default="knowledge", help="The MCP server name.")
    parser.add_argument(
        "--max-concurrency",
        type=int,
        default=1,
        metavar="N",
        help="How many tool calls may run at once (default 1: one at a time).",
    )
    parser.add_argument(
        "--log-level", default="INFO", help="Logging level on stderr (default INFO)."
    )
    return group


def parse_http(value: str) -> tuple[str, int]:
    """Split ``HOST:PORT`` (``[::1]:PORT`` for IPv6).

    Args:
        value: The ``--http`` value.

    Returns:
        ``(host, port)``.

    Raises:
        AKConfigError: The value is not ``HOST:PORT`` with a port from 0 to 65535.
    """
    host, sep, port_text = value.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not sep or not host or not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise AKConfigError(f"--http takes HOST:PORT (for example 127.0.0.1:8765), got {value!r}.")
    return host, int(port_text)


def builder_from_args(args: argparse.Namespace) -> KnowledgeBuilder:
    """Build the knowledge builder that ``--bundle`` or ``--factory`` names.

    Args:
        args: Parsed arguments from a parser extended by :func:`add_serve_arguments`.

    Returns:
        The builder to serve.

    Raises:
        AKConfigError: Neither source is given, the factory cannot be imported or called,
            or it returns something that is not knowledge bases.
    """
    if getattr(args, "bundle", None):
        return _bundle_builder(args.bundle, name=args.kb_name, read_only=args.read_only)
    if getattr(args, "factory", None):
        return _factory_builder(args.factory)
    raise AKConfigError("Name what to serve: --bundle PATH_OR_URI or --factory MODULE:FUNCTION.")


def _bundle_builder(location: str, *, name: str | None, read_only: bool) -> KnowledgeBuilder:
    from agentkernel.knowledgebase.okf.manager import OKFManager
    from agentkernel.knowledgebase.store.base import DocumentStore

    options: dict[str, Any] = {"writable": False} if read_only else {}
    try:
        store = DocumentStore.from_uri(location, **options)
        manager = OKFManager(store, name=name or "")
    except (OSError, ValueError, ImportError, KnowledgeError) as exc:
        raise AKConfigError(f"--bundle {location!r} cannot be opened: {exc}") from exc
    return KnowledgeBuilder([manager])


def _factory_builder(target: str) -> KnowledgeBuilder:
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise AKConfigError(f"--factory takes MODULE:FUNCTION, got {target!r}.")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise AKConfigError(f"--factory {target!r}: cannot import {module_name!r}: {exc}") from exc
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise AKConfigError(f"--factory {target!r}: {module_name} has no function {attr!r}.")
    try:
        made = factory()
    except Exception as exc:
        raise AKConfigError(f"--factory {target!r} failed: {type(exc).__name__}: {exc}") from exc
    return _as_builder(made, target)


def _as_builder(made: Any, target: str) -> KnowledgeBuilder:
    if isinstance(made, KnowledgeBuilder):
        return made
    backends: Iterable[Any] = [made] if isinstance(made, KnowledgeBase) else made
    if isinstance(backends, Iterable) and not isinstance(backends, str | bytes):
        items = list(backends)
        if items and all(isinstance(item, KnowledgeBase) for item in items):
            try:
                return KnowledgeBuilder(items)
            except (TypeError, ValueError) as exc:
                raise AKConfigError(f"--factory {target!r}: {exc}") from exc
    raise AKConfigError(
        f"--factory {target!r} must return a KnowledgeBuilder, a KnowledgeBase or a non-empty "
        f"list of KnowledgeBase, got {type(made).__name__}."
    )


def serve_from_args(
    args: argparse.Namespace,
    builder: KnowledgeBuilder | None = None,
    *,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Create the server the arguments describe and serve until the client or a signal ends it.

    Args:
        args: Parsed arguments from a parser extended by :func:`add_serve_arguments`.
        builder: The builder to serve; built from ``--bundle``/``--factory`` when omitted.
        on_ready: Called with the endpoint URL once an HTTP server is bound.

    Raises:
        AKConfigError: The arguments do not describe a server.
    """
    if builder is None:
        builder = builder_from_args(args)
    try:
        server: KnowledgeServer = create_server(
            builder,
            name=args.name,
            writable=not args.read_only,
            max_concurrency=args.max_concurrency,
        )
    except (TypeError, ValueError) as exc:
        raise AKConfigError(str(exc)) from exc
    if args.http:
        host, port = parse_http(args.http)
        import anyio

        anyio.run(lambda: server.serve_http(host, port, on_ready=on_ready))
    else:
        server.run_stdio()


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``python -m agentkernel.mcp``.

    Args:
        argv: The arguments (default: ``sys.argv[1:]``).

    Returns:
        The exit status: 0 after a clean shutdown, 2 for a configuration mistake.
    """
    parser = argparse.ArgumentParser(
        prog="python -m agentkernel.mcp",
        description="Serve knowledge bases as MCP tools over stdio or streamable HTTP.",
    )
    add_serve_arguments(parser)
    args = parser.parse_args(argv)
    # stdout may be the protocol stream: every log line goes to stderr
    logging.basicConfig(
        level=str(args.log_level).upper(),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if logging.getLogger().getEffectiveLevel() > logging.DEBUG:
        # the SDK logs every request at INFO; keep that for --log-level DEBUG
        logging.getLogger("mcp").setLevel(logging.WARNING)
    try:
        serve_from_args(args)
    except AKConfigError as exc:
        parser.exit(2, f"{parser.prog}: error: {exc}\n")
    except KeyboardInterrupt:
        pass
    return 0
