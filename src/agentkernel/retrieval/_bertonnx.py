"""A BERT sentence encoder as an ONNX graph, built from a safetensors file at run time.

:func:`read_safetensors` maps ``model.safetensors`` into memory read-only and returns a view
per tensor (no copy: processes embedding with the same model share the page cache);
:func:`bert_model` writes the graph (:mod:`agentkernel.retrieval._onnxgraph`) that runs a BERT
encoder over those views with ONNX Runtime's fused CPU operators, then mean pooling over the
real tokens and normalisation to unit length, as sentence-transformers does.

The graph takes ``input_ids`` and ``attention_mask`` (int32, texts x tokens, padding on the
right) and returns ``embeddings`` (float32, texts x hidden). Per layer: ``Attention`` (the
query, key and value projections in one product, masked softmax), the output projection and
``SkipLayerNormalization`` (residual and layer norm in one pass), the feed-forward products
around GELU (the exact, erf form), and another ``SkipLayerNormalization``. The dense
products are ``Gemm`` with the weights as stored, ``(out, in)`` (``transB``): ONNX Runtime
packs them once when the session starts.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from agentkernel.retrieval._modelfolder import parse_json
from agentkernel.retrieval._onnxgraph import FLOAT, INT32, GraphBuilder
from agentkernel.retrieval.embedding import EmbedderError

_MS = "com.microsoft"
_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32}
_MAX_HEADER = 100_000_000
_QKV = ("query", "key", "value")


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """The tensors of a safetensors file, as read-only views of the file mapped in memory.

    Args:
        path: The ``.safetensors`` file.

    Returns:
        Each tensor by name (the ``__metadata__`` entry left out).

    Raises:
        EmbedderError: The file cannot be read, or its header is not a safetensors header
            (bad length, not JSON or nested too deeply, a tensor outside the file or of an
            unknown type).
    """
    try:
        with path.open("rb") as handle:
            size = struct.unpack("<Q", handle.read(8))[0]
            if not 2 <= size <= _MAX_HEADER:
                raise ValueError(f"a header of {size} bytes")
            header = parse_json(
                handle.read(size), f"{path} is not a readable safetensors file: its header"
            )
        data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + size)
        tensors = {}
        for name, entry in header.items():
            if name == "__metadata__":
                continue
            dtype = np.dtype(_DTYPES[entry["dtype"]])
            start, end = (int(v) for v in entry["data_offsets"])
            shape = tuple(int(d) for d in entry["shape"])
            if not 0 <= start <= end <= data.size or end - start != dtype.itemsize * int(
                np.prod(shape, dtype=np.int64)
            ):
                raise ValueError(f"{name}: bytes {start}-{end} do not hold {shape}")
            tensors[name] = np.asarray(data[start:end]).view(dtype).reshape(shape)
    except (OSError, ValueError, KeyError, TypeError, AttributeError, struct.error) as exc:
        raise EmbedderError(f"{path} is not a readable safetensors file: {exc}") from exc
    return tensors


def bert_model(
    config: dict[str, Any], tensors: dict[str, np.ndarray]
) -> tuple[bytes, dict[str, np.ndarray]]:
    """The encoder, mean pooling and normalisation, over the weights in ``tensors``.

    Args:
        config: The model's ``config.json`` (hidden size, heads, layers, layer norm epsilon).
        tensors: Its weights by name (:func:`read_safetensors`), with or without ``bert.``.

    Returns:
        The model's bytes, and the arrays of its external initializers by name (for
        ``SessionOptions.add_external_initializers``).

    Raises:
        EmbedderError: A tensor is missing or has the wrong shape.
    """
    hidden, eps = int(config["hidden_size"]), float(config.get("layer_norm_eps", 1e-12))
    graph = GraphBuilder()

    def get(name: str, *shape: int) -> np.ndarray:
        value = tensors.get(name, tensors.get(f"bert.{name}"))
        if value is None:
            raise EmbedderError(f"model.safetensors lacks the tensor {name}")
        if shape and value.shape != shape:
            raise EmbedderError(f"model.safetensors: {name} is {value.shape}, not {shape}")
        return np.asarray(value, dtype=np.float32)

    def weight(name: str, *shape: int) -> str:
        return graph.weight(name, get(name, *shape))

    # segment 0 for every token: its embedding row folded into the positions' table
    positions = get("embeddings.position_embeddings.weight")
    positions = positions + get("embeddings.token_type_embeddings.weight")[0]
    x, mask_index = _outputs(
        graph.node(
            "EmbedLayerNormalization",
            [
                "input_ids",
                "",
                weight("embeddings.word_embeddings.weight"),
                graph.weight("positions", positions),
                "",
                weight("embeddings.LayerNorm.weight", hidden),
                weight("embeddings.LayerNorm.bias", hidden),
                "attention_mask",
            ],
            outputs=2,
            domain=_MS,
            epsilon=eps,
        )
    )
    shape3 = graph.node("Shape", [x])
    flat_shape = graph.constant("flat_shape", np.array([-1, hidden], dtype=np.int64))
    x = graph.node("Reshape", [x, flat_shape])
    heads = int(config["num_attention_heads"])
    for i in range(int(config["num_hidden_layers"])):
        p = f"encoder.layer.{i}."
        qkv = [get(f"{p}attention.self.{n}.weight", hidden, hidden) for n in _QKV]
        qkv_bias = [get(f"{p}attention.self.{n}.bias", hidden) for n in _QKV]
        attended = graph.node(
            "Attention",
            [
                graph.node("Reshape", [x, shape3]),
                graph.weight(f"{p}qkv", np.concatenate(qkv).T),
                graph.weight(f"{p}qkv_bias", np.concatenate(qkv_bias)),
                mask_index,
            ],
            domain=_MS,
            num_heads=heads,
        )
        attended = graph.node("Reshape", [attended, flat_shape])
        x = _dense_norm(graph, weight, x, attended, f"{p}attention.output.", hidden, eps)
        up = graph.node(
            "Gemm",
            [x, weight(f"{p}intermediate.dense.weight"), weight(f"{p}intermediate.dense.bias")],
            transB=1,
        )
        up = graph.node("Gelu", [up], domain=_MS)
        x = _dense_norm(graph, weight, x, up, f"{p}output.", hidden, eps)
    pooled = _pooled(graph, graph.node("Reshape", [x, shape3]))
    texts: list[int | str] = ["texts", "tokens"]
    inputs = [("input_ids", INT32, texts), ("attention_mask", INT32, texts)]
    model = graph.model(inputs, [(pooled, FLOAT, ["texts", hidden])])
    return model, graph.weights


def _outputs(name: str) -> tuple[str, str]:
    return name, f"{name}:1"


def _dense_norm(
    graph: GraphBuilder,
    weight: Callable[..., str],
    residual: str,
    x: str,
    prefix: str,
    hidden: int,
    eps: float,
) -> str:
    """``LayerNorm(residual + x @ W.T + b)``: a BERT output block."""
    dense = graph.node(
        "Gemm", [x, weight(f"{prefix}dense.weight"), weight(f"{prefix}dense.bias")], transB=1
    )
    return graph.node(
        "SkipLayerNormalization",
        [
            dense,
            residual,
            weight(f"{prefix}LayerNorm.weight", hidden),
            weight(f"{prefix}LayerNorm.bias", hidden),
        ],
        domain=_MS,
        epsilon=eps,
    )


def _pooled(graph: GraphBuilder, x: str) -> str:
    """The mean over each text's real tokens, at unit length: the ``embeddings`` output."""
    weights = graph.node("Cast", ["attention_mask"], to=FLOAT)
    weights = graph.node("Unsqueeze", [weights, graph.constant("last", np.array([-1], np.int64))])
    one = graph.constant("axis1", np.array([1], np.int64))
    total = graph.node("ReduceSum", [graph.node("Mul", [x, weights]), one], keepdims=0)
    count = graph.node("ReduceSum", [weights, one], keepdims=0)
    count = graph.node("Max", [count, graph.constant("tiny", np.array(1e-9, np.float32))])
    mean = graph.node("Div", [total, count])
    norm = graph.node("ReduceL2", [mean], axes=[-1], keepdims=1)
    norm = graph.node("Max", [norm, graph.constant("eps", np.array(1e-12, np.float32))])
    return graph.node("Div", [mean, norm])
