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
        ``{"model_id", "dimension"}``, and ``"spec"`` when the embedder can be named on
        another machine (:func:`portable_spec`), so a reader searches with it unasked.
    """
    embedder = semantic.embedder
    record: dict[str, Any] = {"model_id": embedder.model_id, "dimension": semantic.dimension}
    spec = portable_spec(embedder)
    if spec is not None:
        record["spec"] = spec
    return record


def portable_spec(embedder: Any) -> str | None:
    """How any machine names this embedder: ``default``, or an endpoint's URL and model.

    A model folder is a path on the indexer's machine: not recorded (a reader names it).

    Args:
        embedder: The embedder.

    Returns:
        A spec for :func:`~agentkernel.retrieval.embedders.load_embedder`, or ``None``.
    """
    from pathlib import Path

    from agentkernel.retrieval.embedders import default_model_path

    url, model = getattr(embedder, "url", None), getattr(embedder, "model", None)
    if isinstance(url, str) and isinstance(model, str):
        return f"{url}#{model}"  # no user info, no query: the URL as messages show it
    path = getattr(embedder, "path", None)
    try:
        default = default_model_path()
    except EmbedderError:
        return None
    return "default" if path is not None and Path(path) == default else None


def recorded_spec(recorded: Mapping[str, Any] | None) -> str | None:
    """The embedder a reader searches an index's vectors with, unless told otherwise.

    Args:
        recorded: The meta row's ``embedder`` (``None``: the index holds no vectors).

    Returns:
        The recorded spec; for an index recorded without one, ``default`` when its model is
        the packaged default's; else ``None`` (the reader must name the embedder).
    """
    if not recorded:
        return None
    spec = recorded.get("spec")
    if isinstance(spec, str) and spec.strip():
        return spec
    from agentkernel.retrieval.embedders import default_installed, load_embedder

    if not default_installed():
        return None
    try:
        default = load_embedder("default").model_id  # no weights read: ids and sizes only
    except EmbedderError:
        return None
    return "default" if recorded.get("model_id") == default else None


def read_model_record(dataset: Any) -> dict[str, Any] | None:
    """The meta row's record of an index's vectors, read alone (one filtered scan).

    Args:
        dataset: A ``lance.LanceDataset``.

    Returns:
        The record, or ``None`` when the index holds no vectors.
    """
    import json

    if not has_vectors(dataset):
        return None
    table = dataset.to_table(columns=["text"], filter=f"kind = '{rows.KIND_META}'")
    texts = table.column("text").to_pylist()
    meta = json.loads(texts[0] or "{}") if texts else {}
    recorded = meta.get("embedder")
    return recorded if isinstance(recorded, dict) else None


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
