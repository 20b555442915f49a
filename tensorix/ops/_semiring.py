"""Einsum contraction kernels, one per semiring, and the autograd Functions they use.

Every kernel contracts one or two operands whose labels are unique (diagonals and broadcast
size-1 dims are removed before planning) into the labels ``out``; a label of an operand that is
not in ``out`` (nor in the other operand) is reduced with the semiring's addition.

* sum-product: :class:`Contract`, a matmul-shaped kernel whose backward is again a
  ``Contract`` (the gradient of an einsum is an einsum of the gradient with the other operand),
  so derivatives of every order work;
* log-sum-exp: max-shifted ``log(Contract(exp(a - ma), exp(b - mb))) + ma + mb``, built from
  differentiable ops; the shifts are constants, which is exact since d/dm of the expression is 0;
* max/min with product or plus: the winning index of each output element is found without
  recording, then the result is recomputed as ``gather(a) (x) gather(b)`` at those indices, so
  gradients (and their gradients) flow to the winners only, like ``torch.max``;
* boolean (or, and): exact counts with a BLAS matmul in float32 (float64 past 2**24 terms),
  then ``> 0``; not differentiable.
"""

from __future__ import annotations

import numpy as np

from .. import backend
from .. import dtypes as dt
from ..autograd.function import Function
from ..tensor import _make

__all__ = ["Contract", "contract", "Diagonal", "SEMIRINGS", "get_semiring"]

_CHUNK = 1 << 22  # elements of one broadcast block when searching max/min winners


def _prod(xs):
    n = 1
    for x in xs:
        n *= int(x)
    return n


# -- the sum-product kernel on raw arrays ----------------------------------------------------

def _sum_private(x, sx, keep):
    """Sum the labels of ``x`` that nothing else needs (before any product)."""
    axes = tuple(i for i, c in enumerate(sx) if c not in keep)
    if not axes:
        return x, sx
    xp = backend.array_module(x)
    return xp.asarray(x.sum(axis=axes)), "".join(c for c in sx if c in keep)


def _matmul_shaped(xp, a, sa, b, sb, con, outset):
    batch = [c for c in sa if c in sb and c in outset]
    afree = [c for c in sa if c not in sb]
    bfree = [c for c in sb if c not in sa]
    A = a.transpose([sa.index(c) for c in batch + afree + con])
    B = b.transpose([sb.index(c) for c in batch + con + bfree])
    nb = len(batch)
    bshape = A.shape[:nb]
    ashape, kshape = A.shape[nb:nb + len(afree)], A.shape[nb + len(afree):]
    bfshape = B.shape[nb + len(con):]
    m, k, n = _prod(ashape), _prod(kshape), _prod(bfshape)
    if nb:
        res = xp.matmul(A.reshape(_prod(bshape), m, k), B.reshape(_prod(bshape), k, n))
    else:
        res = xp.matmul(A.reshape(m, k), B.reshape(k, n))
    return res.reshape(bshape + ashape + bfshape), "".join(batch + afree + bfree)


def _outer(a, sa, b, sb):
    """Elementwise/outer product over the union of labels (no label is summed)."""
    bonly = [c for c in sb if c not in sa]
    A = a.reshape(a.shape + (1,) * len(bonly))
    union = sa + "".join(bonly)
    order = [c for c in union if c in sb]
    B = b.transpose([sb.index(c) for c in order])
    B = B.reshape(tuple(B.shape[order.index(c)] if c in sb else 1 for c in union))
    return A * B, union


def _arrange(xp, res, rs, out, sizes):
    """Transpose ``res`` (labels ``rs``) to ``out``, broadcasting labels it lacks."""
    missing = [c for c in out if c not in rs]
    if missing:
        res = res.reshape(res.shape + (1,) * len(missing))
        rs = rs + "".join(missing)
    perm = [rs.index(c) for c in out]
    if perm != list(range(len(perm))):
        res = res.transpose(perm)
    if missing:  # a gradient of a sum: materialized, since gradients may be written in place
        res = xp.broadcast_to(res, tuple(sizes[c] for c in out)).copy()
    return res


def _compute_dtype(d):
    if d.low_precision or d.name == "float16":
        return np.dtype(np.float32)  # no BLAS for these: accumulate in float32, round once
    return None


def sp_raw(a, sa, b, sb, out, sizes):
    """The sum-product contraction of raw arrays (``b`` may be None)."""
    xp = backend.array_module(a)
    outset = set(out)
    a, sa = _sum_private(a, sa, outset | set(sb or ""))
    if b is None:
        res, rs = a, sa
    else:
        b, sb = _sum_private(b, sb, outset | set(sa))
        con = [c for c in sa if c in sb and c not in outset]
        if con:
            res, rs = _matmul_shaped(xp, a, sa, b, sb, con, outset)
        else:
            res, rs = _outer(a, sa, b, sb)
    return xp.asarray(_arrange(xp, res, rs, out, sizes))


class Contract(Function):
    """Sum-product einsum of one or two operands with unique labels (``spec`` = labels of a,
    labels of b or None, output labels, label sizes)."""

    @staticmethod
    def forward(ctx, a, b, spec):
        sa, sb, out, sizes = spec
        ctx.spec = spec
        ctx.save_for_backward(a, b)
        d = a._dtype
        cd = _compute_dtype(d)
        x = a._data if cd is None else a._data.astype(cd)
        y = None if b is None else (b._data if cd is None else b._data.astype(cd))
        res = sp_raw(x, sa, y, sb, out, sizes)
        return res if res.dtype == d.np else res.astype(d.np)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        sa, sb, out, sizes = ctx.spec
        need_a, need_b = ctx.needs_input_grad[:2]
        ga = gb = None
        if need_a:
            other = None if b is None else _conj(b)
            ga = contract(g, out, other, sb, sa, sizes)
        if need_b:
            gb = contract(g, out, _conj(a), sa, sb, sizes)
        return ga, gb, None


def _conj(t):
    return t.conj() if t._dtype.is_complex else t


def contract(a, sa, b, sb, out, sizes):
    """Differentiable sum-product contraction (a pure permutation stays a view)."""
    if b is None and len(sa) == len(out) and set(sa) == set(out):
        return a.permute(tuple(sa.index(c) for c in out))
    return Contract.apply(a, b, (sa, sb, out, sizes))


# -- diagonals (repeated labels inside one operand) ------------------------------------------

def _diag_view(x, labels, unique):
    """A strided view of the diagonal: one axis per unique label, its stride the sum of the
    strides of the axes that repeat it."""
    xp = backend.array_module(x)
    shape = tuple(x.shape[labels.index(c)] for c in unique)
    strides = tuple(sum(st for l, st in zip(labels, x.strides) if l == c) for c in unique)
    return xp.lib.stride_tricks.as_strided(x, shape, strides)


class Diagonal(Function):
    """``x`` with repeated labels -> its diagonal over the unique labels ('ii->i')."""

    @staticmethod
    def forward(ctx, x, labels, unique):
        ctx.spec = (labels, unique, x._data.shape)
        return _diag_view(x._data, labels, unique).copy()

    @staticmethod
    def backward(ctx, g):
        labels, unique, shape = ctx.spec
        return DiagEmbed.apply(g, labels, unique, shape), None, None


class DiagEmbed(Function):
    """The adjoint of :class:`Diagonal`: zeros with ``g`` written on the diagonal."""

    @staticmethod
    def forward(ctx, g, labels, unique, shape):
        ctx.spec = (labels, unique)
        xp = backend.array_module(g._data)
        out = xp.zeros(shape, dtype=g._data.dtype)
        _diag_view(out, labels, unique)[...] = g._data
        return out

    @staticmethod
    def backward(ctx, gg):
        labels, unique = ctx.spec
        return Diagonal.apply(gg, labels, unique), None, None, None


# -- gathers for the max/min semirings -------------------------------------------------------

def _full_index(xp, idx, axis, ndim):
    """Index arrays that address ``x[..., idx, ...]`` (``idx`` on ``axis``) element by element."""
    grids = []
    for d in range(ndim):
        if d == axis:
            grids.append(idx)
        else:
            shape = [1] * ndim
            shape[d] = idx.shape[d]
            grids.append(xp.arange(idx.shape[d]).reshape(shape))
    return tuple(grids)


class TakeAlong(Function):
    """``take_along_axis(x, idx, axis)`` with ``idx`` a constant (winning indices)."""

    @staticmethod
    def forward(ctx, x, idx, axis):
        ctx.spec = (idx, axis, x._data.shape)
        return backend.array_module(x._data).take_along_axis(x._data, idx, axis)

    @staticmethod
    def backward(ctx, g):
        idx, axis, shape = ctx.spec
        return PutAlongAdd.apply(g, idx, axis, shape), None, None


class PutAlongAdd(Function):
    """The adjoint of :class:`TakeAlong`: zeros of ``shape`` with ``g`` added at ``idx``."""

    @staticmethod
    def forward(ctx, g, idx, axis, shape):
        ctx.spec = (idx, axis)
        xp = backend.array_module(g._data)
        out = xp.zeros(shape, dtype=g._data.dtype)
        xp.add.at(out, _full_index(xp, idx, axis, len(shape)), g._data)
        return out

    @staticmethod
    def backward(ctx, gg):
        idx, axis = ctx.spec
        return TakeAlong.apply(gg, idx, axis), None, None, None


# -- semirings -------------------------------------------------------------------------------

class Semiring:
    """A commutative semiring (plus, times) that einsum can contract over."""

    name = ""
    differentiable = True
    kernels: dict = {}

    def kernel_name(self, kind):
        return self.kernels.get(kind, kind)

    def prepare(self, t, k):
        """Operand ``k`` in a dtype this semiring computes in (checked for its domain)."""
        return t

    def contract(self, a, sa, b, sb, out, sizes):
        raise NotImplementedError


class SumProduct(Semiring):
    name = "sum-product"

    def contract(self, a, sa, b, sb, out, sizes):
        return contract(a, sa, b, sb, out, sizes)


def _align(t, labels, out):
    """``t`` permuted and reshaped so it broadcasts against a tensor labelled ``out``."""
    order = [c for c in out if c in labels]
    if list(labels) != order:
        t = t.permute(tuple(labels.index(c) for c in order))
    shape = tuple(t.shape[order.index(c)] if c in labels else 1 for c in out)
    return t if tuple(t.shape) == shape else t.reshape(shape)


class _Combine(Semiring):
    """Shared by the semirings whose product is an elementwise op on Tensors."""

    def times(self, x, y):
        raise NotImplementedError

    def combine(self, a, sa, b, sb, out):
        """The product when nothing is reduced: broadcast and combine elementwise."""
        if b is None:
            return _align(a, sa, out)
        return self.times(_align(a, sa, out), _align(b, sb, out))


class LogSumExp(_Combine):
    name = "log-sum-exp"
    kernels = {"matmul": "exp-matmul-log", "bmm": "exp-bmm-log", "reduce": "logsumexp",
               "reduce+mul": "exp-mul-sum-log", "mul": "add"}

    def times(self, x, y):
        return x + y

    def prepare(self, t, k):
        return t if t._dtype.category >= 2 else t.to(dt.get_default_dtype())

    def contract(self, a, sa, b, sb, out, sizes):
        if all(c in out for c in sa + (sb or "")):
            return self.combine(a, sa, b, sb, out)
        ea, shift = _exp_shifted(a, sa, out)
        eb = None
        if b is not None:
            eb, shift_b = _exp_shifted(b, sb, out)
            shift = shift + shift_b
        s = contract(ea, sa, eb, sb, out, sizes)
        return s.log() + _make(shift, s._dtype)


def _exp_shifted(t, labels, out):
    """exp(t - m) with m the max over the labels ``out`` lacks (a constant, inf -> 0), and m
    arranged to broadcast against ``out``."""
    xp = backend.array_module(t._data)
    axes = tuple(i for i, c in enumerate(labels) if c not in out)
    data = t._data
    if axes and all(data.shape[i] for i in axes):
        m = data.max(axis=axes, keepdims=True)
        m = xp.where(xp.isfinite(m), m, 0).astype(data.dtype)
    else:
        m = xp.zeros((1,) * data.ndim, dtype=data.dtype)
    e = (t - _make(m)).exp()
    kept = "".join(c for c in labels if c in out)
    mk = m.reshape(tuple(s for i, s in enumerate(m.shape) if i not in axes))
    order = [c for c in out if c in kept]
    mk = mk.transpose([kept.index(c) for c in order])
    mk = mk.reshape(tuple(mk.shape[order.index(c)] if c in kept else 1 for c in out))
    return e, mk


class _Best(_Combine):
    """max or min as the addition, product or plus as the multiplication."""

    pick = "argmax"
    plus_times = False

    def times(self, x, y):
        return x + y if self.plus_times else x * y

    def prepare(self, t, k):
        # max/min only distribute over a product of non-negative numbers; with a negative
        # entry the contraction order would change the result, so refuse it
        if not self.plus_times and t._data.size and bool((t._data < 0).any()):
            raise ValueError(f"einsum(): the {self.name} semiring needs non-negative operands "
                             f"but operand {k} has negative entries (max/min and product only "
                             "distribute over non-negative numbers); use the "
                             f"{self.name.replace('product', 'plus')} semiring on logs instead")
        return t

    def _raw_times(self, x, y):
        return x + y if self.plus_times else x * y

    def contract(self, a, sa, b, sb, out, sizes):
        keep = set(out) | set(sb or "")
        a, sa = self._reduce(a, sa, keep)
        if b is not None:
            b, sb = self._reduce(b, sb, set(out) | set(sa))
        if b is None or not any(c in sb and c not in out for c in sa):
            return self.combine(a, sa, b, sb, out)
        return self._pair(a, sa, b, sb, out)

    def _winners(self, xp, data, axis):
        if data.shape[axis] == 0:
            raise RuntimeError(f"einsum(): the {self.name} semiring cannot reduce over an "
                               "empty dimension (it has no identity here)")
        return getattr(xp, self.pick)(data, axis=axis)

    def _reduce(self, t, labels, keep):
        """Reduce the labels of ``t`` not in ``keep`` by gathering the winners."""
        red = [c for c in labels if c not in keep]
        if not red:
            return t, labels
        kept = [c for c in labels if c in keep]
        t2 = t.permute(tuple(labels.index(c) for c in kept + red))
        kshape = tuple(t2.shape[:len(kept)])
        t2 = t2.reshape((_prod(kshape), _prod(t2.shape[len(kept):])))
        xp = backend.array_module(t2._data)
        idx = self._winners(xp, t2._data, 1)[:, None]
        return TakeAlong.apply(t2, idx, 1).reshape(kshape), "".join(kept)

    def _pair(self, a, sa, b, sb, out):
        outset = set(out)
        con = [c for c in sa if c in sb and c not in outset]
        batch = [c for c in sa if c in sb and c in outset]
        afree = [c for c in sa if c not in sb]
        bfree = [c for c in sb if c not in sa]
        A = a.permute(tuple(sa.index(c) for c in batch + afree + con))
        B = b.permute(tuple(sb.index(c) for c in batch + con + bfree))
        nb = len(batch)
        shape = tuple(A.shape[:nb + len(afree)]) + tuple(B.shape[nb + len(con):])
        nbt, m = _prod(A.shape[:nb]), _prod(A.shape[nb:nb + len(afree)])
        k, n = _prod(A.shape[nb + len(afree):]), _prod(B.shape[nb + len(con):])
        A3, B3 = A.reshape((nbt, m, k)), B.reshape((nbt, k, n))
        idx = self._pair_winners(A3._data, B3._data)
        res = self.times(TakeAlong.apply(A3, idx, 2), TakeAlong.apply(B3, idx, 1))
        return _align(res.reshape(shape), "".join(batch + afree + bfree), out)

    def _pair_winners(self, A3, B3):
        """argmax/argmin over k of A3[:, m, k] (x) B3[:, k, n], in blocks of rows of m."""
        xp = backend.array_module(A3)
        nbt, m, k = A3.shape
        n = B3.shape[2]
        idx = xp.empty((nbt, m, n), dtype=np.intp)
        rows = max(1, _CHUNK // max(1, nbt * k * n))
        with np.errstate(invalid="ignore", over="ignore"):
            for r in range(0, m, rows):
                block = self._raw_times(A3[:, r:r + rows, :, None], B3[:, None, :, :])
                idx[:, r:r + rows] = self._winners(xp, block, 2)
        return idx


class MaxProduct(_Best):
    name = "max-product"
    kernels = {"matmul": "argmax-gather", "bmm": "argmax-gather", "reduce": "max"}


class MaxPlus(_Best):
    name = "max-plus"
    plus_times = True
    kernels = MaxProduct.kernels


class MinProduct(_Best):
    name = "min-product"
    pick = "argmin"
    kernels = {"matmul": "argmin-gather", "bmm": "argmin-gather", "reduce": "min"}


class MinPlus(MinProduct):
    name = "min-plus"
    plus_times = True


class Boolean(Semiring):
    name = "boolean"
    differentiable = False
    kernels = {"matmul": "count-matmul>0", "bmm": "count-bmm>0", "reduce": "any",
               "reduce+mul": "count>0", "mul": "and"}

    def prepare(self, t, k):
        return t if t._dtype is dt.bool else _make(t._data != 0)

    def contract(self, a, sa, b, sb, out, sizes):
        x, y = a._data, (None if b is None else b._data)
        reduced = [c for c in set(sa) | set(sb or "") if c not in out]
        if not reduced:  # a product of bools is their "and"
            return _make(sp_raw(x, sa, y, sb, out, sizes))
        # counts of witnesses are integers <= terms: exact in float32 below 2**24 terms
        cd = np.float32 if _prod(sizes[c] for c in reduced) < 2 ** 24 else np.float64
        y = None if y is None else y.astype(cd)
        return _make(sp_raw(x.astype(cd), sa, y, sb, out, sizes) > 0)


SEMIRINGS = {s.name: s for s in (SumProduct(), LogSumExp(), MaxProduct(), MaxPlus(),
                                 MinProduct(), MinPlus(), Boolean())}


def get_semiring(semiring):
    """A semiring by name (underscores allowed) or a :class:`Semiring` instance."""
    if isinstance(semiring, Semiring):
        return semiring
    if isinstance(semiring, str):
        s = SEMIRINGS.get(semiring.lower().replace("_", "-"))
        if s is not None:
            return s
    raise ValueError(f"einsum(): unknown semiring {semiring!r}; expected one of "
                     f"{list(SEMIRINGS)}")
