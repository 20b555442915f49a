"""Einsum contraction kernels, one per semiring, and the autograd Functions they use.

Every kernel contracts one or two operands whose labels are unique (diagonals and broadcast
size-1 dims are removed before planning) into the labels ``out``; a label of an operand that is
not in ``out`` (nor in the other operand) is reduced with the semiring's addition.

* sum-product: :class:`Contract`, a matmul-shaped kernel whose backward is again a
  ``Contract`` (the gradient of an einsum is an einsum of the gradient with the other operand),
  so derivatives of every order work;
* log-sum-exp: a pairwise contraction is the primitive ``LogSumExpPair`` (_semiring_prims.py:
  max-shifted ``log(exp(a - ma) @ exp(b - mb)) + ma + mb``, entries whose shifted sum is too
  small to be accurate recomputed with their own max; its backward the softmax weights of the
  terms, from ops); a single-operand reduction is built from ops (amax shift, whose gradient
  cancels since d/dm of the expression is 0);
* max/min with product or plus: the winning index of each output element is found by the
  primitive ``BestWinners`` (argmax/argmin ops for a single operand), so a trace recomputes
  it, then the result is recomputed as ``gather(a) (x) gather(b)`` at those indices, so
  gradients (and their gradients) flow to the winners only, like ``torch.max``. With a product,
  operands must be non-negative: only then do max/min distribute over it, which any
  contraction order relies on;
* boolean (or, and): exact counts with a BLAS matmul in float32 (float64 past 2**24 terms),
  then ``> 0``; not differentiable.
"""

from __future__ import annotations

import functools

import numpy as np

from .. import _threads, backend
from .. import dtypes as dt
from ..autograd.function import Function
from ..tensor import _make
from ._semiring_prims import BestWinners, LogSumExpPair
from .indexing import gather
from .pointwise import where
from .reduce import amax, argmax, argmin

__all__ = ["Contract", "contract", "Diagonal", "SEMIRINGS", "get_semiring"]



def _prod(xs):
    n = 1
    for x in xs:
        n *= int(x)
    return n


# -- the sum-product kernel on raw arrays ----------------------------------------------------
# The layout of a contraction (which axes to sum, how to transpose and reshape for one matmul)
# depends only on labels and shapes, so it is worked out once and cached; a call then runs a
# handful of NumPy calls.

def _keep_only(sx, shape, keep):
    axes = tuple(i for i, c in enumerate(sx) if c not in keep)
    kept = "".join(c for c in sx if c in keep)
    return axes, kept, tuple(d for c, d in zip(sx, shape) if c in keep)


def _perm_or_none(perm):
    return None if list(perm) == list(range(len(perm))) else tuple(perm)


def _mm_layout(sa, ashape, sb, bshape, con, outset):
    batch = [c for c in sa if c in sb and c in outset]
    afree = [c for c in sa if c not in sb]
    bfree = [c for c in sb if c not in sa]
    size = dict(zip(sa, ashape)) | dict(zip(sb, bshape))
    bsh = tuple(size[c] for c in batch)
    m, k, n = (_prod(size[c] for c in grp) for grp in (afree, con, bfree))
    lead = (_prod(bsh),) if batch else ()
    res_shape = bsh + tuple(size[c] for c in afree) + tuple(size[c] for c in bfree)
    return ("mm", _perm_or_none([sa.index(c) for c in batch + afree + con]), lead + (m, k),
            _perm_or_none([sb.index(c) for c in batch + con + bfree]), lead + (k, n),
            res_shape), "".join(batch + afree + bfree)


def _outer_layout(sa, ashape, sb, bshape):
    bonly = [c for c in sb if c not in sa]
    union = sa + "".join(bonly)
    order = [c for c in union if c in sb]
    size = dict(zip(sb, bshape))
    b_shape = tuple(size[c] if c in sb else 1 for c in union)
    return ("outer", tuple(ashape) + (1,) * len(bonly),
            _perm_or_none([sb.index(c) for c in order]), b_shape), union


@functools.lru_cache(maxsize=4096)
def _layout(sa, ashape, sb, bshape, out):
    """The recipe ``sp_raw`` follows for these labels and shapes."""
    outset = set(out)
    a_axes, sa, ashape = _keep_only(sa, ashape, outset | set(sb or ""))
    b_axes = ()
    if sb is None:
        core, rs = ("unary",), sa
    else:
        b_axes, sb, bshape = _keep_only(sb, bshape, outset | set(sa))
        con = [c for c in sa if c in sb and c not in outset]
        if con:
            core, rs = _mm_layout(sa, ashape, sb, bshape, con, outset)
        else:
            core, rs = _outer_layout(sa, ashape, sb, bshape)
    missing = "".join(c for c in out if c not in rs)
    full = rs + missing
    return a_axes, b_axes, core, len(missing), _perm_or_none([full.index(c) for c in out])


def sp_raw(a, sa, b, sb, out, sizes):
    """The sum-product contraction of raw arrays (``b`` may be None)."""
    xp = backend.array_module(a)
    a_axes, b_axes, core, n_missing, perm = _layout(
        sa, a.shape, sb, None if b is None else b.shape, out)
    if a_axes:
        a = xp.asarray(a.sum(axis=a_axes))
    if b_axes:
        b = xp.asarray(b.sum(axis=b_axes))
    if core[0] == "mm":
        _, pa, shape_a, pb, shape_b, res_shape = core
        A = (a if pa is None else a.transpose(pa)).reshape(shape_a)
        B = (b if pb is None else b.transpose(pb)).reshape(shape_b)
        res = _threads.matmul(A, B).reshape(res_shape)
    elif core[0] == "outer":
        _, shape_a, pb, shape_b = core
        res = a.reshape(shape_a) * (b if pb is None else b.transpose(pb)).reshape(shape_b)
    else:
        res = a
    if n_missing:
        res = res.reshape(res.shape + (1,) * n_missing)
    if perm is not None:
        res = res.transpose(perm)
    if n_missing:  # a gradient of a sum: materialized, since gradients may be written in place
        res = xp.broadcast_to(res, tuple(sizes[c] for c in out)).copy()
    return xp.asarray(res)


class Contract(Function):
    """Sum-product einsum of one or two operands with unique labels (``spec`` = labels of a,
    labels of b or None, output labels, and the sizes of output labels that neither operand
    has, which are broadcast)."""

    _widen16 = (0, 1)  # no BLAS for 16-bit floats: accumulated in float32, rounded once

    @staticmethod
    def _gemm(matmul, a, b, spec):
        """Under a GEMM policy (autograd/dispatch.py): the contraction laid out as the matmul
        ``sp_raw`` runs, (batch, m, k) @ (batch, k, n), with the policy's matmul; None (run as
        usual) where nothing is contracted."""
        sa, sb, out, sizes = spec
        if b is None:
            return None
        a_axes, b_axes, core, n_missing, perm = _layout(sa, a.shape, sb, b.shape, out)
        if core[0] != "mm":
            return None
        _, pa, shape_a, pb, shape_b, res_shape = core
        if a_axes:
            a = a.sum(a_axes)
        if b_axes:
            b = b.sum(b_axes)
        res = matmul((a if pa is None else a.permute(pa)).reshape(shape_a),
                     (b if pb is None else b.permute(pb)).reshape(shape_b)).reshape(res_shape)
        if n_missing:
            res = res.reshape(tuple(res.shape) + (1,) * n_missing)
        if perm is not None:
            res = res.permute(perm)
        if n_missing:
            res = res.expand(tuple(sizes[c] for c in out)).contiguous()
        return res

    @staticmethod
    def forward(ctx, a, b, spec):
        sa, sb, out, sizes = spec
        if any(ctx.needs_input_grad):
            ctx.spec = spec
            ctx.save_for_backward(a, b)
        res = sp_raw(a._data, sa, None if b is None else b._data, sb, out, sizes)
        return res if res.dtype == a._dtype.np else res.astype(a._dtype.np)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        sa, sb, out, _ = ctx.spec
        need_a, need_b = ctx.needs_input_grad[:2]
        ga = gb = None
        # labels of an operand that the gradient lacks were summed: they broadcast back, at
        # the operand's own sizes
        if need_a:
            other = None if b is None else _conj(b)
            ga = contract(g, out, other, sb, sa, dict(zip(sa, a._data.shape)))
        if need_b:
            gb = contract(g, out, _conj(a), sa, sb, dict(zip(sb, b._data.shape)))
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
    shape = tuple(x.shape[labels.index(c)] for c in unique)
    strides = tuple(sum(st for l, st in zip(labels, x.strides) if l == c) for c in unique)
    return backend.as_strided(x, shape, strides)


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
        xp = g.xp
        out = xp.zeros(shape, dtype=g._data.dtype)
        _diag_view(out, labels, unique)[...] = g._data
        return out

    @staticmethod
    def backward(ctx, gg):
        labels, unique = ctx.spec
        return Diagonal.apply(gg, labels, unique), None, None, None


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


def _real_only(semiring, t, k):
    if t._dtype.is_complex:
        raise TypeError(f"einsum(): the {semiring.name} semiring needs real operands, but "
                        f"operand {k} is {t._dtype.name}")


def _to_3d(a, sa, b, sb, out):
    """Both operands as (batch, m, k) and (batch, k, n) for a pairwise contraction; also the
    result's shape and labels before arranging (batch, a-only, b-only)."""
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
    return (A.reshape((nbt, m, k)), B.reshape((nbt, k, n)), shape,
            "".join(batch + afree + bfree))


def _safe_log(s):
    """log(s) with -inf and a zero gradient where s == 0 (not 0/0 = nan), written with ops so
    a trace keeps it."""
    zero = s == 0
    return where(zero, s.new_ones(()), s).log() + where(zero, s.new_full((), -np.inf),
                                                         s.new_zeros(()))


class LogSumExp(_Combine):
    """log(sum(exp)) as the addition and + as the multiplication (log-space probabilities).

    A pairwise contraction runs as one matmul of exp(a - max_k a) and exp(b - max_k b); where
    that sum is too small to be accurate (the two maxima sit at different k, so every term
    underflows), those entries are recomputed exactly with their own max (max-plus shift)."""

    name = "log-sum-exp"
    kernels = {"matmul": "exp-matmul-log", "bmm": "exp-bmm-log", "reduce": "logsumexp",
               "reduce+mul": "logsumexp+add", "mul": "add"}

    def times(self, x, y):
        return x + y

    def prepare(self, t, k):
        _real_only(self, t, k)
        return t if t._dtype.category >= 2 else t.to(dt.get_default_dtype())

    def contract(self, a, sa, b, sb, out, sizes):
        a, sa = self._reduce(a, sa, set(out) | set(sb or ""))
        if b is not None:
            b, sb = self._reduce(b, sb, set(out) | set(sa))
        if b is None or not any(c in sb and c not in out for c in sa):
            return self.combine(a, sa, b, sb, out)
        A3, B3, shape, rs = _to_3d(a, sa, b, sb, out)
        return _align(LogSumExpPair.apply(A3, B3).reshape(shape), rs, out)

    def _reduce(self, t, labels, keep):
        """logsumexp over the labels not in ``keep``; exact, since the max term is exp(0).
        The shift is computed by ops (a trace recomputes it); its gradient cancels (d/dm of
        log(sum(exp(t - m))) + m is 0)."""
        red = [i for i, c in enumerate(labels) if c not in keep]
        if not red:
            return t, labels
        kept = "".join(c for c in labels if c in keep)
        if any(t.shape[i] == 0 for i in red):
            m = t.new_zeros(tuple(1 if i in red else n for i, n in enumerate(t.shape)))
        else:
            m = amax(t, tuple(red), keepdim=True)
            m = where(m.isfinite(), m, m.new_zeros(()))
        s = contract((t - m).exp(), labels, None, None, kept, {})
        return _safe_log(s) + m.reshape(tuple(s.shape)), kept


class _Best(_Combine):
    """max or min as the addition, product or plus as the multiplication."""

    pick = "argmax"
    plus_times = False

    def times(self, x, y):
        return x + y if self.plus_times else x * y

    def prepare(self, t, k):
        _real_only(self, t, k)
        # max/min only distribute over a product of non-negative numbers; with a negative
        # entry the contraction order would change the result, so refuse it
        if not self.plus_times and t._data.size and bool((t._data < 0).any()):
            raise ValueError(f"einsum(): the {self.name} semiring needs non-negative operands "
                             f"but operand {k} has negative entries (max/min and product only "
                             "distribute over non-negative numbers); use the "
                             f"{self.name.replace('product', 'plus')} semiring on logs instead")
        return t

    def contract(self, a, sa, b, sb, out, sizes):
        keep = set(out) | set(sb or "")
        a, sa = self._reduce(a, sa, keep)
        if b is not None:
            b, sb = self._reduce(b, sb, set(out) | set(sa))
        if b is None or not any(c in sb and c not in out for c in sa):
            return self.combine(a, sa, b, sb, out)
        return self._pair(a, sa, b, sb, out)

    def _reduce(self, t, labels, keep):
        """Reduce the labels of ``t`` not in ``keep`` by gathering the winners (argmax/argmin
        ops, so a trace recomputes them)."""
        red = [c for c in labels if c not in keep]
        if not red:
            return t, labels
        kept = [c for c in labels if c in keep]
        t2 = t.permute(tuple(labels.index(c) for c in kept + red))
        kshape = tuple(t2.shape[:len(kept)])
        t2 = t2.reshape((_prod(kshape), _prod(t2.shape[len(kept):])))
        if t2.shape[1] == 0:
            raise RuntimeError(f"einsum(): the {self.name} semiring cannot reduce over an "
                               "empty dimension (it has no identity here)")
        idx = (argmax if self.pick == "argmax" else argmin)(t2, 1, keepdim=True)
        return gather(t2, 1, idx).reshape(kshape), "".join(kept)

    def _pair(self, a, sa, b, sb, out):
        A3, B3, shape, rs = _to_3d(a, sa, b, sb, out)
        idx = BestWinners.apply(A3, B3, self.pick, self.plus_times, self.name)
        res = self.times(gather(A3, 2, idx), gather(B3, 1, idx))
        return _align(res.reshape(shape), rs, out)


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
        return t if t._dtype is dt.bool else t != 0

    def contract(self, a, sa, b, sb, out, sizes):
        return BoolContract.apply(a, sa, b, sb, out, sizes)


class BoolContract(Function):
    """One pairwise (or single-operand) contraction of the boolean semiring: a primitive with
    no gradient, so that a compiled boolean einsum recomputes (it was a wrapped raw array, the
    trace kept the example's result). ``sizes`` holds label sizes only (shapes, not data)."""

    _differentiable = False

    @staticmethod
    def forward(ctx, a, sa, b, sb, out, sizes):
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
