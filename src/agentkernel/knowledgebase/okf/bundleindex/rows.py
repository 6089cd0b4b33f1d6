"""Rows of the bundle index: one per document, built from what a walk parses.

Every document the walk knows has a row keyed by its path: a concept (its frontmatter, the
fields search shows, its change token and its *terms*: the lexical engine's analysis of
the fields it indexes, weighted by repetition and joined by spaces, so the dataset's
full-text index, splitting on whitespace only, counts exactly the terms the in-memory engine
counts), a reserved ``index.md``/``log.md`` (with an ``index.md``'s text) or a skipped
document (with the reason). One more row, at the empty path, carries what belongs to the
walk as a whole (truncation, store diagnostics, when it ran). A row turns back into the
:class:`Concept` the walk built, so every record reads the same in both modes.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from agentkernel.bundle.links import link_targets
from agentkernel.bundle.timestamps import parse_timestamp
from agentkernel.knowledgebase.okf.concept import Concept
from agentkernel.knowledgebase.okf.manifest import ReservedFile, Skipped, search_fields
from agentkernel.retrieval import SearchIndex
from agentkernel.retrieval.analysis import plain_key

KIND_CONCEPT = "concept"
KIND_RESERVED = "reserved"
KIND_SKIPPED = "skipped"
KIND_META = "meta"
META_PATH = ""
SCHEMA_VERSION = 1
VECTORS = "vectors"
SAMPLE_PATHS = 8  # document paths the meta row keeps to recognise the bundle

# columns a reader holds for every row (the rest are read per row, on demand)
LIGHT_COLUMNS = ["path", "kind", "type", "token"]
SUMMARY_COLUMNS = [
    "path",
    "kind",
    "id",
    "token",
    "size",
    "type",
    "title",
    "description",
    "tags",
    "trust",
    "status",
    "stale_after",
    "frontmatter",
    "complete",
    "title_key",
]

_WEIGHTS = SearchIndex()


def arrow_schema() -> Any:
    """The dataset's schema (pyarrow is imported here, on first use).

    Returns:
        A ``pyarrow.Schema``.
    """
    import pyarrow as pa

    text = pa.string()
    return pa.schema(
        [
            ("path", text),
            ("kind", text),
            ("id", text),
            ("dir", text),
            ("token", text),
            ("size", pa.int64()),
            ("type", text),
            ("title", text),
            ("description", text),
            ("tags", pa.list_(text)),
            ("trust", text),
            ("status", text),
            ("stale_after", pa.timestamp("us", tz="UTC")),
            ("frontmatter", text),
            ("complete", pa.bool_()),
            ("links", pa.list_(text)),
            ("terms", text),
            ("title_key", text),
            ("text", text),
            ("reason", text),
            (VECTORS, vectors_type()),
        ]
    )


def vectors_type() -> Any:
    """The type of the vectors column: a list of parts, each a list of float32.

    One part per concept today (:func:`agentkernel.knowledgebase.okf.vectors.embed_concepts`
    gives one vector), in the concept's own row, so one commit carries a concept's text and
    its vector together.

    Returns:
        A ``pyarrow.DataType``.
    """
    import pyarrow as pa

    return pa.list_(pa.list_(pa.float32()))


def weighted_terms(concept: Concept) -> str:
    """The terms the in-memory engine counts for a concept, each repeated by its count.

    Lance's full-text index has one field and counts repetitions, so each weighted count is
    rounded to whole repetitions (at least one): the engine's small field weights (title
    1.25 down to body 1, in steps of 1/16) would otherwise take 16 copies of every word, so
    the index ranks as with flat weights, which tie the graded ones on held-out queries
    (``bench/RESULTS.md``, issue 12).

    Args:
        concept: The concept.

    Returns:
        Space-separated terms.
    """
    counts, _ = _WEIGHTS._count(search_fields(concept))  # the engine's own analysis
    return " ".join(" ".join([term] * max(1, round(count))) for term, count in counts.items())


def title_key(title: str) -> str:
    """The title's key as the engine compares it with a query, sorted and space-joined.

    Args:
        title: A concept title.

    Returns:
        The key, ``""`` when the engine would not compare this title.
    """
    from agentkernel.retrieval.analysis import title_key  # the engine's own rule

    return " ".join(sorted(title_key(title)))


def query_title_key(query: str) -> frozenset[str]:
    """A query's key, as titles are compared with it.

    Args:
        query: The query.

    Returns:
        The set of its stems.
    """
    return frozenset(plain_key(query))


def concept_row(concept: Concept, vectors: Any = None) -> dict[str, Any]:
    """The row of a concept.

    Args:
        concept: As a walk parsed it.
        vectors: Its vector(s) from ``embed_concepts``, when the index holds vectors.

    Returns:
        The row.
    """
    return {
        **_blank(concept.path, KIND_CONCEPT, concept.token, concept.size),
        "id": concept.id,
        "type": concept.type,
        "title": concept.title,
        "description": concept.description,
        "tags": list(concept.tags),
        "trust": concept.trust,
        "status": concept.status,
        "stale_after": concept.stale_after,
        "frontmatter": json.dumps(concept.frontmatter, default=_json_value, sort_keys=True),
        "complete": concept.complete,
        "links": link_targets(concept.body_head),
        "terms": weighted_terms(concept),
        "title_key": title_key(concept.title),
        VECTORS: vectors,
    }


def reserved_row(entry: ReservedFile) -> dict[str, Any]:
    """The row of an ``index.md`` or ``log.md``.

    Args:
        entry: The reserved file.

    Returns:
        The row.
    """
    return {**_blank(entry.path, KIND_RESERVED, entry.token, entry.size), "text": entry.text}


def skipped_row(entry: Skipped) -> dict[str, Any]:
    """The row of a document that is not served.

    Args:
        entry: The path, token and reason.

    Returns:
        The row.
    """
    return {**_blank(entry.path, KIND_SKIPPED, entry.token, 0), "reason": entry.reason}


def meta_row(
    *,
    truncated: bool,
    max_concepts: int,
    diagnostics: Iterable[str],
    bundle: str,
    at: datetime,
    embedder: Mapping[str, Any] | None = None,
    location: str = "",
    sample: Iterable[str] = (),
) -> dict[str, Any]:
    """The row describing the walk the index was built from.

    Args:
        truncated: Whether concepts were left out at ``max_concepts``.
        max_concepts: The bound the indexer applied.
        diagnostics: The store's and the walk's diagnostics.
        bundle: The bundle's label (what agents see).
        at: When the indexer listed the bundle.
        embedder: The model the vectors come from (``model_id``, ``dimension``), ``None``
            without.
        location: The bundle's full location (``store.location``): the bundle the index
            belongs to.
        sample: A few of the bundle's document paths (:data:`SAMPLE_PATHS`), which a pod
            over another location checks to recognise the bundle.

    Returns:
        The row.
    """
    payload = {
        "schema": SCHEMA_VERSION,
        "truncated": truncated,
        "max_concepts": max_concepts,
        "diagnostics": list(diagnostics),
        "bundle": bundle,
        "indexed_at": at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "embedder": dict(embedder) if embedder is not None else None,
        "location": location,
        "sample": list(sample),
    }
    return {**_blank(META_PATH, KIND_META, "", 0), "text": json.dumps(payload)}


def concept_from_row(row: Mapping[str, Any]) -> Concept:
    """Rebuild the walk's :class:`Concept` from its row (without its body head).

    Args:
        row: A row holding :data:`SUMMARY_COLUMNS`.

    Returns:
        The concept; ``body_head`` is empty (fetch reads the body from the store).
    """
    frontmatter = json.loads(row["frontmatter"] or "{}")
    return Concept(
        id=row["id"],
        path=row["path"],
        token=row["token"],
        size=int(row["size"]),
        type=row["type"],
        title=row["title"],
        description=row["description"],
        tags=list(row["tags"] or []),
        trust=row["trust"],
        # from the value as written, not the column: an index built by an older version
        # holds an instant for a bare date, which OKF 0.2 ignores
        stale_after=parse_timestamp(frontmatter.get("stale_after")),
        frontmatter=frontmatter,
        complete=bool(row["complete"]),
        status=row["status"],
    )


def to_table(rows: list[dict[str, Any]]) -> Any:
    """Turn rows into a ``pyarrow.Table`` of the dataset's schema.

    Args:
        rows: Rows from the functions above; a concept row may carry its vectors under
            :data:`VECTORS` (a 1-D or 2-D ``numpy`` array), the others none.

    Returns:
        The table.
    """
    import pyarrow as pa

    schema = arrow_schema()
    vectors = [row.get(VECTORS) for row in rows]
    plain = [{k: v for k, v in row.items() if k != VECTORS} for row in rows]
    table = pa.Table.from_pylist(plain, schema=schema.remove(schema.get_field_index(VECTORS)))
    return table.append_column(schema.field(VECTORS), vectors_array(vectors))


def vectors_array(values: list[Any]) -> Any:
    """Build the vectors column from numpy arrays without a Python float per value.

    Args:
        values: Per row a 1-D vector, a 2-D array (one row per part) or ``None``.

    Returns:
        A ``pyarrow`` array of :func:`vectors_type`.
    """
    import numpy as np
    import pyarrow as pa

    parts = [None if v is None else np.atleast_2d(np.asarray(v, dtype=np.float32)) for v in values]
    outer = [0]
    inner = [0]
    flat: list[Any] = []
    for array in parts:
        if array is not None:
            flat.append(array.reshape(-1))
            base, width = inner[-1], array.shape[1]
            inner.extend(base + width * (i + 1) for i in range(array.shape[0]))
        outer.append(len(inner) - 1)
    numbers = pa.array(np.concatenate(flat) if flat else np.zeros(0, np.float32), pa.float32())
    lists = pa.ListArray.from_arrays(pa.array(inner, pa.int32()), numbers)
    mask = pa.array([array is None for array in parts], pa.bool_())
    return pa.ListArray.from_arrays(pa.array(outer, pa.int32()), lists, mask=mask)


def _blank(path: str, kind: str, token: str, size: int) -> dict[str, Any]:
    return {
        "path": path,
        "kind": kind,
        "id": path[:-3] if kind == KIND_CONCEPT else path,
        "dir": posixpath.dirname(path),
        "token": token,
        "size": size,
        "type": None,
        "title": None,
        "description": None,
        "tags": None,
        "trust": None,
        "status": None,
        "stale_after": None,
        "frontmatter": None,
        "complete": None,
        "links": None,
        "terms": None,
        "title_key": None,
        "text": None,
        "reason": None,
        VECTORS: None,
    }


def _json_value(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)
