"""The vectors a bundle index holds: which model made them, and loading them into a pod.

The indexer stores each concept's vector (what
:func:`~agentkernel.knowledgebase.okf.vectors.embed_concepts` gives) in the concept's row, as
the one part of a list of float32 lists, and records the model in the meta row.
A reader with an embedder loads them, on its first hybrid search, into the
:class:`~agentkernel.retrieval.semantic.SemanticIndex` the in-memory manager uses, so the
dense ranking and the fusion are the same code in both modes. After a refresh it reads only
the vectors of concepts whose change token moved.

Measured (``bench/index_bench.py --hybrid``, ``bench/RESULTS.md``): holding the vectors costs
``4 * dimension`` bytes per concept and answers in a millisecond; Lance's exact nearest
search over the dataset reads every vector per query (a full scan, every request of it over
S3) and was slower at 10,000 concepts already.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from agentkernel.knowledgebase.okf.bundleindex import rows
from agentkernel.retrieval.embedders import EmbedderError

if TYPE_CHECKING:
    import numpy as np

    from agentkernel.knowledgebase.okf.bundleindex.view import IndexView
    from agentkernel.retrieval.semantic import SemanticIndex

logger = logging.getLogger(__name__)

_BATCH = 4096
_BARE = ""  # the token held for a concept whose row had no vector


class IndexModelError(EmbedderError):
    """The index holds vectors of another model than the one given."""


def model_record(semantic: SemanticIndex) -> dict[str, Any]:
    """What the meta row records about the vectors.

    Args:
        semantic: The dense index whose embedder made them.

    Returns:
        ``{"model_id", "dimension"}``.
    """
    return {"model_id": semantic.embedder.model_id, "dimension": semantic.dimension}


def check_model(recorded: Mapping[str, Any] | None, semantic: SemanticIndex, where: str) -> None:
    """Refuse to mix vectors of two models.

    Args:
        recorded: The meta row's ``embedder`` (``None``: the index holds no vectors).
        semantic: The dense index of the caller.
        where: The index, for the message.

    Raises:
        IndexModelError: The index holds vectors of another model or dimension.
    """
    if recorded is None:
        return
    mine = (semantic.embedder.model_id, semantic.dimension)
    theirs = (recorded.get("model_id"), recorded.get("dimension"))
    if mine != theirs:
        raise IndexModelError(
            f"the bundle index {where} holds vectors of {theirs[0]} ({theirs[1]} dimensions), "
            f"not of the embedder given, {mine[0]} ({mine[1]} dimensions). Vectors of two "
            f"models are never mixed: use {theirs[0]}, or build another index with this one "
            "(agentkernel-kb index BUNDLE --to NEW_INDEX --embedder ...)."
        )


class IndexVectors:
    """The vectors of one index loaded into a :class:`SemanticIndex`, kept in step with it.

    Not thread-safe: its owner serialises calls.
    """

    def __init__(self, semantic: SemanticIndex) -> None:
        """Start with nothing loaded.

        Args:
            semantic: Where the vectors go (and are searched).
        """
        self.semantic = semantic
        self.version: int | None = None
        self.read = 0
        """Concepts whose vectors were read from the index, for tests and benches."""
        self._tokens: dict[str, str] = {}  # concept id -> the token its vector was read at

    def sync(self, view: IndexView) -> None:
        """Hold the vectors of the view's version: all at first, then those that changed.

        Args:
            view: The version served.
        """
        if self.version == view.version:
            return
        if self.version is None:
            wanted = None
        else:
            current = _concept_tokens(view)
            for cid in [c for c in self._tokens if c not in current]:
                del self._tokens[cid]
                self.semantic.remove(cid)
            wanted = [cid for cid, token in current.items() if self._tokens.get(cid) != token]
        for cid, token, vectors in _read(view, wanted):
            self._hold(cid, token, None if vectors is None else vectors[0])
            self.read += 1
        self.version = view.version

    def put(self, cid: str, token: str, vector: np.ndarray | None) -> None:
        """Hold a vector this process just wrote to the index.

        Args:
            cid: The concept id.
            token: The change token of its document.
            vector: What ``embed_concepts`` gave, ``None`` when embedding failed.
        """
        if self.version is None:
            return  # not loaded yet: the first sync reads it from the index
        self._hold(cid, token, vector)

    def _hold(self, cid: str, token: str, vector: np.ndarray | None) -> None:
        # a concept without a vector (written while the embedder was down) is held bare and
        # read again at the next version: an indexer may have embedded it since
        self._tokens[cid] = token if vector is not None else _BARE
        if vector is None:
            self.semantic.remove(cid)
        else:
            self.semantic.put(cid, vector)


def has_vectors(dataset: Any) -> bool:
    """Whether a dataset has the vectors column (an index built before it had none).

    Args:
        dataset: A ``lance.LanceDataset``.

    Returns:
        ``True`` when the column exists.
    """
    return rows.VECTORS in dataset.schema.names


def _concept_tokens(view: IndexView) -> dict[str, str]:
    found: dict[str, str] = {}
    for batch in view.dataset.to_batches(
        columns=["id", "token"], filter=f"kind = '{rows.KIND_CONCEPT}'", batch_size=_BATCH
    ):
        for cid, token in zip(
            batch.column(0).to_pylist(), batch.column(1).to_pylist(), strict=True
        ):
            if cid in view.concepts:
                found[cid] = token
    return found


def _read(view: IndexView, ids: list[str] | None) -> Iterator[tuple[str, str, np.ndarray | None]]:
    """Yield ``(id, token, parts x dimension array or None)`` of all or the named concepts."""
    from agentkernel.knowledgebase.okf.bundleindex.view import in_filters

    columns = ["id", "token", rows.VECTORS]
    kind = f"kind = '{rows.KIND_CONCEPT}'"
    if ids is None:
        filters = [kind]
    else:
        filters = [f"{kind} AND {where}" for where, _ in in_filters("id", ids)]
    for where in filters:
        for batch in view.dataset.to_batches(columns=columns, filter=where, batch_size=_BATCH):
            yield from _decode(view, batch)


def _decode(view: IndexView, batch: Any) -> Iterator[tuple[str, str, np.ndarray | None]]:
    import numpy as np

    ids = batch.column(0).to_pylist()
    tokens = batch.column(1).to_pylist()
    column = batch.column(2)
    parts = column.value_lengths().fill_null(0).to_numpy(zero_copy_only=False)
    inner = column.flatten()  # the parts of every non-null row, in order
    numbers = inner.flatten().to_numpy(zero_copy_only=False).astype(np.float32, copy=False)
    widths = inner.value_lengths().to_numpy(zero_copy_only=False)
    dimension = int(widths[0]) if len(widths) else 0
    table = numbers.reshape(-1, dimension) if dimension else numbers.reshape(0, 0)
    at = 0
    for i, (cid, token) in enumerate(zip(ids, tokens, strict=True)):
        if not parts[i]:  # null: written without a vector
            yield cid, token, None
            continue
        count = int(parts[i])
        if cid in view.concepts:
            yield cid, token, table[at : at + count]
        at += count
