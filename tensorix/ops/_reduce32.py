"""Fast float32 paths of the reductions, scans and softmaxes (issue 13): the numba kernels of
``kernels/_jit_13red.py`` where they build, else NumPy calls that repeat their order of
operations, so that both give the same bits (tests/test_reduce32.py checks it), for any
thread count. Only float32 NumPy arrays take these paths (contiguous where it matters);
every other dtype, layout or device keeps the ops' own code.

* a whole-array float32 sum (``sum``, ``mean``, ``nansum``, ``nanmean``): superblocks of
  ``SUPER`` elements, each summed as ``LANES`` float32 lanes over blocks of ``BLOCK`` elements
  (8 terms a lane) added into float64 lanes, folded in order; the superblock sums added in
  order in float64, rounded once. Within ``8 * eps32 * sum(|x|)`` of the exact sum plus the
  final rounding (NumPy's pairwise sum: about ``(16 + log2(n / 128)) * eps32 * sum(|x|)``);
  superblocks split over the pool, which changes no bit.
* a whole-array float32 product: column products over 64 Ki-element parts (``prod_columns``);
  a count of non-zero / non-NaN elements (exact).
* float32 cumsum / cumprod: accumulated in float64, rounded per element (torch's CPU bits).
* softmax / log_softmax of float32 rows (last dim, from ``SOFTMAX_MIN`` elements; below, the
  NumPy formula that the compiler decomposes): the row maximum, ``exp32(x - max)``
  (``_math32``, 1 ulp), its sum as above, then ``e / t`` or ``(x - max) - log32(t)``;
  logsumexp of float32 rows: ``log32(t) + max`` (the shift 0 where the max is not finite).
"""

from __future__ import annotations

import numpy as np

from .. import _threads
from ..autograd.dispatch import kernel
from ..autograd.function import Function
from ..kernels import _cpu, jit
from ..tensor import _make

__all__ = ["jit_ready", "SUM_MIN", "sum_kernel", "sum32", "count", "prod_columns", "SCAN_KERNELS",
           "scan32", "SOFTMAX_MIN", "rows32_eager", "SOFTMAX_KERNEL", "softmax32",
           "logsumexp32", "Count", "NanSum", "LogSumExp"]

# the kernels' constants (kernels/_jit_13red.py, which imports numba: repeated, not imported)
LANES, BLOCK, SUPER, PROD_COLS = 64, 512, 1 << 16, 256
def jit_ready() -> bool:
    """Whether numba's kernels load here: only then do the ops take this module's float32
    paths. Their NumPy twins (the kernels' order of operations, for the same bits where one
    kernel fails to build) cost 3-5x NumPy's own formulas (softmax of (16, 4, 64, 64): 4.0 ms
    against 0.77), so without numba (the core install) the ops keep those formulas."""
    return _cpu._module() is not None


SUM_MIN = 1 << 12  # below, NumPy's call costs less than the kernel's dispatch (and keeps its bits)
# elements a thread's part of a sum or product (read per call: tests shrink it): the kernels
# run at ~85 GB/s on one core, 2-4x NumPy's pairwise sum, so a split repays the pool's wake
# only from 4 Mi elements (quiet: 1 Mi 0.06 ms whole, 0.10 split; 4 Mi 0.26 / 0.21 ms)
MIN_PART = 1 << 21


def _f32(n=1, shape=None):
    return np.ones(shape or n, np.float32)


# declared once: a Kernel's ``load`` is a dict look-up after the first (building the example
# arrays on every call cost more than NumPy's whole sum of 4 Ki elements)
_KERNELS = {name: jit(name, ("float32",), example) for name, example in (
    ("sum32_blocks", lambda: (np.empty(1, np.float64), _f32())),
    ("nansum32_blocks", lambda: (np.empty(1, np.float64), _f32())),
    ("count32", lambda: (_f32(), True)),
    ("prod32_cols", lambda: (np.empty((1, PROD_COLS), np.float32),
                             _f32(shape=(2, PROD_COLS)))))}


def sum_kernel(skip_nan):
    """The compiled superblock sum (``nansum32_blocks`` with ``skip_nan``), or None."""
    return _KERNELS["nansum32_blocks" if skip_nan else "sum32_blocks"].load()


def _fold_rows(x, skip_nan):
    """The kernels' ``_fold`` on each row of the 2-d float32 ``x`` with NumPy calls, in its
    order: float64 (rows,). (Reductions over a non-innermost axis add in index order.)"""
    if skip_nan:
        x = np.where(np.isnan(x), np.float32(0), x)
    rows, n = x.shape
    nb = n // BLOCK
    total = np.full(rows, -0.0)
    if nb:
        with np.errstate(invalid="ignore", over="ignore"):
            lanes = np.add.reduce(x[:, :nb * BLOCK].reshape(rows, nb, BLOCK // LANES, LANES),
                                  axis=2).astype(np.float64)
            wide = np.add.reduce(lanes, axis=1, initial=-0.0)  # (rows, LANES), block order
        with np.errstate(invalid="ignore"):
            for k in range(LANES):
                total += wide[:, k]
    if nb * BLOCK < n:  # the tail in order: a float64 cumsum is a sequential sum
        seq = np.concatenate([total[:, None], x[:, nb * BLOCK:].astype(np.float64)], axis=1)
        with np.errstate(invalid="ignore"):  # inf - inf is NaN, as in the kernel (silent)
            total = np.cumsum(seq, axis=1)[:, -1]
    return total


def sum32(flat, fused, skip_nan=False):
    """The sum of the 1-d float32 array ``flat`` (NaN as 0 with ``skip_nan``) as a float32
    0-d array, in the module's order; ``fused``: ``sum_kernel(skip_nan)`` (None: NumPy)."""
    n = flat.size
    supers = -(-n // SUPER)
    parts = np.empty(supers, np.float64)
    if fused is not None:
        def work(lo, hi):
            fused(parts[lo:hi], flat[lo * SUPER:min(n, hi * SUPER)])
        _threads.parallel(supers, work, max(1, MIN_PART // SUPER), pieces=1)
    else:
        whole = n // SUPER
        if whole:
            parts[:whole] = _fold_rows(flat[:whole * SUPER].reshape(whole, SUPER), skip_nan)
        if whole < supers:
            parts[whole] = _fold_rows(flat[whole * SUPER:].reshape(1, -1), skip_nan)[0]
    total = -0.0
    for p in parts.tolist():  # in order, float64
        total += p
    return np.asarray(np.float32(total))


def count(flat, not_nan):
    """The number of non-zero elements (``not_nan``: of non-NaN ones) of the 1-d float32
    ``flat``, as an int64 0-d array (exact: any order)."""
    fused = _KERNELS["count32"].load()
    if fused is not None:
        return np.asarray(np.int64(fused(flat, not_nan)))
    return np.asarray(np.int64(np.count_nonzero(flat == flat if not_nan else flat)))


_PROD_ROWS = SUPER // PROD_COLS  # rows of columns a part: the unit a thread takes


def prod_columns(flat):
    """The product of a float32 vector of at least ``PROD_COLS`` elements: ``PROD_COLS``
    column products (vectorised; NumPy's own product is one serial chain, 14x torch's time)
    over parts of ``_PROD_ROWS`` rows, in row order, the parts' columns multiplied in order,
    the columns' product, times the tail's: another order of roundings than ``flat.prod()``,
    within the same ``n * eps`` relative bound. The kernel computes a part's columns in
    NumPy's order (the same bits); parts split over the pool, which changes no bit."""
    k = flat.size // PROD_COLS * PROD_COLS
    cols = flat[:k].reshape(-1, PROD_COLS)
    rows = cols.shape[0]
    nparts = -(-rows // _PROD_ROWS)
    part = np.empty((nparts, PROD_COLS), np.float32)
    fused = _KERNELS["prod32_cols"].load()
    with np.errstate(all="ignore"):  # over/underflow is the product's value, as in torch
        if fused is not None:
            def work(lo, hi):
                fused(part[lo:hi], cols[lo * _PROD_ROWS:hi * _PROD_ROWS])
            _threads.parallel(nparts, work, max(1, MIN_PART // SUPER), pieces=1)
        else:
            whole = rows // _PROD_ROWS
            part[:whole] = cols[:whole * _PROD_ROWS].reshape(whole, _PROD_ROWS,
                                                             PROD_COLS).prod(axis=1)
            if whole < nparts:
                part[whole] = cols[whole * _PROD_ROWS:].prod(axis=0)
        col = part.prod(axis=0)
        return np.multiply(col.prod(), flat[k:].prod(), dtype=np.float32)


def _example3():
    return (np.empty((1, 2, 1), np.float32), _f32(shape=(1, 2, 1)))


SCAN_KERNELS = {"cumsum": jit("cumsum_rows", ("float32",), _example3),
                "cumprod": jit("cumprod_rows", ("float32",), _example3)}


def scan32(xp, data, dim, fused, prod):
    """cumsum (cumprod with ``prod``) of the float32 array ``data`` (of the array module
    ``xp``) along ``dim`` in float64, rounded per element to float32; ``fused``: the
    declared CPU scan kernel, or None."""
    if fused is None or not data.size or type(data) is not np.ndarray:
        fn = xp.cumprod if prod else xp.cumsum
        with np.errstate(invalid="ignore", over="ignore"):  # silent, as the kernel
            return fn(data, axis=dim, dtype=np.float64).astype(np.float32)
    n = data.shape[dim]
    x = np.ascontiguousarray(data).reshape(int(np.prod(data.shape[:dim])), n, -1)
    out = np.empty(x.shape, np.float32)
    # a scan costs ~1 ns an element (a float64 chain): split as a transcendental kernel
    _threads.parallel(x.shape[0], lambda lo, hi: fused(out[lo:hi], x[lo:hi]),
                      max(1, _threads.COSTLY // max(1, x[0].size)))
    return out.reshape(data.shape)


SOFTMAX_MIN = 1 << 14  # elements: below, softmax keeps its NumPy formula (ops/softmax.py)


def rows32_eager(dtype_name, shape, device):
    """Whether eager softmax / log_softmax over the last dim of this float32 CPU shape runs
    ``softmax32`` (from ``SOFTMAX_MIN`` elements): then the compiler keeps the node whole
    (tensorix._compile.decompose), so compiled and eager give the same bits; smaller ones
    keep the NumPy formula, which the compiler decomposes and fuses with its neighbours."""
    n = 1
    for s in shape:
        n *= s
    return dtype_name == "float32" and getattr(device, "type", None) == "cpu" and \
        n >= SOFTMAX_MIN and jit_ready()


SOFTMAX_KERNEL = jit("softmax_rows", ("float32",), lambda: (
    np.empty((1, 2), np.float32), _f32(shape=(1, 2)), False))


def softmax32(x, fused, log):
    """softmax (``log``: log_softmax) of the rows of the 2-d C-contiguous float32 ``x``, as
    the module says; ``fused``: SOFTMAX_KERNEL's callable, or None (NumPy, the same bits)."""
    out = np.empty(x.shape, np.float32)
    rows, n = x.shape
    if fused is not None:
        _threads.parallel(rows, lambda lo, hi: fused(out[lo:hi], x[lo:hi], log),
                          max(1, _threads.COSTLY // max(1, n)))
        return out
    from ..kernels import _math32

    with np.errstate(invalid="ignore", over="ignore"):
        m = np.fmax.reduce(x, axis=1, initial=-np.inf, keepdims=True) + np.float32(0)
        shifted = x - m
        e = _math32.exp32(shifted)
        t = _fold_rows(e, False).astype(np.float32)[:, None]
        if log:
            return np.subtract(shifted, _math32.log32(t), out=out)
        return np.divide(e, t, out=out)


LOGSUMEXP_KERNEL = jit("logsumexp_rows", ("float32",), lambda: (
    np.empty(1, np.float32), _f32(shape=(1, 2))))


def logsumexp32(x, fused):
    """log(sum(exp(row))) of the rows of the 2-d C-contiguous float32 ``x`` (float32, one a
    row), as the module says; ``fused``: LOGSUMEXP_KERNEL's callable, or None (NumPy)."""
    rows, n = x.shape
    out = np.empty(rows, np.float32)
    if fused is not None:
        _threads.parallel(rows, lambda lo, hi: fused(out[lo:hi], x[lo:hi]),
                          max(1, _threads.COSTLY // max(1, n)))
        return out
    from ..kernels import _math32

    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        c = np.fmax.reduce(x, axis=1, initial=-np.inf) + np.float32(0)
        c = np.where(np.isfinite(c), c, np.float32(0))
        t = _fold_rows(_math32.exp32(x - c[:, None]), False).astype(np.float32)
        return np.add(_math32.log32(t), c, out=out)


# -- the primitives that only these paths serve (ops/reduce.py calls them) ----------------
class Count(Function):
    """The number of non-zero (``not_nan``: non-NaN) elements of a whole float32 array
    (reduce.py's ``_whole32``), int64, in one pass (the composite makes a bool array and
    sums it)."""

    _differentiable = False

    @staticmethod
    def forward(ctx, a, not_nan, keepdim):
        out = count(a._data.reshape(-1), not_nan)
        return out.reshape((1,) * a._data.ndim) if keepdim else out


class NanSum(Function):
    """The sum of a whole float32 array (reduce.py's ``_whole32``) with NaN as 0, in one
    pass, in ``sum32``'s order (on NaN-free data the bits of ``sum``); NaN positions get a
    zero gradient."""

    @staticmethod
    def forward(ctx, a, keepdim):
        ctx.keepdim = keepdim
        ctx.save_for_backward(a)
        out = sum32(a._data.reshape(-1), sum_kernel(True), True)
        return out.reshape((1,) * a._data.ndim) if keepdim else out

    @staticmethod
    def backward(ctx, g):
        from .pointwise import where

        (a,) = ctx.saved_tensors
        g = g.reshape((1,) * a.ndim).expand(tuple(a.shape))  # the reduced dims re-expanded
        return where(a == a, g, 0), None


class LogSumExp(Function):
    """``log(sum(exp(x)))`` over the last dim of a C-contiguous float32 NumPy array (the fast
    case of reduce.py's logsumexp composite: one pass a row, ``logsumexp32``). The gradient
    is the softmax ``exp(x - out)``, written with ops (so it is differentiable again)."""

    _kernels = {"rows": (LOGSUMEXP_KERNEL,)}

    @staticmethod
    def forward(ctx, a, keepdim):
        d = a._data
        fused = kernel(LogSumExp, "rows", a.device, a._dtype)
        out = logsumexp32(d.reshape(-1, d.shape[-1]), fused)
        out = _make(out.reshape(d.shape[:-1] + ((1,) if keepdim else ())))
        ctx.keepdim = keepdim
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx, g):
        from .elementwise import exp

        a, out = ctx.saved_tensors
        if not ctx.keepdim:
            out, g = out.unsqueeze(-1), g.unsqueeze(-1)
        return g * exp(a - out), None
