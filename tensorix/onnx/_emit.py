"""The node writer the symbolics use: :class:`Emitter` collects ONNX nodes and initializers
and hands out fresh value names; :class:`Value` is one ONNX tensor with its tensorix shape and
dtype (what the symbolics read to choose attributes and casts)."""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..tensor import Tensor
from ._common import onnx_module, to_elem_type

__all__ = ["Emitter", "Value"]


class Value:
    """An ONNX tensor: its ``name`` in the graph, tensorix ``shape`` and ``dtype``, and the
    ``dynamic`` dims whose size follows a dynamic axis (``shape`` holds the example's)."""

    __slots__ = ("name", "shape", "dtype", "dynamic")

    def __init__(self, name, shape, dtype, dynamic=frozenset()):
        self.name, self.shape, self.dtype = name, tuple(shape), dtype
        self.dynamic = dynamic

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self):
        return f"Value({self.name}, {self.shape}, {self.dtype})"


class Emitter:
    """Where symbolics write: ``op(type, *inputs, **attrs)`` appends a node and returns its
    output name(s); ``const``/``ints`` make initializers; ``cast`` converts where needed."""

    def __init__(self, opset: int):
        self.opset = opset
        self.nodes, self.initializers = [], []
        self.current = None  # the fx node being lowered: names its ONNX nodes
        self.dynamic = frozenset()  # its output's dynamic dims
        self._count = 0
        self._consts: dict = {}  # small constants, shared by value

    def fresh(self, hint="v") -> str:
        self._count += 1
        base = self.current.name if self.current is not None else hint
        return f"{base}_{hint}{self._count}"

    def node(self, op_type, inputs, outputs, **attrs):
        helper = onnx_module().helper
        self.nodes.append(helper.make_node(op_type, list(inputs), list(outputs),
                                           name=f"{op_type}_{len(self.nodes)}", **attrs))

    def op(self, op_type, *inputs, n_out=1, **attrs):
        """Append ``op_type`` on ``inputs`` (Values, names, or '' for an omitted optional
        input); returns the output name, or a list of ``n_out`` names."""
        names = [i.name if isinstance(i, Value) else i for i in inputs]
        outs = [self.fresh(op_type.lower()) for _ in range(n_out)]
        self.node(op_type, names, outs, **{k: v for k, v in attrs.items() if v is not None})
        return outs[0] if n_out == 1 else outs

    def initializer(self, tensor, name) -> Value:
        """A folded tensor (or array) as an initializer named ``name``."""
        onnx = onnx_module()
        array = _array(tensor)
        unique = name
        while unique in self._taken():
            unique = f"{name}_{self._count}"
            self._count += 1
        self.initializers.append(onnx.numpy_helper.from_array(array, unique))
        return Value(unique, array.shape, dt.from_numpy_dtype(array.dtype))

    def _taken(self):
        return {i.name for i in self.initializers}

    def const(self, value, dtype=None) -> str:
        """A constant's name (an array, or a Python scalar of ``dtype``, a tensorix dtype)."""
        array = np.asarray(value, dtype=None if dtype is None else dtype.np)
        key = (array.dtype.str, array.shape, array.tobytes())
        if key not in self._consts:
            self._consts[key] = self.initializer(array, f"const_{len(self._consts)}").name
        return self._consts[key]

    def ints(self, values) -> str:
        return self.const(np.asarray(list(values), dtype=np.int64))

    def scalar(self, value, like: Value) -> str:
        """A 0-d constant of ``like``'s dtype."""
        return self.const(np.asarray(value, dtype=like.dtype.np))

    def cast(self, value, dtype):
        """``value`` converted to ``dtype`` (no node when it already is)."""
        name = value.name if isinstance(value, Value) else value
        if isinstance(value, Value) and value.dtype == dtype:
            return name
        return self.op("Cast", name, to=to_elem_type(dtype))


def _array(value) -> np.ndarray:
    # np.array(order="C"), not ascontiguousarray: that one makes a 0-d array 1-d
    if isinstance(value, Tensor):
        return np.array(value.detach().cpu().numpy(), order="C")
    return np.array(value, order="C")
