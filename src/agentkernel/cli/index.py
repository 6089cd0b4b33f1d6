"""``agentkernel-kb index``: build or update a shared bundle index (a Lance dataset).

Run it as a job after each bundle change, or on a schedule: it lists the bundle, reads only
new and changed documents, and commits one new version of the index, which every
``OKFManager(store, index=...)`` picks up at its next refresh. With ``--embedder`` the index
also holds each concept's vectors (only new and changed concepts are embedded, through the
vector cache), for ``OKFManager(store, index=..., embedder=...)``.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator

from agentkernel.cli._bundle import BUNDLE_HELP, add_embedder_argument, index_options
from agentkernel.cli._options import subcommand
from agentkernel.errors import AKError


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("bundle", metavar="PATH|URI", help=BUNDLE_HELP)
    parser.add_argument(
        "--to", required=True, metavar="INDEX_URI", help="the index: s3://bucket/kb.lance or a path"
    )
    parser.add_argument(
        "--index-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an object-store option for the index (aws_endpoint=..., allow_http=true); repeat",
    )
    parser.add_argument(
        "--replace",
        action="store_true",
        help="rebuild an index that was built from another bundle (its rows are deleted)",
    )
    parser.add_argument(
        "--max-concepts", type=int, default=None, help="the most concepts indexed (5,000,000)"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    # --embedder: store each concept's vectors, for hybrid search
    add_embedder_argument(parser, lexical=False)


def run(args: argparse.Namespace) -> int:
    """Index the bundle and print what changed.

    Args:
        args: The parsed arguments.

    Returns:
        0 on success.

    Raises:
        AKConfigError: An ``--index-option`` is not ``KEY=VALUE``.
        KnowledgeError: The index refused the run (another bundle's, another model's) or
            Lance failed (one line, what to check).
    """
    from agentkernel.cli._progress import progress_bar
    from agentkernel.knowledgebase.okf.bundleindex.indexer import (
        DEFAULT_MAX_CONCEPTS,
        index_bundle,
    )
    from agentkernel.storage.base import DocumentStore

    options = index_options(args.index_option)
    store = DocumentStore.from_uri(args.bundle, writable=False)
    with progress_bar("listing the bundle", show=not args.quiet) as update, lance_errors(args.to):
        stats = index_bundle(
            store,
            args.to,
            storage_options=options,
            max_concepts=args.max_concepts or DEFAULT_MAX_CONCEPTS,
            progress=lambda phase, done, total: update(done, total, phase),
            embedder=args.embedder,
            cache_dir=args.vector_cache,
            replace=args.replace,
        )
    from types import SimpleNamespace

    from agentkernel.cli._bundle import skipped_summary

    note = skipped_summary(args.bundle, SimpleNamespace(diagnostics=list(stats.skipped)))
    if note:
        print(note, file=sys.stderr)
    verdict = f"version {stats.version}" if stats.committed else "unchanged"
    # one plain line: a script greps it, so no wrapping at the terminal width and no markup
    print(
        f"{args.to}: {verdict}; listed {stats.listed}, read {stats.reads}, "
        f"upserted {stats.upserted}, deleted {stats.deleted} in {stats.seconds:.1f} s"
        + (f" ({stats.attempts} attempts)" if stats.attempts > 1 else "")
        + (f"; embedded {stats.embedded} (model {args.embedder})" if args.embedder else "")
    )
    return 0


@contextlib.contextmanager
def lance_errors(index_uri: str) -> Iterator[None]:
    """Turn an unexpected Lance failure into one line saying what to check.

    Args:
        index_uri: The index, for the message.

    Yields:
        Nothing.

    Raises:
        KnowledgeError: Lance (or pyarrow) failed inside the block.
    """
    from agentkernel.knowledgebase.errors import KnowledgeError
    from agentkernel.knowledgebase.okf.bundleindex.lancesdk import one_line

    try:
        yield
    except (AKError, KnowledgeError, FileNotFoundError, PermissionError):
        raise
    except Exception as exc:
        raise KnowledgeError(
            f"the bundle index {index_uri} could not be written ({one_line(exc)}). Check "
            "--to and the --index-option values (aws_endpoint, aws_region, credentials), "
            "then run again: a failed run leaves the last committed version served."
        ) from exc


register = subcommand(
    "index",
    run,
    _arguments,
    help="build or update a bundle's shared index (Lance; the lancedb extra)",
)
