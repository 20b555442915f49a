"""Dynamic axes, found by tracing twice: ``export`` traces the program again on inputs whose
dynamic axes are one shorter (one longer from size 1); the dims of each value that differ
between the two traces are its dynamic dims (what the reshape and expand symbolics write as
"copy" or "infer" rather than as numbers). The written model is then run by
``tensorix.onnx.load`` on those inputs and compared with eager, so a size the program baked
in (a ``tx.arange(T)``, a mask made from the example's length) is an error at export, not a
silently wrong model.
"""

from __future__ import annotations

import numpy as np

from ..ops.shape import cat
from ..tensor import Tensor
from ._common import UnsupportedOperatorError

__all__ = ["resized_inputs", "dynamic_dims", "verify"]


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


def verify(proto, resized, expected) -> None:
    """Run the written model in tensorix on the resized inputs; it must equal eager there."""
    from ._load import OnnxModule

    try:
        got = OnnxModule(proto)(*resized)
    except Exception as e:  # a baked size surfaces as a shape error somewhere in the graph
        raise UnsupportedOperatorError(
            "tensorix.onnx.export: dynamic_axes: the exported graph does not run at another "
            f"size of the dynamic axes ({type(e).__name__}: {e})") from None
    got = got if isinstance(got, tuple) else (got,)
    for i, (g, e) in enumerate(zip(got, expected)):
        g, e = g.detach().cpu().numpy(), e.detach().cpu().numpy()
        if g.shape != e.shape or not np.allclose(g, e, rtol=1e-4, atol=1e-5, equal_nan=True):
            raise UnsupportedOperatorError(
                f"tensorix.onnx.export: dynamic_axes: output {i} of the exported graph differs "
                "from eager at another size of the dynamic axes: the program bakes a size in "
                "(a tensor made from the example's shape, such as tx.arange(T) or a T x T mask)")
