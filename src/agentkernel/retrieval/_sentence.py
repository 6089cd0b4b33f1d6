"""A local sentence-transformers model from a folder (the ``embeddings-torch`` extra).

Nothing is downloaded: the folder must hold the model (``modules.json`` or ``config.json``
and ``model.safetensors``), loaded with ``local_files_only``. ``sentence_transformers`` (and
torch) is imported when an embedder is built, never by importing this package.

A model folder never runs code, whatever sentence-transformers version is installed: the
folder is judged before sentence-transformers sees it
(:func:`~agentkernel.retrieval._modelfolder.check_folder`: only its own modules, no
``auto_map``, no Python file, no pickle) and is loaded with ``trust_remote_code=False`` and
safetensors only. The BERT mean-pooling models (all-MiniLM-L6-v2, the default) are computed
without torch by :mod:`~agentkernel.retrieval.minilm`; this module serves the others.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from agentkernel.retrieval._embedding import EmbedderError
from agentkernel.retrieval._modelfolder import check_folder, fingerprint, model_name

logger = logging.getLogger(__name__)

SMALL_BATCH = 4
"""Texts at most embedded on one torch thread (a query): see :func:`_one_thread`."""

_threads_lock = threading.Lock()
_one_thread_users = 0
_threads_before = 0


class SentenceTransformerEmbedder:
    """Embed with a sentence-transformers model held in a local folder, on the CPU.

    Example:
        >>> from agentkernel.retrieval import default_model_path
        >>> embedder = SentenceTransformerEmbedder(default_model_path())  # doctest: +SKIP
        >>> embedder.dimension  # doctest: +SKIP
        384
    """

    def __init__(self, path: str | Path, *, batch_size: int = 64, device: str = "cpu") -> None:
        """Load the model and check it embeds.

        Args:
            path: The model folder.
            batch_size: Texts per forward pass.
            device: The torch device.

        Raises:
            EmbedderError: The folder does not hold a model, or the extra is not installed.
        """
        folder = Path(path)
        if not folder.is_dir() or not (folder / "model.safetensors").is_file():
            raise EmbedderError(
                f"{folder} is not a sentence-transformers model folder (it needs "
                "model.safetensors and its configuration; pickled weights are never loaded). "
                "Give the folder of a downloaded model, 'default' for the packaged "
                "all-MiniLM-L6-v2, or an http(s):// embeddings endpoint."
            )
        check_folder(folder)
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbedderError(
                "This model folder needs sentence-transformers (it is not a BERT mean-pooling "
                "model, which the default embedder computes without torch): "
                "pip install 'agentkernel[embeddings-torch]'."
            ) from exc
        try:
            self._model: Any = SentenceTransformer(
                str(folder),
                device=device,
                local_files_only=True,
                trust_remote_code=False,
                model_kwargs={"use_safetensors": True},
            )
        except Exception as exc:
            raise EmbedderError(
                f"{folder} could not be loaded as a sentence-transformers model: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        dimension_of = getattr(self._model, "get_embedding_dimension", None)
        if dimension_of is None:  # sentence-transformers < 5
            dimension_of = self._model.get_sentence_embedding_dimension
        size = dimension_of()
        if not isinstance(size, int) or size < 1:
            raise EmbedderError(f"{folder}: the model does not say its embedding dimension.")
        self.dimension: int = size
        self.model_id: str = f"st:{model_name(folder)}:{size}:{fingerprint(folder)}"
        self._batch_size = batch_size
        self._device = device
        self.path = folder

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed texts into unit vectors.

        Args:
            texts: The texts.

        Returns:
            One vector per text.

        Raises:
            EmbedderError: The model failed.
        """
        if not texts:
            return []
        try:
            if len(texts) <= SMALL_BATCH and self._device == "cpu":
                with _one_thread():
                    vectors = self._forward(texts)
            else:
                vectors = self._encode(texts)
        except Exception as exc:
            raise EmbedderError(f"embedding failed: {type(exc).__name__}: {exc}") from exc
        rows: list[list[float]] = vectors.tolist()
        return rows

    def _forward(self, texts: Sequence[str]) -> Any:
        """Embed a few texts by one call of the model's modules (what ``encode`` runs).

        ``encode`` adds ~1.5 ms of CPU a call around the same forward pass (length sorting,
        batching, device moves); the vectors are the same to float rounding (the bench
        checks cosine >= 0.9999 against the batch path the cache was filled by).
        """
        import torch

        model = self._model
        prepare = getattr(model, "preprocess", None) or model.tokenize  # ST < 5: tokenize
        with torch.inference_mode():
            embedded = model(prepare(list(texts)))["sentence_embedding"]
            return torch.nn.functional.normalize(embedded, p=2, dim=1).numpy()

    def _encode(self, texts: Sequence[str]) -> Any:
        return self._model.encode(
            list(texts),
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )


@contextmanager
def _one_thread() -> Iterator[None]:
    """Run torch on one intra-op thread while a short text is embedded.

    A query of ~10 word pieces is too small to split: on a shared CPU the second thread's
    barrier waits (OpenMP spins, then sleeps, while the other core runs someone else) made a
    query 5-10x slower than on one thread (bench/RESULTS.md, issue 16's query latency). The
    setting is per process, so concurrent short embeddings share one switch: the first sets
    one thread, the last restores the count it found; a long batch running meanwhile in
    another thread only runs on one thread for that while, with the same results.
    """
    import torch

    global _one_thread_users, _threads_before
    with _threads_lock:
        if _one_thread_users == 0:
            _threads_before = torch.get_num_threads()
            if _threads_before != 1:
                torch.set_num_threads(1)
        _one_thread_users += 1
    try:
        yield
    finally:
        with _threads_lock:
            _one_thread_users -= 1
            if _one_thread_users == 0 and _threads_before != 1:
                torch.set_num_threads(_threads_before)
