"""``schema``, ``search``, ``fetch`` and ``browse``: the agent tools' answers, in a terminal.

Each command builds the same ``KnowledgeBuilder`` tools an agent gets and prints what the
tool returns, so what you read here is exactly what the model would read. The bundle is
named as ``serve`` names it (its folder's name unless ``--name`` says otherwise). ``schema``
and ``search`` say on stderr how many files were skipped and why.

Answers are cut at the agent's answer budget (20,000 characters), said on stderr, with the
note naming the ``fetch`` command that reads on; ``--full`` prints the whole text. Exit status,
by one rule: 2 for a usage error (an empty query or id, a limit outside 1 to 1000: argparse's
message on stderr); 1 when the tool refused
the call or did not find all it was asked for (its message on stderr, whatever was found on
stdout); 0 otherwise.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

from agentkernel.cli._bundle import (
    add_bundle_argument,
    add_full_argument,
    chosen_embedder,
    nonempty,
    open_bundles,
    result_limit,
    search_mode_line,
    skipped_summary,
)
from agentkernel.cli._cuts import as_commands, fetch_command, say_cut


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
    search.add_argument("query", type=nonempty, help="keywords or a question")
    search.add_argument("-n", "--limit", type=result_limit, default=5, help="results (default 5)")
    search.set_defaults(handler=_runner("search_kb", lambda a: (a.query, a.limit)))

    fetch = subparsers.add_parser("fetch", help="fetch_kb: whole concepts by id")
    add_bundle_argument(fetch)
    fetch.add_argument(
        "ids", type=nonempty, metavar="ID[,ID...]", help="concept ids, comma-separated"
    )
    fetch.set_defaults(handler=_runner("fetch_kb", lambda a: (a.ids,)))

    browse = subparsers.add_parser("browse", help="browse_kb: a directory's index or listing")
    add_bundle_argument(browse)
    browse.add_argument("path", nargs="?", default="", metavar="DIR", help="default: the root")
    browse.add_argument("-n", "--limit", type=result_limit, default=50, help="entries (default 50)")
    for parser in (schema, search, fetch, browse):
        add_full_argument(parser)
    browse.set_defaults(handler=_runner("browse_kb", lambda a: (a.path, a.limit)))


def _runner(
    tool_name: str, arguments: Callable[[argparse.Namespace], tuple[Any, ...]]
) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        from agentkernel._tooling.budget import DEFAULT_ANSWER_CHARS as DEFAULT
        from agentkernel.knowledgebase.knowledgebuilder import KnowledgeBuilder

        (manager,) = open_bundles(
            [args.bundle],
            args.names,
            # fetch and browse never search: no embedder (nor its index's phrase pairs)
            embedder=chosen_embedder(args) if tool_name in _SEARCHING else None,
            cache_dir=args.vector_cache,
            index=args.index,
            index_option=args.index_option,
        )
        name = manager.backend_name
        if tool_name in _NOTED:
            note = skipped_summary(name, manager)
            if note:
                print(note, file=sys.stderr)
        builder = KnowledgeBuilder([manager], answer_chars=None if args.full else DEFAULT)
        tools = {tool.__name__: tool for tool in builder.build(writable=False)}
        tool = tools[tool_name]
        call_args = arguments(args)
        result = tool(*call_args) if tool_name == "get_schemas" else tool(name, *call_args)
        if tool_name == "search_kb" and not getattr(args, "quiet", False):
            print(search_mode_line(manager), file=sys.stderr)  # which mode answered
        reading_on = fetch_command(args.bundle, index=args.index, options=args.index_option)
        return report(as_commands(result, {name: reading_on}), args.command)

    return run


# the commands whose answer depends on the search mode (schema says it, search uses it)
_SEARCHING = frozenset({"get_schemas", "search_kb"})
# the commands whose answer silently depends on every file having been read
_NOTED = frozenset({"get_schemas", "search_kb"})


def report(result: str, command: str) -> int:
    """Print a tool's answer by the command line's one rule, and give the exit status.

    A result goes to stdout (0); a refusal to stderr (1); a fetch that missed some ids prints
    what it found on stdout and the rest of its answer (``Not found: ...`` and why) on stderr (1).
    A cut answer is said on stderr (:func:`~agentkernel.cli._cuts.say_cut`). The parts are the
    ones the answer carries (:class:`~agentkernel._tooling.result.ToolResult`), never read back
    from its text.

    Args:
        result: What the tool returned.
        command: The command's name, for the stderr lines.

    Returns:
        The exit status.
    """
    from agentkernel._tooling.result import ToolResult, is_error

    failed = is_error(result)
    if not failed:
        say_cut([result], command)
    missing = result.missing if isinstance(result, ToolResult) else ()
    if not missing:
        print(result, file=sys.stderr if failed else sys.stdout)
        return 1 if failed else 0
    assert isinstance(result, ToolResult)
    note = result.read_on.note if result.read_on is not None else ""
    found = _without_end(_without_end(result, note), result.missing_note)
    if not failed:
        print("\n".join(part for part in (found, note) if part))
    told = result.missing_note.split("\n")[1:]  # the first line names the ids; why follows
    print("\n".join([_said_missing(missing), *told]), file=sys.stderr)
    return 1


def _without_end(text: str, part: str) -> str:
    """``text`` without the line(s) ``part`` it ends with (``text`` when ``part`` is empty)."""
    return text.removesuffix(f"\n{part}") if part else text


def _said_missing(ids: Sequence[str]) -> str:
    """The ids not found, as the command line says it."""
    return (
        f"Not found: {', '.join(ids)} (ids are paths without '.md'; 'search' and "
        "'browse' show them)."
    )
