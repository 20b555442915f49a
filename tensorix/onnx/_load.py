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
from .. import ops as T
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
        _check_ops(self._nodes, self.opset)

    def forward(self, *inputs):
        if len(inputs) != len(self.input_names):
            raise TypeError(f"OnnxModule.forward: the graph takes {len(self.input_names)} "
                            f"inputs {self.input_names}, got {len(inputs)}")
        env = {name: getattr(self, attr) for name, attr in self._init_attr.items()}
        for name, value in zip(self.input_names, inputs):
            env[name] = value if isinstance(value, Tensor) else Tensor(np.asarray(value))
        env[""] = None  # an omitted optional input
        first = next((v for v in env.values() if isinstance(v, Tensor)), None)
        self._device = None if first is None else first.device
        self._execute(self._nodes, env)
        results = tuple(env[name] for name in self.output_names)
        return results[0] if len(results) == 1 else results

    def _execute(self, nodes, env) -> None:
        """Run ``nodes`` in order, writing their outputs into ``env`` (a subgraph runs in a
        copy of its parent's env: ONNX lets it read the enclosing scope's names)."""
        device = self._device
        for node in nodes:
            args = [env[name] for name in node.inputs]
            try:
                if node.op_type in _CONTROL:
                    outs = _CONTROL[node.op_type](self, node, args, env)
                else:
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

    def _subgraph(self, graph, env, bound) -> list:
        """Run subgraph ``graph`` in a scope over ``env`` with its inputs ``bound``; its
        outputs."""
        scope = dict(env)
        scope.update(graph.initializers)
        scope.update(zip(graph.inputs, bound))
        self._execute(graph.nodes, scope)
        return [scope[name] for name in graph.outputs]

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
            if a.type == onnx.AttributeProto.GRAPHS:
                raise UnsupportedOperatorError(
                    f"tensorix.onnx.load: ONNX op {proto.op_type!r} (node {proto.name!r}) has a "
                    "list-of-graphs attribute, which no supported op takes")
            if a.type == onnx.AttributeProto.GRAPH:
                self.attrs[a.name] = _Graph(a.g, onnx)
                continue
            value = onnx.helper.get_attribute_value(a)
            if a.type == onnx.AttributeProto.TENSOR:
                value = onnx.numpy_helper.to_array(value)
            elif isinstance(value, bytes):
                value = value.decode()
            elif isinstance(value, list) and value and isinstance(value[0], bytes):
                value = [v.decode() for v in value]
            self.attrs[a.name] = value


class _Graph:
    """A subgraph attribute (If's branches, Loop's and Scan's body): its nodes, input and
    output names, and its own initializers (as constants)."""

    __slots__ = ("nodes", "inputs", "outputs", "initializers")

    def __init__(self, proto, onnx):
        self.nodes = [_Node(n, onnx) for n in proto.node]
        self.inputs = [i.name for i in proto.input]
        self.outputs = [o.name for o in proto.output]
        self.initializers = {i.name: Tensor(np.array(onnx.numpy_helper.to_array(i)))
                             for i in proto.initializer}


def _check_ops(nodes, opset) -> None:
    """Every node, subgraphs' included, is one the interpreter runs (else a clear error)."""
    stack = list(nodes)
    while stack:
        node = stack.pop()
        if node.domain not in ("", "ai.onnx"):
            raise UnsupportedOperatorError(
                f"tensorix.onnx.load: node {node.name!r}: domain {node.domain!r} (op "
                f"{node.op_type}) is not supported; only the default ONNX domain is")
        if node.op_type not in HANDLERS and node.op_type not in _CONTROL:
            raise UnsupportedOperatorError(
                f"tensorix.onnx.load: ONNX op {node.op_type!r} (node {node.name!r}, opset "
                f"{opset}) is not supported by the interpreter; supported ops: "
                f"{', '.join(sorted(set(HANDLERS) | set(_CONTROL)))}")
        stack.extend(n for a in node.attrs.values() if isinstance(a, _Graph) for n in a.nodes)


def _if(module, node, args, env):
    """ONNX If: the branch the (one-element) condition picks, run eagerly."""
    branch = node.attrs["then_branch" if bool(args[0]) else "else_branch"]
    return module._subgraph(branch, env, [])


def _loop(module, node, args, env):
    """ONNX Loop: ``body(i, cond, *carried) -> (cond, *carried, *scanned)`` while ``i < M``
    and ``cond`` (either may be omitted); the scanned values are stacked along a new dim 0."""
    trip, keep = args[0], args[1]
    carried = list(args[2:])
    body = node.attrs["body"]
    limit = None if trip is None else int(trip.item())
    going = True if keep is None else bool(keep)
    scans: list = []
    i = 0
    while going and (limit is None or i < limit):
        outs = module._subgraph(body, env, [Tensor(np.array(i, dtype=np.int64)),
                                            Tensor(np.array(going))] + carried)
        going = bool(outs[0])
        carried = outs[1:1 + len(carried)]
        scans.append(outs[1 + len(carried):])
        i += 1
    n_scan = len(body.outputs) - 1 - len(carried)
    if n_scan and not scans:
        raise UnsupportedOperatorError(
            "tensorix.onnx.load: a Loop that runs zero times has scan outputs of unknown shape")
    stacked = [T.stack([step[k] for step in scans]) for k in range(n_scan)]
    return tuple(carried + stacked)


def _scan(module, node, args, env):
    """ONNX Scan (opset 9+): ``body(*state, *slices) -> (*state, *scanned)`` once per step
    along each scan input's axis (``scan_input_axes``, reversed where
    ``scan_input_directions`` says 1); the scanned values are stacked along
    ``scan_output_axes`` (in reverse order where ``scan_output_directions`` says 1)."""
    body = node.attrs["body"]
    m = node.attrs["num_scan_inputs"]
    n_state = len(args) - m
    state, xs = list(args[:n_state]), args[n_state:]
    k = len(body.outputs) - n_state
    in_axes = [_axis_of(a, x.ndim) for a, x in
               zip(node.attrs.get("scan_input_axes", [0] * m), xs)]
    in_dirs = node.attrs.get("scan_input_directions", [0] * m)
    lengths = {x.shape[a] for x, a in zip(xs, in_axes)}
    if len(lengths) != 1:
        raise ValueError(f"tensorix.onnx.load: Scan inputs have different lengths {lengths} "
                         "along their scan axes")
    (steps,) = lengths
    scans: list = []
    for t in range(steps):
        slices = [x.select(a, steps - 1 - t if d else t) for x, a, d in zip(xs, in_axes, in_dirs)]
        outs = module._subgraph(body, env, state + slices)
        state = list(outs[:n_state])
        scans.append(outs[n_state:])
    if k and not scans:
        raise UnsupportedOperatorError(
            "tensorix.onnx.load: a Scan over zero steps has scan outputs of unknown shape")
    out_dirs = node.attrs.get("scan_output_directions", [0] * k)
    out_axes = node.attrs.get("scan_output_axes", [0] * k)
    stacked = []
    for j in range(k):
        seq = [step[j] for step in scans]
        seq = seq[::-1] if out_dirs[j] else seq
        stacked.append(T.stack(seq, _axis_of(out_axes[j], seq[0].ndim + 1)))
    return tuple(state + stacked)


def _axis_of(axis, ndim):
    return axis + ndim if axis < 0 else axis


_CONTROL = {"If": _if, "Loop": _loop, "Scan": _scan}


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
