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

With an embedder, each new or changed concept is embedded (through the content-keyed vector
cache: a text any process embedded with this model before is not embedded again) and its
vector(s) committed in its row, in the same version; the model is recorded in the meta row.
Concepts the index holds without a vector (an index built without an embedder, or a write
acknowledged while the embedder was down) are read again and embedded. An index holding
another model's vectors is refused (:class:`~.dense.IndexModelError`), with or without an
embedder: its vectors are never mixed with others, nor left missing for changed concepts.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from agentkernel.knowledgebase.errors import KnowledgeError
from agentkernel.knowledgebase.okf.bundleindex import identity, lancesdk, rows
from agentkernel.knowledgebase.okf.bundleindex.identity import IndexBundleError
from agentkernel.knowledgebase.okf.scan import ScanLimits, ScanResult, scan
from agentkernel.storage.base import MAX_DOCUMENT_BYTES, DocumentStore

if TYPE_CHECKING:
    from agentkernel.retrieval.embedders import Embedder
    from agentkernel.retrieval.semantic import SemanticIndex

logger = logging.getLogger(__name__)

DEFAULT_MAX_CONCEPTS = 5_000_000
_SCALAR_COLUMNS = ("path", "id", "dir", "title_key")
# how Lance words a commit that lost to another writer's (nothing of it was written)
_CONFLICTS = (
    "commit conflict",
    "incompatible transaction",
    "preempted by concurrent",
    "reported a conflict",  # two creations raced; the next attempt opens whichever landed
)
_DELETE_BATCH = 2000


class IndexConflictError(KnowledgeError):
    """Another indexer kept committing first; this one stopped without writing."""


__all__ = ["IndexBundleError", "IndexConflictError", "IndexStats", "commit", "index_bundle"]


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
        embedded: Concept texts sent to the embedder (vector cache misses).
        skipped: Every document the index holds as not served, and the walk's problems, as
            ``"path: reason"`` lines (what ``search`` reports as skipped files).
    """

    listed: int
    reads: int
    upserted: int
    deleted: int
    version: int
    committed: bool
    attempts: int
    seconds: float
    embedded: int = 0
    skipped: tuple[str, ...] = ()


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
    embedder: Embedder | str | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    replace: bool = False,
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
        embedder: Stores each concept's vector(s) too: an
            :class:`~agentkernel.retrieval.Embedder`, or a name, model folder or endpoint URL
            for :func:`~agentkernel.retrieval.load_embedder` (as ``search --embedder``).
        cache_dir: The vector cache root; ``None`` for the default (see
            :func:`~agentkernel.retrieval._vectorcache.default_cache_dir`).
        replace: Rebuild an index that was built from another bundle (every document is
            read; the other bundle's rows are deleted in the same version). Without it such
            an index is refused.

    Returns:
        What the run did.

    Raises:
        IndexConflictError: Other indexers committed first ``attempts`` times in a row.
        IndexBundleError: The index was built from another bundle and ``replace`` is
            false; nothing was written.
        IndexModelError: The index holds vectors of another model, or holds vectors and no
            embedder was given; nothing was written.
        EmbedderError: The embedder cannot be built, or failed; nothing was written.
        OSError: The bundle cannot be listed.
    """
    started = time.perf_counter()
    limits = ScanLimits(max_concepts, head_bytes, max_document_bytes, read_workers)
    database, name = lancesdk.connect(index_uri, storage_options)
    semantic = None
    if embedder is not None:
        from agentkernel.retrieval.semantic import SemanticIndex

        semantic = SemanticIndex(embedder, cache_dir)
    where = lancesdk.describe(index_uri)
    for attempt in range(1, attempts + 1):
        table = _open_or_none(database, name)
        if table is not None and not _with_vectors_column(table):
            continue  # another indexer changed the schema first
        version = table.version if table is not None else 0
        meta = _meta(table)
        _check_embedder(meta.get("embedder") if not replace else None, semantic, where)
        known = _known_tokens(table, unembedded=semantic is not None)
        if replace:
            known = dict.fromkeys(known, "")  # read every document again
        if progress:
            progress("listing", 0, 0)
        reading = (lambda done, total: progress("reading", done, total)) if progress else None
        at = datetime.now(UTC)
        result = scan(store, known, limits, reading)
        if not replace:
            identity.check_indexing(meta, store, known, result.drops, where, index_uri)
        vectors, model = _embed(semantic, result.concepts, progress)
        upserts = _rows(result, store, limits, at, vectors, model, _sample(known, result))
        changed = _changes(result) or table is None or _meta_changed(table, upserts[-1])
        embedded = semantic.embedded if semantic is not None else 0
        if not changed:
            if table is not None and not _fully_indexed(table):
                _refresh_indexes(table)  # a run killed before its fold: pods wait for it
                version = table.version
            return IndexStats(
                result.listed,
                result.reads,
                0,
                0,
                version,
                False,
                attempt,
                _since(started),
                embedded,
                _skipped(table, result),
            )
        if progress:
            progress("committing", 0, 0)
        if table is None:
            try:
                table = database.create_table(
                    name, rows.to_table(upserts), schema=rows.arrow_schema(), mode="create"
                )
            except (ValueError, OSError, RuntimeError) as exc:
                if "exist" not in str(exc).lower() and not _is_conflict(exc):
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
            embedded,
            _skipped(table, result),
        )
    raise IndexConflictError(
        f"Index {lancesdk.describe(index_uri)}: other indexers committed first {attempts} times "
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
    _with_vectors_column(table)
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
    database, name = lancesdk.connect(index_uri, storage_options)
    table = _open_or_none(database, name)
    if table is None:
        raise FileNotFoundError(f"No bundle index at {lancesdk.describe(index_uri)}")
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


def _skipped(table: Any | None, result: ScanResult) -> tuple[str, ...]:
    """The index's skipped documents with their reasons, then this walk's problems."""
    held: list[str] = []
    if table is not None:
        where = f"kind = '{rows.KIND_SKIPPED}'"
        found = table.search().where(where).select(["path", "reason"]).limit(None).to_arrow()
        paths = found.column("path").to_pylist()
        reasons = found.column("reason").to_pylist()
        held = sorted(f"{p}: {r}" for p, r in zip(paths, reasons, strict=True))
    return (*held, *result.store_diagnostics, *result.errors)


def _known_tokens(table: Any | None, *, unembedded: bool = False) -> dict[str, str]:
    """Every row's token; with ``unembedded``, concepts without a vector as unknown (re-read)."""
    if table is None:
        return {}
    found = table.search().select(["path", "token", "kind"]).limit(None).to_arrow()
    paths = found.column("path").to_pylist()
    tokens = found.column("token").to_pylist()
    kinds = found.column("kind").to_pylist()
    known = {
        p: t or "" for p, t, k in zip(paths, tokens, kinds, strict=True) if k != rows.KIND_META
    }
    if unembedded:
        where = f"kind = '{rows.KIND_CONCEPT}' AND {rows.VECTORS} IS NULL"
        bare = table.search().where(where).select(["path"]).limit(None).to_arrow()
        for path in bare.column("path").to_pylist():
            known[path] = ""
    return known


def _with_vectors_column(table: Any) -> bool:
    """Add the (all-null) vectors column to an index built before it existed.

    Returns:
        ``False`` when another indexer committed first (diff again).
    """
    import pyarrow as pa

    if rows.VECTORS in table.schema.names:
        return True
    try:
        table.add_columns(pa.field(rows.VECTORS, rows.vectors_type()))
    except Exception as exc:
        if not _is_conflict(exc):
            raise
        return False
    return True


def _check_embedder(
    recorded: Mapping[str, Any] | None, semantic: SemanticIndex | None, where: str
) -> None:
    from agentkernel.knowledgebase.okf.bundleindex import dense

    if semantic is not None:
        dense.check_model(recorded, semantic, where)
    elif recorded is not None:
        raise dense.IndexModelError(
            f"the bundle index {where} holds vectors of {recorded.get('model_id')}; index it "
            f"with that embedder (--embedder), so changed concepts get vectors too. Nothing "
            "was written."
        )


def _embed(
    semantic: SemanticIndex | None,
    concepts: list[Any],
    progress: Progress | None,
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The new and changed concepts' vectors, and the model record for the meta row."""
    if semantic is None:
        return {}, None
    from agentkernel.knowledgebase.okf.bundleindex import dense
    from agentkernel.knowledgebase.okf.vectors import embed_concepts
    from agentkernel.retrieval.embedders import EmbedderError

    total = len(concepts)
    step = (lambda done: progress("embedding", done, total)) if progress else None
    vectors = embed_concepts(semantic, concepts, step)
    if concepts and not vectors:
        raise EmbedderError(
            f"embedding with {semantic.embedder.model_id} failed ({semantic.degraded}); "
            "nothing was written to the index. Run the indexer again when the embedder works."
        )
    return vectors, dense.model_record(semantic)


def _meta(table: Any | None) -> dict[str, Any]:
    if table is None:
        return {}
    held = table.search().where(f"path = '{rows.META_PATH}'").select(["text"]).to_list()
    return dict(json.loads(held[0]["text"] or "{}")) if held else {}


def _rows(
    result: ScanResult,
    store: DocumentStore,
    limits: ScanLimits,
    at: datetime,
    vectors: Mapping[str, Any] | None = None,
    model: Mapping[str, Any] | None = None,
    sample: list[str] | None = None,
) -> list[dict[str, Any]]:
    held = vectors or {}
    found = [rows.concept_row(c, held.get(c.id)) for c in result.concepts]
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
            embedder=model,
            location=store.location,
            sample=sample or [],
        )
    )
    return found


def _sample(known: Mapping[str, str], result: ScanResult) -> list[str]:
    """A few document paths the bundle holds: how a pod recognises the bundle of an index."""
    held = set(known) - set(result.drops)
    held.update(c.path for c in result.concepts)  # every row's path, as the next run knows it
    held.update(r.path for r in result.reserved)
    held.update(s.path for s in result.skipped)
    return sorted(held)[: rows.SAMPLE_PATHS]


def _changes(result: ScanResult) -> bool:
    return bool(result.concepts or result.reserved or result.skipped or result.drops)


def _meta_changed(table: Any, meta: dict[str, Any]) -> bool:
    before = _meta(table)
    if not before:
        return True
    before.setdefault("embedder", None)  # an index built before vectors were recorded
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


_FOLD_ATTEMPTS = 3


def _fully_indexed(table: Any) -> bool:
    from agentkernel.knowledgebase.okf.bundleindex.opener import fully_indexed

    return fully_indexed(table.to_lance())


def _refresh_indexes(table: Any) -> None:
    """Fold the new rows into the indexes (rows not yet folded are still searched, slower).

    Pods serve only a version whose indexes cover every row, so a fold that lost a race
    with another indexer's commit (or left rows out) is tried again on the newest version.
    """
    for attempt in range(1, _FOLD_ATTEMPTS + 1):
        try:
            table.optimize()
            if _fully_indexed(table):
                return
        except Exception as exc:  # an optimisation that fails leaves a correct, slower index
            if attempt == _FOLD_ATTEMPTS or not _is_conflict(exc):
                logger.warning("index optimisation failed (the index stays correct): %s", exc)
                return
        table.checkout_latest()


def _path_filter(paths: list[str]) -> str:
    quoted = ", ".join("'" + p.replace("'", "''") + "'" for p in paths)
    return f"path IN ({quoted})"


def _since(started: float) -> float:
    return time.perf_counter() - started
