"""numba kernel of ``kernels.int_mm``: int8 x int8 -> int32, exact, on the CPU.

Imported only by ``kernels._compiled()``, which falls back to the float32-BLAS path when numba
is missing or a compile fails. The inner loops are written so that LLVM emits ``vpmaddwd``
(int16 x int16 products summed in pairs into int32 lanes): each step truncates to int32 with
``np.int32(acc + x * w)``, since numba would otherwise widen the sums to int64 (measured: the
int64 loop is 3-4x slower). A 2 x 2 block of outputs shares each loaded row of both operands.
The entry points take a range of output columns (or column panels) last, for
``_threads.parallel``.

On x86 CPUs with AVX2, products with a packed weight run a register-blocked kernel instead
(:func:`pack_b`, :func:`int_mm_packed`; 2-3.5x the 4 x 2 tile, measured; its 1-3 row tiles
1.2-2.6x the 2 x 2 tile at batches 1-2, measured under load 11): LLVM does not find
``vpmaddwd`` in a multi-row loop (it emits ``vpmulld``, 8 products per instruction instead of
16), so the R x 16 micro-tiles (R = 4, and 1-3 for the last rows) are written in LLVM IR
through ``numba.extending.intrinsic`` and call ``llvm.x86.avx2.pmadd.wd`` themselves.
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


# -- packed weights and the AVX2 micro-kernel --------------------------------------------------
TILE_M, TILE_N = 4, 16  # rows of ``a`` and weight columns per micro-tile: 8 ymm accumulators
K_BLOCK = 4096  # k-pairs per pass over a column panel: K <= 8192 in one pass (measured
# under load 15, same run, against 1024: 0.95x the time at batch 64, 0.8x at 16, 0.5-0.8x at
# 1-4, where one linear stream of the weight beats two; 128-256 were 1.1-1.4x slower)


def avx2() -> bool:
    """Whether this CPU runs the ``vpmaddwd`` micro-kernel (x86-64 with AVX2)."""
    import llvmlite.binding as llb

    if numba.config.CPU_NAME not in (None, "host"):  # another target: LLVM would abort
        return False
    return platform.machine().lower() in ("x86_64", "amd64") and \
        bool(llb.get_host_cpu_features().get("avx2", False))


def pack_b(bt):
    """Weight rows ``bt`` (N, K) int8 -> panels (ceil(N/16), ceil(K/2), 32) int8: for each 16
    output columns and each pair of k, the pairs of the 16 columns side by side (the operand of
    one ``vpmaddwd`` per 8 columns). Zero padding on N and K adds nothing to the sums."""
    n, k = bt.shape
    n_pad, k_pad = -(-n // TILE_N) * TILE_N, k + k % 2
    b = np.zeros((n_pad, k_pad), np.int8)
    b[:n, :k] = bt
    pairs = b.view(np.int16).reshape(n_pad // TILE_N, TILE_N, k_pad // 2)  # a k-pair per item
    return np.ascontiguousarray(pairs.transpose(0, 2, 1)).view(np.int8)


_I32, _I16, _I8 = ir.IntType(32), ir.IntType(16), ir.IntType(8)
_V8I32, _V16I16 = ir.VectorType(_I32, 8), ir.VectorType(_I16, 16)


def _tile_codegen(rows):
    return lambda context, builder, signature, args: _tile_ir(rows, context, builder, args)


def _addressing(builder, i64):
    """The two IR helpers of the int8 tiles (this one and the VNNI one): ``at(base, ty,
    *offsets)``, a ``ty*`` at the integer address ``base + sum(offsets)``, and ``c(v)``, an
    ``i64`` constant."""

    def at(base, ty, *offsets):
        addr = base
        for off in offsets:
            addr = builder.add(addr, off)
        return builder.inttoptr(addr, ty.as_pointer())

    def c(v):
        return ir.Constant(i64, v)

    return at, c


def _tile_ir(rows, context, builder, args):
    # acc[r, 0:16] += sum_kp a_pairs[r, kp] . b_panel[kp] for ``rows`` (1-4) rows: per k-pair
    # one 32-byte panel load (sign-extended to 16 x int16 twice), and per row one broadcast
    # int16 pair and two vpmaddwd (8 columns each); the accumulators start from and end in
    # ``out``
    a_ptr, a_stride, b_ptr, o_ptr, o_stride, kp = args
    i64 = a_ptr.type
    madd = builder.module.declare_intrinsic(
        "llvm.x86.avx2.pmadd.wd", fnty=ir.FunctionType(_V8I32, [_V16I16, _V16I16]))
    at, c = _addressing(builder, i64)

    out_ptrs = [at(o_ptr, _V8I32, builder.mul(o_stride, c(r)), c(32 * h))
                for r in range(rows) for h in range(2)]
    init = [builder.load(p, align=4) for p in out_ptrs]
    entry = builder.block
    loop, done = builder.append_basic_block("tile_loop"), builder.append_basic_block("tile_done")
    builder.cbranch(builder.icmp_signed(">", kp, c(0)), loop, done)
    builder.position_at_end(loop)
    i = builder.phi(i64)
    accs = [builder.phi(_V8I32) for _ in init]
    panel = builder.load(at(b_ptr, ir.VectorType(_I8, 32), builder.mul(i, c(32))), align=1)
    panel = builder.sext(panel, ir.VectorType(_I16, 32))
    halves = [builder.shuffle_vector(panel, panel, ir.Constant(ir.VectorType(_I32, 16),
                                                               list(range(16 * h, 16 * h + 16))))
              for h in range(2)]
    new = []
    for r in range(rows):
        pair = builder.load(at(a_ptr, _I32, builder.mul(a_stride, c(r)), builder.mul(i, c(4))),
                            align=4)
        v = builder.insert_element(ir.Constant(_V8I32, ir.Undefined), pair, ir.Constant(_I32, 0))
        v = builder.bitcast(builder.shuffle_vector(v, v, ir.Constant(_V8I32, [0] * 8)), _V16I16)
        for h in range(2):
            new.append(builder.add(accs[2 * r + h], builder.call(madd, [v, halves[h]])))
    for res, p in zip(_close_loop(builder, i, kp, entry, loop, done, accs, init, new), out_ptrs):
        builder.store(res, p, align=4)
    return context.get_dummy_value()


def _close_loop(builder, i, bound, entry, loop, done, accs, init, new):
    """Close a tile's loop over K (this kernel's and the VNNI one's): the counter ``i`` and the
    accumulator phis ``accs`` take their entry values (0, ``init``) and loop-carried ones
    (``i + 1``, ``new``), the loop repeats while ``i + 1 < bound``, and in ``done`` the final
    accumulators (``init`` where the loop never ran) are returned as phis, first in the block."""
    nxt = builder.add(i, ir.Constant(i.type, 1))
    i.add_incoming(ir.Constant(i.type, 0), entry)
    i.add_incoming(nxt, loop)
    for acc, a0, a1 in zip(accs, init, new):
        acc.add_incoming(a0, entry)
        acc.add_incoming(a1, loop)
    builder.cbranch(builder.icmp_signed("<", nxt, bound), loop, done)
    builder.position_at_end(done)
    results = [builder.phi(a0.type) for a0 in init]
    for res, a0, a1 in zip(results, init, new):
        res.add_incoming(a0, entry)
        res.add_incoming(a1, loop)
    return results


def _tile_rows(rows):
    @intrinsic
    def tile(typingctx, a_ptr, a_stride, b_ptr, o_ptr, o_stride, kp):
        return types.void(*([types.intp] * 6)), _tile_codegen(rows)
    return tile


# the 4-row tile, and 1-3 row tiles for the last rows (batches 1-3: no padding rows computed)
_tile, _tile3, _tile2, _tile1 = (_tile_rows(r) for r in (4, 3, 2, 1))


@_jit
def int_mm_packed(a_pairs, panels, out, p_lo, p_hi):
    # out[:, 16p:16p+16] += a @ panel p for p in [p_lo, p_hi); a_pairs (M, K/2) int32 holds
    # the int16 pairs of ``a``, panels from pack_b, out (M, 16 P) int32
    m_rows, kp = a_pairs.shape
    m4 = m_rows - m_rows % TILE_M
    a0, b0, o0 = a_pairs.ctypes.data, panels.ctypes.data, out.ctypes.data
    sa, so = a_pairs.strides[0], out.strides[0]
    for k0 in range(0, kp, K_BLOCK):
        kn = min(K_BLOCK, kp - k0)
        for p in range(p_lo, p_hi):
            b_ptr = b0 + (p * kp + k0) * 2 * TILE_N
            for m in range(0, m4, TILE_M):
                _tile(a0 + m * sa + k0 * 4, sa, b_ptr, o0 + m * so + p * 4 * TILE_N, so, kn)
            a_m, o_m = a0 + m4 * sa + k0 * 4, o0 + m4 * so + p * 4 * TILE_N
            if m_rows - m4 == 3:
                _tile3(a_m, sa, b_ptr, o_m, so, kn)
            elif m_rows - m4 == 2:
                _tile2(a_m, sa, b_ptr, o_m, so, kn)
            elif m_rows - m4 == 1:
                _tile1(a_m, sa, b_ptr, o_m, so, kn)


# -- the rescale of int_linear -----------------------------------------------------------------
@_jit
def rescale(planes, s_a, s_b, z_a, sums, out, m_lo, m_hi):
    # out[m, n] = sum_g f32(planes[g, m, n] - z_a[m, g] sums[g, n]) * s_a[m, g] * s_b[g, n]
    # for rows [m_lo, m_hi), in float32 and in the order of gemm.int_linear's NumPy passes
    # (convert, times s_a, times s_b, the groups summed in order): the same bits in one pass
    # over the planes. s_a (M, 1 or G), s_b (1 or G, N), z_a like s_a (int64) or empty, sums
    # (G, N) int32 or empty
    groups, _, n_cols = planes.shape
    ga, gb = s_a.shape[1], s_b.shape[0]
    has_z = z_a.size > 0
    for m in range(m_lo, m_hi):
        for g in range(groups):
            sa = s_a[m, g % ga]
            zg = z_a[m, g % ga] if has_z else 0
            for n in range(n_cols):
                v = planes[g, m, n]
                if has_z:
                    v = np.int32(v - zg * sums[g, n])
                p = np.float32(v) * sa * s_b[g % gb, n]
                out[m, n] = p if g == 0 else out[m, n] + p
