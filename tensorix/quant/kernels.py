"""Integer kernels: exact int8 x int8 -> int32 GEMM, and packed int4 storage and GEMM.

NumPy's integer matmul runs no BLAS (a naive loop, and ``int8 @ int8`` wraps in int8), so
:func:`int_mm` takes one of two exact routes:

* **compiled** (CPU, numba installed - the ``jit`` extra), split over
  ``tensorix.set_num_threads`` threads by output columns: on CPUs with AVX-512 VNNI an 8 x 32
  ``vpdpbusd`` micro-kernel on the weight packed once (``_vnni_kernels.py``; activations
  shifted to uint8, each output started at ``-128 * rowsum(w)``); else the AVX2 ``vpmaddwd``
  micro-kernel on its own packing, or numba loops without AVX2 (``_int_kernels.py``). Weights
  move as int8, a quarter of float32's bytes. Grouped products (int4 / int6 weights in groups
  along K) take every group's int32 sums from one VNNI pass (:func:`_int_mm_groups`).
* **BLAS** (no numba, and CuPy): float32 GEMMs through ``tensorix._threads.matmul`` (cuBLAS on
  CuPy) over chunks of at most 1024 along K, summed in int32. Every product has
  ``|a b| <= 2^14`` and every partial sum of a chunk ``<= 1024 * 2^14 = 2^24``, so float32
  holds it exactly whatever order the BLAS adds in.

Both are exact for any int8 inputs with ``K <= 2^17`` (``K * 128^2 < 2^31``); larger K raises.

int4 codes (``[-8, 7]``) are stored two per byte along the last dimension, low nibble first
(``pack_int4`` / ``unpack_int4``, on ``tensorix.numerics.pack_fp4``'s byte layout);
:func:`int4_mm` unpacks and multiplies.

Example::

    >>> a = tensorix.full((2, 4096), -128, dtype=tensorix.int8)
    >>> int_mm(a, a.T)[0, 0].item()          # 4096 * 128^2, exact
    67108864
"""

from __future__ import annotations

import importlib
import threading
import warnings

import numpy as np

from .. import _threads
from ..backend import array_module
from ..tensor import Tensor, _make

__all__ = ["int_mm", "int4_mm", "pack_int4", "unpack_int4", "compiled_available"]

K_MAX = 1 << 17  # K * 128 * 128 must stay below 2^31 for int32 sums
_CHUNK = 1024  # 1024 * 128^2 = 2^24: float32 sums of one chunk are exact integers
_PACK_ROWS = 64  # packing a weight per call costs about a 2 x 2-tile GEMM of 16-32 rows
_MIN_PART_MACS = 1 << 22  # multiply-adds per thread part (~1 ms): less is not worth a thread
_state: dict = {}
_lock = threading.Lock()


def _lazy(key, name, usable=lambda mod: True):
    """This package's numba module ``name``, imported once (under a lock, numba's warnings
    silenced) and kept in ``_state[key]`` where ``usable(module)``; else None: numba missing,
    failing to compile, or the CPU without the instructions (every caller has an exact
    fallback route)."""
    if key not in _state:
        with _lock:
            if key not in _state:
                mod = None
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        found = importlib.import_module(f".{name}", __package__)
                    if usable(found):
                        mod = found
                except Exception:  # noqa: BLE001 - the fallback routes are exact too
                    mod = None
                _state[key] = mod
    return _state[key]


def _compiled():
    """The numba kernels module, or None (numba missing or failing to compile, or its JIT
    disabled: the BLAS path is exact too; cached)."""
    return _lazy("k", "_int_kernels", lambda mod: not mod.numba.config.DISABLE_JIT)


def compiled_available() -> bool:
    """Whether :func:`int_mm` runs the compiled CPU kernel (numba present and working)."""
    jit = _state.get("jit")
    if jit is None:  # the module kept: an import statement per call cost ~30 us from cold caches
        from ..numerics import _jit as jit

        _state["jit"] = jit
    return jit.ENABLED and _compiled() is not None


def _raw_int8(x, op, name):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be a Tensor, not {type(x).__name__}")
    if x._data.dtype != np.int8:
        raise TypeError(f"{op}(): argument '{name}' must be an int8 Tensor, got {x.dtype}")
    if x.ndim != 2:
        raise ValueError(f"{op}(): argument '{name}' must be 2-d, got shape {tuple(x.shape)}")
    return x._data


def _check_k(k, op):
    if k > K_MAX:
        raise ValueError(f"{op}(): K = {k} is too large for exact int32 sums of int8 products "
                         f"(K <= {K_MAX})")


def _blas(a, b, acc=np.int32):
    """``a @ b`` exactly, by float32 GEMMs over K chunks of <= 1024 (any backend), summed in
    ``acc`` (int32; float64 keeps longer K exact, for ``numerics.ozaki``)."""
    xp = array_module(a)
    m, k = a.shape
    out = xp.zeros((m, b.shape[1]), dtype=acc)
    for s in range(0, max(k, 1), _CHUNK):
        a32 = a[:, s:s + _CHUNK].astype(np.float32)
        b32 = b[s:s + _CHUNK].astype(np.float32)
        prod = _threads.matmul(a32, b32) if xp is np else a32 @ b32
        out += prod.astype(acc)
    return out


def _avx2(kern):
    if "avx2" not in _state:
        _state["avx2"] = kern.avx2()
    return _state["avx2"]


def _vnni():
    """The AVX-512 VNNI kernels module where this CPU runs them (and numba compiles them),
    else None (cached; tests set ``_state["vnni"]`` to False to run the AVX2 route)."""
    return _lazy("vnni", "_vnni_kernels", lambda mod: mod.vnni() and _vnni_works(mod)) or None


def _vnni_works(mod) -> bool:
    # compile and run both entry points once on a small product (a numba set to another CPU
    # target, e.g. NUMBA_CPU_NAME=generic, cannot select vpdpbusd: the AVX2 route then)
    rng = np.random.default_rng(0)
    a, w = (rng.integers(-128, 128, s).astype(np.int8) for s in ((3, 8), (5, 8)))
    panels = mod.pack_b(w)
    start = mod.start_rows(panels, 2)
    u = np.bitwise_xor(a.view(np.uint8), np.uint8(0x80))
    planes = np.empty((2, 3, 32), np.int32)
    mod.int_mm_packed(u, panels, start, planes, 0, 1)
    out = np.empty((3, 32), np.float32)
    mod.int_mm_packed_scaled(u, panels, start, np.empty((1, 1, 1), np.int32), out,
                             np.ones((3, 2), np.float32), np.ones((2, 32), np.float32), 0, 1)
    ref = [a[:, :4].astype(np.int64) @ w[:, :4].T, a[:, 4:].astype(np.int64) @ w[:, 4:].T]
    # and the int4 panels' tiles, on codes in [-8, 7]
    w4 = (w >> 4).astype(np.int8)
    nib = np.empty((2, 3, 32), np.int32)
    mod.int_mm_packed(u, mod.pack_b4(mod.pack_b(w4)), mod.start_rows(mod.pack_b(w4), 2), nib,
                      0, 1)
    ref4 = a.astype(np.int64) @ w4.T
    return bool((planes[0, :, :5] == ref[0]).all() and (planes[1, :, :5] == ref[1]).all() and
                (out[:, :5] == ref[0] + ref[1]).all() and (nib.sum(0)[:, :5] == ref4).all())


class PackedWeight:
    """An int8 weight (N, K) in one micro-kernel's panel layout, made once by
    :func:`pack_weight`: ``kind`` ``"vnni"`` (32-column panels of k-quads: int8, or uint8 with
    two int4 codes a byte) or ``"avx2"`` (16-column panels of k-pairs). The VNNI kernel starts
    each output from ``-128 * sum_k w[n, k]`` over its group of K (:meth:`start`, made once per
    group count)."""

    __slots__ = ("kind", "panels", "n", "k", "_starts")

    def __init__(self, kind, panels, n, k):
        self.kind, self.panels, self.n, self.k, self._starts = kind, panels, n, k, {}

    def start(self, groups: int, z: int = 0):
        """(groups, 32 P) int32 starts of the VNNI kernel for ``groups`` equal runs of K:
        ``-(128 + z) sum_k w[n, k]`` over each run, wrapping modulo 2^32 as the int32 sums do
        (``z``: one zero point of the activations; its starts are made per call, ~2 us at
        N = 4096, from the sums kept beside as uint32: exact, since ``|sum| <= 2^24``, and
        their products wrap modulo 2^32 by definition, as the int32 sums do)."""
        if groups not in self._starts:
            self._starts[groups] = _vnni().start_rows(self._int8_panels(), groups)
        if z == 0:
            return self._starts[groups]
        return (self.sums(groups) * np.uint32((-(128 + z)) % (1 << 32))).view(np.int32)

    def sums(self, groups: int):
        """(groups, 32 P) uint32: each run's ``sum_k w[n, k]`` (exact: ``|sum| <= 2^24``), what
        a zero point's start is made from (:meth:`start`)."""
        key = ("sums", groups)
        if key not in self._starts:
            p, kq = self.panels.shape[:2]
            q = self._int8_panels().reshape(p, groups, kq // groups, -1, 4)
            sums = q.sum(axis=(2, 4), dtype=np.int64).transpose(1, 0, 2).reshape(groups, -1)
            self._starts[key] = sums.astype(np.int32).view(np.uint32)
        return self._starts[key]

    def _int8_panels(self):
        # int4 panels (uint8, two codes a byte) unpacked for the sums, made once per start
        return self.panels if self.panels.dtype == np.int8 else _vnni().unpack_b4(self.panels)

    @property
    def nbytes(self) -> int:
        """Bytes of the panels and the starts made so far."""
        return self.panels.nbytes + sum(v.nbytes for v in self._starts.values())


def _pack(kern, wt, int4=False):
    # wt: (N, K) int8 rows of the weight; the fastest micro-kernel this CPU runs
    vnni = _vnni()
    if vnni is not None:
        panels = vnni.pack_b(wt)
        return PackedWeight("vnni", vnni.pack_b4(panels) if int4 else panels, *wt.shape)
    if _avx2(kern):
        return PackedWeight("avx2", kern.pack_b(wt), *wt.shape)
    return None


def pack_weight(w, int4=False):
    """The int8 weight ``w`` (N, K) (rows = output features) as a :class:`PackedWeight` for
    the CPU's micro-kernel (AVX-512 VNNI, else AVX2), or None where neither runs (no numba, no
    AVX2, or a CuPy array). Layers pack once and pass it to ``_int_mm_raw(a, w.T, packed)``:
    packing costs a pass over the weight, as much as a GEMM of a few rows. ``int4``: the codes
    lie in [-8, 7], and the VNNI panels keep two a byte (half the bytes held and read; the
    tiles unpack them)."""
    kern = _compiled() if array_module(w) is np and compiled_available() else None
    return None if kern is None else _pack(kern, np.ascontiguousarray(w), int4)


def _int_mm_raw(a, b, packed=None):
    """int32 ``a @ b`` of int8 arrays (a: (M, K), b: (K, N)); ``packed``: ``pack_weight(b.T)``
    when the caller keeps one."""
    _check_k(a.shape[1], "int_mm")
    xp = array_module(a)
    kern = _compiled() if xp is np and compiled_available() else None
    if kern is None:
        return _blas(a, b)
    m, n = a.shape[0], b.shape[1]
    if packed is None and m >= _PACK_ROWS:
        packed = _pack(kern, b.T)
    if packed is not None and packed.kind == "vnni" and _vnni() is not None:
        return _vnni_mm(_vnni(), a, packed, m, n)[0]
    if packed is not None and packed.kind == "avx2" and _avx2(kern):
        return _packed_mm(kern, a, packed.panels, m, n)
    bt = b.T if b.T.flags.c_contiguous else np.ascontiguousarray(b.T)  # a weight's .T is free
    if m >= 4:  # 4-row tiles on int16 rows (zero rows pad M to a multiple of 4)
        a16 = np.zeros((-(-m // 4) * 4, a.shape[1]), np.int16)
        a16[:m] = a
        run, a = kern.int_mm_nt4, a16
    else:
        run, a = kern.int_mm_nt, np.ascontiguousarray(a)
    out = np.empty((a.shape[0], bt.shape[0]), np.int32)
    cols = max(2, _MIN_PART_MACS // max(1, a.shape[0] * a.shape[1]))  # columns per part
    _threads.parallel(bt.shape[0], lambda lo, hi: run(a, bt, out, lo, hi), cols)
    return out[:m]


def _shifted(a, kp):
    # the activations as uint8, a ^ 0x80 = a + 128, with zero columns padding K to ``kp`` (the
    # padded weight is zero there)
    if a.shape[1] == kp:
        return np.bitwise_xor(a.view(np.uint8), np.uint8(0x80))
    u = np.zeros((a.shape[0], kp), np.uint8)
    np.bitwise_xor(a.view(np.uint8), np.uint8(0x80), out=u[:, :a.shape[1]])
    return u


def _vnni_mm(vnni, a, packed, m, n, groups=1):
    # the panels split over the pool by output columns; one int32 (M, N) plane per group of K
    panels = packed.panels
    kp = 4 * panels.shape[1]
    u = _shifted(a, kp)
    start = packed.start(groups)
    out = np.empty((groups, m, panels.shape[0] * vnni.TILE_N), np.int32)
    per_part = max(1, _MIN_PART_MACS // max(1, m * kp * vnni.TILE_N))
    _threads.parallel(panels.shape[0], lambda lo, hi: vnni.int_mm_packed(
        u, panels, start, out, lo, hi), per_part)
    return out[:, :, :n]


def _applies(a, packed, group):
    # whether the VNNI kernel takes ``a`` times ``packed`` in groups of ``group`` along K
    return packed is not None and packed.kind == "vnni" and _vnni() is not None and \
        not group % 4 and not packed.k % group and array_module(a) is np


def _vnni_whole(packed) -> bool:
    """Whether the VNNI kernel takes products with ``packed`` from its panels alone (a K of
    whole quads: every group that divides K into quads is taken too)."""
    return packed is not None and packed.kind == "vnni" and _vnni() is not None and \
        not packed.k % 4


def _int_mm_scaled(a, packed, group, s_a, s_b, z_a=None):
    """float32 ``sum_g f32(a_g @ W_g^T - z_a rowsum(W_g)) * s_a[:, g] * s_b[g]`` over groups
    of ``group`` along K (``gemm.int_linear``'s product: ``s_a`` (M or 1, G or 1), ``s_b``
    (G or 1, N or 1), ``z_a`` None or one zero point), in one VNNI pass with the rescale done
    in the tiles, in int_linear's order (the same bits as its NumPy passes, and no int32 plane
    per group); None where the VNNI kernel does not take it (or zero points per row)."""
    if not _applies(a, packed, group) or (z_a is not None and z_a.size != 1):
        return None
    _check_k(a.shape[1], "int_mm")
    vnni = _vnni()
    m, n, groups = a.shape[0], packed.n, packed.k // group
    panels = packed.panels
    kp, n_pad = 4 * panels.shape[1], panels.shape[0] * vnni.TILE_N
    u = _shifted(a, kp)
    # the zero point's share joins the start: -(128 + z) rowsum(W_g)
    start = packed.start(groups, 0 if z_a is None else int(np.asarray(z_a).reshape(-1)[0]))
    s_a = np.ascontiguousarray(np.broadcast_to(s_a, (m, groups)), dtype=np.float32)
    s_b_pad = np.zeros((groups, n_pad), np.float32)
    s_b_pad[:, :n] = np.broadcast_to(s_b, (groups, n))
    # a group longer than one K block keeps its int32 sums between blocks
    scratch = np.empty((1, m, n_pad) if group > 4 * vnni.K_BLOCK else (1, 1, 1), np.int32)
    out = np.empty((m, n_pad), np.float32)
    per_part = max(1, _MIN_PART_MACS // max(1, m * kp * vnni.TILE_N))
    _threads.parallel(panels.shape[0], lambda lo, hi: vnni.int_mm_packed_scaled(
        u, panels, start, scratch, out, s_a, s_b_pad, lo, hi), per_part)
    return out[:, :n]


def _int_mm_groups(a, packed, group):
    """int32 ``a @ W^T`` per group of ``group`` along K, as (K // group, M, N) planes, in one
    pass of the VNNI kernel over the weight packed whole; None where that kernel does not
    take it (no VNNI packing, or groups off the kernel's quads of k)."""
    if not _applies(a, packed, group):
        return None
    _check_k(a.shape[1], "int_mm")
    return _vnni_mm(_vnni(), a, packed, a.shape[0], packed.n, packed.k // group)


def _rescale(planes, s_a, s_b, z_a, sums):
    """``gemm.int_linear``'s rescale of int32 ``planes`` (G, M, N) in one compiled pass over
    them, split over the pool by rows (the same bits as its NumPy passes, which read and write
    every plane four times: for 32 groups of 128 the rescale cost more than the GEMM), or None
    without the compiled kernels; arguments as ``_int_kernels.rescale`` (None: no zero
    point)."""
    kern = _compiled() if isinstance(planes, np.ndarray) and compiled_available() else None
    if kern is None:
        return None
    g, m, n = planes.shape
    s_a = np.broadcast_to(s_a, (m, s_a.shape[1]))
    s_b = np.broadcast_to(s_b, (s_b.shape[0], n))
    if z_a is None:
        z_a, sums = np.empty((0, 0), np.int64), np.empty((0, 0), np.int32)
    else:
        z_a = np.broadcast_to(z_a.astype(np.int64, copy=False), (m, z_a.shape[1]))
    out = np.empty((m, n), np.float32)
    _threads.parallel(m, lambda lo, hi: kern.rescale(planes, s_a, s_b, z_a, sums, out, lo, hi),
                      max(1, (1 << 17) // max(1, g * n)))
    return out


def _packed_mm(kern, a, panels, m, n):
    # rows of ``a`` widened to int16 (a zero column pads K to pairs), read as int32 pairs; the
    # panels split over the pool by output columns
    if a.shape[1] == 2 * panels.shape[1]:  # even K: one widening pass, no zero fill
        a16 = np.ascontiguousarray(a, np.int16)
    else:
        a16 = np.zeros((m, 2 * panels.shape[1]), np.int16)
        a16[:, :a.shape[1]] = a
    pairs = a16.view(np.int32)
    out = np.zeros((a16.shape[0], panels.shape[0] * kern.TILE_N), np.int32)
    per_part = max(1, _MIN_PART_MACS // max(1, a16.shape[0] * a16.shape[1] * kern.TILE_N))
    _threads.parallel(panels.shape[0], lambda lo, hi: kern.int_mm_packed(pairs, panels, out,
                                                                         lo, hi), per_part)
    return out[:m, :n]


def int_mm(a, b):
    """Exact ``a @ b`` of int8 matrices as int32 (``torch._int_mm``'s contract).

    ``a``: ``(M, K)`` int8 Tensor; ``b``: ``(K, N)`` int8 Tensor (a weight's ``w.T`` view is
    used without a copy). Returns ``(M, N)`` int32 on their device.
    Example: ``int_mm(tensorix.ones(2, 3, dtype=tensorix.int8), tensorix.ones(3, 4,
    dtype=tensorix.int8))`` is all 3.
    """
    ra, rb = _raw_int8(a, "int_mm", "a"), _raw_int8(b, "int_mm", "b")
    if ra.shape[1] != rb.shape[0]:
        raise ValueError(f"int_mm(): shapes {tuple(ra.shape)} and {tuple(rb.shape)} cannot be "
                         "multiplied")
    if a.device != b.device:
        raise ValueError(f"int_mm(): operands on different devices ({a.device} and {b.device})")
    return _make(_int_mm_raw(ra, rb))


# -- int4 ------------------------------------------------------------------------------------
def pack_int4_raw(q):
    """Signed int4 codes (int8 array in [-8, 7], even last dim) -> uint8 bytes, two per byte."""
    from ..numerics.packing import pack_fp4

    xp = array_module(q)
    if q.size and bool(((q < -8) | (q > 7)).any()):
        raise ValueError("pack_int4(): codes must lie in [-8, 7]")
    return pack_fp4(xp.asarray(q).astype(np.uint8) & np.uint8(0x0F))


def unpack_int4_raw(p, n=None):
    """uint8 bytes -> signed int4 codes as int8 (sign-extended), cut to ``n`` along the last
    dim."""
    from ..numerics.packing import unpack_fp4

    u = unpack_fp4(p, n).astype(np.int8)
    return u - ((u & np.int8(8)) << 1)  # nibbles 8..15 are -8..-1


def pack_int4(q):
    """Pack int4 codes two per byte along the last dimension (low nibble first).

    ``q``: int8 Tensor with values in ``[-8, 7]`` and an even last dimension ``n``; returns a
    uint8 Tensor of shape ``(..., n // 2)``, an 8x smaller weight than float32.
    Example: ``pack_int4(tensorix.tensor([1, -1], dtype=tensorix.int8)).tolist()`` is ``[241]``.
    """
    if not isinstance(q, Tensor) or q._data.dtype != np.int8:
        raise TypeError("pack_int4(): argument 'q' must be an int8 Tensor of int4 codes")
    if q.ndim == 0 or q.shape[-1] % 2:
        raise ValueError(f"pack_int4(): the last dimension must be even, got shape "
                         f"{tuple(q.shape)}")
    return _make(pack_int4_raw(q._data))


def unpack_int4(p, n=None):
    """Inverse of :func:`pack_int4`: uint8 ``(..., m)`` -> int8 codes ``(..., 2m)`` (cut to
    ``n``). Example: ``unpack_int4(pack_int4(q))`` equals ``q``."""
    if not isinstance(p, Tensor) or p._data.dtype != np.uint8:
        raise TypeError("unpack_int4(): argument 'p' must be a uint8 Tensor of packed codes")
    return _make(unpack_int4_raw(p._data, n))


def int4_mm(a, b_packed_t):
    """Exact int32 ``a @ unpack_int4(b_packed_t).T``: ``a`` ``(M, K)`` int8, ``b_packed_t``
    ``(N, K // 2)`` uint8 (a packed int4 weight, rows = output features). Returns ``(M, N)``.
    Example: with ``w`` int4 codes ``(N, K)``, ``int4_mm(x, pack_int4(w))`` equals
    ``int_mm(x, w.T)``.
    """
    ra = _raw_int8(a, "int4_mm", "a")
    if not isinstance(b_packed_t, Tensor) or b_packed_t._data.dtype != np.uint8 or \
            b_packed_t.ndim != 2:
        raise TypeError("int4_mm(): argument 'b_packed_t' must be a 2-d uint8 Tensor")
    if 2 * b_packed_t.shape[1] != ra.shape[1]:
        raise ValueError(f"int4_mm(): a has K = {ra.shape[1]} but the packed weight holds "
                         f"{2 * b_packed_t.shape[1]} codes per row")
    w = unpack_int4_raw(b_packed_t._data)
    return _make(_int_mm_raw(ra, w.T))
