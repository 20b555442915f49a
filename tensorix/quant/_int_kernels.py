"""numba kernel of ``kernels.int_mm``: int8 x int8 -> int32, exact, on the CPU.

Imported only by ``kernels._compiled()``, which falls back to the float32-BLAS path when numba
is missing or a compile fails. The inner loops are written so that LLVM emits ``vpmaddwd``
(int16 x int16 products summed in pairs into int32 lanes): each step truncates to int32 with
``np.int32(acc + x * w)``, since numba would otherwise widen the sums to int64 (measured: the
int64 loop is 3-4x slower). A 2 x 2 block of outputs shares each loaded row of both operands.
The entry points take a range of output columns (or column panels) last, for
``_threads.parallel``.

On x86 CPUs with AVX2 the products run register-blocked micro-kernels on the weight's own
(N, K) int8 rows instead (:func:`int_mm_dot`): LLVM does not find ``vpmaddwd`` in a multi-row
loop (it emits ``vpmulld``, 8 products per instruction instead of 16), so the tiles are written
in LLVM IR through ``numba.extending.intrinsic`` and call ``llvm.x86.avx2.pmadd.wd`` themselves.
A tile keeps R x C dot products of R rows of ``a`` and C weight rows in 8-lane int32
accumulators over all of K and adds each one's lane sum to ``out`` at the end. Reading the codes
in place means a layer keeps one copy of its weight (a packed panel layout, measured no faster,
needed a second).
"""

import platform

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

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


# -- the AVX2 dot-product micro-kernels -------------------------------------------------------
ROW_BLOCK = 24  # rows of ``a`` per pass over the weight: 24 x 8 KiB int16 rows stay in L2


def avx2() -> bool:
    """Whether this CPU runs the ``vpmaddwd`` micro-kernels (x86-64 with AVX2)."""
    import llvmlite.binding as llb

    return platform.machine().lower() in ("x86_64", "amd64") and \
        bool(llb.get_host_cpu_features().get("avx2", False))


_I32, _I16, _I8 = ir.IntType(32), ir.IntType(16), ir.IntType(8)
_V8I32, _V16I16 = ir.VectorType(_I32, 8), ir.VectorType(_I16, 16)


def _dot_codegen(rows, cols):
    # out[r, j] += sum_k a[r, k] b[j, k] over ``steps`` blocks of 16 k: per block one 32-byte
    # load of each int16 row of ``a``, one 16-byte load of each int8 weight row (sign-extended
    # to int16) and R x C ``vpmaddwd`` into 8-lane accumulators, summed across lanes at the end
    def codegen(context, builder, signature, args):
        a_ptr, a_stride, b_ptr, b_stride, o_ptr, o_stride, steps = args
        i64 = a_ptr.type
        madd = builder.module.declare_intrinsic(
            "llvm.x86.avx2.pmadd.wd", fnty=ir.FunctionType(_V8I32, [_V16I16, _V16I16]))
        lane_sum = builder.module.declare_intrinsic(
            "llvm.vector.reduce.add.v8i32", fnty=ir.FunctionType(_I32, [_V8I32]))

        def c(v):
            return ir.Constant(i64, v)

        def at(base, ty, *offsets):
            addr = base
            for off in offsets:
                addr = builder.add(addr, off)
            return builder.inttoptr(addr, ty.as_pointer())

        zero = ir.Constant(_V8I32, [0] * 8)
        entry = builder.block
        loop, done = builder.append_basic_block("dot_loop"), builder.append_basic_block("dot_done")
        builder.cbranch(builder.icmp_signed(">", steps, c(0)), loop, done)
        builder.position_at_end(loop)
        i = builder.phi(i64)
        accs = [builder.phi(_V8I32) for _ in range(rows * cols)]
        w = [builder.sext(builder.load(at(b_ptr, ir.VectorType(_I8, 16), builder.mul(b_stride, c(j)),
                                          builder.mul(i, c(16))), align=1), _V16I16)
             for j in range(cols)]
        new = []
        for r in range(rows):
            x = builder.load(at(a_ptr, _V16I16, builder.mul(a_stride, c(r)), builder.mul(i, c(32))),
                             align=2)
            new += [builder.add(accs[r * cols + j], builder.call(madd, [x, w[j]]))
                    for j in range(cols)]
        nxt = builder.add(i, c(1))
        i.add_incoming(c(0), entry)
        i.add_incoming(nxt, loop)
        for acc, a1 in zip(accs, new):
            acc.add_incoming(zero, entry)
            acc.add_incoming(a1, loop)
        builder.cbranch(builder.icmp_signed("<", nxt, steps), loop, done)
        builder.position_at_end(done)
        results = [builder.phi(_V8I32) for _ in accs]  # phis first in the block, then stores
        for res, a1 in zip(results, new):
            res.add_incoming(zero, entry)
            res.add_incoming(a1, loop)
        for r in range(rows):
            for j in range(cols):
                p = at(o_ptr, _I32, builder.mul(o_stride, c(r)), c(4 * j))
                total = builder.add(builder.load(p, align=4),
                                    builder.call(lane_sum, [results[r * cols + j]]))
                builder.store(total, p, align=4)
        return context.get_dummy_value()
    return codegen


def _dot_tile(rows, cols):
    @intrinsic
    def tile(typingctx, a_ptr, a_stride, b_ptr, b_stride, o_ptr, o_stride, steps):
        return types.void(*([types.intp] * 7)), _dot_codegen(rows, cols)
    return tile


# R x C tiles: at most 12 accumulators, so that the rows of ``a``, a weight row and the
# accumulators stay in the 16 ymm registers (4 x 3 measured fastest of 4 x 2/3/4 at 4-64 rows)
_d4x3, _d4x1 = _dot_tile(4, 3), _dot_tile(4, 1)
_d3x4, _d3x1 = _dot_tile(3, 4), _dot_tile(3, 1)
_d2x4, _d2x1 = _dot_tile(2, 4), _dot_tile(2, 1)
_d1x8, _d1x1 = _dot_tile(1, 8), _dot_tile(1, 1)


@_jit
def _dot_rows(rows, a, sa, b, sb, o, so, steps, n_lo, n_hi):
    # ``rows`` (1-4) rows of ``a`` against weight rows [n_lo, n_hi): wide tiles, then 1-column
    n = n_lo
    if rows == 4:
        while n + 3 <= n_hi:
            _d4x3(a, sa, b + n * sb, sb, o + 4 * n, so, steps)
            n += 3
    elif rows == 3:
        while n + 4 <= n_hi:
            _d3x4(a, sa, b + n * sb, sb, o + 4 * n, so, steps)
            n += 4
    elif rows == 2:
        while n + 4 <= n_hi:
            _d2x4(a, sa, b + n * sb, sb, o + 4 * n, so, steps)
            n += 4
    else:
        while n + 8 <= n_hi:
            _d1x8(a, sa, b + n * sb, sb, o + 4 * n, so, steps)
            n += 8
    for j in range(n, n_hi):
        if rows == 4:
            _d4x1(a, sa, b + j * sb, sb, o + 4 * j, so, steps)
        elif rows == 3:
            _d3x1(a, sa, b + j * sb, sb, o + 4 * j, so, steps)
        elif rows == 2:
            _d2x1(a, sa, b + j * sb, sb, o + 4 * j, so, steps)
        else:
            _d1x1(a, sa, b + j * sb, sb, o + 4 * j, so, steps)


@_jit
def int_mm_dot(a16, bt, out, n_lo, n_hi):
    # out[:, n] = a16 @ bt[n] for n in [n_lo, n_hi): a16 (M, K) int16 (``a`` widened), bt the
    # (N, K) int8 weight rows (rows contiguous), out (M, N) int32 zeroed
    m, k = a16.shape
    steps = k // 16
    a0, b0, o0 = a16.ctypes.data, bt.ctypes.data, out.ctypes.data
    sa, sb, so = a16.strides[0], bt.strides[0], out.strides[0]
    for r0 in range(0, m, ROW_BLOCK):
        r1 = min(m, r0 + ROW_BLOCK)
        r = r0
        while r < r1:
            rows = min(4, r1 - r)
            _dot_rows(rows, a0 + r * sa, sa, b0, sb, o0 + r * so, so, steps, n_lo, n_hi)
            r += rows
    for r in range(m):  # the last k % 16 products
        for n in range(n_lo, n_hi):
            c = np.int32(0)
            for i in range(16 * steps, k):
                c = np.int32(c + np.int32(a16[r, i]) * np.int32(bt[n, i]))
            out[r, n] += c
