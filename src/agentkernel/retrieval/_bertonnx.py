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

With ``quantized``, every dense product of a layer runs on 8-bit integers: the query, key
and value projections (``QAttention`` after ``DynamicQuantizeLinear``), the output projection
and the feed-forward pair (``DynamicQuantizeMatMul``). Each quantizes its input per call
(unsigned 8-bit, one scale over the whole input) and multiplies it by weights
:func:`quantize_columns` derives here from the float weights, the same bytes on every run.
Attention's softmax, the layer norms, GELU and pooling stay float32.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import numpy as np

from agentkernel.retrieval._embedding import EmbedderError
from agentkernel.retrieval._modelfolder import parse_json
from agentkernel.retrieval._onnxgraph import FLOAT, INT32, GraphBuilder

_MS = "com.microsoft"
_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32}
_MAX_HEADER = 100_000_000
_QKV = ("query", "key", "value")

WEIGHT_LEVELS = 63
"""The largest magnitude of a quantized weight: 7 bits, not 8. A CPU without VNNI multiplies
unsigned 8-bit inputs by signed 8-bit weights in pairs summed into 16 bits
(``vpmaddubsw``), which saturates when both are near their limits (2 x 255 x 127 > 32767);
2 x 255 x 63 never does, so every x86 CPU computes the same integers."""


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


def quantize_columns(weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A dense layer's weights as 7-bit integers, one scale per output (symmetric).

    Deterministic: the same float weights give the same bytes on every run and machine
    (``x / scale`` is rounded half to even by numpy on every platform).

    Args:
        weight: The float weights as stored, ``(out, in)``.

    Returns:
        ``(quantized, scales)``: ``(in, out)`` int8 values in ``[-WEIGHT_LEVELS,
        WEIGHT_LEVELS]`` and ``(out,)`` float32 scales, so that ``quantized * scales``
        approximates ``weight.T``.
    """
    columns = np.asarray(weight, dtype=np.float32).T
    largest = np.abs(columns).max(axis=0)
    scales = np.where(largest > 0, largest / WEIGHT_LEVELS, 1.0).astype(np.float32)
    levels = np.clip(np.rint(columns / scales), -WEIGHT_LEVELS, WEIGHT_LEVELS)
    return np.ascontiguousarray(levels.astype(np.int8)), scales


def bert_model(
    config: dict[str, Any], tensors: dict[str, np.ndarray], *, quantized: bool = False
) -> tuple[bytes, dict[str, np.ndarray]]:
    """The encoder, mean pooling and normalisation, over the weights in ``tensors``.

    Args:
        config: The model's ``config.json`` (hidden size, heads, layers, layer norm epsilon).
        tensors: Its weights by name (:func:`read_safetensors`), with or without ``bert.``.
        quantized: Run the dense products on 8-bit integers (see the module's
            docstring); the vectors then differ from the float model's (cosine ~0.994),
            so they need their own model id.

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

    def dense(x: str, prefix: str) -> str:
        """``x @ W.T + b``, the layer's weights as stored (``(out, in)``)."""
        w, b = f"{prefix}dense.weight", f"{prefix}dense.bias"
        if not quantized:
            return graph.node("Gemm", [x, weight(w), weight(b)], transB=1)
        levels, scales = quantize_columns(get(w))
        inputs = [x, graph.weight(f"{w}.q", levels), graph.weight(f"{w}.scale", scales)]
        return graph.node("DynamicQuantizeMatMul", [*inputs, "", weight(b)], domain=_MS)

    def norm(residual: str, x: str, prefix: str) -> str:
        """``LayerNorm(residual + x)``: the end of a BERT output block."""
        scale = weight(f"{prefix}LayerNorm.weight", hidden)
        shift = weight(f"{prefix}LayerNorm.bias", hidden)
        return graph.node(
            "SkipLayerNormalization", [x, residual, scale, shift], domain=_MS, epsilon=eps
        )

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
        x3 = graph.node("Reshape", [x, shape3])
        bias = graph.weight(f"{p}qkv_bias", np.concatenate(qkv_bias))
        if quantized:
            levels, scales = quantize_columns(np.concatenate(qkv))
            q8, q8_scale, q8_zero = _outputs3(graph.node("DynamicQuantizeLinear", [x3], outputs=3))
            attended = graph.node(
                "QAttention",
                [
                    q8,
                    graph.weight(f"{p}qkv.q", levels),
                    bias,
                    q8_scale,
                    graph.weight(f"{p}qkv.scale", scales),
                    mask_index,
                    q8_zero,
                ],
                domain=_MS,
                num_heads=heads,
            )
        else:
            attended = graph.node(
                "Attention",
                [x3, graph.weight(f"{p}qkv", np.concatenate(qkv).T), bias, mask_index],
                domain=_MS,
                num_heads=heads,
            )
        attended = graph.node("Reshape", [attended, flat_shape])
        x = norm(x, dense(attended, f"{p}attention.output."), f"{p}attention.output.")
        up = graph.node("Gelu", [dense(x, f"{p}intermediate.")], domain=_MS)
        x = norm(x, dense(up, f"{p}output."), f"{p}output.")
    pooled = _pooled(graph, graph.node("Reshape", [x, shape3]))
    texts: list[int | str] = ["texts", "tokens"]
    inputs = [("input_ids", INT32, texts), ("attention_mask", INT32, texts)]
    model = graph.model(inputs, [(pooled, FLOAT, ["texts", hidden])])
    return model, graph.weights


def _outputs(name: str) -> tuple[str, str]:
    return name, f"{name}:1"


def _outputs3(name: str) -> tuple[str, str, str]:
    return name, f"{name}:1", f"{name}:2"


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
