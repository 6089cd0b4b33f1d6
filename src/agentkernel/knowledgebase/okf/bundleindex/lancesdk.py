"""The one place the Lance SDKs are imported: opening and creating the index.

The indexer (and a manager's write-through) writes with ``lancedb``; readers open the
dataset with ``lance`` (pylance) alone, which imports in a quarter of the time (``lancedb``
loads its REST-namespace client, over a second on a busy machine) and reads the same files.
"""

from __future__ import annotations

import posixpath
import re
import threading
from collections.abc import Mapping
from typing import Any

from agentkernel.errors import AKConfigError

TABLE_SUFFIX = ".lance"
LOCAL_INDEX_CACHE_BYTES = 16 << 20
"""Lance's index cache for an index read from local disk (a folder, or the node cache).

Lance keeps the decoded posting lists of every term searched, by default up to gigabytes;
from local disk a list is decoded again in a millisecond or so, so 16 MB is enough and keeps
a pod's private memory down (``bench/RESULTS.md``, issue 24).
"""

LOCAL_METADATA_CACHE_BYTES = 4 << 20
"""Lance's metadata cache (manifests, file footers) for an index read from local disk.

Every version a pod switches to adds its manifest and footers; read from local disk they
cost a few milliseconds to read again, so 4 MB holds the served version's and keeps a pod
that switched versions often about 10 MB lower (``bench/RESULTS.md``, issue 24).
"""

_SESSION: list[Any] = []
_SESSION_LOCK = threading.Lock()


def local_session() -> Any:
    """The process's one Lance session for indexes read from local disk (bounded caches).

    Every version a pod opens shares it, so refreshing to version after version keeps one
    bounded index cache (:data:`LOCAL_INDEX_CACHE_BYTES`) and one metadata cache
    (:data:`LOCAL_METADATA_CACHE_BYTES`) instead of
    a pair per version (measured: 81 -> 135 MB over eight reopenings without it, 81 -> 115
    with it; ``bench/RESULTS.md``, issue 24).

    Returns:
        A ``lance.Session``.
    """
    with _SESSION_LOCK:
        if not _SESSION:
            import lance

            _SESSION.append(
                lance.Session(  # type: ignore[attr-defined, unused-ignore]  # exported without __all__
                    index_cache_size_bytes=LOCAL_INDEX_CACHE_BYTES,
                    metadata_cache_size_bytes=LOCAL_METADATA_CACHE_BYTES,
                )
            )
        return _SESSION[0]


def new_local_session() -> Any:
    """Replace the process's local session with a fresh one (its caches empty), and return it.

    After the node cache replaced damaged files, the old session's caches may still hold
    readers of the damaged copies; versions opened from here on read the files anew.

    Returns:
        A ``lance.Session``.
    """
    with _SESSION_LOCK:
        _SESSION.clear()
    return local_session()


# options of the node cache (bundleindex.opener), never passed to Lance
CACHE_OPTIONS = ("node_cache", "node_cache_bytes")


def lance_options(options: Mapping[str, str] | None) -> dict[str, str]:
    """The object-store options Lance takes: the node cache's own removed.

    Args:
        options: Index options as given.

    Returns:
        A copy without ``node_cache`` and ``node_cache_bytes``.
    """
    return {k: v for k, v in (options or {}).items() if k not in CACHE_OPTIONS}


def lancedb_module() -> Any:
    """Import ``lancedb`` on first use.

    Returns:
        The module.

    Raises:
        AKConfigError: The ``lancedb`` extra is not installed.
    """
    try:
        import lancedb
    except ImportError as exc:  # pragma: no cover - the extra is part of the test environment
        raise AKConfigError(
            "The bundle index needs the lancedb extra: pip install 'agentkernel[lancedb]'"
        ) from exc
    return lancedb


def open_dataset(uri: str, storage_options: Mapping[str, str] | None) -> Any:
    """Open the index's latest version for reading, with ``lance`` (pylance).

    Args:
        uri: The index URI.
        storage_options: Object-store options.

    Returns:
        A ``lance.LanceDataset``.

    Raises:
        AKConfigError: The ``lancedb`` extra (which brings ``pylance``) is not installed.
        FileNotFoundError: There is no index at ``uri``.
    """
    try:
        import lance
    except ImportError as exc:  # pragma: no cover - the extra is part of the test environment
        raise AKConfigError(
            "The bundle index needs the lancedb extra: pip install 'agentkernel[lancedb]'"
        ) from exc
    location = describe(uri)
    local = "://" not in location  # read from disk: small bounded caches cost little
    cache = {"session": local_session()} if local else {}
    try:
        return lance.dataset(
            location, storage_options=lance_options(storage_options) or None, **cache
        )
    except ValueError as exc:
        if "not found" in str(exc).lower() or "does not exist" in str(exc).lower():
            raise FileNotFoundError(f"No bundle index at {location}") from exc
        raise


def split_uri(uri: str) -> tuple[str, str]:
    """Split an index URI into the folder holding it and the table name.

    ``s3://bucket/kb.lance`` is the table ``kb`` in ``s3://bucket``; a URI without the
    ``.lance`` suffix names the same folder with it added.

    Args:
        uri: A local path, ``file://`` URI or ``s3://bucket/prefix/name.lance``.

    Returns:
        ``(folder, table name)``.

    Raises:
        AKConfigError: The URI names no table.
    """
    text = uri.strip()
    if text.startswith("file://"):
        text = text[len("file://") :]
    text = text.rstrip("/")
    folder, _, name = text.rpartition("/")
    if name.endswith(TABLE_SUFFIX):
        name = name[: -len(TABLE_SUFFIX)]
    if not name or (folder == "" and "://" in text):
        raise AKConfigError(f"Index URI {uri!r} names no dataset (expected .../NAME.lance).")
    if "://" in text and "://" not in folder:
        folder = text[: text.index("://") + 3] + folder.split("://", 1)[-1]
    return (folder or ".", name)


def connect(uri: str, storage_options: Mapping[str, str] | None) -> tuple[Any, str]:
    """Connect to the folder holding the index.

    Args:
        uri: The index URI.
        storage_options: Object-store options (``aws_endpoint``, ``aws_region``...).

    Returns:
        ``(connection, table name)``.
    """
    folder, name = split_uri(uri)
    lancedb = lancedb_module()
    options = lance_options(storage_options)
    database = lancedb.connect(folder, storage_options=options or None)
    return database, name


def describe(uri: str) -> str:
    """Name an index for messages.

    Args:
        uri: The index URI.

    Returns:
        ``folder/name.lance``.
    """
    folder, name = split_uri(uri)
    return posixpath.join(folder, name + TABLE_SUFFIX)


_RUST_LOCATION = re.compile(r",?\s*(?:at\s+)?\S*\.rs:\d+(?::\d+)?")


def one_line(exc: BaseException) -> str:
    """A Lance error as one line a user can read: no Rust source paths, no second line.

    Args:
        exc: What Lance raised.

    Returns:
        ``Type: message``, trimmed.
    """
    text = _RUST_LOCATION.sub("", str(exc)).strip()
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if len(first) > 300:
        first = first[:297] + "..."
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__
