"""Open a bundle named on the command line: a path or any ``DocumentStore.from_uri`` form."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentkernel.knowledgebase.okf.manager import OKFManager


def add_bundle_argument(parser: argparse.ArgumentParser) -> None:
    """Add the positional bundle argument shared by the bundle subcommands.

    Args:
        parser: The subcommand's parser.
    """
    parser.add_argument(
        "bundle",
        metavar="PATH|URI",
        help="the OKF bundle: a directory, file:///dir, s3://bucket/prefix or python:pkg.Store",
    )
    parser.add_argument("--name", default="OKF", help="the backend name (default: OKF)")
    add_embedder_argument(parser)


def add_embedder_argument(parser: argparse.ArgumentParser) -> None:
    """Add ``--embedder`` (hybrid search) and ``--vector-cache``.

    Args:
        parser: The subcommand's parser.
    """
    parser.add_argument(
        "--embedder",
        metavar="PATH_OR_NAME",
        help="search hybrid with this embedder: 'default' (the packaged all-MiniLM-L6-v2), "
        "a sentence-transformers model folder, or http(s)://host/v1#model",
    )
    parser.add_argument(
        "--vector-cache",
        metavar="DIR",
        help="the vector cache (default: $XDG_CACHE_HOME/agentkernel/vectors)",
    )


def open_bundle(
    location: str,
    name: str = "OKF",
    *,
    writable: bool = False,
    embedder: str | None = None,
    cache_dir: str | None = None,
) -> OKFManager:
    """Walk a bundle once for a command; read-only unless asked otherwise.

    Args:
        location: A path or store URI.
        name: The backend name the tools use.
        writable: Whether writes are allowed (only ``serve`` ever asks).
        embedder: ``--embedder``: makes search hybrid.
        cache_dir: ``--vector-cache``.

    Returns:
        A connected manager that never refreshes on its own.
    """
    from agentkernel.knowledgebase.okf.manager import OKFManager
    from agentkernel.knowledgebase.store.base import DocumentStore

    kwargs = {} if writable else {"writable": False}
    store = DocumentStore.from_uri(location, **kwargs)
    return OKFManager(
        store, name=name, refresh_seconds=None, embedder=embedder, cache_dir=cache_dir
    )
