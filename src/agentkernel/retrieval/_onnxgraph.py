"""An ONNX model written by hand: the few protobuf messages a computation graph needs.

ONNX Runtime loads a model from the bytes of an ``onnx.ModelProto``. The ``onnx`` package
that usually writes them is large and not needed to run a model, so :class:`GraphBuilder`
writes the protobuf wire format itself (varints and length-delimited fields, by the field
numbers of ``onnx.proto``), for the messages a graph of operators uses: the model, its
operator sets, the graph, its nodes and their attributes, tensors and the graph's typed
inputs and outputs.

Large weights are not copied into the bytes: each is declared as an initializer whose data
lies outside the model (``data_location`` external) and handed to ONNX Runtime as an array
(:attr:`GraphBuilder.weights`, for ``SessionOptions.add_external_initializers``), which runs
on that array's memory. Small constants (shapes, axes) are written inline.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

import numpy as np

FLOAT, INT8, INT32, INT64 = 1, 3, 6, 7
"""``TensorProto.DataType`` values."""

_DTYPES = {
    np.dtype(np.float32): FLOAT,
    np.dtype(np.int8): INT8,
    np.dtype(np.int32): INT32,
    np.dtype(np.int64): INT64,
}
_IR_VERSION = 8
_EXTERNAL = 1  # TensorProto.DataLocation.EXTERNAL
_ATTR_FLOAT, _ATTR_INT, _ATTR_INTS = 1, 2, 7  # AttributeProto.AttributeType
_VARINT, _FIXED32, _BYTES = 0, 5, 2  # wire types

Attribute = float | int | Sequence[int]


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int64: ten bytes, two's complement
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _key(field: int, wire: int) -> bytes:
    return _varint(field << 3 | wire)


def _int(field: int, value: int) -> bytes:
    return _key(field, _VARINT) + _varint(value)


def _bytes(field: int, value: bytes | str) -> bytes:
    data = value.encode() if isinstance(value, str) else value
    return _key(field, _BYTES) + _varint(len(data)) + data


def _attribute(name: str, value: Attribute) -> bytes:
    if isinstance(value, float):
        body = _key(2, _FIXED32) + struct.pack("<f", value) + _int(20, _ATTR_FLOAT)
    elif isinstance(value, int):
        body = _int(3, value) + _int(20, _ATTR_INT)
    else:
        body = b"".join(_int(8, v) for v in value) + _int(20, _ATTR_INTS)
    return _bytes(1, name) + body


def _value_info(name: str, elem_type: int, dims: Sequence[int | str]) -> bytes:
    shape = b"".join(_bytes(1, _bytes(2, d) if isinstance(d, str) else _int(1, d)) for d in dims)
    tensor_type = _int(1, elem_type) + _bytes(2, shape)
    return _bytes(1, name) + _bytes(2, _bytes(1, tensor_type))


class GraphBuilder:
    """Nodes, constants and weights of one graph, written as ``ModelProto`` bytes.

    Example:
        >>> graph = GraphBuilder()
        >>> total = graph.node("Add", ["x", graph.constant("one", np.ones(2, np.float32))])
        >>> model = graph.model([("x", FLOAT, ["n", 2])], [(total, FLOAT, ["n", 2])])
        >>> model[0], model[1]  # field 1 (ir_version), a varint: 8
        (8, 8)
    """

    def __init__(self) -> None:
        self._nodes: list[bytes] = []
        self._initializers: list[bytes] = []
        self._count = 0
        self.weights: dict[str, np.ndarray] = {}
        """The arrays of the external initializers, by name (the session's to run on)."""

    def node(
        self,
        op_type: str,
        inputs: Sequence[str],
        outputs: int = 1,
        *,
        domain: str = "",
        **attributes: Attribute,
    ) -> str:
        """Add a node; return its first output's name (``outputs`` names are made).

        Args:
            op_type: The operator, e.g. ``"Gemm"``.
            inputs: The names of its inputs (``""`` for an optional one left out).
            outputs: How many outputs to name.
            domain: The operator set (``"com.microsoft"`` for ONNX Runtime's own).
            **attributes: Float, int or list-of-int attributes.

        Returns:
            The first output's name; the others are ``<name>:1``, ``<name>:2``...
        """
        self._count += 1
        name = f"{op_type.lower()}{self._count}"
        names = [name] + [f"{name}:{i}" for i in range(1, outputs)]
        body = b"".join(_bytes(1, i) for i in inputs) + b"".join(_bytes(2, o) for o in names)
        body += _bytes(3, name) + _bytes(4, op_type)
        body += b"".join(_bytes(5, _attribute(k, v)) for k, v in attributes.items())
        if domain:
            body += _bytes(7, domain)
        self._nodes.append(body)
        return name

    def constant(self, name: str, value: np.ndarray) -> str:
        """Add a small tensor written into the model bytes; return its name."""
        array = np.ascontiguousarray(value)
        self._initializers.append(self._tensor(name, array) + _bytes(9, array.tobytes()))
        return name

    def weight(self, name: str, value: np.ndarray) -> str:
        """Add a tensor kept outside the model bytes (see :attr:`weights`); return its name."""
        array = np.ascontiguousarray(value)
        self.weights[name] = array
        location = _bytes(1, "location") + _bytes(2, f"{name}.bin")
        self._initializers.append(
            self._tensor(name, array) + _bytes(13, location) + _int(14, _EXTERNAL)
        )
        return name

    @staticmethod
    def _tensor(name: str, array: np.ndarray) -> bytes:
        dims = b"".join(_int(1, d) for d in array.shape)
        return dims + _int(2, _DTYPES[array.dtype]) + _bytes(8, name)

    def model(
        self,
        inputs: Sequence[tuple[str, int, Sequence[int | str]]],
        outputs: Sequence[tuple[str, int, Sequence[int | str]]],
        opsets: Sequence[tuple[str, int]] = (("", 17), ("com.microsoft", 1)),
    ) -> bytes:
        """The ``ModelProto`` bytes.

        Args:
            inputs: The graph's inputs: name, element type, dimensions (a str names a
                dimension free at run time).
            outputs: Its outputs, likewise.
            opsets: The operator sets it imports, by domain and version.

        Returns:
            The serialised model.
        """
        graph = b"".join(_bytes(1, n) for n in self._nodes) + _bytes(2, "graph")
        graph += b"".join(_bytes(5, t) for t in self._initializers)
        graph += b"".join(_bytes(11, _value_info(*i)) for i in inputs)
        graph += b"".join(_bytes(12, _value_info(*o)) for o in outputs)
        imports = b"".join(_bytes(8, _bytes(1, d) + _int(2, v)) for d, v in opsets)
        return _int(1, _IR_VERSION) + _bytes(2, "agentkernel") + _bytes(7, graph) + imports
