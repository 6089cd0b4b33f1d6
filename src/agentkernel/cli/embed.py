"""``embed PATH``: fill the vector cache for a bundle ahead of time, with a progress bar.

Run it once (in a build step, a CI job or an init container) against the cache folder the
servers will use, and every server start then reads vectors instead of computing them.
"""

from __future__ import annotations

import argparse
from typing import Any

from agentkernel.cli._bundle import add_bundle_argument, open_bundles


def register(subparsers: Any) -> None:
    """Register the ``embed`` subcommand.

    Args:
        subparsers: The top-level parser's subparsers.
    """
    parser = subparsers.add_parser(
        "embed", help="embed a bundle's concepts into the vector cache ahead of time"
    )
    add_bundle_argument(parser)
    parser.set_defaults(handler=run, embedder="default")


def run(args: argparse.Namespace) -> int:
    """Embed every concept the cache lacks and report the counts.

    Args:
        args: The parsed arguments.

    Returns:
        0 when every concept has a vector, 1 when embedding failed.
    """
    from rich.console import Console

    from agentkernel.cli._progress import progress_bar
    from agentkernel.knowledgebase.okf.vectors import concept_texts, embed_concepts
    from agentkernel.retrieval.semantic import SemanticIndex

    console = Console(stderr=True)
    index = SemanticIndex(args.embedder or "default", args.vector_cache)
    (manager,) = open_bundles([args.bundle], args.names)  # lexical walk; vectors next
    concepts = manager.served_concepts()
    with progress_bar("embedding") as update:
        vectors = embed_concepts(index, concepts, lambda done: update(done, len(concepts)))
    if concepts and not vectors:
        console.print(f"[red]embedding failed:[/red] {index.degraded}")
        return 1
    texts = len({text for concept in concepts for text in concept_texts(concept)})
    print(
        f"{len(concepts)} concepts, {texts} texts: {index.embedded} embedded now, "
        f"{texts - index.embedded} already cached; model {index.embedder.model_id}; "
        f"cache {index.cache.folder}"
    )
    return 0
