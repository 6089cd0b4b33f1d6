"""Where ``ask`` and ``serve`` get their knowledge: bundle paths, or a config.yaml okf block."""

from __future__ import annotations

import argparse
import posixpath
from collections.abc import Callable
from dataclasses import dataclass

from agentkernel.errors import AKConfigError

Tool = Callable[..., str]


@dataclass
class Sources:
    """The tools an agent gets from the command line's sources.

    Attributes:
        tools: The knowledge tool callables, in the builder's order.
        backends: The backend names the tools serve.
        instructions: Extra agent instructions (the OKF navigation protocol for ``--config``).
    """

    tools: list[Tool]
    backends: list[str]
    instructions: str = ""


def add_source_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``PATH...``, ``--config FILE`` and ``--agent NAME`` to a subcommand.

    Args:
        parser: The subcommand's parser.
    """
    parser.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="OKF bundles (directories, file://, s3://bucket/prefix)",
    )
    parser.add_argument("--config", metavar="FILE", help="a config.yaml with an okf block")
    parser.add_argument(
        "--agent",
        metavar="NAME",
        help="with --config: that agent's role-filtered tools (default: every database, read)",
    )
    from agentkernel.cli._bundle import add_embedder_argument

    add_embedder_argument(parser)


def resolve_sources(args: argparse.Namespace, *, writable: bool) -> Sources:
    """Open what the arguments name.

    Args:
        args: Parsed arguments from a parser extended by :func:`add_source_arguments`.
        writable: Whether ``write_kb`` may be part of the tools.

    Returns:
        The tools and their backends.

    Raises:
        AKConfigError: No source, both kinds of source, an unknown agent, or a bad config.
    """
    if args.config and args.paths:
        raise AKConfigError("Give bundle paths or --config FILE, not both.")
    if args.agent and not args.config:
        raise AKConfigError("--agent NAME goes with --config FILE.")
    if args.config:
        return _from_config(args.config, args.agent, writable=writable)
    if not args.paths:
        raise AKConfigError("Name a bundle (PATH) or a configuration (--config FILE).")
    embedder = getattr(args, "embedder", None)
    return _from_paths(
        args.paths, writable=writable, embedder=embedder, cache_dir=args.vector_cache
    )


def _from_paths(
    paths: list[str], *, writable: bool, embedder: str | None = None, cache_dir: str | None = None
) -> Sources:
    from agentkernel.cli._bundle import open_bundle
    from agentkernel.knowledgebase.knowledgebuilder import KnowledgeBuilder

    names = _backend_names(paths)
    managers = [
        open_bundle(p, n, writable=writable, embedder=embedder, cache_dir=cache_dir)
        for p, n in zip(paths, names, strict=True)
    ]
    tools = KnowledgeBuilder(managers).build(writable=writable)
    return Sources(tools, names)


def _backend_names(paths: list[str]) -> list[str]:
    if len(paths) == 1:
        return ["OKF"]
    names: list[str] = []
    for path in paths:
        base = posixpath.basename(path.rstrip("/")) or "OKF"
        name, suffix = base, 2
        while name in names:
            name, suffix = f"{base}_{suffix}", suffix + 1
        names.append(name)
    return names


def _from_config(path: str, agent: str | None, *, writable: bool) -> Sources:
    from agentkernel.knowledgebase.knowledgebuilder import KnowledgeBuilder
    from agentkernel.okf import OKFCapability

    capability = OKFCapability.from_config(path)
    if capability is None:
        raise AKConfigError(f"{path} has no okf block: nothing to serve.")
    if agent is None:
        databases = capability.databases()
        tools = KnowledgeBuilder([capability.manager(db) for db in databases]).build(writable=False)
        return Sources(tools, databases)
    if agent not in capability.agents():
        raise AKConfigError(f"Agent {agent!r} holds no role in {path}: {capability.agents()}")
    tools = capability.tools_for(agent)
    if not writable:
        tools = [t for t in tools if t.__name__ != "write_kb"]
    return Sources(tools, list(capability.roles_of(agent)), capability.instructions_for(agent))
