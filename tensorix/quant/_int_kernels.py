"""numba kernel of ``kernels.int_mm``: int8 x int8 -> int32, exact, on the CPU.

Imported only by ``kernels._compiled()``, which falls back to the float32-BLAS path when numba
is missing or a compile fails. The inner loops are written so that LLVM emits ``vpmaddwd``
(int16 x int16 products summed in pairs into int32 lanes): each step truncates to int32 with
``np.int32(acc + x * w)``, since numba would otherwise widen the sums to int64 (measured: the
int64 loop is 3-4x slower). A 2 x 2 block of outputs shares each loaded row of both operands.
The entry point takes a range of output columns last, for ``_threads.parallel``.
"""

import numba
import numpy as np

_jit = numba.njit(boundscheck=False, cache=True, nogil=True)


@_jit
def _dot(a0, b0, k):
    c = np.int32(0)
    for i in range(k):
        c = np.int32(c + np.int32(a0[i]) * np.int32(b0[i]))
    return c


@_jit
def int_mm_nt(a, bt, out, n_lo, n_hi):
    # out[m, n] = sum_k a[m, k] * bt[n, k] for n in [n_lo, n_hi); a (M, K), bt (N, K) int8
    m_rows, k = a.shape
    m_even = m_rows - m_rows % 2
    n = n_lo
    while n + 1 < n_hi:
        b0 = bt[n]
        b1 = bt[n + 1]
        for m in range(0, m_even, 2):
            a0 = a[m]
            a1 = a[m + 1]
            c00 = np.int32(0)
            c01 = np.int32(0)
            c10 = np.int32(0)
            c11 = np.int32(0)
            for i in range(k):
                w0 = np.int32(b0[i])
                w1 = np.int32(b1[i])
                x0 = np.int32(a0[i])
                x1 = np.int32(a1[i])
                c00 = np.int32(c00 + x0 * w0)
                c01 = np.int32(c01 + x0 * w1)
                c10 = np.int32(c10 + x1 * w0)
                c11 = np.int32(c11 + x1 * w1)
            out[m, n] = c00
            out[m, n + 1] = c01
            out[m + 1, n] = c10
            out[m + 1, n + 1] = c11
        if m_even < m_rows:
            out[m_even, n] = _dot(a[m_even], b0, k)
            out[m_even, n + 1] = _dot(a[m_even], b1, k)
        n += 2
    if n < n_hi:
        for m in range(m_rows):
            out[m, n] = _dot(a[m], bt[n], k)


@_jit
def int_mm_nt4(a, bt, out, n_lo, n_hi):
    # the same product for M % 4 == 0 with ``a`` widened to int16 once by the caller: a 4 x 2
    # tile loads each weight row once per four rows of ``a`` (measured 1.5-2x the 2 x 2 tile at
    # batch 16-64)
    m_rows, k = a.shape
    n = n_lo
    while n + 1 < n_hi:
        b0 = bt[n]
        b1 = bt[n + 1]
        for m in range(0, m_rows, 4):
            a0 = a[m]
            a1 = a[m + 1]
            a2 = a[m + 2]
            a3 = a[m + 3]
            c00 = np.int32(0)
            c01 = np.int32(0)
            c10 = np.int32(0)
            c11 = np.int32(0)
            c20 = np.int32(0)
            c21 = np.int32(0)
            c30 = np.int32(0)
            c31 = np.int32(0)
            for i in range(k):
                w0 = np.int32(b0[i])
                w1 = np.int32(b1[i])
                x0 = np.int32(a0[i])
                x1 = np.int32(a1[i])
                x2 = np.int32(a2[i])
                x3 = np.int32(a3[i])
                c00 = np.int32(c00 + x0 * w0)
                c01 = np.int32(c01 + x0 * w1)
                c10 = np.int32(c10 + x1 * w0)
                c11 = np.int32(c11 + x1 * w1)
                c20 = np.int32(c20 + x2 * w0)
                c21 = np.int32(c21 + x2 * w1)
                c30 = np.int32(c30 + x3 * w0)
                c31 = np.int32(c31 + x3 * w1)
            out[m, n] = c00
            out[m, n + 1] = c01
            out[m + 1, n] = c10
            out[m + 1, n + 1] = c11
            out[m + 2, n] = c20
            out[m + 2, n + 1] = c21
            out[m + 3, n] = c30
            out[m + 3, n + 1] = c31
        n += 2
    if n < n_hi:
        for m in range(m_rows):
            out[m, n] = _dot(a[m], bt[n], k)
