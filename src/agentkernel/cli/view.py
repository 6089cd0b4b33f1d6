"""``view``: write one self-contained HTML page showing a bundle as a graph of concepts.

The page holds everything (data, script, style); it loads nothing from anywhere, so it can be
mailed, archived or opened from a CI artifact. Concepts are nodes coloured by type and ringed
by trust tier; links are directed edges; a searchable list, backlinks, stale badges and each
concept's rendered page complete it.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from agentkernel.cli._bundle import BUNDLE_HELP
from agentkernel.cli._options import subcommand

logger = logging.getLogger(__name__)


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("bundle", metavar="PATH|URI", help=BUNDLE_HELP)
    parser.add_argument(
        "-o", "--output", required=True, metavar="FILE.html", help="the page to write"
    )
    parser.add_argument("--title", default=None, help="the page title (default: from the path)")


def run(args: argparse.Namespace) -> int:
    """Read the bundle and write the page.

    Args:
        args: ``bundle``, ``output`` and ``title``.

    Returns:
        0 when the page was written; 2 when the bundle could not be read or the page could
        not be written (one line on stderr says why), as for every expected failure.
    """
    from agentkernel.cli.viewer.bundle import collect
    from agentkernel.cli.viewer.page import build_page
    from agentkernel.errors import AKError
    from agentkernel.knowledgebase.errors import KnowledgeError
    from agentkernel.knowledgebase.okf.manager import OKFManager
    from agentkernel.storage.base import DocumentStore
    from agentkernel.storage.fs import atomic_write

    output = Path(args.output)
    try:
        store = DocumentStore.from_uri(args.bundle, writable=False)
        try:
            manager = OKFManager(store, refresh_seconds=None)
            view = collect(manager, store, title=args.title)
        finally:
            store.close()
    except (AKError, KnowledgeError, OSError) as exc:
        print(f"agentkernel-kb view: cannot read {args.bundle}: {exc}", file=sys.stderr)
        return 2
    page = build_page(view)
    try:
        if not output.parent.is_dir():  # a typo in the path, not a folder to create
            raise FileNotFoundError(f"no folder {output.parent}")
        atomic_write(output, page)
    except OSError as exc:
        print(f"agentkernel-kb view: cannot write {output}: {exc}", file=sys.stderr)
        return 2
    skipped = f", {len(view.diagnostics)} diagnostic(s)" if view.diagnostics else ""
    print(f"wrote {output} ({len(view.concepts)} concepts{skipped})")
    return 0


register = subcommand(
    "view",
    run,
    _arguments,
    help="write a self-contained HTML page showing a bundle as a graph",
    description=(
        "Write one HTML file (no network access, nothing loaded from anywhere) showing the "
        "bundle as a graph of concepts and links, with a searchable list, type colours, "
        "trust and stale badges, backlinks and each concept's rendered page."
    ),
)
