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


def open_bundle(location: str, name: str = "OKF", *, writable: bool = False) -> OKFManager:
    """Walk a bundle once for a command; read-only unless asked otherwise.

    Args:
        location: A path or store URI.
        name: The backend name the tools use.
        writable: Whether writes are allowed (only ``serve`` ever asks).

    Returns:
        A connected manager that never refreshes on its own.
    """
    from agentkernel.knowledgebase.okf.manager import OKFManager
    from agentkernel.knowledgebase.store.base import DocumentStore

    kwargs = {} if writable else {"writable": False}
    store = DocumentStore.from_uri(location, **kwargs)
    return OKFManager(store, name=name, refresh_seconds=None)
