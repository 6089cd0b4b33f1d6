"""Serve a knowledge store over MCP (stdio): ``python -m agentkernel.knowledgestore DIR``.

``DIR`` is a knowledge folder (a :class:`FileKnowledgeStore`); with ``--sqlite`` the path is a
SQLite database instead. ``--interactive`` adds ``knowledge_retire``, which asks the person
through MCP elicitation. The ``agentkernel-kb store serve`` command opens the store the same way
(:func:`~agentkernel.knowledgestore._open.open_store`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from agentkernel.knowledgestore._open import open_store


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

    store = open_store(args.path, sqlite=args.sqlite)
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
