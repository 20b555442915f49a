"""The dispatcher primitives of the max/min and log-sum-exp einsum semirings (_semiring.py).

Each pairwise contraction reaches the dispatcher as a primitive on the operands' Tensors, so a
trace (tensorix.fx, compile, ONNX export) records it and recomputes it for new inputs; before,
the winners and the max shifts were raw arrays computed outside it, which a trace kept as the
example's constants.

* :class:`BestWinners`: for ``A3`` (batch, m, k) and ``B3`` (batch, k, n), the k that wins
  (first argmax or argmin) each (batch, m, n) of ``A3 (x) B3`` (x = + or *): int64 positions,
  no gradient. The semiring then gathers both operands there, so gradients flow to the winners
  through ``gather`` (as ``torch.max``).
* :class:`LogSumExpPair`: ``log(sum_k exp(A3 + B3))``; its forward is a matmul of max-shifted
  exponentials (entries too small to be accurate recomputed with their own max), its backward
  the softmax weights ``exp(A3 + B3 - out)``, built from ops on the saved operands.
"""

from __future__ import annotations

import numpy as np

from .. import backend
from .. import dtypes as dt
from ..autograd.function import Function

__all__ = ["BestWinners", "LogSumExpPair"]

_CHUNK = 1 << 22  # elements of one broadcast block when searching max/min winners


class BestWinners(Function):
    """int64 (batch, m, n): the k of the first max (``pick="argmax"``) or min of
    ``A3[:, m, k] (x) B3[:, k, n]``, ``x`` a sum when ``plus`` else a product. Not
    differentiable (positions)."""

    _differentiable = False

    @staticmethod
    def forward(ctx, A3, B3, pick, plus, name):
        a, b = A3._data, B3._data
        xp = backend.array_module(a)
        nbt, m, k = a.shape
        n = b.shape[2]
        if k == 0:
            raise RuntimeError(f"einsum(): the {name} semiring cannot reduce over an empty "
                               "dimension (it has no identity here)")
        idx = xp.empty((nbt, m, n), dtype=np.int64)
        rows = max(1, _CHUNK // max(1, nbt * k * n))  # blocks of rows of m bound the memory
        with np.errstate(invalid="ignore", over="ignore"):
            for r in range(0, m, rows):
                x, y = a[:, r:r + rows, :, None], b[:, None, :, :]
                block = x + y if plus else x * y
                idx[:, r:r + rows] = getattr(xp, pick)(block, axis=2)
        return idx


def _finite_max(xp, x, axis):
    """The max along ``axis`` (kept), 0 where it is not finite or the axis is empty."""
    if x.shape[axis] == 0:
        return xp.zeros(x.shape[:axis] + (1,) + x.shape[axis + 1:], dtype=x.dtype)
    m = x.max(axis=axis, keepdims=True)
    return xp.where(xp.isfinite(m), m, 0).astype(x.dtype)


def lse_pair_raw(a, b):
    """``log(sum_k exp(a[:, m, k] + b[:, k, n]))`` of raw (batch, m, k), (batch, k, n) arrays:
    one matmul of exp(a - ma) and exp(b - mb); where that sum is too small to be accurate (the
    maxima sit at different k and every term underflows) the entry is recomputed exactly."""
    from .. import _threads

    xp = backend.array_module(a)
    nbt, m, k = a.shape
    n = b.shape[2]
    if k == 0:
        return xp.full((nbt, m, n), -np.inf, dtype=a.dtype)
    ma, mb = _finite_max(xp, a, 2), _finite_max(xp, b, 1)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        s = _threads.matmul(xp.exp(a - ma), xp.exp(b - mb))
        info = dt.finfo(dt.from_numpy_dtype(s.dtype))
        # below this the terms that underflowed (< tiny each, k of them) are not negligible
        bad = ~(s >= k * float(info.tiny) / float(info.eps))
        out = xp.log(s) + (ma + mb)
        if bad.any():
            bi, mi, ni = xp.nonzero(bad)
            terms = a[bi, mi, :] + b[bi, :, ni]  # (bad entries, k)
            mr = _finite_max(xp, terms, 1)
            out[bi, mi, ni] = xp.log(xp.exp(terms - mr).sum(1)) + mr[:, 0]
    return out.astype(a.dtype, copy=False)


def lse_pair_grad_raw(a, b, g, which):
    """The gradient of :func:`lse_pair_raw` for ``a`` (``which == 0``) or ``b``, given the
    output's gradient ``g``: the softmax weights ``exp(a + b - out)`` against ``g``, as one
    matmul of the max-shifted exponentials (``ea * ((g / s) @ eb^T)``); the entries the
    forward recomputed (shifted sum too small) add their weights from their own terms, and an
    output of -inf (no term) gives nothing."""
    from .. import _threads

    xp = backend.array_module(a)
    nbt, m, k = a.shape
    n = b.shape[2]
    if k == 0 or m == 0 or n == 0:
        return xp.zeros(a.shape if which == 0 else b.shape, dtype=a.dtype)
    ma, mb = _finite_max(xp, a, 2), _finite_max(xp, b, 1)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ea, eb = xp.exp(a - ma), xp.exp(b - mb)
        s = _threads.matmul(ea, eb)
        info = dt.finfo(dt.from_numpy_dtype(s.dtype))
        bad = ~(s >= k * float(info.tiny) / float(info.eps))  # as lse_pair_raw decides
        w = xp.where(bad, 0, g / xp.where(bad, 1, s))
        if which == 0:
            grad = ea * _threads.matmul(w, eb.transpose(0, 2, 1))
        else:
            grad = eb * _threads.matmul(ea.transpose(0, 2, 1), w)
        if bad.any():
            bi, mi, ni = xp.nonzero(bad)
            terms = a[bi, mi, :] + b[bi, :, ni]  # (bad entries, k)
            mr = _finite_max(xp, terms, 1)
            e = xp.exp(terms - mr)
            total = e.sum(1, keepdims=True)
            p = xp.where(total > 0, e / xp.where(total > 0, total, 1), 0)
            gp = g[bi, mi, ni][:, None] * p
            if which == 0:
                xp.add.at(grad, (bi, mi), gp)
            else:
                xp.add.at(grad, (bi, slice(None), ni), gp)
    return grad.astype(a.dtype, copy=False)


def _softmax_blocks(A3, B3, fn):
    """``fn(P, rows)`` for blocks of rows of m, ``P = exp(A3 + B3 - out)`` (batch, rows, k, n)
    the softmax weights of the terms built from ops (an -inf output shifts by 0, so its
    weights are 0); returns the list of results."""
    from .pointwise import where

    out = LogSumExpPair.apply(A3, B3)
    shift = where(out.isfinite(), out, out.new_zeros(()))
    nbt, m, k = A3.shape
    rows = max(1, _CHUNK // max(1, nbt * k * B3.shape[2]))
    res = []
    for r in range(0, m, rows):
        sl = slice(r, r + rows)
        terms = A3[:, sl].unsqueeze(3) + B3.unsqueeze(1) - shift[:, sl].unsqueeze(2)
        res.append(fn(terms.exp(), sl))
    return res


class LogSumExpPairGrad(Function):
    """The gradient of :class:`LogSumExpPair` for operand ``which`` (0: A3, 1: B3) given the
    output's gradient ``g``: a primitive (two matmuls, :func:`lse_pair_grad_raw`), so the
    compiler's joint graph records it. Its own gradient (grad of grad) is written with ops on
    the saved tensors, the softmax weights formed in blocks of rows of m."""

    _widen16 = (0, 1, 2)

    @staticmethod
    def forward(ctx, A3, B3, g, which):
        if any(ctx.needs_input_grad):
            ctx.which = which
            ctx.save_for_backward(A3, B3, g)
        return lse_pair_grad_raw(A3._data, B3._data, g._data, which)

    @staticmethod
    def backward(ctx, h):
        from .shape import cat

        A3, B3, g = ctx.saved_tensors
        which = ctx.which
        if A3.shape[1] == 0:
            return A3.new_zeros(tuple(A3.shape)), B3.new_zeros(tuple(B3.shape)), \
                g.new_zeros(tuple(g.shape)), None

        def block(p, sl):
            # q = h (x) g (x) P: h on (m, k) for A3's gradient, on (k, n) for B3's
            hq = h[:, sl].unsqueeze(3) if which == 0 else h.unsqueeze(1)
            gp = g[:, sl].unsqueeze(2) * p
            dg = (hq * p).sum(2)  # d/dg of sum(h * grad)
            q = hq * gp
            return q.sum(3), q.sum(1), dg

        parts = _softmax_blocks(A3, B3, block)
        da = cat([x[0] for x in parts], 1) if len(parts) > 1 else parts[0][0]
        db = parts[0][1]
        for x in parts[1:]:
            db = db + x[1]
        dg = cat([x[2] for x in parts], 1) if len(parts) > 1 else parts[0][2]
        # out depends on A3, B3 too: d out / d A3 is the softmax, so the -g * dg term through
        # out adds -LogSumExpPairGrad(g * dg) to both
        corr = g * dg
        da = da - LogSumExpPairGrad.apply(A3, B3, corr, 0)
        db = db - LogSumExpPairGrad.apply(A3, B3, corr, 1)
        return da, db, dg, None


class LogSumExpPair(Function):
    """(batch, m, n) ``log(sum_k exp(A3[:, m, k] + B3[:, k, n]))``, the pairwise contraction
    of the log-sum-exp semiring. Its gradient is the softmax over k of the terms, written with
    ops on the saved operands (the (batch, m, k, n) terms are formed there, in blocks of rows
    of m as the max/min winners are), so it is differentiable again; an output of -inf (every
    term -inf) gets a zero gradient. 16-bit operands compute in float32, rounded once."""

    _widen16 = (0, 1)

    @staticmethod
    def forward(ctx, A3, B3):
        if any(ctx.needs_input_grad):
            ctx.save_for_backward(A3, B3)
        return lse_pair_raw(A3._data, B3._data)

    @staticmethod
    def backward(ctx, g):
        A3, B3 = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad[:2]
        return (LogSumExpPairGrad.apply(A3, B3, g, 0) if need_a else None,
                LogSumExpPairGrad.apply(A3, B3, g, 1) if need_b else None)
