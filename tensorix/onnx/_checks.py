"""What export checks about the graph it wrote, beyond onnx.checker.

Dynamic axes, found by tracing twice: the program is traced again on inputs whose dynamic axes
are one shorter (one longer from size 1); the dims of each value that differ between the two
traces are its dynamic dims (what the reshape and expand symbolics write as "copy" or "infer"
rather than as numbers).

Values the trace baked in: a primitive that takes raw data made from an input (an index array
inside a GetItem) would replay the example's values whatever
the input. So the written model is run by ``tensorix.onnx.load`` on other inputs (the dynamic
axes resized; every value changed, see ``probe_inputs``) and compared with eager there: a
baked-in size or value is an error at export, not a silently wrong model.
"""

from __future__ import annotations

import numpy as np

from ..ops.shape import cat
from ..tensor import Tensor
from ._common import UnsupportedOperatorError

__all__ = ["resized_inputs", "probe_inputs", "dynamic_dims", "verify"]


def resized_inputs(args, names, axes_by_name) -> tuple:
    """``args`` with each dynamic axis of another size."""
    out = []
    for a, name in zip(args, names):
        for axis in sorted(axes_by_name.get(name, {})):
            if not isinstance(a, Tensor) or not -a.ndim <= axis < a.ndim:
                shape = tuple(getattr(a, "shape", ()))
                raise ValueError(f"tensorix.onnx.export: dynamic_axes names axis {axis} of "
                                 f"input {name!r}, which has shape {shape}")
            size = a.shape[axis]
            # one shorter where it can (a model may cap a length, as a GPT's context), else
            # one longer by repeating the first slice (token ids stay valid)
            a = a.narrow(axis, 0, size - 1) if size > 1 else cat([a, a], axis)
        out.append(a)
    return tuple(out)


def probe_inputs(args) -> tuple:
    """``args`` with other values: every tensor reversed along all its dims (indices stay
    valid, a symmetric positive definite matrix stays one, an order changes) and floats
    scaled by 1.5 too (an extreme changes)."""
    out = []
    for a in args:
        if isinstance(a, Tensor) and a.numel() > 0 and a.ndim > 0:
            a = a.flip(tuple(range(a.ndim)))
        if isinstance(a, Tensor) and a.is_floating_point():
            a = a * 1.5
        out.append(a)
    return tuple(out)


def dynamic_dims(graph, other) -> dict:
    """``{node: frozenset(dims)}``: the dims of each node of ``graph`` whose size differs in
    ``other``, the same program traced on the resized inputs."""
    nodes, others = graph.nodes, other.nodes
    if len(nodes) != len(others) or any(_kind(a) != _kind(b) for a, b in zip(nodes, others)):
        raise UnsupportedOperatorError(
            "tensorix.onnx.export: dynamic_axes: the traced program changes with the size of a "
            f"dynamic axis ({len(nodes)} ops against {len(others)}), so no one graph stands "
            "for every size")
    out = {}
    for a, b in zip(nodes, others):
        sa, sb = a.meta.get("shape"), b.meta.get("shape")
        if sa is not None and sb is not None and sa != sb:
            if len(sa) != len(sb):
                raise UnsupportedOperatorError(
                    f"tensorix.onnx.export: dynamic_axes: node {a.name} changes rank with the "
                    "size of a dynamic axis")
            out[a] = frozenset(i for i, (x, y) in enumerate(zip(sa, sb)) if x != y)
    return out


def _kind(node):
    return node.op if not isinstance(node.op, str) else (node.op, node.target
                                                         if node.op == "getitem" else None)


def verify(proto, inputs, expected, what) -> None:
    """Run the written model in tensorix on ``inputs``; it must equal ``expected`` (eager)
    there, else UnsupportedOperatorError saying ``what`` the inputs changed."""
    from ._load import OnnxModule

    module = OnnxModule(proto)
    device = next((t.device for t in inputs if isinstance(t, Tensor)), None)
    if device is not None:
        module.to(device)  # the initializers come back to the host; run where the inputs are
    try:
        got = module(*inputs)
    except Exception as e:  # a baked size surfaces as a shape error somewhere in the graph
        raise UnsupportedOperatorError(
            f"tensorix.onnx.export: the exported graph does not run at {what} "
            f"({type(e).__name__}: {e})") from None
    got = got if isinstance(got, tuple) else (got,)
    for i, (g, e) in enumerate(zip(got, expected)):
        g, e = g.detach().cpu().numpy(), e.detach().cpu().numpy()
        if g.shape != e.shape or not np.allclose(g, e, rtol=1e-4, atol=1e-5, equal_nan=True):
            raise UnsupportedOperatorError(
                f"tensorix.onnx.export: output {i} of the exported graph differs from eager at "
                f"{what}: the trace baked the example's {what.split()[-1]} in (a tensor made "
                "from the example's shape such as tx.arange(T), or an op that read an input's "
                "data outside the dispatcher, such as an index tensor in x[i])")
