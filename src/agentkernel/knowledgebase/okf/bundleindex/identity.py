"""An index knows its bundle: indexing another bundle into it, or serving it over one, is refused.

The meta row records the bundle an index was built from: its label, its full location and a
few of its document paths (:data:`~.rows.SAMPLE_PATHS`). The same location is the same
bundle. The same bundle may be reached at another location (the indexer reads a local copy,
the pods read S3; another mount), so a different location is judged by the documents:

* **the indexer** (:func:`check_indexing`) lists the bundle anyway: it refuses when more
  than half of the documents the index holds are missing from the listing (committing would
  delete them), unless it was asked to replace the index;
* **a pod** (:func:`check_serving`) lists nothing: it reads the recorded sample paths (a
  one-byte read each, only when the location differs) and refuses when fewer than half of
  them are in its bundle.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping
from typing import Any

from agentkernel.knowledgebase.errors import KnowledgeError
from agentkernel.storage.base import DocumentStore

logger = logging.getLogger(__name__)


class IndexBundleError(KnowledgeError):
    """The index belongs to another bundle; nothing was written or served."""


def same_location(meta: Mapping[str, Any], store: DocumentStore) -> bool:
    """Whether the index was built from the store's location (its label, for older indexes).

    Args:
        meta: The index's meta row.
        store: The bundle.

    Returns:
        ``True`` when the recorded location (or label) is the store's.
    """
    if meta.get("location"):
        return bool(meta["location"] == store.location)
    return meta.get("bundle") in (None, store.label)


def check_indexing(
    meta: Mapping[str, Any],
    store: DocumentStore,
    known: Collection[str],
    drops: Collection[str],
    where: str,
    index_uri: str,
) -> None:
    """Refuse to index a bundle into another bundle's index.

    Args:
        meta: The index's meta row (empty for a new index).
        store: The bundle being indexed.
        known: The document paths the index holds.
        drops: Those the listing lacks.
        where: The index, for messages.
        index_uri: The index URI, for the command the message suggests.

    Raises:
        IndexBundleError: More than half of the index's documents are not in this bundle,
            which lives elsewhere.
    """
    if not known or same_location(meta, store) or len(drops) * 2 <= len(known):
        return
    raise IndexBundleError(
        f"the bundle index {where} was built from the bundle '{meta.get('bundle', '?')}'"
        f"{_at(meta)}; '{store.label}' lacks {len(drops)} of its {len(known)} documents, so "
        "indexing it would delete them. Nothing was written. Index this bundle to an index "
        f"of its own (another --to), or rebuild this one from it with 'agentkernel-kb index "
        f"{store.location} --to {index_uri} --replace'."
    )


def check_serving(meta: Mapping[str, Any], store: DocumentStore, where: str) -> None:
    """Refuse to serve an index over a bundle it was not built from.

    Args:
        meta: The index's meta row.
        store: The bundle the pod serves (``fetch`` reads its documents).
        where: The index, for messages.

    Raises:
        IndexBundleError: The index records another location and fewer than half of its
            sample documents are in this bundle.
    """
    sample = [str(path) for path in meta.get("sample") or []]
    if same_location(meta, store) or not sample:
        return
    present = sum(1 for path in sample if _exists(store, path))
    if present * 2 >= len(sample):
        logger.info(
            "bundle index %s was built from %s; serving it over %s (%d of %d sample documents "
            "found)",
            where,
            meta.get("location") or meta.get("bundle"),
            store.label,
            present,
            len(sample),
        )
        return
    raise IndexBundleError(
        f"the bundle index {where} was built from the bundle '{meta.get('bundle', '?')}'"
        f"{_at(meta)}, and '{store.label}' holds {present} of the {len(sample)} documents it "
        "was checked for: it is another bundle's index. Open the index built from this "
        f"bundle, or rebuild this one with 'agentkernel-kb index {store.location} --to "
        "INDEX --replace'."
    )


def _exists(store: DocumentStore, path: str) -> bool:
    try:
        store.read_head(path, 1)
    except (OSError, KnowledgeError):
        return False
    return True


def _at(meta: Mapping[str, Any]) -> str:
    location = meta.get("location")
    return f" at {location}" if location else ""
