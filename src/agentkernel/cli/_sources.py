"""Where ``ask`` and ``serve`` get their knowledge: bundle paths, or a config.yaml okf block."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from agentkernel.cli._bundle import (
    add_embedder_argument,
    add_index_argument,
    add_name_argument,
    chosen_embedder,
    open_bundles,
)
from agentkernel.cli._options import add_options
from agentkernel.errors import AKConfigError

if TYPE_CHECKING:
    from agentkernel.knowledgebase.knowledgebuilder import KnowledgeBuilder

Tool = Callable[..., str]


@dataclass
class Sources:
    """The tools an agent gets from the command line's sources.

    Attributes:
        tools: The knowledge tool callables, in the builder's order.
        backends: The backend names the tools serve.
        instructions: Extra agent instructions (the OKF navigation protocol for ``--config``).
        builder: The builder over the opened backends, whose declarations decide the MCP
            annotations and which backends take writes.
        writes: The backends ``write_kb`` may write to (empty when it is not offered).
    """

    tools: list[Tool]
    backends: list[str]
    instructions: str = ""
    builder: KnowledgeBuilder | None = None
    writes: list[str] = field(default_factory=list)


def add_source_arguments(parser: argparse.ArgumentParser, *, names: bool = True) -> None:
    """Add ``PATH...``, ``--config FILE``, ``--agent NAME`` (and ``--name``) to a subcommand.

    Args:
        parser: The subcommand's parser.
        names: Add ``--name`` too (``serve`` gets it from the MCP server's options).
    """
    # fmt: off
    add_options(
        parser,
        ("paths", "PATH", "OKF bundles (directories, file://, s3://bucket/prefix)",
         {"nargs": "*"}),
        ("--config", "FILE", "a config.yaml with an okf block"),
        ("--agent", "NAME",
         "with --config: that agent's role-filtered tools (default: every database, read)"),
    )
    # fmt: on
    if names:
        add_name_argument(parser)
    add_embedder_argument(parser)
    add_index_argument(parser)


def resolve_sources(
    args: argparse.Namespace, *, writable: bool, background: bool = False
) -> Sources:
    """Open what the arguments name.

    Args:
        args: Parsed arguments from a parser extended by :func:`add_source_arguments`.
        writable: Whether ``write_kb`` may be offered for bundle paths. With ``--config``
            and ``--agent`` the agent's roles decide instead (a producer or curator writes).
        background: Load the bundles on threads (a server listens before they are read;
            each says how far it is in ``readiness()``).

    Returns:
        The tools and their backends.

    Raises:
        AKConfigError: No source, both kinds of source, an unknown agent, a bad config, or
            bundles that would share a name.
    """
    if args.config and args.paths:
        raise AKConfigError("Give bundle paths or --config FILE, not both.")
    if args.agent and not args.config:
        raise AKConfigError("--agent NAME goes with --config FILE.")
    if args.config and getattr(args, "index", None):
        raise AKConfigError(
            "--index goes with a bundle path; with --config give index: per database."
        )
    if args.config:
        if getattr(args, "names", None):
            raise AKConfigError("--name names bundle paths; with --config the databases are named.")
        return _from_config(args.config, args.agent, background)
    if not args.paths:
        raise AKConfigError("Name a bundle (PATH) or a configuration (--config FILE).")
    return _from_paths(
        args.paths,
        getattr(args, "names", None),
        writable=writable,
        embedder=chosen_embedder(args),
        cache_dir=getattr(args, "vector_cache", None),
        index=getattr(args, "index", None),
        index_option=getattr(args, "index_option", ()),
        whole=bool(getattr(args, "full", False)),
        background=background,
    )


def _from_paths(
    paths: list[str],
    names: list[str] | None,
    *,
    writable: bool,
    embedder: str | None = None,
    cache_dir: str | None = None,
    index: str | None = None,
    index_option: Sequence[str] = (),
    whole: bool = False,
    background: bool = False,
) -> Sources:
    from agentkernel._tooling.budget import DEFAULT_ANSWER_CHARS
    from agentkernel.knowledgebase.knowledgebuilder import KnowledgeBuilder

    managers = open_bundles(
        paths,
        names,
        writable=writable,
        embedder=embedder,
        cache_dir=cache_dir,
        index=index,
        index_option=index_option,
        background=background,
    )
    builder = KnowledgeBuilder(managers, answer_chars=None if whole else DEFAULT_ANSWER_CHARS)
    tools = builder.build(writable=writable)
    return Sources(tools, list(builder.backends), builder=builder, writes=_writes(builder, tools))


def _writes(builder: KnowledgeBuilder, tools: list[Tool]) -> list[str]:
    if not any(tool.__name__ == "write_kb" for tool in tools):
        return []
    return [name for name, kb in builder.backends.items() if kb.capabilities.writable]


def _from_config(path: str, agent: str | None, background: bool = False) -> Sources:
    from agentkernel.knowledgebase.knowledgebuilder import KnowledgeBuilder
    from agentkernel.roles import OKFCapability

    capability = OKFCapability.from_config(path)
    if capability is None:
        raise AKConfigError(f"{path} has no okf block: nothing to serve.")
    capability.background = background
    if agent is None:
        databases = capability.databases()
        runners = [r for db in databases if (r := capability.computations(db)) is not None]
        builder = KnowledgeBuilder(
            [capability.manager(db) for db in databases], computations=runners
        )
        return Sources(builder.build(writable=False), databases, builder=builder)
    if agent not in capability.agents():
        raise AKConfigError(f"Agent {agent!r} holds no role in {path}: {capability.agents()}")
    roles = list(capability.roles_of(agent))
    tools = capability.tools_for(agent)
    # the same shared managers the tools open on first use, opened now: a bad store fails
    # at startup, and the annotations come from the backends' declarations
    runners = [r for db in roles if (r := capability.computations(db)) is not None]
    builder = KnowledgeBuilder([capability.manager(db) for db in roles], computations=runners)
    granted = set(capability.writable_for(agent))
    writes = [db for db in _writes(builder, tools) if db in granted]
    return Sources(tools, roles, capability.instructions_for(agent), builder, writes)
