"""Decompositions the compiler applies before its passes: primitives that eager keeps whole
for speed (LayerNorm, Softmax, LogSoftmax over the last dim: a few NumPy passes in one Python
call) become the primitives they are made of, as Inductor's decomposition table does, so that
fusion makes each one row kernel (tensorix._compile.fusion, "reduction, then broadcast")
together with its neighbours: the causal mask's ``where`` before a softmax, the exp that the
cross-entropy's backward reads after a log-softmax. A Linear whose readers are all fusable
becomes the GEMM and a bias add, which joins their kernel (one pass fewer over its output).

Layer norm gains twice: its backward, traced with ``create_graph`` semantics, rebuilds the
mean and rstd from ``x`` with ops (tensorix.nn.functional._norm._xhat); written with the same
helper (``_stats``), the decomposed forward computes exactly those nodes, and CSE merges them:
the statistics are computed once, in the forward's kernel, instead of twice.

Each decomposition is traced once per node on zero tensors of the node's shapes (so its nodes
are the dispatcher's, constants lifted as eager lifts them) and spliced in place of the node.
Only float32/float64 nodes are decomposed, on the CPU and on a GPU that runs the compiler's
CUDA row kernels (tensorix._compile.cuda_rows: one block per row, fused with the neighbours
where the eager one-warp-per-row kernels run alone); not on the CuPy stand-in.

Example::

    count = decompose(graph)    # LayerNorm(x, w, b, 1, 1e-5) -> Sum, Div, Sub, Mul, ... Add
"""

from __future__ import annotations

from ..fx.graph import map_args
from ..fx.graph_module import symbolic_trace
from ..nn.functional._core import linear
from ..nn.functional._norm import _stats
from ..ops._reduce32 import rows32_eager
from ..ops.creation import zeros
from .exprs import fusable
from .kernels import row_kernels_on

__all__ = ["decompose", "DECOMPOSITIONS"]


def _layer_norm(node):
    x, weight, bias, nd, eps = node.args
    axes = tuple(range(len(x.meta["shape"]) - nd, len(x.meta["shape"])))

    def fn(x, *affine):
        w = affine[0] if weight is not None else None
        b = affine[-1] if bias is not None else None
        mu, rstd = _stats(x, axes, eps)  # the nodes the traced backward recomputes
        out = (x - mu) * rstd
        if w is not None:
            out = out * w
        return out + b if b is not None else out

    return fn, [a for a in (x, weight, bias) if a is not None]


def _softmax_family(log):
    def make(node):
        x, dim = node.args

        def fn(x):
            shifted = x - x.amax(dim, keepdim=True)  # the eager kernel's max shift
            e = shifted.exp()
            if log:
                return shifted - e.sum(dim, keepdim=True).log()
            return e / e.sum(dim, keepdim=True)

        return fn, [x]

    return make


def _linear(node):
    x, weight, bias = node.args

    def fn(x, w, b):
        return linear(x, w) + b  # the bias add joins the consumer's kernel (gelu, residual)

    return fn, [x, weight, bias]


def _applies(node):
    name = node.op.__name__
    meta = node.meta
    if name == "Linear":  # worth it only where the bias add has a kernel to join
        return node.args[2] is not None and meta.get("dtype") is not None and \
            meta["dtype"].name in ("float32", "float64") and \
            getattr(meta.get("device"), "type", None) == "cpu" and \
            bool(node.users) and all(fusable(u) for u in node.users)
    if meta.get("dtype") is None or meta["dtype"].name not in ("float32", "float64"):
        return False
    if not row_kernels_on(meta.get("device")):
        return False
    if name in ("Softmax", "LogSoftmax"):
        if rows32_eager(meta["dtype"].name, meta["shape"], meta.get("device")):
            return False  # eager's large float32 rows: one pass already, with exp32's bits
        return node.args[1] == len(meta["shape"]) - 1  # over the last dim: one row each
    return all(type(a) is not list for a in node.args)


# primitive name -> node -> (function of the node's tensor inputs, those input nodes)
DECOMPOSITIONS = {"LayerNorm": _layer_norm, "Softmax": _softmax_family(False),
                  "LogSoftmax": _softmax_family(True), "Linear": _linear}


def decompose(graph) -> int:
    """Replace every node whose primitive has a decomposition (and that :func:`_applies`) by
    its traced decomposition; returns how many were replaced (the old nodes are left to
    dead-code elimination)."""
    count = 0
    for node in list(graph.nodes):
        if not node.is_call or node.op.__name__ not in DECOMPOSITIONS or not _applies(node):
            continue
        fn, inputs = DECOMPOSITIONS[node.op.__name__](node)
        # on the node's device, so the constants the trace lifts (layer norm's divisor) live
        # where the kernel reads them
        examples = [zeros(*i.meta["shape"], dtype=i.meta["dtype"], device=i.meta.get("device"))
                    for i in inputs]
        sub = symbolic_trace(fn, *examples).graph
        out = sub.output_node.args[0]
        if any(out.meta.get(k) != node.meta.get(k) for k in ("shape", "dtype")):
            continue  # mixed dtypes (a float64 weight on float32 x) promote differently
        env = dict(zip(sub.placeholders, inputs))
        result = None
        with graph.inserting_before(node):
            for n in sub.nodes:
                if n.op == "placeholder":
                    continue
                if n.op == "output":
                    result = env[n.args[0]]
                elif n.op == "constant":
                    env[n] = graph.constant(n.target, **n.meta)
                else:
                    env[n] = graph.create_node(n.op, map_args(n.args, env.__getitem__),
                                               n.target, meta=dict(n.meta))
        node.replace_all_uses_with(result)
        count += 1
    return count
