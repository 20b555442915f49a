"""The interpreter's op table: ONNX op type -> ``handler(inputs, attrs, opset)``.

``inputs`` are Tensors (None for an omitted optional input), ``attrs`` the node's attributes as
Python values, ``opset`` the model's default-domain opset (some ops moved an attribute to an
input at 13 or 18). A handler returns a Tensor or a tuple of them, computed with tensorix ops
only, so loaded models run on both devices and are differentiable.
"""

from __future__ import annotations

import math

import numpy as np

from .. import dtypes as dt
from .. import ops as T
from ..nn import functional as F
from ..tensor import Tensor
from ._common import UnsupportedOperatorError, from_elem_type

__all__ = ["HANDLERS"]

HANDLERS: dict = {}


def _op(*names):
    def register(fn):
        for n in names:
            HANDLERS[n] = fn
        return fn
    return register


def _ints(t) -> list[int]:
    """A shape-valued input (int64 tensor) as Python ints."""
    return [int(v) for v in np.asarray(t.tolist()).reshape(-1)]


def _axis(a, nd):
    return a + nd if a < 0 else a


def _axes(inputs, attrs, opset, since, pos=1):
    """Axes given as an input from opset ``since`` on, as an attribute before it."""
    if opset >= since:
        t = inputs[pos] if len(inputs) > pos else None
        return None if t is None else _ints(t)
    return attrs.get("axes")


def _const(value, like):
    return Tensor(np.asarray(value, dtype=like.dtype.np))


# -- elementwise ---------------------------------------------------------------------------

_UNARY = {"Abs": T.abs, "Neg": T.neg, "Exp": T.exp, "Log": T.log, "Sqrt": T.sqrt,
          "Reciprocal": T.reciprocal, "Tanh": T.tanh, "Sigmoid": T.sigmoid, "Relu": T.relu,
          "Erf": T.erf, "Sin": T.sin, "Cos": T.cos, "Tan": T.tan, "Asin": T.asin,
          "Acos": T.acos, "Atan": T.atan, "Sinh": T.sinh, "Cosh": T.cosh, "Asinh": T.asinh,
          "Acosh": T.acosh, "Atanh": T.atanh, "Floor": T.floor, "Ceil": T.ceil,
          "Round": T.round, "Sign": T.sign, "Not": T.logical_not, "IsNaN": T.isnan,
          "BitwiseNot": T.bitwise_not, "Softsign": F.softsign, "Softplus": F.softplus,
          "Mish": F.mish, "HardSwish": F.hardswish}
_BINARY = {"Add": T.add, "Sub": T.sub, "Mul": T.mul, "Pow": T.pow, "Equal": T.eq,
           "Less": T.lt, "LessOrEqual": T.le, "Greater": T.gt, "GreaterOrEqual": T.ge,
           "And": T.logical_and, "Or": T.logical_or, "Xor": T.logical_xor,
           "BitwiseAnd": T.bitwise_and, "BitwiseOr": T.bitwise_or,
           "BitwiseXor": T.bitwise_xor}


def _unary(fn):
    return lambda inputs, attrs, opset: fn(inputs[0])


def _binary(fn):
    return lambda inputs, attrs, opset: fn(inputs[0], inputs[1])


for _name, _fn in _UNARY.items():
    HANDLERS[_name] = _unary(_fn)
for _name, _fn in _BINARY.items():
    HANDLERS[_name] = _binary(_fn)


@_op("Div")
def _div(inputs, attrs, opset):
    a, b = inputs
    if a.is_floating_point():
        return T.div(a, b)
    return T.div(a, b, rounding_mode="trunc")  # ONNX integer division truncates


@_op("Mod")
def _mod(inputs, attrs, opset):
    return (T.fmod if attrs.get("fmod", 0) else T.remainder)(inputs[0], inputs[1])


@_op("IsInf")
def _isinf(inputs, attrs, opset):
    x = inputs[0]
    pos, neg = attrs.get("detect_positive", 1), attrs.get("detect_negative", 1)
    if pos and neg:
        return T.isinf(x)
    return T.isposinf(x) if pos else T.isneginf(x)


def _fold(fn, mean=False):
    """Max/Min/Sum/Mean of any number of broadcasting inputs."""
    def handler(inputs, attrs, opset):
        out = inputs[0]
        for x in inputs[1:]:
            out = fn(out, x)
        return out / len(inputs) if mean else out
    return handler


HANDLERS.update(Max=_fold(T.maximum), Min=_fold(T.minimum), Sum=_fold(T.add),
                Mean=_fold(T.add, mean=True))


@_op("Where")
def _where(inputs, attrs, opset):
    return T.where(*inputs)


@_op("Clip")
def _clip(inputs, attrs, opset):
    x = inputs[0]
    if opset < 11:
        lo, hi = attrs.get("min"), attrs.get("max")
    else:
        lo = inputs[1] if len(inputs) > 1 else None
        hi = inputs[2] if len(inputs) > 2 else None
    return x if lo is None and hi is None else T.clamp(x, lo, hi)


@_op("Cast")
def _cast(inputs, attrs, opset):
    return inputs[0].to(from_elem_type(attrs["to"]))


@_op("CastLike")
def _cast_like(inputs, attrs, opset):
    return inputs[0].to(inputs[1].dtype)


@_op("Identity", "Dropout")
def _identity(inputs, attrs, opset):
    # Dropout runs in inference mode (training_mode input absent or false); its mask is ones
    x = inputs[0]
    return x, T.ones_like(x, dtype=dt.bool)


# -- activations ---------------------------------------------------------------------------

@_op("LeakyRelu")
def _leaky(inputs, attrs, opset):
    return F.leaky_relu(inputs[0], attrs.get("alpha", 0.01))


@_op("Elu")
def _elu(inputs, attrs, opset):
    return F.elu(inputs[0], attrs.get("alpha", 1.0))


@_op("Selu")
def _selu(inputs, attrs, opset):
    x = inputs[0]
    alpha = attrs.get("alpha", 1.67326319217681884765625)
    gamma = attrs.get("gamma", 1.05070102214813232421875)
    return gamma * T.where(x > 0, x, alpha * T.expm1(x))


@_op("HardSigmoid")
def _hardsigmoid(inputs, attrs, opset):
    x = inputs[0]
    return T.clamp(attrs.get("alpha", 0.2) * x + attrs.get("beta", 0.5), 0.0, 1.0)


@_op("PRelu")
def _prelu(inputs, attrs, opset):
    x, slope = inputs
    return T.where(x < 0, x * slope, x)


@_op("Gelu")
def _gelu(inputs, attrs, opset):
    return F.gelu(inputs[0], approximate=attrs.get("approximate", "none"))


def _softmax(fn):
    def handler(inputs, attrs, opset):
        x = inputs[0]
        if opset >= 13:
            return fn(x, _axis(attrs.get("axis", -1), x.ndim))
        # before 13: over all dims from axis on, as a 2-D (outer, inner) matrix
        axis = _axis(attrs.get("axis", 1), x.ndim)
        flat = x.reshape(math.prod(x.shape[:axis]), -1)
        return fn(flat, 1).reshape(x.shape)
    return handler


HANDLERS.update(Softmax=_softmax(F.softmax), LogSoftmax=_softmax(F.log_softmax))


# -- products, convolution, pooling, normalization -----------------------------------------

@_op("MatMul")
def _matmul(inputs, attrs, opset):
    return T.matmul(inputs[0], inputs[1])


@_op("Gemm")
def _gemm(inputs, attrs, opset):
    a, b = inputs[0], inputs[1]
    c = inputs[2] if len(inputs) > 2 else None
    a = a.t() if attrs.get("transA", 0) else a
    b = b.t() if attrs.get("transB", 0) else b
    out = T.matmul(a, b)
    alpha, beta = attrs.get("alpha", 1.0), attrs.get("beta", 1.0)
    if alpha != 1.0:
        out = out * alpha
    if c is not None:
        out = out + (c if beta == 1.0 else c * beta)
    return out


@_op("Det")
def _det(inputs, attrs, opset):
    from ..linalg import det

    return det(inputs[0])


@_op("Einsum")
def _einsum(inputs, attrs, opset):
    return T.einsum(attrs["equation"], *inputs)


def _spatial_pads(attrs, x, kernel, strides, dilations):
    """ONNX pads (begin..., end...) for the spatial dims, auto_pad resolved."""
    nd = len(kernel)
    auto = attrs.get("auto_pad", "NOTSET")
    if auto in ("NOTSET", "VALID"):
        return list(attrs.get("pads", [0] * 2 * nd)) if auto == "NOTSET" else [0] * 2 * nd
    begin, end = [], []
    for i in range(nd):
        size = x.shape[2 + i]
        out = -(-size // strides[i])
        total = max(0, (out - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 - size)
        small = total // 2
        first = small if auto == "SAME_UPPER" else total - small
        begin.append(first)
        end.append(total - first)
    return begin + end


def _geometry(attrs, x, kernel):
    nd = len(kernel)
    strides = list(attrs.get("strides", [1] * nd))
    dilations = list(attrs.get("dilations", [1] * nd))
    pads = _spatial_pads(attrs, x, kernel, strides, dilations)
    return strides, dilations, pads


def _symmetric(x, pads, value=0.0):
    """(x, padding): pads as the op's own symmetric padding, or applied first when uneven."""
    nd = len(pads) // 2
    if pads[:nd] == pads[nd:]:
        return x, tuple(pads[:nd])
    flat = []
    for i in reversed(range(nd)):
        flat += [pads[i], pads[nd + i]]
    return F.pad(x, flat, value=value), (0,) * nd


_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}


@_op("Conv")
def _conv(inputs, attrs, opset):
    x, w = inputs[0], inputs[1]
    b = inputs[2] if len(inputs) > 2 else None
    kernel = list(attrs.get("kernel_shape", w.shape[2:]))
    strides, dilations, pads = _geometry(attrs, x, kernel)
    x, padding = _symmetric(x, pads)
    return _CONV[len(kernel)](x, w, b, stride=tuple(strides), padding=padding,
                              dilation=tuple(dilations), groups=attrs.get("group", 1))


_MAXPOOL = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}
_AVGPOOL = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}


@_op("MaxPool")
def _maxpool(inputs, attrs, opset):
    x = inputs[0]
    kernel = list(attrs["kernel_shape"])
    strides, dilations, pads = _geometry(attrs, x, kernel)
    x, padding = _symmetric(x, pads, value=-math.inf)
    return _MAXPOOL[len(kernel)](x, tuple(kernel), tuple(strides), padding, tuple(dilations),
                                 ceil_mode=bool(attrs.get("ceil_mode", 0)))


@_op("AveragePool")
def _avgpool(inputs, attrs, opset):
    x = inputs[0]
    kernel = list(attrs["kernel_shape"])
    strides, dilations, pads = _geometry(attrs, x, kernel)
    if any(d != 1 for d in dilations):
        raise UnsupportedOperatorError("tensorix.onnx.load: AveragePool with dilations is not "
                                       "supported")
    include = bool(attrs.get("count_include_pad", 0))
    nd = len(kernel)
    if pads[:nd] != pads[nd:]:
        raise UnsupportedOperatorError("tensorix.onnx.load: AveragePool with uneven pads is "
                                       "not supported")
    return _AVGPOOL[nd](x, tuple(kernel), tuple(strides), tuple(pads[:nd]),
                        ceil_mode=bool(attrs.get("ceil_mode", 0)), count_include_pad=include)


HANDLERS.update(
    GlobalAveragePool=lambda i, a, o: i[0].mean(tuple(range(2, i[0].ndim)), keepdim=True),
    GlobalMaxPool=lambda i, a, o: T.amax(i[0], tuple(range(2, i[0].ndim)), keepdim=True))


@_op("LayerNormalization")
def _layer_norm(inputs, attrs, opset):
    x, scale = inputs[0], inputs[1]
    bias = inputs[2] if len(inputs) > 2 else None
    axis = _axis(attrs.get("axis", -1), x.ndim)
    eps = attrs.get("epsilon", 1e-5)
    dims = tuple(range(axis, x.ndim))
    mean = x.mean(dims, keepdim=True)
    inv_std = T.rsqrt(((x - mean) ** 2).mean(dims, keepdim=True) + eps)
    y = F.layer_norm(x, x.shape[axis:], scale, bias, eps)
    return y, mean, inv_std


@_op("BatchNormalization")
def _batch_norm(inputs, attrs, opset):
    x, scale, bias, mean, var = inputs[:5]
    return F.batch_norm(x, mean, var, scale, bias, training=False,
                        eps=attrs.get("epsilon", 1e-5))


# -- shapes and movement -------------------------------------------------------------------

@_op("Reshape")
def _reshape(inputs, attrs, opset):
    x, shape = inputs[0], _ints(inputs[1])
    if not attrs.get("allowzero", 0):  # 0 copies the input's dim
        shape = [x.shape[i] if s == 0 else s for i, s in enumerate(shape)]
    return x.reshape(shape)


@_op("Flatten")
def _flatten(inputs, attrs, opset):
    x = inputs[0]
    axis = _axis(attrs.get("axis", 1), x.ndim)
    return x.reshape(math.prod(x.shape[:axis]), math.prod(x.shape[axis:]))


@_op("Transpose")
def _transpose(inputs, attrs, opset):
    x = inputs[0]
    return x.permute(*attrs.get("perm", range(x.ndim - 1, -1, -1)))


@_op("Squeeze")
def _squeeze(inputs, attrs, opset):
    x = inputs[0]
    axes = _axes(inputs, attrs, opset, 13)
    if axes is None:
        axes = [i for i, s in enumerate(x.shape) if s == 1]
    return x.squeeze(tuple(_axis(a, x.ndim) for a in axes)) if axes else x


@_op("Unsqueeze")
def _unsqueeze(inputs, attrs, opset):
    x = inputs[0]
    axes = _axes(inputs, attrs, opset, 13)
    nd = x.ndim + len(axes)
    for a in sorted(_axis(a, nd) for a in axes):
        x = x.unsqueeze(a)
    return x


@_op("Expand")
def _expand(inputs, attrs, opset):
    x = inputs[0]  # bidirectional broadcasting, unlike torch's expand
    return x.expand(*np.broadcast_shapes(tuple(x.shape), tuple(_ints(inputs[1]))))


@_op("NonZero")
def _nonzero(inputs, attrs, opset):
    x = inputs[0]  # ONNX's (ndim, n) positions, row-major order
    return T.nonzero(x.reshape(1) if x.ndim == 0 else x).transpose(0, 1)


@_op("Tile")
def _tile(inputs, attrs, opset):
    return T.tile(inputs[0], tuple(_ints(inputs[1])))


@_op("Concat")
def _concat(inputs, attrs, opset):
    return T.cat([t for t in inputs if t is not None], attrs["axis"])


@_op("Split")
def _split(inputs, attrs, opset):
    x = inputs[0]
    axis = _axis(attrs.get("axis", 0), x.ndim)
    sizes = _axes(inputs, attrs, opset, 13)
    if sizes is None and opset < 13:
        sizes = attrs.get("split")
    if sizes is None:
        n = attrs.get("num_outputs")
        if n is None:
            raise UnsupportedOperatorError("tensorix.onnx.load: Split without split sizes needs "
                                           "num_outputs (the node's output count is not read)")
        sizes = -(-x.shape[axis] // n)
    return tuple(T.split(x, sizes, axis))


@_op("Slice")
def _slice(inputs, attrs, opset):
    x = inputs[0]
    starts, ends = _ints(inputs[1]), _ints(inputs[2])
    axes = _ints(inputs[3]) if len(inputs) > 3 and inputs[3] is not None else \
        list(range(len(starts)))
    steps = _ints(inputs[4]) if len(inputs) > 4 and inputs[4] is not None else [1] * len(starts)
    index = [slice(None)] * x.ndim
    flips = []
    for s, e, a, st in zip(starts, ends, axes, steps):
        a = _axis(a, x.ndim)
        positions = range(x.shape[a])[slice(s, e, st)]  # ONNX clamps as Python slicing does
        if st > 0:
            index[a] = slice(positions.start, positions.stop, positions.step)
        else:  # tensorix views have no negative steps (as torch): flip, then slice forward
            flips.append(a)
            n = x.shape[a]
            index[a] = slice(n - 1 - positions.start, n - 1 - positions.start + len(positions)
                             * -st, -st)
    if flips:
        x = T.flip(x, flips)
    return x[tuple(index)]


@_op("Gather")
def _gather(inputs, attrs, opset):
    x, idx = inputs
    axis = _axis(attrs.get("axis", 0), x.ndim)
    idx = T.where(idx < 0, idx + x.shape[axis], idx).long()
    out = T.index_select(x, axis, idx.reshape(-1))
    return out.reshape(*x.shape[:axis], *idx.shape, *x.shape[axis + 1:])


@_op("GatherND")
def _gather_nd(inputs, attrs, opset):
    """``x[idx[..., 0], idx[..., 1], ...]`` (batch_dims 0, what export writes): the last axis
    of ``idx`` names the leading dims of ``x`` it indexes, negative counting from the end."""
    x, idx = inputs
    if attrs.get("batch_dims", 0):
        raise NotImplementedError("tensorix.onnx.load: GatherND with batch_dims > 0 is not "
                                  "supported by the interpreter")
    idx = idx.long()
    return x[tuple(idx[..., d] for d in range(idx.shape[-1]))]


@_op("GatherElements")
def _gather_elements(inputs, attrs, opset):
    x, idx = inputs
    axis = _axis(attrs.get("axis", 0), x.ndim)
    return T.gather(x, axis, T.where(idx < 0, idx + x.shape[axis], idx).long())


@_op("ScatterElements")
def _scatter_elements(inputs, attrs, opset):
    x, idx, src = inputs
    axis = _axis(attrs.get("axis", 0), x.ndim)
    idx = T.where(idx < 0, idx + x.shape[axis], idx).long()
    reduction = attrs.get("reduction", "none")
    if reduction == "none":
        return T.scatter(x, axis, idx, src)
    names = {"add": "sum", "mul": "prod", "max": "amax", "min": "amin"}
    return T.scatter_reduce(x, axis, idx, src, names[reduction], include_self=True)


@_op("ScatterND")
def _scatter_nd(inputs, attrs, opset):
    """Rows of ``updates`` written (or reduced) into ``data`` at the multi-indices in the
    last axis of ``indices``: as index_copy/index_add/index_reduce along the flattened
    leading dims they address."""
    x, idx, upd = inputs
    k = idx.shape[-1]
    lead = x.shape[:k]
    flat_x = x.reshape(math.prod(lead), *x.shape[k:])
    idx = T.where(idx < 0, idx + Tensor(np.asarray(lead, np.int64)), idx).long()
    strides = np.cumprod((1,) + tuple(lead[:0:-1]))[::-1].copy()
    positions = (idx * Tensor(strides.astype(np.int64))).sum(-1).reshape(-1)
    rows = upd.reshape(-1, *x.shape[k:])
    reduction = attrs.get("reduction", "none")
    if reduction == "none":
        out = T.index_copy(flat_x, 0, positions, rows)
    elif reduction == "add":
        out = T.index_add(flat_x, 0, positions, rows)
    else:
        names = {"mul": "prod", "max": "amax", "min": "amin"}
        out = T.index_reduce(flat_x, 0, positions, rows, names[reduction])
    return out.reshape(x.shape)


@_op("Pad")
def _pad(inputs, attrs, opset):
    x = inputs[0]
    pads = _ints(inputs[1]) if opset >= 11 else list(attrs["pads"])
    value = inputs[2].item() if len(inputs) > 2 and inputs[2] is not None else \
        attrs.get("value", 0.0)
    axes = _ints(inputs[3]) if len(inputs) > 3 and inputs[3] is not None else \
        list(range(x.ndim))
    n = len(axes)
    per_axis = {_axis(a, x.ndim): (pads[i], pads[n + i]) for i, a in enumerate(axes)}
    flat = []
    for d in reversed(range(x.ndim)):  # F.pad lists the last dim first
        flat += list(per_axis.get(d, (0, 0)))
    while len(flat) > 2 and flat[-2:] == [0, 0]:  # F.pad's reflect/replicate take few dims
        flat = flat[:-2]
    mode = {"constant": "constant", "reflect": "reflect", "edge": "replicate",
            "wrap": "circular"}[attrs.get("mode", "constant")]
    return F.pad(x, flat, mode=mode, value=value) if mode == "constant" else \
        F.pad(x, flat, mode=mode)


@_op("Trilu")
def _trilu(inputs, attrs, opset):
    k = int(inputs[1].item()) if len(inputs) > 1 and inputs[1] is not None else 0
    return (T.triu if attrs.get("upper", 1) else T.tril)(inputs[0], k)


# -- reductions ----------------------------------------------------------------------------

def _reduce(fn, axes_input_since=18):
    def handler(inputs, attrs, opset):
        x = inputs[0]
        axes = _axes(inputs, attrs, opset, axes_input_since)
        keep = bool(attrs.get("keepdims", 1))
        if not axes:
            if attrs.get("noop_with_empty_axes", 0):
                return x
            axes = range(x.ndim)
        return fn(x, tuple(_axis(a, x.ndim) for a in axes), keep)
    return handler


HANDLERS.update(
    ReduceSum=_reduce(lambda x, d, k: T.sum(x, d, keepdim=k), axes_input_since=13),
    ReduceMean=_reduce(lambda x, d, k: T.mean(x, d, keepdim=k)),
    ReduceMax=_reduce(lambda x, d, k: T.amax(x, d, keepdim=k)),
    ReduceMin=_reduce(lambda x, d, k: T.amin(x, d, keepdim=k)),
    ReduceProd=_reduce(lambda x, d, k: _prod(x, d, k)),
    ReduceLogSumExp=_reduce(lambda x, d, k: T.logsumexp(x, d, keepdim=k)),
    ReduceL2=_reduce(lambda x, d, k: T.sqrt(T.sum(x * x, d, keepdim=k))),
    ReduceL1=_reduce(lambda x, d, k: T.sum(T.abs(x), d, keepdim=k)),
    ReduceSumSquare=_reduce(lambda x, d, k: T.sum(x * x, d, keepdim=k)))


def _prod(x, dims, keep):
    for d in sorted(dims, reverse=True):
        x = T.prod(x, d, keepdim=keep)
    return x


def _arg_reduce(fn):
    def handler(inputs, attrs, opset):
        x = inputs[0]
        axis = _axis(attrs.get("axis", 0), x.ndim)
        keep = bool(attrs.get("keepdims", 1))
        if attrs.get("select_last_index", 0):  # the last of equal extremes: search flipped
            n = x.shape[axis]
            return n - 1 - fn(T.flip(x, [axis]), axis, keepdim=keep)
        return fn(x, axis, keepdim=keep)
    return handler


HANDLERS.update(ArgMax=_arg_reduce(T.argmax), ArgMin=_arg_reduce(T.argmin))


@_op("CumSum")
def _cumsum(inputs, attrs, opset):
    x = inputs[0]
    axis = _axis(int(inputs[1].item()), x.ndim)
    if attrs.get("reverse", 0):
        x = T.flip(x, [axis])
    out = T.cumsum(x, axis)
    if attrs.get("exclusive", 0):
        out = out - x
    return T.flip(out, [axis]) if attrs.get("reverse", 0) else out


@_op("TopK")
def _topk(inputs, attrs, opset):
    x = inputs[0]
    k = int(inputs[1].item()) if opset >= 10 else attrs["k"]
    values, indices = T.topk(x, k, _axis(attrs.get("axis", -1), x.ndim),
                             largest=bool(attrs.get("largest", 1)),
                             sorted=bool(attrs.get("sorted", 1)))
    return values, indices



@_op("NegativeLogLikelihoodLoss")
def _nll_loss(inputs, attrs, opset):
    x, target = inputs[0], inputs[1]
    weight = inputs[2] if len(inputs) > 2 else None
    return F.nll_loss(x, target.long(), weight, ignore_index=attrs.get("ignore_index", -100),
                      reduction=attrs.get("reduction", "mean"))

# -- shape-valued and constant ops ---------------------------------------------------------

@_op("Constant")
def _constant(inputs, attrs, opset):
    for key, dtype in (("value", None), ("value_float", np.float32), ("value_int", np.int64),
                       ("value_floats", np.float32), ("value_ints", np.int64)):
        if key in attrs:
            return Tensor(np.array(attrs[key], dtype=dtype))
    raise UnsupportedOperatorError(f"tensorix.onnx.load: Constant with attributes "
                                   f"{sorted(attrs)} is not supported")


@_op("Shape")
def _shape(inputs, attrs, opset):
    shape = list(inputs[0].shape)[attrs.get("start", 0):attrs.get("end", None)]
    return Tensor(np.array(shape, dtype=np.int64))


@_op("Size")
def _size(inputs, attrs, opset):
    return Tensor(np.array(inputs[0].numel(), dtype=np.int64))


@_op("ConstantOfShape")
def _constant_of_shape(inputs, attrs, opset):
    value = attrs.get("value", np.zeros(1, np.float32))
    return Tensor(np.full(_ints(inputs[0]), value.reshape(-1)[0], dtype=value.dtype))


@_op("Range")
def _range(inputs, attrs, opset):
    start, limit, delta = (t.item() for t in inputs)
    return Tensor(np.arange(start, limit, delta, dtype=inputs[0].dtype.np))
