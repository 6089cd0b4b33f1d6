"""Where a pod reads its bundle index from: the object store directly, or the node cache.

:func:`index_opener` decides from the URI and the options. An ``s3://`` index is read from
the node cache (:class:`~agentkernel.knowledgebase.okf.bundleindex._mirror.MirroredIndex`)
unless the options say ``node_cache=off``; a local folder is read in place. Two options are
this layer's own and never reach Lance:

* ``node_cache``: the cache folder (default ``$AGENTKERNEL_NODE_CACHE``, else
  ``$XDG_CACHE_HOME/agentkernel/node``), or ``off`` to read the object store directly;
* ``node_cache_bytes``: the cache's size bound (default 20 GiB); the least recently used
  files of other versions and other indexes are evicted beyond it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from itertools import islice
from typing import Any, Protocol

from agentkernel.errors import AKConfigError
from agentkernel.knowledgebase.okf.bundleindex import lancesdk

logger = logging.getLogger(__name__)

CACHE_OPTION, CACHE_BYTES_OPTION = lancesdk.CACHE_OPTIONS
_OFF = ("off", "none", "false", "0", "")
WALK_BACK = 8
"""Versions a first open looks back through for one whose indexes cover all its rows."""


def index_names(dataset: Any) -> set[str]:
    """The names of a version's indexes (read from its manifest, no request).

    Args:
        dataset: A ``lance.LanceDataset``.

    Returns:
        The index names.
    """
    return {index.name for index in dataset.describe_indices()}


def fully_indexed(dataset: Any, required: Iterable[str] = ()) -> bool:
    """Whether every index of a version covers every fragment (and the ``required`` exist).

    The indexer commits new rows, then folds them into the indexes in later versions; in
    between, Lance searches the new fragments without the index (a flat scan: 170-420 ms a
    search against 20-40 ms at 100,000 concepts, ``bench/RESULTS.md``, issue 24). The indexes'
    fragment coverage is in the version's manifest, so this costs no request.

    Args:
        dataset: A ``lance.LanceDataset``.
        required: Index names the version must have (those of the version served).

    Returns:
        ``True`` when the version is fully indexed.
    """
    fragments = {fragment.fragment_id for fragment in dataset.get_fragments()}
    covered: dict[str, set[int]] = {}
    for index in dataset.describe_indices():
        held = covered.setdefault(index.name, set())
        for segment in index.segments:
            held.update(segment.fragment_ids or ())
    if not set(required) <= covered.keys():
        return False
    return all(fragments <= held for held in covered.values())


def first_version(newest: Any, older: Iterable[Callable[[], Any]]) -> Any:
    """The version a first open serves: the newest fully indexed one, else the newest.

    Args:
        newest: The newest version.
        older: Openers of the older versions, newest first (only the first
            :data:`WALK_BACK` are tried; one that fails to open is skipped).

    Returns:
        A ``lance.LanceDataset``.
    """
    if fully_indexed(newest):
        return newest
    for opener in islice(older, WALK_BACK):
        try:
            candidate = opener()
        except (OSError, ValueError, RuntimeError):  # a version cleaned up since
            continue
        if fully_indexed(candidate):
            logger.info(
                "bundle index version %d is not fully indexed yet; serving version %d",
                newest.version,
                candidate.version,
            )
            return candidate
    return newest


class IndexOpener(Protocol):
    """Opens the index's newest version, and a newer one when there is one."""

    def open(self) -> Any:
        """Open the newest fully indexed version (:func:`first_version`).

        Returns:
            A ``lance.LanceDataset``.
        """

    def newer(self, current: Any) -> Any | None:
        """The newest version when it is not ``current``'s (one small request when it is).

        Args:
            current: The dataset being served.

        Returns:
            A dataset at the newest version, or ``None``.
        """


class DirectOpener:
    """Lance reads the index where it lives (a local folder, or the object store itself)."""

    def __init__(self, uri: str, options: Mapping[str, str]) -> None:
        """Remember the index.

        Args:
            uri: The index URI.
            options: Lance's object-store options.
        """
        self._uri = uri
        self._options = dict(options)

    def open(self) -> Any:
        """Open the newest fully indexed version (:func:`first_version`).

        Returns:
            A ``lance.LanceDataset``.
        """
        newest = lancesdk.open_dataset(self._uri, self._options)
        older = (
            (lambda v=v: newest.checkout_version(v)) for v in range(int(newest.version) - 1, 0, -1)
        )
        return first_version(newest, older)

    def newer(self, current: Any) -> Any | None:
        """The newest version when it is not ``current``'s.

        Args:
            current: The dataset being served.

        Returns:
            A dataset at the newest version, or ``None``.
        """
        latest = int(current.latest_version)  # one listing of the versions
        if latest == int(current.version):
            return None
        return current.checkout_version(latest)


class CachedOpener:
    """The index's files are served from the node cache; the object store is asked what changed."""

    def __init__(self, uri: str, options: Mapping[str, str], root: str, max_bytes: int) -> None:
        """Name the index and the cache (no request is made).

        Args:
            uri: ``s3://bucket/.../name.lance``.
            options: Lance's object-store options.
            root: The node cache folder.
            max_bytes: The cache's size bound.
        """
        from agentkernel.knowledgebase.okf.bundleindex._mirror import MirroredIndex
        from agentkernel.storage.nodecache import NodeCache

        self.mirror = MirroredIndex(uri, options, NodeCache(root, max_bytes))
        self._documents: dict[str, Any] = {}

    def documents(self, location: str) -> Any:
        """The node cache of the documents ``fetch`` reads from the store at ``location``.

        Args:
            location: The bundle's store location.

        Returns:
            A :class:`~agentkernel.storage.nodecache.DocumentCache`.
        """
        from agentkernel.storage.nodecache import DocumentCache

        if location not in self._documents:
            self._documents[location] = DocumentCache(self.mirror.cache, location)
        return self._documents[location]

    def open(self) -> Any:
        """Open the newest fully indexed version from the node cache (fetching what it lacks).

        Returns:
            A ``lance.LanceDataset`` over local files.
        """
        listed = sorted(self.mirror.versions(), reverse=True)
        newest = self.mirror.open(*listed[0])
        older = ((lambda found=found: self.mirror.open(*found)) for found in listed[1:])
        return first_version(newest, older)

    def repair(self, current: Any) -> Any | None:
        """After a read error: fetch the served version's damaged files and open it again.

        Args:
            current: The dataset being served.

        Returns:
            The same version opened again, or ``None`` when none of its files was damaged.
        """
        return self.mirror.repair(int(current.version))

    def newer(self, current: Any) -> Any | None:
        """The newest version when it is not ``current``'s (one listing when it is).

        Args:
            current: The dataset being served.

        Returns:
            A dataset at the newest version, or ``None``.
        """
        version, manifest, size = self.mirror.latest()
        if version == int(current.version):
            return None
        return self.mirror.open(version, manifest, size)


def index_opener(uri: str, options: Mapping[str, str] | None) -> IndexOpener:
    """Choose how a pod reads the index at ``uri``.

    Args:
        uri: The index URI.
        options: Object-store options, with this layer's ``node_cache`` and
            ``node_cache_bytes`` (removed before Lance sees them).

    Returns:
        The source.

    Raises:
        AKConfigError: ``node_cache_bytes`` is not a positive whole number.
    """
    from agentkernel.storage.nodecache import DEFAULT_MAX_BYTES, default_cache_root

    lance_options = dict(options or {})
    root = lance_options.pop(CACHE_OPTION, None)
    size = lance_options.pop(CACHE_BYTES_OPTION, None)
    try:
        max_bytes = int(size) if size not in (None, "") else DEFAULT_MAX_BYTES
    except ValueError:
        max_bytes = 0
    if max_bytes <= 0:
        raise AKConfigError(
            f"{CACHE_BYTES_OPTION} must be a positive number of bytes, got {size!r}"
        )
    remote = lancesdk.describe(uri).startswith("s3://")
    if not remote or (root is not None and root.strip().lower() in _OFF):
        return DirectOpener(uri, lance_options)
    return CachedOpener(uri, lance_options, root or str(default_cache_root()), max_bytes)
