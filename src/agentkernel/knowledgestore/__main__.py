"""Serve a knowledge store over MCP (stdio): ``python -m agentkernel.knowledgestore DIR``.

``DIR`` is a knowledge folder (a :class:`FileKnowledgeStore`); with ``--sqlite`` the path is a
SQLite database instead. ``--interactive`` adds ``knowledge_retire``, which asks the person
through MCP elicitation. The ``agentkernel-kb store serve`` command calls the same function.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from agentkernel.knowledgestore.base import KnowledgeStore


def main(argv: Sequence[str] | None = None) -> None:
    """Parse the command line and serve the store until the client disconnects.

    Args:
        argv: The arguments (``sys.argv[1:]`` when ``None``).
    """
    parser = argparse.ArgumentParser(
        prog="python -m agentkernel.knowledgestore",
        description="Serve a knowledge store's knowledge_* tools over MCP (stdio).",
    )
    parser.add_argument("path", help="the knowledge folder (or, with --sqlite, the database file)")
    parser.add_argument("--sqlite", action="store_true", help="PATH is a SQLite database")
    parser.add_argument(
        "--interactive",
        action="store_true",
        help="offer knowledge_retire, which asks the person through MCP elicitation",
    )
    args = parser.parse_args(argv)
    from agentkernel.mcp.store import serve_knowledge_store

    store: KnowledgeStore
    if args.sqlite:
        from agentkernel.knowledgestore.sqlite_store import SQLiteKnowledgeStore

        store = SQLiteKnowledgeStore(args.path)
    else:
        from agentkernel.knowledgestore.file_store import FileKnowledgeStore

        store = FileKnowledgeStore(args.path)
        ignored = store.ignored_files()
        if ignored:
            logging.getLogger(__name__).warning(
                "%s holds %d markdown file(s) that are not this store's pages (e.g. %s): they "
                "are not served, and the store never writes over them.",
                args.path,
                len(ignored),
                ignored[0],
            )
    try:
        serve_knowledge_store(store, args.interactive)
    finally:
        store.close()


if __name__ == "__main__":
    from agentkernel.errors import AKError

    try:
        main()
    except AKError as exc:  # a missing extra, say: one line, not a traceback
        print(f"python -m agentkernel.knowledgestore: error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
