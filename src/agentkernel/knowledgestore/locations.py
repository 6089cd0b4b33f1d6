"""Open a curated store from a location: a folder, an S3 prefix or a SQLite file.

Public, because two packages open stores by location: the command line (``store serve``) and
the configuration (``okf.stores`` in ``config.yaml``, :mod:`agentkernel.roles`).

The locations are the ones bundles take (:meth:`agentkernel.storage.DocumentStore.from_uri`):
a path or ``file:///path`` is a knowledge folder, ``s3://bucket/prefix`` keeps the pages in
object storage; ``sqlite:///path/pages.sqlite`` (or a path with ``sqlite=True``) keeps them
in SQLite; ``postgresql://user@host/database`` keeps them in PostgreSQL (the ``postgres``
extra).
"""

from __future__ import annotations

import logging
from pathlib import Path
from urllib.parse import unquote

from agentkernel.errors import AKConfigError
from agentkernel.knowledgestore.base import KnowledgeStore

logger = logging.getLogger(__name__)

__all__ = ["open_store"]

_SQLITE = "sqlite://"


def open_store(
    path: str | Path, *, sqlite: bool = False, base_dir: Path | None = None
) -> KnowledgeStore:
    """Open the store a serving command (or a configured database) names.

    Args:
        path: The knowledge folder (a path or ``file:///path``), ``s3://bucket/prefix``, or
            ``sqlite:///path`` for a SQLite file, ``postgresql://...`` for a PostgreSQL
            database; with ``sqlite`` a path is the SQLite file.
        sqlite: Open a :class:`SQLiteKnowledgeStore` at ``path``.
        base_dir: Where a relative path resolves (the configuration file's folder).

    Returns:
        The opened store (nothing read yet).

    Raises:
        AKConfigError: The location has a scheme no store takes, or ``sqlite`` is given with
            a URI.
    """
    location = str(path)
    scheme = location.partition("://")[0].lower() if "://" in location else ""
    if sqlite and scheme:
        raise AKConfigError(f"--sqlite takes a file path, got {location!r}.")
    if scheme == "sqlite" or sqlite:
        from agentkernel.knowledgestore.sqlite_store import SQLiteKnowledgeStore

        file = unquote(location[len(_SQLITE) :]) if scheme else location
        if scheme and not file.startswith("/"):
            raise AKConfigError(
                f"A SQLite store needs 'sqlite:///absolute/path', got {location!r}."
            )
        return SQLiteKnowledgeStore(_resolved(file, base_dir))
    if scheme in ("postgresql", "postgres"):
        from agentkernel.knowledgestore.postgres_store import PostgreSQLKnowledgeStore

        return PostgreSQLKnowledgeStore(location)
    if scheme == "s3":
        from agentkernel.knowledgestore.bundle_store import BundleKnowledgeStore
        from agentkernel.storage.base import DocumentStore

        return BundleKnowledgeStore(DocumentStore.from_uri(location))
    if scheme not in ("", "file"):
        raise AKConfigError(
            f"Unknown store location {location!r}: use a folder path, file:///path, "
            "s3://bucket/prefix, sqlite:///path/pages.sqlite or postgresql://host/database."
        )
    if scheme == "file":
        host, _, rest = location[len("file://") :].partition("/")
        if host not in ("", "localhost"):
            raise AKConfigError(f"A file URI names no remote host, got {location!r}.")
        location = "/" + unquote(rest)
    from agentkernel.knowledgestore.file_store import FileKnowledgeStore

    folder = _resolved(location, base_dir)
    store = FileKnowledgeStore(folder)
    ignored = store.ignored_files()
    if ignored:
        logger.warning(
            "%s holds %d markdown file(s) that are not this store's pages (e.g. %s): they are "
            "not served, and the store never writes over them.",
            folder,
            len(ignored),
            ignored[0],
        )
    return store


def _resolved(path: str, base_dir: Path | None) -> Path:
    found = Path(path).expanduser()
    return found if base_dir is None or found.is_absolute() else base_dir / found
