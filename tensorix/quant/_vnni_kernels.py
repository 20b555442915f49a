"""numba kernel of ``kernels.int_mm`` on CPUs with AVX-512 VNNI: int8 x int8 -> int32, exact.

Imported only by ``kernels._vnni()`` (the AVX2 kernel of ``_int_kernels`` is the route where
this CPU lacks VNNI or this module fails to compile).

``vpdpbusd`` multiplies 64 unsigned bytes by 64 signed bytes and adds each 4 products to one of
16 int32 lanes: 64 multiply-adds per instruction, 4x the AVX2 kernel's ``vpmaddwd`` on ymm
(16, plus a separate add), and the weight panel is read as bytes, with no sign extension. Its
first operand is unsigned, so the activations run as ``u = a + 128`` (``a ^ 0x80`` on the bytes)
and each output starts from ``-128 colsum(w)``: ``sum_k (a_k + 128) w_k - 128 sum_k w_k =
sum_k a_k w_k``. Every add wraps modulo 2^32 and the true result fits in int32 (``K <= 2^17``),
so the result is exact even where a partial sum of the shifted products leaves int32. (fbgemm,
torch.ao's CPU engine, runs the same instruction on its uint8 activations.)

Measured (one core, 4096 x 4096 weight, load 2-4): 5.4-5.9 ms at batch 64, 2.5x faster than
the AVX2 kernel on both cores; a dot-product form on the weight's own (N, K) rows (no packed
copy) took 1.12-1.26x this kernel's CPU time at batches 4-64. With the panel prefetch, one
core, the weight in cache (load 6, best of 30): 2.80 ms at batch 64 and 0.66 ms at 16, 384-408
G multiply-adds a second, about two ``vpdpbusd`` a cycle: the load-2-4 figure was a core
shared with others, not this core's rate.

The weight is packed once (:func:`pack_b`) into panels of 32 columns: for each quad of k, the
32 columns' four bytes side by side (128 bytes: two zmm loads). The micro-tile keeps R x 2
zmm accumulators (R rows of ``a``, up to 8: 16 of the 32 registers), broadcasts each row's
four bytes, and runs 2R ``vpdpbusd`` per quad; written in LLVM IR through
``numba.extending.intrinsic`` as the AVX2 kernel is, since LLVM does not find ``vpdpbusd`` in
a loop of int8 products.
"""

import llvmlite.binding as llb
import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from ._int_kernels import _addressing, _close_loop

_jit = numba.njit(boundscheck=False, cache=True, nogil=True)

TILE_M, TILE_N = 8, 32  # rows of ``a`` and weight columns per micro-tile: 16 zmm accumulators
K_BLOCK = 1024  # k-quads per pass over a panel (K <= 4096 in one pass; 256, a panel block in L1,
# measured 1.0-1.1x the time at batches 16-64, load 5.8, same run)
PREFETCH = 8192  # bytes of the panel stream fetched into L1 ahead of the tile (prefetcht0, two
# lines a k-quad): a weight that comes from DRAM (a layer among others: 4096 x 4096, one core,
# caches flushed between calls, interleaved, load 8-15) took 0.61-0.84x the time without at
# batches 4-16, 0.89-0.96x at 64, the same at 1; 2 KiB ahead gained less (0.81-0.97x), 16 KiB
# and an L2 hint (prefetcht1) about as much. A prefetch past the panels' end does not fault.


def vnni() -> bool:
    """Whether this CPU runs the ``vpdpbusd`` micro-kernel (AVX-512 F/BW/VNNI), and numba
    compiles for it (not for another target, ``NUMBA_CPU_NAME``: LLVM would abort)."""
    if numba.config.CPU_NAME not in (None, "host"):
        return False
    f = llb.get_host_cpu_features()
    return all(f.get(k, False) for k in ("avx512f", "avx512bw", "avx512vnni"))


def pack_b(bt):
    """Weight rows ``bt`` (N, K) int8 -> panels (ceil(N/32), ceil(K/4), 128) int8: for each 32
    output columns and each quad of k, the quads of the 32 columns side by side. Zero padding
    on N and K adds nothing to the sums."""
    n, k = bt.shape
    n_pad, k_pad = -(-n // TILE_N) * TILE_N, -(-k // 4) * 4
    b = np.zeros((n_pad, k_pad), np.int8)
    b[:n, :k] = bt
    quads = b.view(np.int32).reshape(n_pad // TILE_N, TILE_N, k_pad // 4)
    return np.ascontiguousarray(quads.transpose(0, 2, 1)).view(np.int8)


def start_rows(panels, groups):
    """The outputs' start per group of k-quads, ``-128 * sum_k w[n, k]`` over each of
    ``groups`` equal runs of quads: (groups, 32 P) int32, summed from the panels themselves."""
    p, kq = panels.shape[:2]
    q = panels.reshape(p, groups, kq // groups, TILE_N, 4)
    sums = q.sum(axis=(2, 4), dtype=np.int32)  # (P, groups, 32)
    return np.ascontiguousarray(sums.transpose(1, 0, 2)).reshape(groups, -1) * np.int32(-128)


def pack_b4(panels):
    """int8 panels of int4 codes (in [-8, 7]) -> (P, KQ, 64) uint8, half the bytes: byte j of a
    k-quad holds byte j of the 128 (columns 0-15) in its low nibble and byte 64 + j (columns
    16-31) in its high one, so the tile unpacks both zmm operands from one 64-byte load with
    an and, a shift and a sign extension ``(v ^ 8) - 8`` per byte."""
    u = panels.view(np.uint8)
    return (u[..., :64] & np.uint8(0x0F)) | (u[..., 64:] << np.uint8(4))


def unpack_b4(nib):
    """Inverse of :func:`pack_b4`: (P, KQ, 64) nibbles -> (P, KQ, 128) int8 panels."""
    halves = [(nib & np.uint8(0x0F)), (nib >> np.uint8(4))]
    out = np.concatenate(halves, axis=-1).view(np.int8)
    return (out ^ np.int8(8)) - np.int8(8)


_I32, _I8 = ir.IntType(32), ir.IntType(8)
_V16I32 = ir.VectorType(_I32, 16)


_F32 = ir.FloatType()
_V16F32 = ir.VectorType(_F32, 16)


def _tile_ir(rows, nibble, context, builder, args):
    # acc[r, 0:32] = init[r, 0:32] + sum_kq u[r, kq] . panel[kq] for ``rows`` (1-8) rows: per
    # k-quad two 64-byte panel loads, and per row one broadcast of its four bytes and two
    # vpdpbusd; the accumulators start from ``init`` (row stride ``i_stride``: 0 repeats one
    # row) and end in ``out``: as int32 (mode 0), or rescaled to float32, ``f32(acc) * s_a[r]
    # * s_b[0:32]`` (s_a at ``sa_ptr`` with row stride ``sa_stride``, s_b at ``sb_ptr``),
    # stored (mode 1) or added to ``out`` (mode 2) - gemm.int_linear's rescale, in its order.
    # ``nibble``: the panel holds int4 codes two a byte (pack_b4), 64 bytes a k-quad
    a_ptr, a_stride, b_ptr, i_ptr, i_stride, o_ptr, o_stride, kq, sa_ptr, sa_stride, sb_ptr, \
        mode = args
    i64 = a_ptr.type
    dpbusd = builder.module.declare_intrinsic(
        "llvm.x86.avx512.vpdpbusd.512", fnty=ir.FunctionType(_V16I32, [_V16I32] * 3))
    at, c = _addressing(builder, i64)

    init = [builder.load(at(i_ptr, _V16I32, builder.mul(i_stride, c(r)), c(64 * h)), align=4)
            for r in range(rows) for h in range(2)]
    out_ptrs = [at(o_ptr, _V16I32, builder.mul(o_stride, c(r)), c(64 * h))
                for r in range(rows) for h in range(2)]
    entry = builder.block
    loop, done = builder.append_basic_block("tile_loop"), builder.append_basic_block("tile_done")
    builder.cbranch(builder.icmp_signed(">", kq, c(0)), loop, done)
    builder.position_at_end(loop)
    i = builder.phi(i64)
    accs = [builder.phi(_V16I32) for _ in init]
    quad_bytes = 64 if nibble else 128
    base = builder.mul(i, c(quad_bytes))
    if nibble:  # one load; the low nibbles are columns 0-15, the high ones 16-31
        v64 = ir.VectorType(_I8, 64)
        raw = builder.load(at(b_ptr, v64, base), align=1)
        low, eight = ir.Constant(v64, [0x0F] * 64), ir.Constant(v64, [8] * 64)
        halves = (builder.and_(raw, low), builder.and_(builder.lshr(raw, ir.Constant(
            v64, [4] * 64)), low))
        panel = [builder.bitcast(builder.sub(builder.xor(x, eight), eight), _V16I32)
                 for x in halves]
    else:
        panel = [builder.load(at(b_ptr, _V16I32, base, c(64 * h)), align=1) for h in range(2)]
    prefetch = builder.module.declare_intrinsic(
        "llvm.prefetch", fnty=ir.FunctionType(ir.VoidType(), [_I8.as_pointer(), _I32, _I32, _I32]))
    for h in range(quad_bytes // 64):  # read (0), keep in L1 (3), data (1)
        builder.call(prefetch, [at(b_ptr, _I8, base, c(PREFETCH + 64 * h)), ir.Constant(_I32, 0),
                                ir.Constant(_I32, 3), ir.Constant(_I32, 1)])
    new = []
    for r in range(rows):
        quad = builder.load(at(a_ptr, _I32, builder.mul(a_stride, c(r)), builder.mul(i, c(4))),
                            align=1)
        v = builder.insert_element(ir.Constant(_V16I32, ir.Undefined), quad,
                                   ir.Constant(_I32, 0))
        v = builder.shuffle_vector(v, v, ir.Constant(_V16I32, [0] * 16))
        for h in range(2):
            new.append(builder.call(dpbusd, [accs[2 * r + h], v, panel[h]]))
    results = _close_loop(builder, i, kq, entry, loop, done, accs, init, new)
    with builder.if_else(builder.icmp_signed("==", mode, c(0))) as (as_int, as_float):
        with as_int:
            for res, p in zip(results, out_ptrs):
                builder.store(res, p, align=4)
        with as_float:
            add = builder.icmp_signed("==", mode, c(2))
            s_b = [builder.load(at(sb_ptr, _V16F32, c(64 * h)), align=4) for h in range(2)]
            for r in range(rows):
                s = builder.load(at(sa_ptr, _F32, builder.mul(sa_stride, c(r))), align=4)
                s = builder.insert_element(ir.Constant(_V16F32, ir.Undefined), s,
                                           ir.Constant(_I32, 0))
                s = builder.shuffle_vector(s, s, ir.Constant(_V16I32, [0] * 16))
                for h in range(2):
                    part = builder.fmul(builder.fmul(
                        builder.sitofp(results[2 * r + h], _V16F32), s), s_b[h])
                    p = builder.bitcast(out_ptrs[2 * r + h], _V16F32.as_pointer())
                    old = builder.load(p, align=4)  # np.empty's bytes in mode 1: not used
                    builder.store(builder.select(add, builder.fadd(old, part), part), p,
                                  align=4)
    return context.get_dummy_value()


def _tile_rows(rows, nibble=False):
    @intrinsic
    def tile(typingctx, a_ptr, a_stride, b_ptr, i_ptr, i_stride, o_ptr, o_stride, kq, sa_ptr,
             sa_stride, sb_ptr, mode):
        return types.void(*([types.intp] * 12)), \
            lambda context, builder, signature, args: _tile_ir(rows, nibble, context, builder,
                                                               args)
    return tile


_t1, _t2, _t3, _t4, _t5, _t6, _t7, _t8 = (_tile_rows(r) for r in range(1, 9))
_n1, _n2, _n3, _n4, _n5, _n6, _n7, _n8 = (_tile_rows(r, True) for r in range(1, 9))


@_jit
def _tile4(rows, a, sa, b, i, si, o, so, kq, fa, fsa, fb, mode):
    # the tiles on int4 panels (pack_b4)
    if rows == 8:
        _n8(a, sa, b, i, si, o, so, kq, fa, fsa, fb, mode)
    elif rows == 7:
        _n7(a, sa, b, i, si, o, so, kq, fa, fsa, fb, mode)
    elif rows == 6:
        _n6(a, sa, b, i, si, o, so, kq, fa, fsa, fb, mode)
    elif rows == 5:
        _n5(a, sa, b, i, si, o, so, kq, fa, fsa, fb, mode)
    elif rows == 4:
        _n4(a, sa, b, i, si, o, so, kq, fa, fsa, fb, mode)
    elif rows == 3:
        _n3(a, sa, b, i, si, o, so, kq, fa, fsa, fb, mode)
    elif rows == 2:
        _n2(a, sa, b, i, si, o, so, kq, fa, fsa, fb, mode)
    else:
        _n1(a, sa, b, i, si, o, so, kq, fa, fsa, fb, mode)


@_jit
def _tile(rows, a, sa, b, i, si, o, so, kq, fa, fsa, fb, mode, nibble=False):
    # numba needs the tile's row count as a compile-time constant: one call site per count
    if nibble:
        _tile4(rows, a, sa, b, i, si, o, so, kq, fa, fsa, fb, mode)
    elif rows == 8:
        _t8(a, sa, b, i, si, o, so, kq, fa, fsa, fb, mode)
    elif rows == 7:
        _t7(a, sa, b, i, si, o, so, kq, fa, fsa, fb, mode)
    elif rows == 6:
        _t6(a, sa, b, i, si, o, so, kq, fa, fsa, fb, mode)
    elif rows == 5:
        _t5(a, sa, b, i, si, o, so, kq, fa, fsa, fb, mode)
    elif rows == 4:
        _t4(a, sa, b, i, si, o, so, kq, fa, fsa, fb, mode)
    elif rows == 3:
        _t3(a, sa, b, i, si, o, so, kq, fa, fsa, fb, mode)
    elif rows == 2:
        _t2(a, sa, b, i, si, o, so, kq, fa, fsa, fb, mode)
    else:
        _t1(a, sa, b, i, si, o, so, kq, fa, fsa, fb, mode)


@_jit
def int_mm_packed(a_u8, panels, start, out, p_lo, p_hi):
    # out[g, :, 32p:32p+32] = (a_u8 - 128) @ panel p over the g-th of G equal runs of k-quads,
    # for p in [p_lo, p_hi): a_u8 (M, 4 KQ) uint8 (the int8 activations plus 128), panels from
    # pack_b, start (G, 32 P) from start_rows, out (G, M, 32 P) int32 (G = 1: the whole K)
    _packed(a_u8, panels, start, out, out[0], out[0, 0], out[0, 0], p_lo, p_hi, False)


@_jit
def int_mm_packed_scaled(a_u8, panels, start, scratch, out, s_a, s_b, p_lo, p_hi):
    # out[:, 32p:32p+32] = sum_g f32((a_u8 - 128) @ panel p over group g) * s_a[:, g] * s_b[g]
    # (gemm.int_linear's rescale fused into the tiles: no int32 plane per group), in float32
    # in its order; s_a (M, G), s_b (G, 32 P) float32; scratch (1, M, 32 P) int32 holds a
    # group's sums between K blocks when a group is longer than one block
    _packed(a_u8, panels, start, scratch, out, s_a, s_b, p_lo, p_hi, True)


@_jit
def _packed(a_u8, panels, start, out, fout, s_a, s_b, p_lo, p_hi, scaled):
    m_rows = a_u8.shape[0]
    kq, qb = panels.shape[1], panels.shape[2]  # qb: bytes a k-quad, 128 (int8) or 64 (int4)
    nibble = qb == 64
    groups = start.shape[0]
    gq = kq // groups
    a0, b0, o0 = a_u8.ctypes.data, panels.ctypes.data, out.ctypes.data
    sa, so = a_u8.strides[0], out.strides[1]
    f0, sf = fout.ctypes.data, fout.strides[0]
    for p in range(p_lo, p_hi):
        for g in range(groups):
            o_g = o0 + (0 if scaled else g * out.strides[0]) + p * 4 * TILE_N
            s_g = start.ctypes.data + g * start.strides[0] + p * 4 * TILE_N
            sb_g = s_b.ctypes.data + g * s_b.strides[0] + p * 4 * TILE_N if scaled else 0
            for k0 in range(g * gq, (g + 1) * gq, K_BLOCK):
                kn = min(K_BLOCK, (g + 1) * gq - k0)
                b_ptr = b0 + (p * kq + k0) * qb
                last = scaled and k0 + kn == (g + 1) * gq
                for m in range(0, m_rows, TILE_M):
                    rows = min(TILE_M, m_rows - m)
                    a_m, o_m = a0 + m * sa + k0 * 4, o_g + m * so
                    # a group's first pass starts from its -128 colsum(w); its last, scaled,
                    # ends in the float output (stored for the first group, added after)
                    i_m, i_s = (s_g, 0) if k0 == g * gq else (o_m, so)
                    if last:
                        _tile(rows, a_m, sa, b_ptr, i_m, i_s, f0 + m * sf + p * 4 * TILE_N, sf,
                              kn, s_a.ctypes.data + m * s_a.strides[0] + g * 4, s_a.strides[0],
                              sb_g, 1 if g == 0 else 2, nibble)
                    else:
                        _tile(rows, a_m, sa, b_ptr, i_m, i_s, o_m, so, kn, 0, 0, 0, 0, nibble)
