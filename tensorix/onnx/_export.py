"""``tensorix.onnx.export``: a traced graph (tensorix.fx) written as an ONNX model.

The model is captured once by ``tensorix.fx`` at the dispatcher, so every node is a primitive
(a Function class); each primitive's ONNX form is a *symbolic* in ``_symbolic*.py``, looked up
by class. Parameters and buffers become initializers under their module paths; nodes that do
not depend on an input are folded to initializers here (run once in tensorix), so the file
holds no arithmetic on weights. The ONNX model is checked by ``onnx.checker`` before it is
written.
"""

from __future__ import annotations

from ..autograd.grad_mode import no_grad
from ..tensor import Tensor
from . import (
    _symbolic_bits,  # noqa: F401 - registers lu_unpack, fp4/fp6 packing, gcd and lcm
    _symbolic_count,  # noqa: F401 - registers histc and nonzero_static
    _symbolic_einsum,  # noqa: F401 - registers the einsum contractions
    _symbolic_order,  # noqa: F401 - registers the order primitives' symbolics
)
from ._checks import dynamic_dims, probe_inputs, resized_inputs, verify
from ._common import DEFAULT_OPSET, UnsupportedOperatorError, check_opset, onnx_module, to_elem_type
from ._emit import Emitter, Value
from ._fuse import conv_chains
from ._symbolic import SYMBOLIC
from ._symbolic_nn import conv

__all__ = ["export", "export_graph"]


def export(model, args, f=None, opset_version: int = DEFAULT_OPSET, input_names=None,
           output_names=None, dynamic_axes=None, do_constant_folding: bool = True):
    """Export ``model(*args)`` to ONNX, as ``torch.onnx.export`` does; returns the ModelProto
    (and writes it to ``f``, a path or a binary file, when given).

    ``model`` is an ``nn.Module`` (run in eval mode while it is traced, then put back) or a
    function; ``args`` a tuple of example inputs (a single Tensor is accepted). The graph is
    traced once with these inputs, so Python control flow follows them. ``input_names`` and
    ``output_names`` name the graph's inputs and outputs (default ``input_0``..., ``output_0``
    ...); ``dynamic_axes`` maps a name to the axes that may vary (``{"x": {0: "batch"}}`` or
    ``{"x": [0]}``): those dims are symbolic in the graph's signature, and reshapes copy them
    from their input rather than baking the example's size in. ``opset_version`` is 13 to 21;
    an op with no ONNX form at that opset raises :class:`UnsupportedOperatorError` naming the
    op and the opset.

    Example::

        model = tensorix.nn.Sequential(tensorix.nn.Linear(4, 8), tensorix.nn.ReLU())
        tensorix.onnx.export(model, (tensorix.randn(2, 4),), "mlp.onnx",
                             input_names=["x"], dynamic_axes={"x": {0: "batch"}})
    """
    opset = check_opset("tensorix.onnx.export", opset_version)
    args = (args,) if isinstance(args, Tensor) else tuple(args)
    names = _input_names(input_names, len(args))
    dynamic = _dynamic_axes(dynamic_axes)
    gm = _trace(model, args)
    dyn_nodes, resized = {}, None
    if any(name in dynamic for name in names):
        resized = resized_inputs(args, names, dynamic)
        try:
            again = _trace(model, resized)
        except UnsupportedOperatorError:
            raise
        except Exception as e:
            raise UnsupportedOperatorError(
                "tensorix.onnx.export: dynamic_axes: the program fails at another size of the "
                f"dynamic axes ({type(e).__name__}: {e})") from None
        dyn_nodes = dynamic_dims(gm.graph, again.graph)
        with no_grad():
            expected = again(*resized)
    proto = export_graph(gm.graph, gm.root, opset, names, output_names, dynamic_axes,
                         do_constant_folding, dyn_nodes)
    if resized is not None:
        verify(proto, resized, _flat(expected), "another size of the dynamic axes")
    probe = probe_inputs(args)
    try:
        with no_grad():
            expected = _trace(model, probe)(*probe)
    except Exception:  # the program does not accept other values (a Cholesky of a non-SPD
        expected = None  # matrix...): nothing to compare against
    if expected is not None:
        verify(proto, probe, _flat(expected), "other input values")
    if f is not None:
        data = proto.SerializeToString()
        if hasattr(f, "write"):
            f.write(data)
        else:
            with open(f, "wb") as fh:
                fh.write(data)
    return proto


def export_graph(graph, root=None, opset=DEFAULT_OPSET, input_names=None, output_names=None,
                 dynamic_axes=None, do_constant_folding=True, dynamic_nodes=None):
    """The ONNX ModelProto of a ``tensorix.fx`` Graph (``root``: the module its get_attr
    nodes read; ``dynamic_nodes``: the dynamic dims of each node, from ``_checks``)."""
    onnx = onnx_module()
    helper = onnx.helper
    em = Emitter(opset)
    dynamic = _dynamic_axes(dynamic_axes)
    placeholders = graph.placeholders
    names = _input_names(input_names, len(placeholders))
    dyn = dynamic_nodes or {}
    env: dict = {}
    folded = _foldable(graph) if do_constant_folding else set()
    concrete: dict = {}  # folded node -> its tensor, computed in tensorix
    inputs = []
    for node, name in zip(placeholders, names):
        axes = dynamic.get(name, {})
        env[node] = Value(name, node.meta["shape"], node.meta["dtype"],
                          frozenset(axes) | dyn.get(node, frozenset()))
        inputs.append(_value_info(helper, name, node.meta, axes))
    convs = conv_chains(graph, folded)
    inside = {m for chain in convs.values() for m in chain.members}
    for node in graph.nodes:
        if node.op in ("placeholder", "output") or node in inside:
            continue
        if node in convs:
            em.current, em.dynamic = node, dyn.get(node, frozenset())
            env[node] = Value(conv(em, node, convs[node], env), node.meta["shape"],
                              node.meta["dtype"], em.dynamic)
            continue
        if node in folded:
            concrete[node] = _evaluate(node, concrete, root)
            if _feeds_unfolded(node, folded):
                if node in dyn:
                    raise UnsupportedOperatorError(
                        f"tensorix.onnx.export: dynamic_axes: node {node.name} is computed "
                        "from no input, yet its shape follows a dynamic axis (the program "
                        "made it from the example's size, as tx.arange(T) does)")
                env[node] = em.initializer(concrete[node], _init_name(node))
            continue
        if node.op == "getitem":
            env[node] = env[node.args[0]][node.target]
            continue
        env[node] = _lower(em, node, env, dyn)
    result = graph.output_node.args[0]
    flat = list(result) if isinstance(result, (tuple, list)) else [result]
    out_names = list(output_names or []) + [f"output_{i}" for i in range(len(flat))]
    outputs = []
    for node, name in zip(flat, out_names):
        if not hasattr(node, "op"):
            raise UnsupportedOperatorError(
                f"tensorix.onnx.export: output {name!r} is a Python {type(node).__name__}, not "
                "a tensor; ONNX graphs return tensors only")
        value = env[node] if node in env else em.initializer(concrete[node], _init_name(node))
        em.node("Identity", [value.name], [name])
        outputs.append(_value_info(helper, name, node.meta, dynamic.get(name, {})))
    g = helper.make_graph(em.nodes, "tensorix", inputs, outputs, em.initializers)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="tensorix")
    model.ir_version = min(model.ir_version, 10)  # what onnxruntime 1.2x reads
    onnx.checker.check_model(model)
    return model


def _lower(em, node, env, dyn):
    """The ONNX value(s) of one call node, by its primitive's symbolic."""
    from ..fx.graph import map_args

    entry = SYMBOLIC.get(node.op)
    name = node.op.__name__ if isinstance(node.op, type) else str(node.op)
    if entry is None:
        raise UnsupportedOperatorError(
            f"tensorix.onnx.export: op {name} (node {node.name}) has no ONNX form at opset "
            f"{em.opset} (no symbolic for it; see docs/onnx.md for the covered ops)")
    fn, since = entry
    if em.opset < since:
        raise UnsupportedOperatorError(
            f"tensorix.onnx.export: op {name} (node {node.name}) needs opset >= {since}, but "
            f"opset_version is {em.opset}")
    args = map_args(node.args, lambda n: env[n])
    em.current, em.dynamic = node, dyn.get(node, frozenset())
    out = fn(em, node, *args)
    meta = node.meta
    if isinstance(out, (tuple, list)):
        return [Value(o, m.get("shape"), m.get("dtype")) if isinstance(o, str) else o
                for o, m in zip(out, meta["outputs"])]
    return Value(out, meta["shape"], meta["dtype"], em.dynamic)


def _trace(model, args):
    """The fx trace of ``model(*args)``: a Module in eval mode (then put back), no autograd
    graph, and no dependence on tensor data."""
    from ..fx.graph_module import inference_trace

    try:
        return inference_trace(model, args, "tensorix.onnx.export")
    except NotImplementedError as e:
        raise UnsupportedOperatorError(str(e)) from None


def _flat(result) -> tuple:
    return tuple(result) if isinstance(result, (tuple, list)) else (result,)


def _input_names(given, n) -> list:
    given = list(given or [])
    return given + [f"input_{i}" for i in range(len(given), n)]


def _foldable(graph) -> set:
    """Nodes that read no placeholder: constants, parameters and what is computed from them."""
    live = set()
    folded = set()
    for node in graph.nodes:
        if node.op == "placeholder":
            live.add(node)
        elif node.op != "output" and not any(i in live for i in node.inputs):
            folded.add(node)
        else:
            live.add(node)
    return folded


def _feeds_unfolded(node, folded) -> bool:
    return any(u not in folded for u in node.users)


def _evaluate(node, concrete, root):
    from ..fx.graph import map_args
    from ..fx.graph_module import Interpreter

    if node.op == "getitem":
        return concrete[node.args[0]][node.target]
    with no_grad():
        value = Interpreter(None, root).run_node(node, map_args(node.args, concrete.__getitem__))
    return value.detach() if isinstance(value, Tensor) else value


def _init_name(node) -> str:
    return node.target if node.op == "get_attr" else node.name


def _value_info(helper, name, meta, axes):
    shape = [axes.get(i, s) for i, s in enumerate(meta["shape"])]
    return helper.make_tensor_value_info(name, to_elem_type(meta["dtype"]), shape)


def _dynamic_axes(spec) -> dict:
    """``{name: {axis: dim_name}}`` from torch's two spellings (dict or list of axes)."""
    out = {}
    for name, axes in (spec or {}).items():
        if isinstance(axes, dict):
            out[name] = {int(a): str(d) for a, d in axes.items()}
        else:
            out[name] = {int(a): f"{name}_dim{a}" for a in axes}
    return out
