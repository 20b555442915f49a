"""``tensorix.onnx.load``: run an ONNX model in tensorix, as a callable ``nn.Module``.

An interpreter, not a converter: the graph's nodes run in topological order (the order ONNX
requires them to be stored in) as tensorix ops on Tensors, so a loaded model runs on either
device and is differentiable. Initializers become the module's parameters (floating point) and
buffers (the rest). Shape-valued inputs (Reshape's shape, Slice's starts, ...) are read as
Python ints: the interpreter runs eagerly, so data-dependent shapes cost nothing special.

The handlers for each ONNX op live in ``_load_ops.py``.
"""

from __future__ import annotations

import re

import numpy as np

from .. import nn
from ..tensor import Tensor
from ._common import UnsupportedOperatorError, onnx_module
from ._load_ops import HANDLERS

__all__ = ["load", "OnnxModule"]


def load(path_or_model) -> OnnxModule:
    """Load an ONNX model (a path, bytes, or an ``onnx.ModelProto``) as a tensorix Module.

    The module's ``forward(*inputs)`` takes the graph inputs in order (Tensors or arrays; an
    input with an initializer of the same name may be left out) and returns the graph output,
    or a tuple when the graph has several. Parameters are named after the initializers.

    Example::

        model = tensorix.onnx.load("model.onnx")
        logits = model(tensorix.randn(1, 3, 32, 32))
    """
    onnx = onnx_module()
    if isinstance(path_or_model, onnx.ModelProto):
        proto = path_or_model
    elif isinstance(path_or_model, bytes):
        proto = onnx.load_from_string(path_or_model)
    else:
        proto = onnx.load(str(path_or_model))
    return OnnxModule(proto)


class OnnxModule(nn.Module):
    """An ONNX graph run by the interpreter (made by :func:`load`)."""

    def __init__(self, proto):
        super().__init__()
        onnx = onnx_module()
        graph = proto.graph
        self.opset = _default_opset(proto)
        self.graph_name = graph.name
        self._init_attr = {}  # ONNX initializer name -> attribute name on this module
        taken = set()
        for init in graph.initializer:
            array = onnx.numpy_helper.to_array(init)
            attr = _attribute_name(init.name, taken, self)
            value = Tensor(np.array(array))
            if value.is_floating_point():
                setattr(self, attr, nn.Parameter(value))
            else:
                self.register_buffer(attr, value)
            self._init_attr[init.name] = attr
        self.input_names = [i.name for i in graph.input if i.name not in self._init_attr]
        self.output_names = [o.name for o in graph.output]
        self._nodes = [_Node(n, onnx) for n in graph.node]
        for node in self._nodes:
            if node.domain not in ("", "ai.onnx"):
                raise UnsupportedOperatorError(
                    f"tensorix.onnx.load: node {node.name!r}: domain {node.domain!r} (op "
                    f"{node.op_type}) is not supported; only the default ONNX domain is")
            if node.op_type not in HANDLERS:
                raise UnsupportedOperatorError(
                    f"tensorix.onnx.load: ONNX op {node.op_type!r} (node {node.name!r}, opset "
                    f"{self.opset}) is not supported by the interpreter; supported ops: "
                    f"{', '.join(sorted(HANDLERS))}")

    def forward(self, *inputs):
        if len(inputs) != len(self.input_names):
            raise TypeError(f"OnnxModule.forward: the graph takes {len(self.input_names)} "
                            f"inputs {self.input_names}, got {len(inputs)}")
        env = {name: getattr(self, attr) for name, attr in self._init_attr.items()}
        for name, value in zip(self.input_names, inputs):
            env[name] = value if isinstance(value, Tensor) else Tensor(np.asarray(value))
        env[""] = None  # an omitted optional input
        first = next((v for v in env.values() if isinstance(v, Tensor)), None)
        device = None if first is None else first.device
        for node in self._nodes:
            args = [env[name] for name in node.inputs]
            try:
                outs = HANDLERS[node.op_type](args, node.attrs, self.opset)
            except UnsupportedOperatorError:
                raise
            except Exception as e:  # name the node: a bare tensorix error says too little here
                raise type(e)(f"tensorix.onnx.load: node {node.name!r} ({node.op_type}): "
                              f"{e}") from e
            if not isinstance(outs, (tuple, list)):
                outs = (outs,)
            for name, out in zip(node.outputs, outs):
                if name:
                    # what Constant/Shape/Range make from host data joins the inputs' device
                    moved = device is not None and out is not None and out.device != device
                    env[name] = out.to(device) if moved else out
        results = tuple(env[name] for name in self.output_names)
        return results[0] if len(results) == 1 else results

    def extra_repr(self) -> str:
        return (f"graph={self.graph_name!r}, opset={self.opset}, nodes={len(self._nodes)}, "
                f"inputs={self.input_names}, outputs={self.output_names}")


class _Node:
    """A NodeProto read once: op type, input/output names, attributes as Python values."""

    __slots__ = ("op_type", "domain", "name", "inputs", "outputs", "attrs")

    def __init__(self, proto, onnx):
        self.op_type, self.domain, self.name = proto.op_type, proto.domain, proto.name
        self.inputs, self.outputs = list(proto.input), list(proto.output)
        self.attrs = {}
        for a in proto.attribute:
            if a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS):
                raise UnsupportedOperatorError(
                    f"tensorix.onnx.load: ONNX op {proto.op_type!r} (node {proto.name!r}) has a "
                    "subgraph attribute; control flow (If/Loop/Scan) is not supported")
            value = onnx.helper.get_attribute_value(a)
            if a.type == onnx.AttributeProto.TENSOR:
                value = onnx.numpy_helper.to_array(value)
            elif isinstance(value, bytes):
                value = value.decode()
            elif isinstance(value, list) and value and isinstance(value[0], bytes):
                value = [v.decode() for v in value]
            self.attrs[a.name] = value


def _default_opset(proto) -> int:
    for imp in proto.opset_import:
        if imp.domain in ("", "ai.onnx"):
            return int(imp.version)
    return 1


def _attribute_name(onnx_name: str, taken: set, module) -> str:
    """A Python identifier for an initializer (ONNX names may hold dots, colons, slashes)."""
    base = re.sub(r"\W", "_", onnx_name) or "init"
    if base[0].isdigit():
        base = "_" + base
    name, k = base, 1
    while name in taken or hasattr(module, name):  # never shadow a Module attribute
        name, k = f"{base}_{k}", k + 1
    taken.add(name)
    return name
