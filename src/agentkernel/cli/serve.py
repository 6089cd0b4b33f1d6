"""``serve``: the knowledge tools as an MCP server, over stdio or streamable HTTP.

Sources: bundle paths, ``--config FILE`` (with ``--agent NAME``, that agent's role-filtered
tools; without, every configured database, read-only; over authenticated HTTP, each caller's
identity names its agent and gets that agent's role), or the MCP module's ``--bundle`` and
``--factory``. Needs the ``mcp`` extra; without it ``--help`` still lists every option, and
serving says which extra to install.
"""

from __future__ import annotations

import argparse
import logging
from typing import Any

from agentkernel.cli._options import subcommand
from agentkernel.errors import AKConfigError

logger = logging.getLogger(__name__)


def _arguments(parser: argparse.ArgumentParser) -> None:
    from agentkernel.cli._serve_options import add_serve_arguments
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
    from agentkernel.cli.serving import apply_log_level, serve_from_args  # raises without the extra

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
        if args.config and (args.auth_tokens or args.auth_jwks):
            _serve_roles(args)
            return 0
        if args.config and args.agent and _holds_a_store(args.config, args.agent):
            _serve_roles(args, agent=args.agent)
            return 0
        # a server listens at once: its bundles load on threads (readiness says how far)
        sources = resolve_sources(args, writable=args.writable, background=True)
        hint = None
        if args.config and args.agent:
            hint = f"{args.agent}'s roles grant no writes"
        elif args.config:
            hint = "every database, read; --agent NAME serves that agent's role"
            _warn_of_stores(args.config)
        serve_from_args(
            args, sources.builder, tools=sources.tools, writes=sources.writes, hint=hint
        )
    except KeyboardInterrupt:
        pass
    return 0


def _warn_of_stores(config: str) -> None:
    """Every database read by everyone leaves the stores out: their tools go by role."""
    from agentkernel.roles import OKFCapability

    capability = OKFCapability.from_config(config)
    names = capability.stores.names() if capability is not None else []
    if names:
        logger.warning(
            "the curated stores %s of %s are not served without an agent: give --agent NAME, "
            "or serve with --auth-tokens/--auth-jwks (each caller gets its agent's role)",
            names,
            config,
        )


def _holds_a_store(config: str, agent: str) -> bool:
    from agentkernel.roles import OKFCapability

    capability = OKFCapability.from_config(config)
    return capability is not None and capability.stores.role_of(agent) is not None


def _serve_roles(args: argparse.Namespace, agent: str | None = None) -> None:
    """Serve every agent of ``--config`` at once: each caller's identity names its agent.

    Bundles, SQL and curated stores alike: one authentication, one audit trail, one set of
    limits; each identity gets the tools its roles give (a curator of a store also gets
    ``knowledge_retire``, which asks the person first). With ``agent`` (``--agent NAME``
    without authentication: stdio, or HTTP on loopback), every caller is that agent.
    """
    from agentkernel.cli.serving import Served, serve_from_args
    from agentkernel.knowledgebase.knowledgebuilder import KnowledgeBuilder
    from agentkernel.mcp.store import retire_tools
    from agentkernel.roles import OKFCapability

    if args.agent and agent is None:
        raise AKConfigError(
            "With --auth-tokens/--auth-jwks each caller's identity names its agent: drop "
            f"--agent {args.agent}."
        )
    capability = OKFCapability.from_config(args.config)
    if capability is None:
        raise AKConfigError(f"{args.config} has no okf block: nothing to serve.")
    capability.background = True  # bundles load on threads: the server listens at once
    databases = capability.databases()
    stores = capability.stores
    # every store opened now: a bad one fails at startup, not at some caller's first request
    builder = KnowledgeBuilder([capability.manager(db) for db in databases]) if databases else None
    stores.open_all()
    agents = set(capability.agents())

    def per_identity(identity: str) -> Served:
        if identity not in agents:
            return Served([], None, f"{identity!r} holds no role in any database: no tools.")
        roles = list(capability.roles_of(identity))
        own = KnowledgeBuilder([capability.manager(db) for db in roles]) if roles else None
        tools: list[Any] = capability.tools_for(identity)
        asking: list[Any] = []
        held = stores.role_of(identity)
        if held is not None and held[1] == "curator":
            listed, asks = retire_tools(stores.store(held[0]))
            tools.append(listed)
            asking.append(asks)
        return Served(tools, own, capability.instructions_for(identity), asking)

    served_databases = {**(builder.backends if builder else {}), **stores.opened()}
    if agent is None:
        serve_from_args(
            args,
            builder,
            tools=[],
            writes=[],
            per_identity=per_identity,
            databases=served_databases,
        )
        return
    served = per_identity(agent)
    writes = [*capability.writable_for(agent)]
    reached = [*capability.roles_of(agent)]
    held = stores.role_of(agent)
    if held is not None:
        reached.append(held[0])
        if held[1] != "consumer":
            writes.append(held[0])
    mode = f"{len(served.tools)} tools over {', '.join(reached)}; " + (
        f"{agent} writes to {', '.join(writes)}" if writes else f"{agent}'s roles grant no writes"
    )
    serve_from_args(
        args,
        builder,
        tools=[],
        writes=[],
        per_identity=lambda _caller: served,
        databases=served_databases,
        mode=mode,
    )


register = subcommand(
    "serve",
    run,
    _arguments,
    help="serve the knowledge tools over MCP (read-only unless --writable)",
    description="Serve the knowledge tools over MCP, on stdio or streamable HTTP. The "
    "server is read-only unless --writable (or, with --config --agent, the agent's role) "
    "grants writes; its startup line on stderr says which.",
)
