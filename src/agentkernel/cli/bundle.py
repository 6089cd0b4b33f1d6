"""``schema``, ``search``, ``fetch`` and ``browse``: the agent tools' answers, in a terminal.

Each command builds the same ``KnowledgeBuilder`` tools an agent gets and prints what the
tool returns, so what you read here is exactly what the model would read.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from agentkernel.cli._bundle import add_bundle_argument, open_bundle


def register(subparsers: Any) -> None:
    """Register the four bundle subcommands.

    Args:
        subparsers: The top-level parser's subparsers.
    """
    schema = subparsers.add_parser("schema", help="what get_schemas() tells an agent")
    add_bundle_argument(schema)
    schema.set_defaults(handler=_runner("get_schemas", lambda a: ()))

    search = subparsers.add_parser("search", help="search_kb: rank concepts for a query")
    add_bundle_argument(search)
    search.add_argument("query", help="keywords or a question")
    search.add_argument("-n", "--limit", type=int, default=5, help="results (default 5)")
    search.set_defaults(handler=_runner("search_kb", lambda a: (a.query, a.limit)))

    fetch = subparsers.add_parser("fetch", help="fetch_kb: whole concepts by id")
    add_bundle_argument(fetch)
    fetch.add_argument("ids", metavar="ID[,ID...]", help="concept ids, comma-separated")
    fetch.set_defaults(handler=_runner("fetch_kb", lambda a: (a.ids,)))

    browse = subparsers.add_parser("browse", help="browse_kb: a directory's index or listing")
    add_bundle_argument(browse)
    browse.add_argument("path", nargs="?", default="", metavar="DIR", help="default: the root")
    browse.add_argument("-n", "--limit", type=int, default=50, help="entries (default 50)")
    browse.set_defaults(handler=_runner("browse_kb", lambda a: (a.path, a.limit)))


def _runner(
    tool_name: str, arguments: Callable[[argparse.Namespace], tuple[Any, ...]]
) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        from agentkernel.knowledgebase.knowledgebuilder import KnowledgeBuilder

        manager = open_bundle(
            args.bundle, args.name, embedder=args.embedder, cache_dir=args.vector_cache
        )
        tools = {tool.__name__: tool for tool in KnowledgeBuilder([manager]).build(writable=False)}
        tool = tools[tool_name]
        call_args = arguments(args)
        result = tool(*call_args) if tool_name == "get_schemas" else tool(args.name, *call_args)
        print(result)
        return 0

    return run
