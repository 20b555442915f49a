"""numba kernels of the reductions, scans and softmaxes (ops/reduce.py, ops/softmax.py),
imported at the end of ``_cpu_jit.py`` so that ``jit_kernel`` / ``jit`` reach them by name.

Each kernel fixes its order of operations (explicit lane arrays, blocks of fixed size, no
fastmath), so its result depends neither on the thread count nor on how LLVM vectorises, and
``ops/_fastreduce.py`` repeats that order with NumPy calls for its fallback (the same bits).

* ``sum32_blocks`` / ``nansum32_blocks``: float32 sums of ``SUPER``-element superblocks, each
  as ``LANES`` float32 lanes over blocks of ``BLOCK`` elements (``BLOCK / LANES`` terms a lane),
  the lanes added into float64 lanes after every block, folded in lane order, the tail added
  in order; the superblock sums (float64) are added in order by the caller.
* ``prod32_cols``: float32 column products of parts of ``PROD_ROWS`` rows of a (rows,
  ``PROD_COLS``) array, row by row.
* ``count32``: the number of non-zero (or non-NaN) elements, exact.
* ``cumsum_rows`` / ``cumprod_rows``: scans along axis 1 of (outer, n, inner), accumulated in
  float64 and rounded to the output per element (torch's CPU rule for float32).
* ``softmax_rows``: softmax / log_softmax of (rows, n) rows with ``_math32``'s exp32 / log32,
  the exp sum added as the sums above add a superblock; ``logsumexp_rows`` likewise.
"""

import numpy as np

__all__ = ["sum32_blocks", "nansum32_blocks", "prod32_cols", "count32", "cumsum_rows",
           "cumprod_rows", "softmax_rows", "logsumexp_rows", "LANES", "BLOCK", "SUPER",
           "PROD_COLS", "PROD_ROWS"]

LANES = 64  # float32 lanes: four AVX-512 registers, enough independent adds to hide latency
BLOCK = 512  # elements a block: 8 float32 terms a lane before they move to float64
SUPER = 1 << 16  # elements a superblock: the unit of work of a thread (a multiple of BLOCK)
PROD_COLS = 256
PROD_ROWS = SUPER // PROD_COLS  # rows of columns a part



def _from_cpu_jit():
    """``_cpu_jit``'s decorator and the scalar forms of ``_math32``'s exp32 and log32.
    ``_cpu_jit`` imports this module at its end, once it has built them; imported here, in a
    function, so that the two modules do not import each other at module level."""
    from . import _cpu_jit

    return _cpu_jit._jit, _cpu_jit._SCALAR["exp32"], _cpu_jit._SCALAR["log32"]


_jit, _exp32, _log32 = _from_cpu_jit()


@_jit
def _fold(wide, x, skip_nan):
    """The float64 sum of the 1-d x (``wide``: LANES float64 of scratch): in each block of
    BLOCK elements, lane k sums the elements k, k + LANES, ... in float32, in order, and is
    added into the float64 lane k; the lanes are folded in order, then the tail (fewer than
    BLOCK elements) added in order. Why this loop shape: the short inner loop over a lane's
    terms unrolls fully and the loop over lanes vectorises (an accumulator array updated per
    term did not, nor did indices offset by a variable start, which numba checks for
    wraparound: callers pass 0-based views, 10x faster)."""
    zero = np.float32(0)
    for k in range(LANES):
        wide[k] = -0.0  # the identity of IEEE addition: an all -0.0 sum stays -0.0
    n = x.shape[0]
    nb = n // BLOCK
    for b in range(nb):
        base = b * BLOCK
        for k in range(LANES):
            v = x[base + k]
            s = zero if skip_nan and v != v else v
            for j in range(1, BLOCK // LANES):
                v = x[base + j * LANES + k]
                s += zero if skip_nan and v != v else v
            wide[k] += np.float64(s)
    total = wide[0]
    for k in range(1, LANES):
        total += wide[k]
    for i in range(nb * BLOCK, n):
        v = x[i]
        if not (skip_nan and v != v):
            total += np.float64(v)
    return total


@_jit
def _row_max(lanes, x):
    """The largest non-NaN element of the 1-d float32 x (-inf when none; ``lanes``: LANES
    float32 of scratch), a -0.0 maximum as +0.0, so that the result does not depend on the
    order of comparisons (any order finds the same value). The loop shape is _fold's."""
    n = x.shape[0]
    nb = n // BLOCK
    ninf = np.float32(-np.inf)
    for k in range(LANES):
        lanes[k] = ninf
    for b in range(nb):
        base = b * BLOCK
        for k in range(LANES):
            s = lanes[k]
            for j in range(BLOCK // LANES):
                v = x[base + j * LANES + k]
                s = v if v > s else s
            lanes[k] = s
    best = ninf
    for k in range(LANES):
        best = lanes[k] if lanes[k] > best else best
    for i in range(nb * BLOCK, n):
        v = x[i]
        best = v if v > best else best
    return best + np.float32(0)


@_jit
def _blocks(out, x, skip_nan):
    wide = np.empty(LANES, np.float64)
    n = x.shape[0]
    for s in range(out.shape[0]):
        out[s] = _fold(wide, x[s * SUPER:min(n, (s + 1) * SUPER)], skip_nan)


@_jit
def sum32_blocks(out, x):
    """out[s] = the float64 sum of the 1-d float32 x's superblock s (see the module's doc)."""
    _blocks(out, x, False)


@_jit
def nansum32_blocks(out, x):
    """sum32_blocks with NaN elements taken as 0."""
    _blocks(out, x, True)


@_jit
def _prod_cols(out, x):
    for c in range(x.shape[1]):
        out[c] = x[0, c]
    for r in range(1, x.shape[0]):
        for c in range(x.shape[1]):
            out[c] *= x[r, c]


@_jit
def prod32_cols(out, x):
    """out[p, c] = the float32 product of column c of the rows ``p * PROD_ROWS`` .. of the
    (rows, PROD_COLS) float32 x, in row order (NumPy's ``x.prod(axis=0)`` order); one call
    for all the parts (a call per part cost a dispatch each, half the kernel's time)."""
    rows = x.shape[0]
    for p in range(out.shape[0]):
        _prod_cols(out[p], x[p * PROD_ROWS:min(rows, (p + 1) * PROD_ROWS)])


@_jit
def count32(x, not_nan):
    """The number of elements of the 1-d x that are non-zero (``not_nan``: that are not NaN)."""
    lanes = np.zeros(LANES, np.int64)
    n = x.shape[0]
    nb = n // LANES
    for b in range(nb):
        for k in range(LANES):
            v = x[b * LANES + k]
            lanes[k] += (v == v) if not_nan else (v != 0)
    total = lanes.sum()
    for i in range(nb * LANES, n):
        v = x[i]
        total += (v == v) if not_nan else (v != 0)
    return total


@_jit
def _scan8(out, x, o, prod):
    """Rows o .. o + 7 of the (outer, n, 1) x scanned side by side: eight float64 chains in
    scalar locals (independent adds hide the latency; an accumulator array in memory, or a
    loop over a variable number of rows, ran 2x slower), each rounded per element to out."""
    a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = 1.0 if prod else -0.0  # -0.0: addition's identity
    x0, x1, x2, x3 = x[o, :, 0], x[o + 1, :, 0], x[o + 2, :, 0], x[o + 3, :, 0]
    x4, x5, x6, x7 = x[o + 4, :, 0], x[o + 5, :, 0], x[o + 6, :, 0], x[o + 7, :, 0]
    y0, y1, y2, y3 = out[o, :, 0], out[o + 1, :, 0], out[o + 2, :, 0], out[o + 3, :, 0]
    y4, y5, y6, y7 = out[o + 4, :, 0], out[o + 5, :, 0], out[o + 6, :, 0], out[o + 7, :, 0]
    if prod:
        for i in range(x.shape[1]):
            a0 *= np.float64(x0[i])
            a1 *= np.float64(x1[i])
            a2 *= np.float64(x2[i])
            a3 *= np.float64(x3[i])
            a4 *= np.float64(x4[i])
            a5 *= np.float64(x5[i])
            a6 *= np.float64(x6[i])
            a7 *= np.float64(x7[i])
            y0[i], y1[i], y2[i], y3[i], y4[i], y5[i], y6[i], y7[i] = a0, a1, a2, a3, a4, a5, \
                a6, a7
    else:
        for i in range(x.shape[1]):
            a0 += np.float64(x0[i])
            a1 += np.float64(x1[i])
            a2 += np.float64(x2[i])
            a3 += np.float64(x3[i])
            a4 += np.float64(x4[i])
            a5 += np.float64(x5[i])
            a6 += np.float64(x6[i])
            a7 += np.float64(x7[i])
            y0[i], y1[i], y2[i], y3[i], y4[i], y5[i], y6[i], y7[i] = a0, a1, a2, a3, a4, a5, \
                a6, a7


@_jit
def _scan(out, x, prod):
    outer, n, inner = x.shape
    if inner == 1:
        o = 0
        while o + 8 <= outer:
            _scan8(out, x, o, prod)
            o += 8
        for r in range(o, outer):
            a = 1.0 if prod else -0.0
            for i in range(n):
                v = np.float64(x[r, i, 0])
                a = a * v if prod else a + v
                out[r, i, 0] = a
        return
    acc = np.empty(inner, np.float64)
    for o in range(outer):
        for k in range(inner):
            acc[k] = 1.0 if prod else -0.0  # -0.0, addition's identity: a leading -0.0 stays
        for i in range(n):
            for k in range(inner):
                v = np.float64(x[o, i, k])
                acc[k] = acc[k] * v if prod else acc[k] + v
                out[o, i, k] = acc[k]


@_jit
def cumsum_rows(out, x):
    """The cumulative sum along axis 1 of the 3-d x, in float64, each element rounded to
    ``out``'s dtype (``np.cumsum(x, 1, dtype=float64).astype(out.dtype)``'s bits)."""
    _scan(out, x, False)


@_jit
def cumprod_rows(out, x):
    """The cumulative product along axis 1; see cumsum_rows."""
    _scan(out, x, True)


@_jit
def softmax_rows(out, x, log):
    """softmax (``log``: log_softmax) of each row of the 2-d float32 x: m the row's maximum
    (``_row_max``), e = exp32(x - m), t = float32(the sum of e as ``_fold`` adds), and out =
    e / t, or (x - m) - log32(t). A NaN in a row makes the row NaN."""
    n = x.shape[1]
    wide = np.empty(LANES, np.float64)
    lanes = np.empty(LANES, np.float32)
    for r in range(x.shape[0]):
        xr, orow = x[r], out[r]
        mr = _row_max(lanes, xr)
        for i in range(n):
            orow[i] = _exp32(xr[i] - mr)
        t = np.float32(_fold(wide, orow, False))
        if log:
            lse = _log32(t)
            for i in range(n):
                orow[i] = (xr[i] - mr) - lse
        else:
            for i in range(n):
                orow[i] = orow[i] / t


@_jit
def logsumexp_rows(out, x):
    """log(sum(exp(row))) of each row of the 2-d float32 x into the 1-d out: c the row's
    maximum (``_row_max``; 0 where it is not finite, as ops/reduce.py's shift), e =
    exp32(x - c), t = float32(its sum as ``_fold`` adds), out = log32(t) + c."""
    n = x.shape[1]
    wide = np.empty(LANES, np.float64)
    lanes = np.empty(LANES, np.float32)
    e = np.empty(n, np.float32)
    for r in range(x.shape[0]):
        xr = x[r]
        c = _row_max(lanes, xr)
        if not (c > -np.inf and c < np.inf):
            c = np.float32(0)
        for i in range(n):
            e[i] = _exp32(xr[i] - c)
        out[r] = _log32(np.float32(_fold(wide, e, False))) + c
