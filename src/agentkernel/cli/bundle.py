"""``schema``, ``search``, ``fetch`` and ``browse``: the agent tools' answers, in a terminal.

Each command builds the same ``KnowledgeBuilder`` tools an agent gets and prints what the
tool returns, so what you read here is exactly what the model would read. The bundle is
named as ``serve`` names it (its folder's name unless ``--name`` says otherwise). ``schema``
and ``search`` say on stderr how many files were skipped and why; a ``fetch`` or ``browse``
that finds nothing says so once, on stderr, and exits 1.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from collections.abc import Callable
from typing import Any

from agentkernel.cli._bundle import add_bundle_argument, open_bundles, skipped_summary


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

        (manager,) = open_bundles(
            [args.bundle],
            args.names,
            embedder=args.embedder,
            cache_dir=args.vector_cache,
            index=args.index,
            index_option=args.index_option,
        )
        name = manager.backend_name
        if tool_name in _NOTED:
            note = skipped_summary(name, manager)
            if note:
                print(note, file=sys.stderr)
        tools = {tool.__name__: tool for tool in KnowledgeBuilder([manager]).build(writable=False)}
        tool = tools[tool_name]
        call_args = arguments(args)
        result = tool(*call_args) if tool_name == "get_schemas" else tool(name, *call_args)
        missing = _not_found(tool_name, result, args)
        if missing is None:
            print(result)
            return 0
        found, message = missing
        if found:
            print(found)
        print(message, file=sys.stderr)
        return 1

    return run


# the commands whose answer silently depends on every file having been read
_NOTED = frozenset({"get_schemas", "search_kb"})
_NOT_FOUND = re.compile(r"(?:\A|\n\n?)Not found: (\[.*\])\Z", re.DOTALL)


def _not_found(tool_name: str, result: str, args: argparse.Namespace) -> tuple[str, str] | None:
    """What was found and the one message for what was not, when a fetch or browse missed."""
    if tool_name == "browse_kb" and result == "No results.":
        where = f"directory or concept {args.path!r}" if args.path else "the root"
        return "", (
            f"Nothing at {where} in {args.bundle}: 'agentkernel-kb browse {args.bundle}' lists "
            "the top level, 'search' finds concepts by words."
        )
    if tool_name != "fetch_kb":
        return None
    match = _NOT_FOUND.search(result)
    if match is None:
        return None
    found = result[: match.start()]
    found = "" if found.strip() in ("", "No results.") else found
    return found, (
        f"Not found: {', '.join(ast.literal_eval(match.group(1)))} (ids are paths without "
        "'.md'; 'search' and 'browse' show them)."
    )
