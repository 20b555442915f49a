"""The fast route of ``gemm.int_linear`` on the VNNI kernel: the float32 input quantized to the
kernel's uint8 operand in one compiled pass (``_act_kernels``), then one pass of the kernel
with the rescale in its tiles, with no NumPy pass or Tensor in between.

It takes int activations of at most 8 bits per tensor (dynamic or static; symmetric or affine:
one zero point joins the outputs' start) or per token (dynamic, symmetric: a zero point per
row would need a start per row), on a weight the VNNI kernel packed (whole K, or the weight's
groups along K); a float32 input. Elsewhere :func:`int_linear_fused` returns None and
int_linear runs its NumPy route, which gives the same bits (tested).

Why: at 4096 x 4096 the NumPy route's passes over the input, its Tensors and its per-call
arrays cost 0.2-0.4 ms a call beside a kernel of 0.3 ms (batch 1) to 3 ms (batch 64), where
torch.ao's whole call is 0.6-4 ms (docs/quant.md, "Measured").
"""

from __future__ import annotations

import numpy as np

from .. import _threads
from . import kernels

# multiply-adds per thread part of the fused call: at the VNNI kernel's ~400 G a second a core,
# kernels._MIN_PART_MACS (2^22, ~1 ms of the portable loops) is 10 us of work, far below what a
# hand-off to the pool repays. 2^25 (~0.1 ms): batch 1 (2^24) runs on the calling thread, and
# on a busy machine batches 4-16 do too (_threads' BUSY_FACTOR); measured against 2^22 in the
# bench's rounds (load 5): 0.97 / 0.81 / 0.92x the time at batches 1 / 4 / 16, and one thread
# 0.95 / 0.74 / 0.94x. Batch 64 splits as before.
_MIN_PART_MACS = 1 << 25


def _act():
    """The compiled quantizing pass (``_act_kernels``), or None where numba fails (cached;
    int_linear's NumPy route gives the same bits)."""
    return kernels._lazy("act", "_act_kernels")


def _scheme_kind(act):
    # "tensor" / "token" where this route takes the activation scheme, else None
    if not (act.is_int and act.bits <= 8):
        return None
    if act.granularity == "per_tensor":
        return "tensor"
    if act.granularity == "per_channel" and act.axis in (0, -2) and act.symmetric:
        return "token"
    return None


def _s_b(weight, groups, n_pad):
    """The weight's scales as the tiles read them, (G, 32 P) float32 zero-padded past N: made
    once per group count and kept on the IntWeight with the bytes of the scales it was made
    from (a scale buffer written in place is seen: one copy and compare of 4 N bytes, ~2 us
    at N = 4096, where np.array_equal took ~10 us)."""
    cache = weight.__dict__.setdefault("_fused", {})
    src = np.asarray(weight.scale)
    key = src.tobytes()
    hit = cache.get(groups)
    if hit is not None and hit[0] == key and hit[1] == src.shape:
        return hit[2]
    n = weight.packed.n
    s_b = np.asarray(src, np.float32).reshape(-1)
    s_b = s_b.reshape(1, 1) if s_b.size == 1 else s_b.reshape(n, -1 if s_b.size != n else 1)
    pad = np.zeros((groups, n_pad), np.float32)
    pad[:, :n] = np.broadcast_to(s_b.T, (groups, n))
    cache[groups] = (key, src.shape, pad)
    return pad


def int_linear_fused(a, weight, act, act_qparams, chunk, bias):
    """``gemm.int_linear(a, weight, act, act_qparams, bias)`` (``chunk``: its K-chunk) on this
    route, the same float32 bits; None where the route does not take the call (see the
    module's docstring), and where a dynamic input holds Inf or NaN (int_linear's own
    route raises then)."""
    kind = _scheme_kind(act)
    packed = weight.packed
    # (the checks of kernels._applies, written out: each Python step counts from cold caches)
    if kind is None or packed is None or packed.kind != "vnni" or chunk % 4 or \
            packed.k % chunk or type(a) is not np.ndarray or a.dtype != np.float32 or \
            not a.size or (act_qparams is not None and (kind != "tensor" or any(
                np.size(v) != 1 for v in act_qparams))):
        return None
    mod, vnni = _act(), kernels._vnni()
    if mod is None or vnni is None or not kernels.compiled_available():
        return None
    kernels._check_k(a.shape[1], "int_mm")
    if not a.flags.c_contiguous:
        a = np.ascontiguousarray(a)
    m = a.shape[0]
    groups = packed.k // chunk
    panels = packed.panels
    kp, n_pad = 4 * panels.shape[1], panels.shape[0] * vnni.TILE_N
    u = np.empty((m, kp), np.uint8)
    s_rows = np.empty((m, groups), np.float32)
    static_s = static_z = np.float32(0)
    if act_qparams is not None:  # as quantizer.quantize casts them: both to float32
        if not np.isfinite(a).all():
            return None  # NaN's codes are NumPy's cast's to decide: its route
        static_s = np.asarray(act_qparams[0]).astype(np.float32).reshape(-1)[0]
        static_z = np.float32(np.asarray(act_qparams[1]).reshape(-1)[0])
    sums = packed.sums(groups) if not act.symmetric else _NO_SUMS
    start = np.empty(sums.shape, np.int32)
    ok, z = mod.prepare(a, u, s_rows, act.qmin, act.qmax,
                        2 ** (act.bits - 1) if act.full_range else act.qmax, act.symmetric,
                        kind == "token", act_qparams is not None, static_s, static_z, sums,
                        start)
    if not ok:
        return None
    if z == 0:  # else prepare made the start, the zero point's share joined
        start = packed.start(groups)
    s_b = _s_b(weight, groups, n_pad)
    scratch = np.empty((1, m, n_pad) if chunk > 4 * vnni.K_BLOCK else (1, 1, 1), np.int32)
    out = np.empty((m, n_pad), np.float32)
    per_part = max(1, _MIN_PART_MACS // max(1, m * kp * vnni.TILE_N))
    _threads.parallel(panels.shape[0], lambda lo, hi: vnni.int_mm_packed_scaled(
        u, panels, start, scratch, out, s_rows, s_b, lo, hi), per_part)
    if n_pad != packed.n:
        out = out[:, :packed.n]
    if bias is not None:
        out += bias  # as int_linear: in bias's dtype, rounded once to float32
    return out


_NO_SUMS = np.zeros((0, 0), np.uint32)  # symmetric activations: no zero point, no start made
