"""The command line of ``python -m agentkernel.mcp``, reusable by ``agentkernel-kb serve``.

::

    python -m agentkernel.mcp --bundle ./bundle                 # stdio, read-only
    python -m agentkernel.mcp --bundle s3://bucket/kb --writable
    python -m agentkernel.mcp --factory myapp.kb:make --http 127.0.0.1:8765

``--factory MODULE:FUNCTION`` names a function taking no arguments that returns a
``KnowledgeBuilder``, one ``KnowledgeBase`` or a list of them; the current directory is
importable, as it is for ``python -m``. Over HTTP the endpoint is ``http://HOST:PORT/mcp``;
port 0 picks a free port. The server is read-only unless ``--writable`` is given, and one
startup line on stderr says how it serves (the URL over HTTP) and whether it writes.

A later command adds its own sources (a config file, say) to the group
:func:`add_serve_arguments` returns, builds the builder itself and calls
:func:`serve_from_args` with it.

It lives with the commands, above the server it runs (:mod:`agentkernel.mcp` takes parsed
options but defines none): the options are SDK-free (``cli._serve_options``), so
``agentkernel-kb serve --help`` lists them without the ``mcp`` extra.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from agentkernel.cli._serve_options import add_serve_arguments
from agentkernel.errors import AKConfigError
from agentkernel.knowledgebase.base import KnowledgeBase
from agentkernel.knowledgebase.errors import KnowledgeError
from agentkernel.knowledgebase.knowledgebuilder import KnowledgeBuilder
from agentkernel.mcp.access import parse_http
from agentkernel.mcp.access import run as run_server
from agentkernel.mcp.server import KnowledgeServer

logger = logging.getLogger(__name__)


__all__ = [
    "add_serve_arguments",
    "apply_log_level",
    "builder_from_args",
    "main",
    "parse_http",
    "serve_from_args",
]


def apply_log_level(level: str) -> None:
    """Set the process's logging level; the SDK's per-request lines only at ``DEBUG``.

    Args:
        level: One of :data:`LOG_LEVELS`.
    """
    logging.getLogger().setLevel(level)
    sdk_level = logging.DEBUG if level == "DEBUG" else logging.WARNING
    logging.getLogger("mcp").setLevel(sdk_level)


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
        return _bundle_builder(args.bundle, names=args.names, writable=args.writable)
    if getattr(args, "names", None):
        raise AKConfigError("--name names a bundle; a --factory names its own backends.")
    if getattr(args, "factory", None):
        return _factory_builder(args.factory)
    raise AKConfigError("Name what to serve: --bundle PATH_OR_URI or --factory MODULE:FUNCTION.")


def _bundle_builder(location: str, *, names: list[str] | None, writable: bool) -> KnowledgeBuilder:
    from agentkernel.cli._bundle import open_bundles

    try:
        managers = open_bundles([location], names, writable=writable, background=True)
    except (OSError, ValueError, ImportError, KnowledgeError) as exc:
        if isinstance(exc, AKConfigError):
            raise
        raise AKConfigError(f"--bundle {location!r} cannot be opened: {exc}") from exc
    return KnowledgeBuilder(managers)


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


class Served(NamedTuple):
    """What one identity is served: its tools and how they are described."""

    tools: list[Callable[..., Any]]
    builder: KnowledgeBuilder | None
    instructions: str | None
    asking: Sequence[Callable[..., Any]] = ()


#: Per identity: its tools, the builder deciding their hints, its instructions, and the tools
#: that ask the person (a curator's ``knowledge_retire``).
PerIdentity = Callable[[str], Served]


def serve_from_args(
    args: argparse.Namespace,
    builder: KnowledgeBuilder | None = None,
    *,
    tools: Sequence[Callable[..., Any]] | None = None,
    writes: Sequence[str] | None = None,
    on_ready: Callable[[str], None] | None = None,
    per_identity: PerIdentity | None = None,
    hint: str | None = None,
    databases: Mapping[str, Any] | None = None,
    mode: str | None = None,
) -> None:
    """Create the server the arguments describe, print its startup line, and serve.

    The startup line (stderr, one line, whatever the log level) names the transport (the
    endpoint URL over HTTP, port 0 resolved), the tools, the backends, whether
    ``write_kb`` is offered and where it writes, who may connect and where the audit goes.

    Args:
        args: Parsed arguments from a parser extended by :func:`add_serve_arguments`.
        builder: The builder to serve; built from ``--bundle``/``--factory`` when omitted.
        tools: The tools to serve when they are not ``builder.build(writable)`` (one
            agent's role-filtered tools); the builder still decides the annotations.
        writes: The backends ``write_kb`` writes to; derived from the builder when omitted.
        on_ready: Called with the endpoint URL once an HTTP server is bound.
        per_identity: Over authenticated HTTP, each caller's own tools (an agent's roles);
            ``tools`` are then only described in the startup line, and ``builder`` may be
            ``None`` (a configuration of stores only).
        hint: What to say when the server is read-only (by default: pass --writable).
        databases: The served databases by name, for the startup line, ``/readyz`` and
            ``/metrics`` (by default the builder's backends).
        mode: What the startup line says is served (by default worked out from the tools).

    Raises:
        AKConfigError: The arguments do not describe a server.
    """
    if builder is None and per_identity is None:
        builder = builder_from_args(args)
    writable = bool(getattr(args, "writable", False))
    if tools is None:
        tools = builder.build(writable=writable) if builder is not None else []
    served = list(tools)

    def make(identity: str, options: dict[str, Any]) -> KnowledgeServer:
        own = per_identity(identity) if per_identity is not None else Served(served, builder, None)
        try:
            return KnowledgeServer(
                own.tools,
                name=args.server_name,
                builder=own.builder,
                max_concurrency=args.max_concurrency,
                instructions=own.instructions,
                asking=own.asking,
                **options,
            )
        except (TypeError, ValueError) as exc:
            raise AKConfigError(str(exc)) from exc

    if args.max_concurrency < 1:
        raise AKConfigError(f"--max-concurrency must be at least 1, got {args.max_concurrency}.")
    described = make("startup", {})
    backends = builder.backends if builder is not None else {}
    if writes is None:
        writes = [n for n, kb in backends.items() if kb.capabilities.writable]
    if mode is None and per_identity is not None:
        mode = f"{len(databases or backends)} databases; each caller gets its agent's role"
    elif mode is None:
        mode = _summary(described, list(backends), list(writes), hint)
    run_server(
        args,
        make,
        name=args.server_name,
        mode=mode,
        on_ready=on_ready,
        databases=databases if databases is not None else backends,
    )


def _summary(
    server: KnowledgeServer, backends: list[str], writes: list[str], hint: str | None
) -> str:
    over = f"{len(server.tool_names)} tools over {', '.join(backends)}"
    if "write_kb" not in server.tool_names:
        return f"{over}; read-only: {hint or 'pass --writable to offer write_kb'}"
    if not writes:
        return f"{over}; write_kb offered, but every backend declines writes (read-only store)"
    return f"{over}; writable: write_kb writes to {', '.join(writes)}"


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``python -m agentkernel.mcp``.

    Args:
        argv: The arguments (default: ``sys.argv[1:]``).

    Returns:
        The exit status: 0 after a clean shutdown, 2 for a configuration mistake.
    """
    parser = argparse.ArgumentParser(
        prog="python -m agentkernel.mcp",
        description="Serve knowledge bases as MCP tools over stdio or streamable HTTP "
        "(read-only unless --writable).",
    )
    add_serve_arguments(parser)
    args = parser.parse_args(argv)
    # stdout may be the protocol stream: every log line goes to stderr
    logging.basicConfig(stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    apply_log_level(args.log_level or "WARNING")
    try:
        serve_from_args(args)
    except (AKConfigError, OSError) as exc:
        parser.exit(2, f"{parser.prog}: error: {exc}\n")
    except KeyboardInterrupt:
        pass
    return 0
