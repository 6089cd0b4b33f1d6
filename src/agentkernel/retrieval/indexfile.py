"""A :class:`~agentkernel.retrieval.index.SearchIndex`'s analysed documents as plain data.

:func:`export_state` turns an index into lists, strings and byte strings (numbers packed
little-endian), which any serialiser holds; :func:`import_state` fills an empty index from
them without analysing a word: the same postings, lengths, title keys, head terms, statuses
and word-pair filters, documents in the same order, so the index ranks exactly as the one
exported. The state records the engine settings it was analysed under (field weights, title
field, head fields, the phrase rule on or off); :func:`import_state` refuses a state of
other settings.

The OKF warm start (:mod:`agentkernel.knowledgebase.okf.warmstart`) keeps this state on disk
so that a process finding its bundle unchanged does not re-analyse it.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from agentkernel.retrieval._arrays import numpy_or_none
from agentkernel.retrieval._bulk import Counted
from agentkernel.retrieval.index import SearchIndex

STATE_VERSION = 2
"""Bumped whenever the layout of the state changes."""


def settings_of(index: SearchIndex) -> dict[str, Any]:
    """The settings an index's analysed documents depend on.

    Args:
        index: The index.

    Returns:
        Field weights, title field, head fields and whether word pairs are kept, as plain
        data.
    """
    return {
        "version": STATE_VERSION,
        "weights": sorted(index._weights.items()),
        "title_field": index._title_field,
        "head_fields": list(index._head_fields),
        "pairs": bool(index._phrase_boost),
    }


def export_state(index: SearchIndex) -> dict[str, Any]:
    """Every analysed document of ``index``, in slot order, as plain data.

    Args:
        index: The index (documents queued by ``add`` are counted first).

    Returns:
        The state, for :func:`import_state`.

    Raises:
        RuntimeError: numpy is not installed (the state packs numbers with it).
    """
    np = numpy_or_none()
    if np is None:  # pragma: no cover - numpy is a core dependency
        raise RuntimeError("saving or loading an analysed index needs numpy")
    index.flush()
    key_of = index._slots.key_of
    live = [slot for slot, key in enumerate(key_of) if key is not None]
    position = np.full(max(len(key_of), 1), -1, dtype=np.int64)
    position[live] = np.arange(len(live), dtype=np.int64)
    terms, sizes, slots, tfs = index._postings.flat(np)
    return {
        "settings": settings_of(index),
        "keys": [key_of[slot] for slot in live],
        "statuses": [index._status.get(slot) for slot in live],
        "titles": [sorted(index._title_key[slot]) for slot in live],
        "pairs": [index._pairs[slot] for slot in live] if index._phrase_boost else [],
        "heads": [list(index._heads[slot]) for slot in live] if index._head_fields else [],
        "lengths": np.asarray([index._doc_length[s] for s in live], dtype="<f8").tobytes(),
        "terms": terms,
        "sizes": sizes.astype("<i4").tobytes(),
        "docs": position[slots].astype("<i4").tobytes(),
        "tfs": tfs.astype("<f8").tobytes(),
    }


def import_state(index: SearchIndex, state: dict[str, Any]) -> None:
    """Fill an empty index with an exported state, analysing nothing.

    Args:
        index: An index holding no document, of the settings the state was exported under.
        state: What :func:`export_state` returned.

    Raises:
        ValueError: The index is not empty, the settings differ, or the state is malformed
            (the index is then left empty).
        RuntimeError: numpy is not installed.
    """
    np = numpy_or_none()
    if np is None:  # pragma: no cover - numpy is a core dependency
        raise RuntimeError("saving or loading an analysed index needs numpy")
    if len(index) or index.capacity:
        raise ValueError("import_state fills an empty index only")
    if state.get("settings") != settings_of(index):
        raise ValueError("the state was analysed under other settings")
    keys: list[Hashable] = list(state["keys"])
    count = len(keys)
    terms: list[str] = list(state["terms"])
    sizes = np.frombuffer(state["sizes"], dtype="<i4").astype(np.int64)
    docs = np.frombuffer(state["docs"], dtype="<i4").astype(np.int64)
    tfs = np.frombuffer(state["tfs"], dtype="<f8").astype(np.float64)
    lengths = np.frombuffer(state["lengths"], dtype="<f8").tolist()
    pairs: list[bytes] = list(state["pairs"]) or [b""] * count
    statuses: list[str | None] = list(state["statuses"])
    titles = [frozenset(title) for title in state["titles"]]
    heads = [tuple(head) for head in state["heads"]] or [()] * count
    total = int(sizes.sum()) if len(sizes) else 0
    if (
        len(sizes) != len(terms)
        or len(docs) != total
        or len(tfs) != total
        or not len(lengths) == len(pairs) == len(statuses) == len(titles) == len(heads) == count
        or (total and (int(docs.min()) < 0 or int(docs.max()) >= count))
        or len(set(keys)) != count
    ):
        raise ValueError("the state is malformed")
    # int32 term ids: what the index keeps of them (no int64 copy beside them at the load)
    entry_term = np.repeat(np.arange(len(terms), dtype=np.int32), sizes)
    starts = np.concatenate(([0], np.cumsum(sizes))).tolist()
    counted = Counted(terms, lengths, None, entry_term, docs, tfs, starts)
    index.file_counted(np, keys, statuses, titles, pairs, counted, heads)
