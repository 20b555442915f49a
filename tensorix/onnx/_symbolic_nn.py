"""Symbolics of the movement, indexing, product and nn primitives (see ``_symbolic.py``).

Movement primitives with a direct ONNX op (Reshape, Transpose, Expand, Slice, Concat, Pad,
Trilu) use it. The others that only move elements of one tensor (a strided view, a diagonal,
roll, advanced indexing, im2col windows) are lowered by their *position table*: the primitive
is run once, in tensorix, on the table 1..n of element positions, and the ONNX graph gathers
those positions from the flattened input (position 0 reads an appended zero, for the padding
that im2col and triangles write). That is exact and one Gather, whatever the op, at the cost
of an index constant the size of the output and a fixed input shape.
"""

from __future__ import annotations

import math

import numpy as np

from .. import dtypes as dt
from ..nn.functional import _conv, _core, _loss, _norm, _pool
from ..ops import (
    _along,
    _semiring,
    indexing,
    inplace,
    linalg,
    linalg_decomp,
    linalg_norm,
    movement,
    reduce,
    shape,
    structured,
)
from ..ops.softmax import LogSoftmax, Softmax
from ..tensor import Tensor
from ._emit import Value
from ._symbolic import _reduce, _same, out_dtype, refuse, symbolic

INT64_MIN, INT64_MAX = -(2 ** 63), 2 ** 63 - 1


# -- position tables ---------------------------------------------------------------------------

def by_positions(em, node, a, *rest):
    """``node.op(a, *rest)`` as one Gather of positions from the flattened ``a``."""
    _static(em, node, a, "its position table")
    table = np.arange(1, math.prod(a.shape) + 1, dtype=np.int64).reshape(a.shape)
    positions = node.op.apply(Tensor(table), *rest).numpy()
    flat = em.op("Reshape", a, em.ints([-1]))
    if (positions == 0).any():
        zero = em.const(np.zeros(1, dtype=a.dtype.np))
        flat = em.op("Concat", zero, flat, axis=0)
    else:
        positions = positions - 1
    return em.op("Gather", flat, em.const(positions.astype(np.int64)), axis=0)


def _static(em, node, a, what):
    if a.dynamic or em.dynamic:
        raise refuse(em, node, f"{what} fixes the shape, and dims "
                           f"{sorted(a.dynamic | em.dynamic)} are dynamic")


for _cls in (movement.StridedView, movement.AsStrided, shape.Roll, _semiring.Diagonal,
             _along.Flip, _along.TakeAlong):
    symbolic(_cls)(by_positions)


@symbolic(_conv.Unfold)
def unfold(em, node, x, kernel, stride, padding, dilation):
    """im2col windows (N, C, *K, *O): one Gather along the flattened (C, *S) of each sample,
    by the positions of one sample's windows, so the batch may be dynamic."""
    if x.dynamic - {0}:
        return by_positions(em, node, x, kernel, stride, padding, dilation)
    sample = (1,) + x.shape[1:]
    table = np.arange(1, math.prod(sample) + 1, dtype=np.int64).reshape(sample)
    positions = node.op.apply(Tensor(table), kernel, stride, padding, dilation).numpy()[0]
    rows = em.op("Reshape", x, em.ints([0, -1]))
    rows = em.op("Pad", rows, em.ints([0, 1, 0, 0]), mode="constant")  # position 0: a zero
    return em.op("Gather", rows, em.const(positions), axis=1)


@symbolic(inplace.CopySlices, structured.ViewScatter)
def view_scatter(em, node, base, value, view_fn):
    """``base`` with the window ``view_fn`` selects replaced by ``value``: the window's
    positions (from the table) scattered into the flattened base."""
    _static(em, node, base, "the window's position table")
    table = Tensor(np.arange(math.prod(base.shape), dtype=np.int64).reshape(base.shape))
    window = view_fn(table)
    positions = window.numpy().reshape(-1)
    flat = em.op("Reshape", base, em.ints([-1]))
    values = em.op("Expand", em.cast(value, base.dtype), em.ints(window.shape))
    values = em.op("Reshape", values, em.ints([-1]))
    out = em.op("ScatterElements", flat, em.const(positions), values, axis=0)
    return em.op("Reshape", out, em.ints(base.shape))


# -- views and shapes --------------------------------------------------------------------------

@symbolic(movement.Reshape, movement.View)
def reshape(em, node, a, target, strides=None):
    return em.op("Reshape", a, em.ints(shape_spec(em, node, a)),
                 allowzero=1 if 0 in node.meta["shape"] else None)


def shape_spec(em, node, a) -> list:
    """The output shape as ONNX Reshape reads it: static dims as numbers; a dynamic dim that
    sits where the input has it as 0 (copy); one other dynamic dim as -1 (infer)."""
    spec = list(node.meta["shape"])
    infer = []
    for i in sorted(em.dynamic):
        if i < a.ndim and i in a.dynamic and a.shape[i] == spec[i]:
            spec[i] = 0
        else:
            spec[i] = -1
            infer.append(i)
    if len(infer) > 1:
        raise refuse(em, node, f"a reshape with dims {infer} all following dynamic axes")
    return spec


@symbolic(movement.Permute)
def permute(em, node, a, dims):
    return em.op("Transpose", a, perm=[d % max(a.ndim, 1) for d in dims])


@symbolic(movement.Expand)
def expand(em, node, a, target):
    out = list(node.meta["shape"])
    lead = len(out) - a.ndim
    for i in em.dynamic:  # ONNX Expand keeps the input's dim where the target says 1
        if i < lead or i - lead not in a.dynamic:
            raise refuse(em, node, f"an expand to dynamic dim {i} the input lacks")
        out[i] = 1
    return em.op("Expand", a, em.ints(out))


@symbolic(movement.Clone)
def clone(em, node, a):
    return em.op("Identity", a)


@symbolic(movement.GetItem)
def getitem(em, node, a, index, *tensors):
    """Basic indexing (ints, slices, Ellipsis) as Slice + Squeeze; one integer index tensor
    (``x[i]``, ``x[:, i]``, ``x[i, 1:]``) as that and a Gather by the tensor, a graph input;
    several at adjacent dims (``x[i, j]``, ``x[:, i, j]``) as a GatherND by them, broadcast;
    anything else (None, constant integer arrays, index tensors apart, boolean arrays) by its
    position table."""
    basic = index.basic
    plain = not index.new_dims and all(
        b is not None and isinstance(b, (int, slice, type(Ellipsis))) for b in basic)
    axis = _gather_axis(index) if plain and tensors else None
    if axis is not None and len(tensors) == 1:
        sliced = _basic(em, a, basic)
        return em.op("Gather", sliced, em.cast(tensors[0], dt.int64), axis=axis)
    if axis is not None and not em.dynamic:
        return _gather_nd(em, a, basic, tensors, axis)
    if index.adv is not None or not plain:
        return by_positions(em, node, a, index)
    out = _basic(em, a, basic)
    return out if out != a.name else em.op("Identity", a)


def _gather_axis(index):
    """The first dim of the basic result that the index's integer tensors select along, where
    they sit at adjacent dims and every other advanced entry is a full slice (else None)."""
    if index.masked or not index.sources:
        return None
    k, n = index.sources[0], len(index.sources)
    if tuple(index.sources) != tuple(range(k, k + n)):
        return None  # apart: NumPy puts the indexed dims first, not written here
    rest = [x for i, x in enumerate(index.adv) if not k <= i < k + n]
    if not all(isinstance(x, slice) and x == slice(None) for x in rest):
        return None
    return k


def _gather_nd(em, a, basic, tensors, k):
    """``a[basic][..., i, j, ...]`` with index tensors at the adjacent dims ``k, k+1, ...``:
    those dims moved first, a GatherND by the tensors broadcast and stacked on a last axis,
    and the broadcast dims moved back to ``k`` (NumPy's placement)."""
    sliced = _basic(em, a, basic)
    rank = a.ndim - sum(isinstance(b, int) for b in basic)
    n = len(tensors)
    batch = tuple(np.broadcast_shapes(*(t.shape for t in tensors)))
    parts = [em.op("Unsqueeze", em.op("Expand", em.cast(t, dt.int64), em.ints(batch)),
                   em.ints([-1])) for t in tensors]
    stacked = em.op("Concat", *parts, axis=-1)
    perm = list(range(k, k + n)) + [d for d in range(rank) if not k <= d < k + n]
    data = sliced if perm == list(range(rank)) else em.op("Transpose", sliced, perm=perm)
    out = em.op("GatherND", data, stacked)
    if k == 0:
        return out
    nb = len(batch)
    back = [nb + d for d in range(k)] + list(range(nb)) + \
        [nb + d for d in range(k, rank - n)]
    return em.op("Transpose", out, perm=back)


def _basic(em, a, basic):
    """``a[basic]`` for ints, slices and an Ellipsis: Slice + Squeeze (``a``'s own name where
    the index takes everything)."""
    starts, ends, axes, steps, drop = [], [], [], [], []
    dim = 0
    for b in basic:
        if b is Ellipsis:
            dim = a.ndim - (len(basic) - 1 - basic.index(Ellipsis)) + 0
            break
        dim = _slice_one(b, dim, a, (starts, ends, axes, steps, drop))
    out = a.name
    if axes:
        out = em.op("Slice", out, em.ints(starts), em.ints(ends), em.ints(axes), em.ints(steps))
    if drop:
        out = em.op("Squeeze", out, em.ints(drop))
    return out


def _slice_one(b, dim, a, acc):
    """Slice bounds as written (ONNX clamps and wraps them as Python does), not resolved
    against the example's size, so slicing a dynamic axis stays right."""
    starts, ends, axes, steps, drop = acc
    if isinstance(b, int):
        starts.append(b), ends.append(INT64_MAX if b == -1 else b + 1), axes.append(dim)
        steps.append(1), drop.append(dim)
    elif b != slice(None):
        step = 1 if b.step is None else b.step
        starts.append(0 if b.start is None else b.start)
        ends.append(INT64_MAX if b.stop is None else b.stop)
        axes.append(dim), steps.append(step)
    return dim + 1


@symbolic(shape.Cat)
def cat(em, node, dim, *tensors):
    parts = [t for t in tensors if not (t.ndim == 1 and t.shape[0] == 0)] or tensors[:1]
    nd = len(node.meta["shape"])
    return em.op("Concat", *_same(em, node, *parts), axis=dim % nd)


@symbolic(shape.Flip)
def flip(em, node, a, dims):
    dims = [d % a.ndim for d in dims]
    n = len(dims)
    return em.op("Slice", a, em.ints([-1] * n), em.ints([INT64_MIN] * n), em.ints(dims),
                 em.ints([-1] * n))


@symbolic(shape.ConstantPad)
def constant_pad(em, node, a, pads, value):
    begins, ends = [b for b, _ in pads], [e for _, e in pads]
    return em.op("Pad", a, em.ints(begins + ends), em.cast(value, a.dtype), mode="constant")


@symbolic(shape.Tri, since=14)
def tri(em, node, a, k, upper):
    return em.op("Trilu", a, em.const(np.int64(k)), upper=int(upper))


@symbolic(reduce.SumTo)
def sum_to(em, node, a, target):
    lead = a.ndim - len(target)
    axes = list(range(lead)) + [lead + i for i, s in enumerate(target)
                                if s == 1 and a.shape[lead + i] != 1]
    if not axes:
        return em.op("Identity", a)
    summed = em.op("ReduceSum", a, em.ints(axes), keepdims=1)
    return em.op("Reshape", summed, em.ints(shape_spec(em, node, a)))


# -- indexing ----------------------------------------------------------------------------------

@symbolic(indexing.Gather)
def gather(em, node, a, dim, index):
    return em.op("GatherElements", a, em.cast(index, dt.int64), axis=dim % a.ndim)


@symbolic(indexing.IndexSelect)
def index_select(em, node, a, dim, index):
    index = em.cast(index, dt.int64)  # ONNX Gather wraps negatives
    if a.ndim == 0:
        return em.op("Identity", a)
    return em.op("Gather", a, index, axis=dim % a.ndim)


@symbolic(indexing.Scatter)
def scatter(em, node, a, dim, index, src):
    """ScatterElements, where eager's rule for a position written twice (the last write
    wins) is made explicit, as ONNX leaves repeats undefined: a write that a later one along
    ``dim`` repeats goes to an extra slot past the end, cut off after."""
    a, src = _same(em, node, a, src)
    nd = len(node.meta["shape"])
    dim %= max(nd, 1)
    m = index.shape[dim] if index.ndim else 1
    index = em.cast(index, dt.int64)
    if m < 2:
        return em.op("ScatterElements", a, index, src, axis=dim)
    n = node.meta["shape"][dim]
    index = em.op("Where", em.op("Less", index, em.const(np.int64(0))),  # compare as written
                  em.op("Add", index, em.const(np.int64(n))), index)
    same = em.op("Equal", em.op("Unsqueeze", index, em.ints([dim + 1])),
                 em.op("Unsqueeze", index, em.ints([dim])))  # [.., i, j, ..]
    later = np.triu(np.ones((m, m), dtype=bool), 1).reshape(
        (1,) * dim + (m, m) + (1,) * (nd - dim - 1))
    hits = em.op("Cast", em.op("And", same, em.const(later)), to=7)  # int64
    repeated = _reduce(em, "ReduceMax", Value(hits, (0,) * (nd + 1), dt.int64), [dim + 1],
                       False)
    index = em.op("Where", em.op("Cast", repeated, to=9), em.const(np.int64(n)), index)
    pads = [0] * (2 * nd)
    pads[nd + dim] = 1
    out = em.op("ScatterElements", em.op("Pad", a, em.ints(pads), mode="constant"), index, src,
                axis=dim)
    return em.op("Slice", out, em.ints([0]), em.ints([n]), em.ints([dim]))


@symbolic(indexing.ScatterAdd, since=16)
def scatter_add(em, node, a, dim, index, src):
    a, src = _same(em, node, a, src)
    return em.op("ScatterElements", a, em.cast(index, dt.int64), src, axis=dim,
                 reduction="add")


def _along_front(em, a, dim):
    """``a`` with ``dim`` moved to the front, and the permutation that moves it back."""
    perm = [dim] + [d for d in range(a.ndim) if d != dim]
    back = [perm.index(d) for d in range(a.ndim)]
    return em.op("Transpose", a, perm=perm), perm, back


def _slices_put(em, node, a, dim, index, src, reduction=None):
    """index_copy / index_fill / index_add: whole slices along ``dim`` written (or added) at
    ``index``, as one ScatterND on ``a`` with ``dim`` in front."""
    a, src = _same(em, node, a, src)
    n = node.meta["shape"][dim]
    dim %= len(node.meta["shape"])
    front, perm, back = _along_front(em, Value(a, node.meta["shape"], out_dtype(node)), dim)
    k = index.shape[0] if index.ndim else 1
    idx = em.op("Reshape", em.cast(index, dt.int64), em.ints([k, 1]))
    idx = em.op("Where", em.op("Less", idx, em.const(np.int64(0))),
                em.op("Add", idx, em.const(np.int64(n))), idx)
    rest = [node.meta["shape"][d] for d in perm[1:]]
    if node.op is indexing.IndexFill:  # a value: one slice of it per index
        updates = em.op("Expand", src, em.ints([k] + rest))
    else:
        updates = em.op("Transpose", src, perm=perm)
    out = em.op("ScatterND", front, idx, updates, reduction=reduction)
    return em.op("Transpose", out, perm=back)


@symbolic(indexing.IndexCopy, indexing.IndexFill)
def index_copy(em, node, a, dim, index, src):
    return _slices_put(em, node, a, dim, index, src)


@symbolic(indexing.IndexAdd, since=16)
def index_add(em, node, a, dim, index, src):
    return _slices_put(em, node, a, dim, index, src, reduction="add")


_SCATTER_REDUCE = {"sum": ("add", 16, 0.0), "prod": ("mul", 16, 1.0),
                   "amax": ("max", 18, -math.inf), "amin": ("min", 18, math.inf)}


@symbolic(indexing.ScatterReduce, since=16)
def scatter_reduce(em, node, a, dim, index, src, reduce, include_self):
    if reduce not in _SCATTER_REDUCE or em.opset < _SCATTER_REDUCE[reduce][1]:
        raise refuse(em, node, f"scatter_reduce with reduce={reduce!r}")
    reduction, _, identity = _SCATTER_REDUCE[reduce]
    a, src = _same(em, node, a, src)
    index = em.cast(index, dt.int64)
    if not include_self:  # the landing positions start from the reduction's identity
        dtype = out_dtype(node)
        if dtype.category < 2 and math.isinf(identity):
            info = np.iinfo(dtype.np)
            identity = info.min if identity < 0 else info.max
        fill = em.op("Expand", em.const(identity, dtype), em.op("Shape", index))
        a = em.op("ScatterElements", a, index, fill, axis=dim)
    return em.op("ScatterElements", a, index, src, axis=dim, reduction=reduction)


@symbolic(_core.Embedding)
def embedding(em, node, weight, idx, padding_idx):
    return em.op("Gather", weight, em.cast(idx, dt.int64), axis=0)


# -- products ----------------------------------------------------------------------------------

@symbolic(linalg.MatMul)
def matmul(em, node, a, b):
    return em.op("MatMul", *_same(em, node, a, b))


@symbolic(_core.Linear)
def linear(em, node, x, w, b):
    if x.ndim == 2:
        return em.op("Gemm", x, w, b if b is not None else "", transB=1)
    out = em.op("MatMul", x, em.op("Transpose", w, perm=[1, 0]))
    return out if b is None else em.op("Add", out, b)


@symbolic(linalg_norm.Cross)
def cross(em, node, a, b, dim):
    """The three components along ``dim``, each a difference of products."""
    a, b = _same(em, node, a, b)
    nd = len(node.meta["shape"])
    dim %= nd

    def part(v, i):
        return em.op("Slice", v, em.ints([i]), em.ints([i + 1]), em.ints([dim]))

    av, bv = [part(a, i) for i in range(3)], [part(b, i) for i in range(3)]
    comps = [em.op("Sub", em.op("Mul", av[(i + 1) % 3], bv[(i + 2) % 3]),
                   em.op("Mul", av[(i + 2) % 3], bv[(i + 1) % 3])) for i in range(3)]
    return em.op("Concat", *comps, axis=dim)


@symbolic(linalg_decomp.Slogdet)
def slogdet(em, node, a):
    """(sign, log|det|) from ONNX Det: fine while det stays in range (slogdet exists for the
    matrices whose det overflows; onnxruntime has no LU to do better)."""
    d = em.op("Det", a)
    return [em.op("Sign", d), em.op("Log", em.op("Abs", d))]


def conv(em, node, chain, env):
    """A traced convolution chain (see ``_fuse.py``) as one ONNX Conv: the weight matrix
    (G, O/G, C/G * K) reshaped back to (O, C/G, *K)."""
    x, w = env[chain.x], env[chain.weight]
    out_channels = w.shape[0] * w.shape[1]
    weight = em.op("Reshape", w, em.ints([out_channels, x.shape[1] // chain.groups,
                                          *chain.kernel]))
    return em.op("Conv", x, weight, kernel_shape=list(chain.kernel), strides=list(chain.stride),
                 pads=list(chain.padding) * 2, dilations=list(chain.dilation),
                 group=chain.groups)


@symbolic(linalg_decomp.Det)
def det(em, node, a):
    return em.op("Det", a)


# -- nn ----------------------------------------------------------------------------------------

@symbolic(Softmax)
def softmax(em, node, x, dim):
    return em.op("Softmax", x, axis=dim % max(x.ndim, 1))


@symbolic(LogSoftmax)
def log_softmax(em, node, x, dim):
    return em.op("LogSoftmax", x, axis=dim % max(x.ndim, 1))


@symbolic(_norm.LayerNorm)
def layer_norm(em, node, x, weight, bias, nd, eps):
    normalized = x.shape[x.ndim - nd:]
    if em.opset >= 17:
        scale = weight if weight is not None else em.const(np.ones(normalized, x.dtype.np))
        # no bias: leave the optional input out (onnxruntime 1.32 crashes on an empty name
        # there, found when group_norm, exported through LayerNorm, joined the registry)
        inputs = (x, scale) if bias is None else (x, scale, bias)
        return em.op("LayerNormalization", *inputs, axis=-nd, epsilon=float(eps))
    axes = list(range(x.ndim - nd, x.ndim))  # before 17: mean, variance, scale, shift
    mean = em.op("ReduceMean", x, axes=axes, keepdims=1)
    centred = em.op("Sub", x, mean)
    var = em.op("ReduceMean", em.op("Mul", centred, centred), axes=axes, keepdims=1)
    out = em.op("Div", centred, em.op("Sqrt", em.op("Add", var, em.scalar(eps, x))))
    if weight is not None:
        out = em.op("Mul", out, weight)
    return out if bias is None else em.op("Add", out, bias)


@symbolic(_pool.MaxPool)
def max_pool(em, node, x, kernel, stride, padding, dilation, out_sizes, with_indices=False):
    if with_indices:
        raise refuse(em, node, "max pooling with indices (ONNX's are flat over N and C)")
    floor_sizes = [(x.shape[2 + i] + 2 * padding[i] - dilation[i] * (kernel[i] - 1) - 1)
                   // stride[i] + 1 for i in range(len(kernel))]
    return em.op("MaxPool", x, kernel_shape=list(kernel), strides=list(stride),
                 pads=list(padding) * 2, dilations=list(dilation),
                 ceil_mode=int(list(out_sizes) != floor_sizes))


__all__ = ["by_positions"]


@symbolic(indexing.IndexPut)
def index_put(em, node, a, value, index, accumulate, op="index_put", *tensors):
    """``a[index] = value`` (``+=`` with ``accumulate``; put and setitem's core too): the
    index is fixed at export (a constant of the program), so the written positions are read
    off a position table and scattered into the flattened ``a``. Without ``accumulate`` a
    position written twice keeps its last value, as in eager (ONNX leaves duplicates in a
    plain ScatterElements undefined, so only each position's last write is scattered); with
    it, ScatterElements adds (``reduction="add"``, opset 16)."""
    _static(em, node, a, "its position table")
    if accumulate and em.opset < 16:
        raise refuse(em, node, "index_put(accumulate=True) needs ScatterElements' reduction")
    table = np.arange(math.prod(a.shape), dtype=np.int64).reshape(a.shape)
    positions = np.asarray(index.get(table)).reshape(-1)
    if positions.size == 0:
        return em.op("Identity", a)
    values = em.op("Expand", em.cast(value, a.dtype), em.ints(index.get(table).shape))
    values = em.op("Reshape", values, em.ints([-1]))
    if not accumulate:
        # the last write of each position: unique over the reversed order
        _, first = np.unique(positions[::-1], return_index=True)
        keep = np.sort(positions.size - 1 - first)
        if keep.size < positions.size:
            values = em.op("Gather", values, em.const(keep), axis=0)
            positions = positions[keep]
    flat = em.op("Reshape", a, em.ints([-1]))
    out = em.op("ScatterElements", flat, em.const(positions), values, axis=0,
                reduction="add" if accumulate else None)
    return em.op("Reshape", out, em.ints(a.shape))


@symbolic(_core.NLLLoss)
def nll_loss(em, node, logp, target, weight, ignore_index, reduction):
    """ONNX NegativeLogLikelihoodLoss: the same (N, C, *) layout, class weights, ignored
    targets and weighted-mean normaliser as eager."""
    logp = em.cast(logp, out_dtype(node)) if logp.dtype != out_dtype(node) else logp
    return em.op("NegativeLogLikelihoodLoss", logp, em.cast(target, dt.int64),
                 *([em.cast(weight, out_dtype(node))] if weight is not None else []),
                 reduction=reduction, ignore_index=int(ignore_index))


@symbolic(_loss.BinaryCrossEntropy)
def binary_cross_entropy(em, node, x, t, w):
    """-(t max(log x, -100) + (1 - t) max(log(1 - x), -100)) [* w], elementwise (the
    reduction is its own node); the logs clamped at -100 as in eager and torch."""
    x, t = _same(em, node, x, t)
    dtype = out_dtype(node)
    floor = em.const(-100, dtype)
    log_x = em.op("Max", em.op("Log", x), floor)
    log_1mx = em.op("Max", em.op("Log", em.op("Sub", em.const(1, dtype), x)), floor)
    pos = em.op("Mul", t, log_x)
    neg = em.op("Mul", em.op("Sub", em.const(1, dtype), t), log_1mx)
    out = em.op("Neg", em.op("Add", pos, neg))
    return out if w is None else em.op("Mul", out, em.cast(w, dtype))


@symbolic(_conv.Fold, since=16)
def fold(em, node, cols, shape, kernel, stride, padding, dilation):
    """col2im (conv_transpose, F.fold): each window element added into the output position it
    came from. The positions are Unfold of a position table of one sample (0 where a window
    reads padding), so one ScatterElements with ``reduction="add"`` per sample row writes them
    all; the batch may be dynamic."""
    if cols.dynamic - {0}:
        raise refuse(em, node, f"col2im with dynamic dims {sorted(cols.dynamic - {0})}")
    sample = (1,) + tuple(shape[1:])
    table = np.arange(1, math.prod(sample) + 1, dtype=np.int64).reshape(sample)
    positions = _conv.Unfold.apply(Tensor(table), kernel, stride, padding,
                                   dilation).numpy().reshape(1, -1)
    size = math.prod(sample) + 1  # slot 0 takes what lands in the padding
    batch = em.op("Slice", em.op("Shape", cols), em.ints([0]), em.ints([1]))
    rows = em.op("Reshape", cols, em.ints([0, -1]))
    index = em.op("Expand", em.const(positions),
                  em.op("Concat", batch, em.ints([positions.shape[1]]), axis=0))
    zeros = em.op("Expand", em.const(np.zeros((1, size), dtype=cols.dtype.np)),
                  em.op("Concat", batch, em.ints([size]), axis=0))
    out = em.op("ScatterElements", zeros, index, rows, axis=1, reduction="add")
    out = em.op("Slice", out, em.ints([1]), em.ints([size]), em.ints([1]))
    return em.op("Reshape", out, em.ints((0,) + tuple(shape[1:])))
