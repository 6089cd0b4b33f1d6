"""Build and update a bundle index: list the bundle, read what changed, commit one version.

:func:`index_bundle` compares the change token of every listed document with the token its
row was built from, reads (a bounded leading read, as a walk does) only new and changed
documents, and commits their rows and the deletion of vanished ones in one ``merge_insert``:
one new version of the dataset, atomic on a local folder and on S3. Readers keep the version
they opened until they refresh, so indexing while pods serve is safe.

Two indexers at once: each notes the version it diffed against; if another commit landed
before its own, it diffs again against the newer version (unchanged documents cost no read)
and tries again, up to ``attempts`` times, then stops with :class:`IndexConflictError`.
Lance's own commit protocol keeps the dataset consistent whichever commit wins.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from agentkernel.knowledgebase.errors import KnowledgeError
from agentkernel.knowledgebase.okf.bundleindex import _lance, rows
from agentkernel.knowledgebase.okf.scan import MAX_DOCUMENT_BYTES, ScanLimits, ScanResult, scan
from agentkernel.storage.base import DocumentStore

logger = logging.getLogger(__name__)

DEFAULT_MAX_CONCEPTS = 5_000_000
_SCALAR_COLUMNS = ("path", "id", "dir", "title_key")
# how Lance words a commit that lost to another writer's (nothing of it was written)
_CONFLICTS = ("commit conflict", "incompatible transaction", "preempted by concurrent")
_DELETE_BATCH = 2000


class IndexConflictError(KnowledgeError):
    """Another indexer kept committing first; this one stopped without writing."""


@dataclass(frozen=True)
class IndexStats:
    """What one indexer run did.

    Attributes:
        listed: Files the bundle listing returned.
        reads: Documents read (new or changed).
        upserted: Rows written (concepts, reserved and skipped documents).
        deleted: Rows deleted (documents gone from the bundle).
        version: The dataset version now current.
        committed: Whether this run committed a version (``False``: nothing had changed).
        attempts: Diffs it took (more than one when another indexer committed first).
        seconds: Wall time.
    """

    listed: int
    reads: int
    upserted: int
    deleted: int
    version: int
    committed: bool
    attempts: int
    seconds: float


Progress = Callable[[str, int, int], None]


def index_bundle(
    store: DocumentStore,
    index_uri: str,
    *,
    storage_options: Mapping[str, str] | None = None,
    max_concepts: int = DEFAULT_MAX_CONCEPTS,
    head_bytes: int = 16 * 1024,
    max_document_bytes: int = MAX_DOCUMENT_BYTES,
    read_workers: int = 8,
    attempts: int = 5,
    progress: Progress | None = None,
) -> IndexStats:
    """Bring the index at ``index_uri`` up to date with the bundle in ``store``.

    Args:
        store: The bundle (read only: the indexer never writes to it).
        index_uri: Where the index lives (``s3://bucket/kb.lance`` or a local folder).
        storage_options: Object-store options for the index (``aws_endpoint``...).
        max_concepts: The most concepts indexed (the rest are left out and reported).
        head_bytes: The leading read per document (as ``OKFManager.head_bytes``).
        max_document_bytes: Larger documents are skipped unread.
        read_workers: Concurrent reads on a network store.
        attempts: Diffs tried when other indexers commit first.
        progress: Called with (phase, done, total) as the run advances.

    Returns:
        What the run did.

    Raises:
        IndexConflictError: Other indexers committed first ``attempts`` times in a row.
        OSError: The bundle cannot be listed.
    """
    started = time.perf_counter()
    limits = ScanLimits(max_concepts, head_bytes, max_document_bytes, read_workers)
    database, name = _lance.connect(index_uri, storage_options)
    for attempt in range(1, attempts + 1):
        table = _open_or_none(database, name)
        version = table.version if table is not None else 0
        known = _known_tokens(table)
        if progress:
            progress("listing", 0, 0)
        reading = (lambda done, total: progress("reading", done, total)) if progress else None
        at = datetime.now(UTC)
        result = scan(store, known, limits, reading)
        upserts = _rows(result, store, limits, at)
        changed = _changes(result) or table is None or _meta_changed(table, upserts[-1])
        if not changed:
            return IndexStats(
                result.listed, result.reads, 0, 0, version, False, attempt, _since(started)
            )
        if progress:
            progress("committing", 0, 0)
        if table is None:
            try:
                table = database.create_table(name, rows.to_table(upserts), mode="create")
            except (ValueError, OSError) as exc:
                if "exist" not in str(exc).lower():
                    raise
                logger.info("another indexer created %s first; diffing again", index_uri)
                continue
            _create_indexes(table)
        else:
            latest = _latest_version(table)
            if latest != version:
                logger.info(
                    "index %s moved from version %d to %d while diffing; diffing again",
                    index_uri,
                    version,
                    latest,
                )
                continue
            try:
                commit(table, upserts, result.drops)
            except Exception as exc:
                if not _is_conflict(exc):
                    raise
                logger.info(
                    "another indexer committed to %s first (%s); diffing again", index_uri, exc
                )
                continue
            _refresh_indexes(table)
        return IndexStats(
            result.listed,
            result.reads,
            len(upserts),
            len(result.drops),
            table.version,
            True,
            attempt,
            _since(started),
        )
    raise IndexConflictError(
        f"Index {_lance.describe(index_uri)}: other indexers committed first {attempts} times "
        "in a row; nothing was written by this run. Run one indexer at a time (a single "
        "scheduled job), or run this one again."
    )


def commit(table: Any, upserts: list[dict[str, Any]], deletes: Iterable[str]) -> None:
    """Upsert rows and delete paths in one new version.

    Args:
        table: The open index table.
        upserts: Rows keyed by path.
        deletes: Paths whose rows go.
    """
    gone = sorted(set(deletes) - {row["path"] for row in upserts})
    merge = table.merge_insert("path").when_matched_update_all().when_not_matched_insert_all()
    if gone:
        # one version: rows of the source are upserted and the named paths deleted together
        merge = merge.when_not_matched_by_source_delete(_path_filter(gone))
    merge.execute(rows.to_table(upserts))


def open_table(index_uri: str, storage_options: Mapping[str, str] | None) -> Any:
    """Open an existing index.

    Args:
        index_uri: The index URI.
        storage_options: Object-store options.

    Returns:
        The table, at its latest version.

    Raises:
        FileNotFoundError: There is no index there.
    """
    database, name = _lance.connect(index_uri, storage_options)
    table = _open_or_none(database, name)
    if table is None:
        raise FileNotFoundError(f"No bundle index at {_lance.describe(index_uri)}")
    return table


def _open_or_none(database: Any, name: str) -> Any | None:
    try:
        return database.open_table(name)
    except ValueError as exc:
        if "not found" in str(exc).lower():
            return None
        raise
    except FileNotFoundError:
        return None


def _known_tokens(table: Any | None) -> dict[str, str]:
    if table is None:
        return {}
    found = table.search().select(["path", "token", "kind"]).limit(None).to_arrow()
    paths = found.column("path").to_pylist()
    tokens = found.column("token").to_pylist()
    kinds = found.column("kind").to_pylist()
    return {p: t or "" for p, t, k in zip(paths, tokens, kinds, strict=True) if k != rows.KIND_META}


def _rows(
    result: ScanResult, store: DocumentStore, limits: ScanLimits, at: datetime
) -> list[dict[str, Any]]:
    found = [rows.concept_row(c) for c in result.concepts]
    found += [rows.reserved_row(r) for r in result.reserved]
    found += [rows.skipped_row(s) for s in result.skipped]
    diagnostics = result.store_diagnostics + result.errors
    found.append(
        rows.meta_row(
            truncated=result.truncated,
            max_concepts=limits.max_concepts,
            diagnostics=diagnostics,
            bundle=store.label,
            at=at,
        )
    )
    return found


def _changes(result: ScanResult) -> bool:
    return bool(result.concepts or result.reserved or result.skipped or result.drops)


def _meta_changed(table: Any, meta: dict[str, Any]) -> bool:
    import json

    held = table.search().where(f"path = '{rows.META_PATH}'").select(["text"]).to_list()
    if not held:
        return True
    before = json.loads(held[0]["text"])
    after = json.loads(meta["text"])
    before.pop("indexed_at", None)
    after.pop("indexed_at", None)
    return bool(before != after)


def _latest_version(table: Any) -> int:
    table.checkout_latest()
    return int(table.version)


def _is_conflict(exc: BaseException) -> bool:
    text = str(exc).lower()
    return any(marker in text for marker in _CONFLICTS)


def _create_indexes(table: Any) -> None:
    """Create the full-text and scalar indexes; one another indexer made first is kept."""
    from lancedb.index import FTS, BTree

    configs: list[tuple[str, Any]] = [
        (
            "terms",
            FTS(
                with_position=False,
                base_tokenizer="whitespace",
                lower_case=False,
                stem=False,
                remove_stop_words=False,
                ascii_folding=False,
                max_token_length=None,
            ),
        )
    ]
    configs += [(column, BTree()) for column in _SCALAR_COLUMNS]
    for column, config in configs:
        for _ in range(5):
            if column in _indexed_columns(table):
                break
            try:
                table.create_index(column, config=config)
                break
            except Exception as exc:
                if not _is_conflict(exc):
                    raise
                # two indexers that both created the table race to index it: see theirs
                table.checkout_latest()


def _indexed_columns(table: Any) -> set[str]:
    return {column for index in table.list_indices() for column in index.columns}


def _refresh_indexes(table: Any) -> None:
    """Fold the new rows into the indexes (rows not yet folded are still searched, slower)."""
    try:
        table.optimize()
    except Exception as exc:  # an optimisation that fails leaves a correct, slower index
        logger.warning("index optimisation failed (the index stays correct): %s", exc)


def _path_filter(paths: list[str]) -> str:
    quoted = ", ".join("'" + p.replace("'", "''") + "'" for p in paths)
    return f"path IN ({quoted})"


def _since(started: float) -> float:
    return time.perf_counter() - started
