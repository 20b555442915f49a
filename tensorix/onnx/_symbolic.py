"""The export op table: for each dispatcher primitive (a Function class) that ONNX can express,
the *symbolic* that writes its ONNX node(s), and the lowest opset it needs.

A symbolic is ``fn(em, node, *args)``: ``em`` the :class:`~._emit.Emitter`, ``node`` the fx
node (its ``meta`` holds the output's shape and dtype), ``args`` the primitive's own forward
arguments with tensors replaced by :class:`~._emit.Value` s. It returns the output name (or a
list of names for a multi-output primitive). Arithmetic inputs are cast to the output dtype
first: ONNX ops take one element type, while tensorix promotes at the call.

Elementwise math and reductions are here; movement, indexing and nn primitives in
``_symbolic_nn.py``, which registers into the same table.
"""

from __future__ import annotations

import math

import numpy as np

from .. import dtypes as dt
from ..ops import (
    _reduce32,
    arith,
    bitwise,
    distance,
    elementwise,
    linalg_norm,
    pointwise,
    reduce,
    special,
    unary,
)
from ..ops import activation as act
from ._common import to_elem_type
from ._emit import Value

__all__ = ["SYMBOLIC", "symbolic", "refuse"]

SYMBOLIC: dict = {}  # Function class -> (symbolic, lowest opset)


def symbolic(*classes, since=13):
    def register(fn):
        for cls in classes:
            SYMBOLIC[cls] = (fn, since)
        return fn
    return register


def out_dtype(node):
    return node.meta["dtype"]


def _same(em, node, *values):
    """Every value cast to the output's dtype."""
    return [em.cast(v, out_dtype(node)) for v in values]


# -- elementwise -----------------------------------------------------------------------------

_UNARY = {elementwise.Neg: "Neg", elementwise.Exp: "Exp", elementwise.Log: "Log",
          unary.Abs: "Abs", unary.Sqrt: "Sqrt", unary.Reciprocal: "Reciprocal",
          act.Relu: "Relu", unary.Sin: "Sin", unary.Cos: "Cos", unary.Tan: "Tan",
          unary.Asin: "Asin", unary.Acos: "Acos", unary.Atan: "Atan", unary.Sinh: "Sinh",
          unary.Cosh: "Cosh", unary.Tanh: "Tanh", unary.Asinh: "Asinh", unary.Acosh: "Acosh",
          unary.Atanh: "Atanh", unary.Erf: "Erf", act.Sigmoid: "Sigmoid",
          pointwise.Floor: "Floor", pointwise.Ceil: "Ceil", pointwise.Sign: "Sign",
          pointwise.IsNan: "IsNaN", pointwise.IsInf: "IsInf", bitwise.LogicalNot: "Not"}
_BINARY = {elementwise.Add: "Add", elementwise.Sub: "Sub", elementwise.Mul: "Mul",
           elementwise.Div: "Div", elementwise.Maximum: "Max", elementwise.Minimum: "Min",
           elementwise.Pow: "Pow"}
_COMPARE = {pointwise.Eq: "Equal", pointwise.Lt: "Less", pointwise.Le: "LessOrEqual",
            pointwise.Gt: "Greater", pointwise.Ge: "GreaterOrEqual",
            bitwise.LogicalAnd: "And", bitwise.LogicalOr: "Or", bitwise.LogicalXor: "Xor"}
_BITWISE = {bitwise.BitwiseAnd: "BitwiseAnd", bitwise.BitwiseOr: "BitwiseOr",
            bitwise.BitwiseXor: "BitwiseXor", bitwise.BitwiseNot: "BitwiseNot"}


def _unary(op_type):
    def fn(em, node, a):
        if op_type == "Not":
            return em.op(op_type, em.cast(a, dt.bool))
        if op_type in ("IsNaN", "IsInf", "Sign"):
            return em.op(op_type, a)
        return em.op(op_type, *_same(em, node, a))
    return fn


def _binary(op_type):
    def fn(em, node, a, b):
        if op_type == "Pow" and b.dtype != a.dtype:  # ONNX Pow takes a mixed exponent type
            return em.op("Pow", em.cast(a, out_dtype(node)), b)
        return em.op(op_type, *_same(em, node, a, b))
    return fn


def _compare(op_type):
    def fn(em, node, a, b):
        if op_type in ("And", "Or", "Xor"):
            return em.op(op_type, em.cast(a, dt.bool), em.cast(b, dt.bool))
        common = dt.promote_types(a.dtype, b.dtype)
        return em.op(op_type, em.cast(a, common), em.cast(b, common))
    return fn


for _cls, _name in _UNARY.items():
    symbolic(_cls)(_unary(_name))
for _cls, _name in _BINARY.items():
    symbolic(_cls)(_binary(_name))
for _cls, _name in _COMPARE.items():
    symbolic(_cls)(_compare(_name))
_LOGICAL_OF = {"BitwiseAnd": "And", "BitwiseOr": "Or", "BitwiseXor": "Xor", "BitwiseNot": "Not"}


def _bitwise(op_type):
    def fn(em, node, *args):
        args = _same(em, node, *args)
        if out_dtype(node) is dt.bool:  # on bools, the logical ops (any opset)
            return em.op(_LOGICAL_OF[op_type], *args)
        if em.opset < 18:
            raise refuse(em, node, f"{op_type} on integers needs opset >= 18")
        return em.op(op_type, *args)
    return fn


for _cls, _name in _BITWISE.items():
    symbolic(_cls)(_bitwise(_name))

@symbolic(bitwise.LeftShift, bitwise.RightShift)
def _shift(em, node, a, b):
    """Shifts as products and quotients by ``2 ** amount`` in int64 (ONNX BitShift is unsigned
    only): a left shift is the product wrapped back to the dtype's width; a signed right
    shift floors by shifting ``~a`` (``-1 - a``, never negative) and complementing back.
    Shifting by the width or more gives 0 (left, or unsigned right) or the sign fill (signed
    right), as eager; negative amounts are undefined, as in torch."""
    dtype = out_dtype(node)
    bits = dtype.bits
    x, amount = em.cast(a, dt.int64), em.cast(b, dt.int64)

    def i64(v):
        return em.const(np.int64(v))

    def power(most):
        return em.op("Pow", i64(2), em.op("Min", em.op("Max", amount, i64(0)), i64(most)))

    beyond = em.op("GreaterOrEqual", amount, i64(bits))
    if node.op is bitwise.LeftShift:
        out = em.op("Where", beyond, i64(0), em.op("Mul", x, power(bits - 1)))
    elif dtype is dt.uint8:
        out = em.op("Where", beyond, i64(0), em.op("Div", x, power(bits - 1)))
    else:  # by bits - 1 or more: the sign fill (2 ** 63 would not fit an int64 divisor)
        neg = em.op("Less", x, i64(0))
        q = em.op("Div", em.op("Where", neg, em.op("Sub", i64(-1), x), x), power(bits - 2))
        q = em.op("Where", em.op("GreaterOrEqual", amount, i64(bits - 1)), i64(0), q)
        out = em.op("Where", neg, em.op("Sub", i64(-1), q), q)
    return em.op("Cast", out, to=to_elem_type(dtype))  # narrowing wraps, as eager's bits


@symbolic(pointwise.Ne)
def _not_equal(em, node, a, b):
    return em.op("Not", _compare("Equal")(em, node, a, b))


@symbolic(unary.Rsqrt)
def _rsqrt(em, node, a):
    return em.op("Reciprocal", em.op("Sqrt", *_same(em, node, a)))


@symbolic(unary.Log1p)
def _log1p(em, node, a):
    (a,) = _same(em, node, a)
    return em.op("Log", em.op("Add", a, em.const(1, out_dtype(node))))


@symbolic(unary.Expm1)
def _expm1(em, node, a):
    (a,) = _same(em, node, a)
    return em.op("Sub", em.op("Exp", a), em.const(1, out_dtype(node)))


@symbolic(unary.Exp2)
def _exp2(em, node, a):
    (a,) = _same(em, node, a)
    return em.op("Pow", em.const(2, out_dtype(node)), a)


@symbolic(unary.Log2, unary.Log10)
def _log_base(em, node, a):
    (a,) = _same(em, node, a)
    base = 2.0 if node.op is unary.Log2 else 10.0
    return em.op("Div", em.op("Log", a), em.const(math.log(base), out_dtype(node)))


@symbolic(unary.Erfc)
def _erfc(em, node, a):
    (a,) = _same(em, node, a)
    return em.op("Sub", em.const(1, out_dtype(node)), em.op("Erf", a))


@symbolic(pointwise.Trunc)
def _trunc(em, node, a):
    zero = em.const(0, a.dtype)
    return em.op("Where", em.op("Less", a, zero), em.op("Ceil", a), em.op("Floor", a))


@symbolic(pointwise.Frac)
def _frac(em, node, a):
    return em.op("Sub", a, _trunc(em, node, a))


@symbolic(pointwise.Round)
def _round(em, node, a, decimals):
    if decimals == 0:
        return em.op("Round", a)
    scale = em.const(10.0 ** abs(decimals), a.dtype)
    inner, outer = ("Mul", "Div") if decimals > 0 else ("Div", "Mul")
    return em.op(outer, em.op("Round", em.op(inner, a, scale)), scale)


@symbolic(pointwise.IsPosInf, pointwise.IsNegInf)
def _isinf_signed(em, node, a):
    pos = node.op is pointwise.IsPosInf
    return em.op("IsInf", a, detect_positive=int(pos), detect_negative=int(not pos))


@symbolic(pointwise.IsFinite)
def _isfinite(em, node, a):
    if a.dtype.category < 2:
        return em.op("Not", em.op("IsNaN", em.cast(a, dt.float32)))
    return em.op("Not", em.op("Or", em.op("IsNaN", a), em.op("IsInf", a)))


@symbolic(pointwise.Where)
def _where(em, node, cond, a, b):
    return em.op("Where", em.cast(cond, dt.bool), *_same(em, node, a, b))


@symbolic(pointwise.Clamp, pointwise.ClampScalar)
def _clamp(em, node, x, lo, hi):
    (out,) = _same(em, node, x)
    if lo is not None:  # Max/Min broadcast tensor bounds, which Clip does not
        out = em.op("Max", out, em.cast(lo, out_dtype(node)))
    if hi is not None:
        out = em.op("Min", out, em.cast(hi, out_dtype(node)))
    return out


@symbolic(act.Hardtanh)
def _hardtanh(em, node, a, lo, hi):
    return em.op("Clip", a, em.scalar(lo, a), em.scalar(hi, a))


@symbolic(act.LeakyRelu)
def _leaky_relu(em, node, a, slope):
    return em.op("LeakyRelu", a, alpha=float(slope))


@symbolic(act.Silu)
def _silu(em, node, a):
    (x,) = _same(em, node, a)
    return em.op("Mul", x, em.op("Sigmoid", x))


@symbolic(act.Hardshrink)
def _hardshrink(em, node, a, lambd):
    inside = em.op("And", em.op("GreaterOrEqual", a, em.scalar(-lambd, a)),
                   em.op("LessOrEqual", a, em.scalar(lambd, a)))
    return em.op("Where", inside, em.scalar(0, a), a)


@symbolic(act.Softshrink)
def _softshrink(em, node, a, lambd):
    return em.op("Sub", a, em.op("Clip", a, em.scalar(-lambd, a), em.scalar(lambd, a)))


@symbolic(act.Threshold)
def _threshold(em, node, a, th, value):
    return em.op("Where", em.op("LessOrEqual", a, em.scalar(th, a)), em.scalar(value, a), a)


@symbolic(act.Hardswish)
def _hardswish(em, node, a):
    (x,) = _same(em, node, a)
    return em.op("HardSwish", x)  # x * clip(x / 6 + 1/2, 0, 1): torch's x * relu6(x + 3) / 6


@symbolic(act.Hardsigmoid)
def _hardsigmoid(em, node, a):
    """clip(x + 3, 0, 6) / 6, torch's order (ONNX's HardSigmoid rounds x / 6 + 1/2)."""
    (x,) = _same(em, node, a)
    c = em.op("Clip", em.op("Add", x, em.scalar(3, a)), em.scalar(0, a), em.scalar(6, a))
    return em.op("Div", c, em.scalar(6, a))


@symbolic(act.Softsign)
def _softsign(em, node, a):
    (x,) = _same(em, node, a)
    return em.op("Softsign", x)


@symbolic(act.LogSigmoid)
def _logsigmoid(em, node, a):
    (x,) = _same(em, node, a)
    return em.op("Neg", em.op("Softplus", em.op("Neg", x)))


@symbolic(act.Logit)
def _logit(em, node, a, lo, hi):
    (x,) = _same(em, node, a)
    if math.isfinite(lo):
        x = em.op("Clip", x, em.scalar(lo, a), em.scalar(hi, a))
    return em.op("Sub", em.op("Log", x), em.op("Log", em.op("Sub", em.scalar(1, a), x)))


@symbolic(act.Glu)
def _glu(em, node, a, dim):
    """The two halves by Slice, then a * Sigmoid(b)."""
    (x,) = _same(em, node, a)
    half = a.shape[dim] // 2
    if dim in a.dynamic:
        raise refuse(em, node, "glu along a dynamic axis")
    first = em.op("Slice", x, em.ints([0]), em.ints([half]), em.ints([dim]))
    second = em.op("Slice", x, em.ints([half]), em.ints([2 * half]), em.ints([dim]))
    return em.op("Mul", first, em.op("Sigmoid", second))


@symbolic(act.Elu)
def _elu(em, node, a, alpha, scale, input_scale):
    """elu (alpha, 1, 1), selu (its alpha, its scale, 1) and celu (alpha, 1, 1 / alpha): ONNX's
    own Elu/Selu where the coefficients are theirs, else the formula (ONNX's Celu is float32
    only)."""
    (x,) = _same(em, node, a)
    if scale == 1 and input_scale == 1:
        return em.op("Elu", x, alpha=float(alpha))
    if input_scale == 1:
        return em.op("Selu", x, alpha=float(alpha), gamma=float(scale))
    neg = em.op("Mul", em.op("Sub", em.op("Exp", em.op("Mul", x, em.scalar(input_scale, a))),
                             em.scalar(1, a)), em.scalar(alpha * scale, a))
    return em.op("Where", em.op("Greater", x, em.scalar(0, a)),
                 em.op("Mul", x, em.scalar(scale, a)), neg)


@symbolic(elementwise.Cast)
def _cast(em, node, a, dtype):
    return em.cast(a, dtype) if a.dtype != dtype else em.op("Identity", a)


@symbolic(act.Softplus)
def _softplus(em, node, a, beta, threshold):
    z = em.op("Mul", a, em.scalar(beta, a)) if beta != 1 else a.name
    soft = em.op("Softplus", z)
    if beta != 1:
        soft = em.op("Div", soft, em.scalar(beta, a))
    return em.op("Where", em.op("Greater", z, em.scalar(threshold, a)), a, soft)


@symbolic(act.Gelu)
def _gelu(em, node, a, approximate):
    if em.opset >= 20:
        return em.op("Gelu", a, approximate=approximate)
    half = em.op("Mul", a, em.scalar(0.5, a))
    if approximate == "tanh":  # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        cube = em.op("Mul", em.op("Mul", a, a), a)
        inner = em.op("Add", a, em.op("Mul", cube, em.scalar(0.044715, a)))
        t = em.op("Tanh", em.op("Mul", inner, em.scalar(math.sqrt(2 / math.pi), a)))
    else:  # 0.5 x (1 + erf(x / sqrt 2))
        t = em.op("Erf", em.op("Mul", a, em.scalar(1 / math.sqrt(2), a)))
    return em.op("Mul", half, em.op("Add", t, em.scalar(1, a)))


@symbolic(elementwise.Fmod)
def _fmod(em, node, a, b):
    return em.op("Mod", *_same(em, node, a, b), fmod=1)


@symbolic(elementwise.Remainder)
def _remainder(em, node, a, b):
    a, b = _same(em, node, a, b)
    if out_dtype(node).category < 2:
        return em.op("Mod", a, b, fmod=0)  # integer Mod takes the divisor's sign
    # a - floor(a / b) * b, as torch computes it for floats (fmod=0 is integers only)
    return em.op("Sub", a, em.op("Mul", em.op("Floor", em.op("Div", a, b)), b))


@symbolic(pointwise.FloorDivide)
def _floor_divide(em, node, a, b):
    a, b = _same(em, node, a, b)
    if out_dtype(node).category >= 2:
        return em.op("Floor", em.op("Div", a, b))
    wide = dt.float64  # exact for int32 and for int64 below 2**53
    q = em.op("Floor", em.op("Div", em.cast(a, wide), em.cast(b, wide)))
    return em.cast(q, out_dtype(node))


@symbolic(elementwise.Lerp)
def _lerp(em, node, start, end, weight):
    start, end, weight = _same(em, node, start, end, weight)
    return em.op("Add", start, em.op("Mul", weight, em.op("Sub", end, start)))


@symbolic(arith.Addcmul)
def _addcmul(em, node, x, t1, t2, value):
    # (value t1) t2 + x: torch's order (ONNX has no fused multiply-add, so two roundings)
    v = em.scalar(value, x)
    x, t1, t2 = _same(em, node, x, t1, t2)
    return em.op("Add", x, em.op("Mul", em.op("Mul", v, t1), t2))


@symbolic(arith.Addcdiv)
def _addcdiv(em, node, x, t1, t2, value):
    v = em.scalar(value, x)
    x, t1, t2 = _same(em, node, x, t1, t2)
    return em.op("Add", x, em.op("Div", em.op("Mul", v, t1), t2))


@symbolic(elementwise.Hypot)
def _hypot(em, node, a, b):
    a, b = _same(em, node, a, b)
    return em.op("Sqrt", em.op("Add", em.op("Mul", a, a), em.op("Mul", b, b)))


@symbolic(elementwise.LogAddExp)
def _logaddexp(em, node, a, b):
    # max + log(1 + exp(-|a - b|)): the stable form tensorix computes
    a, b = _same(em, node, a, b)
    big = em.op("Max", a, b)
    gap = em.op("Neg", em.op("Abs", em.op("Sub", a, b)))
    one = em.const(1, out_dtype(node))
    return em.op("Add", big, em.op("Log", em.op("Add", one, em.op("Exp", gap))))


# -- reductions ------------------------------------------------------------------------------

def _dims(a, dims):
    if dims is None:
        return list(range(a.ndim))
    return [dims] if isinstance(dims, int) else list(dims)


def _reduce(em, op_type, a, dims, keepdim):
    """ReduceX over ``dims`` (axes as an input: from opset 13 for ReduceSum, 18 the rest)."""
    axes = _dims(a, dims)
    if a.ndim == 0 or not axes:
        return em.op("Identity", a)
    if op_type == "ReduceSum" or em.opset >= 18:
        return em.op(op_type, a, em.ints(axes), keepdims=int(keepdim))
    return em.op(op_type, a, axes=axes, keepdims=int(keepdim))


@symbolic(reduce.Sum)
def _sum(em, node, a, dims, keepdim, dtype):
    return _reduce(em, "ReduceSum", typed(em, a, out_dtype(node)), dims, keepdim)


@symbolic(reduce.Prod)
def _prod(em, node, a, dims, keepdim, dtype):
    return _reduce(em, "ReduceProd", typed(em, a, out_dtype(node)), dims, keepdim)


@symbolic(_reduce32.LogSumExp)
def _logsumexp(em, node, a, keepdim):  # reduce.logsumexp's float32 case: over the last dim
    return _reduce(em, "ReduceLogSumExp", a, (a.ndim - 1,), keepdim)


@symbolic(_reduce32.NanSum)
def _nansum(em, node, a, keepdim):  # reduce.nansum's whole float32 case
    clean = em.op("Where", em.op("IsNaN", a), em.const(0, a.dtype), a)
    return _reduce(em, "ReduceSum", Value(clean, a.shape, a.dtype), tuple(range(a.ndim)),
                   keepdim)


@symbolic(_reduce32.Count)
def _count(em, node, a, not_nan, keepdim):  # count_nonzero's / nanmean's whole float32 case
    hit = em.op("IsNaN", a) if not_nan else em.op("Equal", a, em.const(0, a.dtype))
    as_int = typed(em, em.op("Not", hit), dt.int64, a.shape)
    return _reduce(em, "ReduceSum", as_int, tuple(range(a.ndim)), keepdim)


@symbolic(reduce._Logical)
def _logical(em, node, a, fn, dims, keepdim):
    # all: min over bools, any: max (ONNX has no boolean reductions)
    as_int = em.cast(em.op("Not", em.op("Equal", a, em.const(0, a.dtype))), dt.int32)
    op_type = {"all": "ReduceMin", "any": "ReduceMax"}[fn]
    red = _reduce(em, op_type, typed(em, as_int, dt.int32, a.shape), dims, keepdim)
    return em.cast(red, out_dtype(node))


@symbolic(reduce.CumSum)
def _cumsum(em, node, a, dim, dtype):
    a = typed(em, a, out_dtype(node))
    if a.ndim == 0:
        return em.op("Identity", a)
    return em.op("CumSum", a, em.const(np.int64(dim)))


def _float64_scan(em, node, a, dim):
    """``a`` as a float64 Value and the ``dim`` constant (the scans below run in float64: the
    exp/log forms lose nothing a float32 result would show)."""
    if not out_dtype(node).is_floating_point:
        raise refuse(em, node, "the exp/log form is exact for floating-point types only")
    return typed(em, a, dt.float64), em.const(np.int64(dim % max(a.ndim, 1)))


@symbolic(reduce.CumProd)
def _cumprod(em, node, a, dim, dtype):
    """ONNX has no CumProd: the magnitude is exp(cumsum(log|x|)), the sign the parity of the
    negatives so far, and 0 from the first zero on; in float64 (so a float32 result is exact to
    its rounding). NaN and inf propagate as in the product."""
    if a.ndim == 0:
        return em.cast(a, out_dtype(node))
    x, axis = _float64_scan(em, node, a, dim)
    one, zero = em.const(1.0, dt.float64), em.const(0.0, dt.float64)
    is_zero = em.op("Equal", x, zero)
    log_mag = em.op("Log", em.op("Where", is_zero, one, em.op("Abs", x)))
    mag = em.op("Exp", em.op("CumSum", log_mag, axis))
    negatives = em.op("CumSum", em.cast(em.op("Less", x, zero), dt.float64), axis)
    odd = em.op("Equal", em.op("Mod", negatives, em.const(2.0, dt.float64), fmod=1), one)
    signed = em.op("Where", odd, em.op("Neg", mag), mag)
    zeros_seen = em.op("Greater", em.op("CumSum", em.cast(is_zero, dt.float64), axis), zero)
    return em.cast(em.op("Where", zeros_seen, zero, signed), out_dtype(node))


@symbolic(reduce.LogCumSumExp)
def _logcumsumexp(em, node, a, dim):
    """ONNX has no log-space scan: ``m + log(cumsum(exp(x - m)))`` with ``m`` the max along
    ``dim``, in float64, so the prefix sums underflow only for values more than ~700 below the
    row's max (float32's own range is ~88 wide: a float32 result is unaffected there)."""
    if a.ndim == 0:
        return em.cast(a, out_dtype(node))
    x, axis = _float64_scan(em, node, a, dim)
    m = _reduce(em, "ReduceMax", x, (dim,), True)
    # a row of -inf (or +inf) max: shift by 0 instead, so inf - inf makes no NaN
    finite = em.op("Where", em.op("IsInf", m), em.const(0.0, dt.float64), m)
    scan = em.op("CumSum", em.op("Exp", em.op("Sub", x, finite)), axis)
    return em.cast(em.op("Add", em.op("Log", scan), finite), out_dtype(node))


def _sign_bit(em, x):
    """Whether the sign bit of float ``x`` is set, for the values ONNX ops can tell apart:
    ``x < 0``, or ``-0.0`` (whose reciprocal is -inf). A NaN's sign bit is not observable."""
    zero = em.scalar(0, x)
    negative_zero = em.op("Less", em.op("Div", em.scalar(1, x), x), zero)
    return em.op("Or", em.op("Less", x, zero), em.op("And", em.op("Equal", x, zero),
                                                     negative_zero))


@symbolic(pointwise.SignBit)
def _signbit(em, node, a):
    if not a.dtype.is_floating_point:
        return em.op("Less", a, em.scalar(0, a))
    return _sign_bit(em, a)


@symbolic(elementwise.Copysign)
def _copysign(em, node, a, b):
    a, b = (typed(em, v, out_dtype(node)) for v in (a, b))
    mag = em.op("Abs", a)
    return em.op("Where", _sign_bit(em, b), em.op("Neg", mag), mag)


@symbolic(distance.CDist)
def _cdist(em, node, x1, x2, p, use_mm):
    """Pairwise p-norm distances from the differences ``x1[..., :, None] - x2[..., None, :]``
    (the exact form for every ``p``; eager's GEMM form for p=2 agrees to rounding)."""
    x1, x2 = (typed(em, v, out_dtype(node)) for v in (x1, x2))
    diff = em.op("Sub", em.op("Unsqueeze", x1, em.ints([x1.ndim - 1])),
                 em.op("Unsqueeze", x2, em.ints([x2.ndim - 2])))
    a = Value(em.op("Abs", diff), tuple(node.meta["shape"]) + (x1.shape[-1],), out_dtype(node))
    last = (a.ndim - 1,)
    if p == 0:
        nonzero = em.op("Not", em.op("Equal", a, em.scalar(0, a)))
        return _reduce(em, "ReduceSum", typed(em, nonzero, a.dtype, a.shape), last, False)
    if p == 1:
        return _reduce(em, "ReduceSum", a, last, False)
    if p == 2:
        squares = Value(em.op("Mul", a, a), a.shape, a.dtype)
        return em.op("Sqrt", _reduce(em, "ReduceSum", squares, last, False))
    if math.isinf(p) and a.shape[-1]:
        return _reduce(em, "ReduceMax", a, last, False)
    if math.isinf(p):
        return _reduce(em, "ReduceSum", a, last, False)
    powered = Value(em.op("Pow", a, em.scalar(p, a)), a.shape, a.dtype)
    return em.op("Pow", _reduce(em, "ReduceSum", powered, last, False),
                 em.scalar(1.0 / p, a))


@symbolic(linalg_norm.VectorNorm, reduce.PNorm)
def _norm(em, node, x, p, dims, keepdim):
    """``ord``-norms over ``dims``: the L1/L2/max/min reductions where ONNX has them, else
    ``(sum |x|^p)^(1/p)``."""
    a = typed(em, em.op("Abs", x), out_dtype(node), x.shape)
    if p == 2:
        return _reduce(em, "ReduceL2", a, dims, keepdim)
    if p == 1:
        return _reduce(em, "ReduceL1", a, dims, keepdim)
    if p in (math.inf, -math.inf):
        return _reduce(em, "ReduceMax" if p > 0 else "ReduceMin", a, dims, keepdim)
    if p == 0:
        nonzero = em.cast(em.op("Not", em.op("Equal", a, em.scalar(0, a))), a.dtype)
        return _reduce(em, "ReduceSum", typed(em, nonzero, a.dtype, a.shape), dims, keepdim)
    powered = typed(em, em.op("Pow", a, em.scalar(p, a)), a.dtype, a.shape)
    return em.op("Pow", _reduce(em, "ReduceSum", powered, dims, keepdim), em.scalar(1 / p, a))


@symbolic(reduce.EvenSelect)
def _even_select(em, node, a, how, dims, keepdim):
    """amax / amin as ReduceMax / ReduceMin; the full median by ``_symbolic_order``."""
    if how in ("median", "nanmedian"):
        from ._symbolic_order import median_all

        return median_all(em, node, a, how)
    return _reduce(em, "ReduceMax" if how == "max" else "ReduceMin", a, dims, keepdim)


def refuse(em, node, why):
    """The error of a primitive with no ONNX form here, naming it, its node and the opset."""
    from ._common import UnsupportedOperatorError

    return UnsupportedOperatorError(f"tensorix.onnx.export: op {node.op.__name__} (node "
                                    f"{node.name}) has no ONNX form at opset {em.opset}: {why}")


def typed(em, v, dtype, shape=None):
    """``v`` (a Value or a name) cast to ``dtype``, as a Value (for the helpers that read the
    rank)."""
    shape = v.shape if shape is None else shape
    return Value(em.cast(v, dtype), shape, dtype)



# -- NaN-aware elementwise ops -----------------------------------------------------------------

@symbolic(elementwise.Fmax, elementwise.Fmin)
def _fmax(em, node, a, b):
    """max/min that take the other operand where one is NaN."""
    a, b = _same(em, node, a, b)
    best = em.op("Max" if node.op is elementwise.Fmax else "Min", a, b)
    return em.op("Where", em.op("IsNaN", a), b, em.op("Where", em.op("IsNaN", b), a, best))


@symbolic(pointwise.NanToNum)
def _nan_to_num(em, node, a, nan, posinf, neginf):
    out = em.op("Where", em.op("IsNaN", a), em.scalar(nan, a), a)
    out = em.op("Where", em.op("IsInf", a, detect_negative=0), em.scalar(posinf, a), out)
    return em.op("Where", em.op("IsInf", a, detect_positive=0), em.scalar(neginf, a), out)


@symbolic(pointwise.IsClose)
def _isclose(em, node, a, b, rtol, atol, equal_nan):
    """a == b, or both finite and |a - b| <= atol + rtol |b| (infinities only equal)."""
    close = em.op("Equal", a, b)
    if a.dtype.category >= 2:
        finite = em.op("And", _isfinite(em, node, a), _isfinite(em, node, b))
        bound = em.op("Add", em.scalar(atol, a), em.op("Mul", em.scalar(rtol, a),
                                                       em.op("Abs", b)))
        near = em.op("LessOrEqual", em.op("Abs", em.op("Sub", a, b)), bound)
        close = em.op("Or", close, em.op("And", finite, near))
        if equal_nan:
            close = em.op("Or", close, em.op("And", em.op("IsNaN", a), em.op("IsNaN", b)))
    return close


@symbolic(pointwise.Heaviside)
def _heaviside(em, node, a, values):
    a, values = _same(em, node, a, values)
    zero, one = em.const(0, out_dtype(node)), em.const(1, out_dtype(node))
    step = em.op("Where", em.op("Less", a, zero), zero, one)
    step = em.op("Where", em.op("Equal", a, zero), values, step)
    return em.op("Where", em.op("IsNaN", a), a, step) if out_dtype(node).category >= 2 \
        else step


@symbolic(elementwise.Xlogy)
def _xlogy(em, node, x, y):
    """x log y, 0 where x == 0 unless y is NaN (tensorix's rule, as torch's)."""
    x, y = _same(em, node, x, y)
    zero = em.const(0, out_dtype(node))
    keep_zero = em.op("And", em.op("Equal", x, zero), em.op("Not", em.op("IsNaN", y)))
    return em.op("Where", keep_zero, zero, em.op("Mul", x, em.op("Log", y)))


@symbolic(elementwise.LogAddExp2)
def _logaddexp2(em, node, a, b):
    """max + log2(1 + 2^-|a - b|)."""
    a, b = _same(em, node, a, b)
    dtype = out_dtype(node)
    gap = em.op("Neg", em.op("Abs", em.op("Sub", a, b)))
    inner = em.op("Add", em.const(1, dtype), em.op("Pow", em.const(2, dtype), gap))
    log2 = em.op("Div", em.op("Log", inner), em.const(math.log(2.0), dtype))
    return em.op("Add", em.op("Max", a, b), log2)


@symbolic(special.Sinc)
def _sinc(em, node, a):
    """sin(pi x) / (pi x), 1 at 0."""
    (a,) = _same(em, node, a)
    dtype = out_dtype(node)
    zero, one = em.const(0, dtype), em.const(1, dtype)
    is_zero = em.op("Equal", a, zero)
    px = em.op("Mul", em.op("Where", is_zero, one, a), em.const(math.pi, dtype))
    return em.op("Where", is_zero, one, em.op("Div", em.op("Sin", px), px))


@symbolic(elementwise.Atan2)
def _atan2(em, node, a, b):
    """atan(a / b) moved into the quadrant of (b, a); on the axes: +-pi/2, 0 and pi (the
    signs of zeros are not distinguished: atan2(-0, -1) is pi here)."""
    a, b = _same(em, node, a, b)
    dtype = out_dtype(node)
    zero, pi = em.const(0, dtype), em.const(math.pi, dtype)
    base = em.op("Atan", em.op("Div", a, em.op("Where", em.op("Equal", b, zero),
                                                 em.const(1, dtype), b)))
    a_neg = em.op("Less", a, zero)
    shift = em.op("Where", a_neg, em.op("Neg", pi), pi)
    left = em.op("Add", base, shift)  # b < 0
    half = em.op("Where", a_neg, em.const(-math.pi / 2, dtype),
                 em.op("Where", em.op("Equal", a, zero), zero, em.const(math.pi / 2, dtype)))
    out = em.op("Where", em.op("Less", b, zero), left, base)
    out = em.op("Where", em.op("Equal", b, zero), half, out)
    nan = em.op("Or", em.op("IsNaN", a), em.op("IsNaN", b))
    return em.op("Where", nan, em.op("Add", a, b), out)

