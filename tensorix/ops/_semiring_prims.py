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
        from .pointwise import where
        from .shape import cat

        A3, B3 = ctx.saved_tensors
        out = LogSumExpPair.apply(A3, B3)
        # the -inf of an empty sum shifts by 0: exp(-inf - 0) is 0, not exp(nan)
        shift = where(out.isfinite(), out, out.new_zeros(()))
        nbt, m, k = A3.shape
        n = B3.shape[2]
        if m == 0:
            return A3.new_zeros(tuple(A3.shape)), B3.new_zeros(tuple(B3.shape))
        rows = max(1, _CHUNK // max(1, nbt * k * n))  # bounds the (batch, rows, k, n) block
        ga, gb = [], None
        for r in range(0, m, rows):
            sl = slice(r, r + rows)
            terms = A3[:, sl].unsqueeze(3) + B3.unsqueeze(1) - shift[:, sl].unsqueeze(2)
            w = terms.exp() * g[:, sl].unsqueeze(2)
            ga.append(w.sum(3))
            gb = w.sum(1) if gb is None else gb + w.sum(1)
        need_a, need_b = ctx.needs_input_grad[:2]
        ga = (ga[0] if len(ga) == 1 else cat(ga, 1)) if need_a else None
        return ga, (gb if need_b else None)
