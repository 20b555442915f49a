"""Compiled CPU kernels, used when numba is installed (the ``jit`` extra).

A NumPy pass costs a full read and write of its operands whatever its arithmetic, so code that
needs many passes (MX quantisation takes about a dozen on the NumPy path) cannot get near the
memory speed. The kernels in ``_jit_kernels.py`` do the same arithmetic in one pass:

* MX quantize / dequantize (``_mxfast``): per block its amax (a loop LLVM vectorises), the
  E8M0 exponent and the scaled values, which stay in cache for one encode loop per 256 blocks;
  dequantize is ``decode[code] * 2^k`` per element. 2-3x faster than the NumPy path.
* NVFP4 quantize / dequantize (``nvfp4``): the general path's float32 steps in its order.
  7x faster.
* The Philox4x32-10 stream of ``sr.random_bits``: about 100x faster than the xp code.
* float32 -> bf16 stochastic rounding (``casting._bf16_sr``): 10x faster.
* ``casting.encode`` to fp8/fp6/fp4 with deterministic rounding: the key-table lookup of the
  MX path on every element, 2x faster.

They give the same bits as the code they replace:

* RNE elements come from ``rne_code``. Adding a power of two rounds at the element's quantum
  on the FPU. It is checked against the key tables on every finite float32.
* The other rounding modes use ``_mxfast``'s key tables.
* Scale exponents follow ``_mxfast._scale_exponents`` step for step in 32-bit arithmetic.
* Each float32 operation is the one NumPy performs, in the same order.

``tests/numerics/test_mx_fast.py`` checks the MX kernels against the NumPy and the general
paths. ``tests/numerics/test_jit.py`` checks the rest. Numbers are in
``benchmarks/bench_numerics.py`` and docs/numerics.md.

The kernels release the GIL. ``_threads.parallel`` splits their work over
``tensorix.set_num_threads`` threads (the library's one pool, ``tensorix/_threads.py``).
numba is imported on the first call with at least ``MIN_SIZE`` values. A failure to import,
compile or run falls back to the NumPy code for the rest of the process, and
``TENSORIX_JIT=0`` switches the kernels off.
"""

from __future__ import annotations

import functools
import os
import threading
import warnings

import numpy as np

from .. import _threads
from .._codec import decode_table_np
from ..formats import get_format

__all__ = ["usable", "kernels", "quantize_blocks", "dequantize_blocks", "philox_words",
           "bf16_sr", "encode_codes", "nvfp4_quantize", "nvfp4_dequantize", "format_params"]

ENABLED = os.environ.get("TENSORIX_JIT", "1") != "0"  # tests switch it off to compare paths
MIN_SIZE = 1 << 16  # below this the NumPy path is as fast and avoids importing numba
MIN_PART = 1 << 14  # blocks (or Philox counters) per thread: about 0.3 ms of work
_state: dict = {}
_lock = threading.Lock()  # one thread imports the kernels module
# 2^(i - 127) as float32 for i in [0, 254] (exact; 2^-127 is subnormal) and NaN at 255: the
# E8M0 scale of code i, and 2^-k at 127 - k. (A table: math.ldexp is a libm call per block.)
_P2 = np.append(np.ldexp(np.ones(255, np.float32), np.arange(-127, 128, dtype=np.int32)),
                np.float32(np.nan))


def usable(n: int) -> bool:
    """Whether ``n`` values go through the compiled kernels (numba present and compiling)."""
    return ENABLED and n >= MIN_SIZE and kernels() is not None


def kernels():
    """The kernels module (``_jit_kernels``), or None without numba (cached)."""
    if "k" not in _state:
        with _lock:
            if "k" not in _state:
                _state["k"] = _build()
    return _state["k"]


def _build():
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from . import _jit_kernels
    except Exception:  # noqa: BLE001 - numba not installed, or built for another NumPy
        return None
    if _jit_kernels.numba.config.DISABLE_JIT:  # the kernels would run as Python loops
        return None
    return _jit_kernels


def _run(n, min_part, kernel, *args):
    """``kernel(*args, first, last)`` over ``[0, n)`` split over the numerics threads; a numba
    failure (no compiler target, say) disables the JIT: False."""
    numba = kernels().numba
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", numba.NumbaWarning)  # cache notices
            kernel(*args, 0, 0)  # compiles a new signature here, not in the pool threads
        _threads.parallel(n, lambda a, b: kernel(*args, a, b), min_part)
    except Exception:  # noqa: BLE001 - the NumPy path still works
        _state["k"] = None
        return False
    return True


def format_params(f):
    """int32 ``(emin + 127, mbits, max finite magnitude code, sign bit position)`` of ``f``."""
    return np.array([f.emin + 127, f.mbits, f.max_code, f.bits - 1], np.int32)


def quantize_blocks(x2d, f, emax, vmax, scale_mode, rounding, tables, flush):
    """``_mxfast.quantize_blocks`` in one compiled pass, or None where it cannot run.
    Round-to-nearest-even is arithmetic (``encode_rne``); the other modes use ``tables``."""
    nb, blk = x2d.shape
    codes = np.empty((nb, blk), np.uint8)
    scale_codes = np.empty(nb, np.uint8)
    xf = x2d.reshape(-1)
    ok = _run(nb, MIN_PART, kernels().quantize, xf, xf.view(np.uint32), blk,
              scale_mode == "floor", emax, np.float32(vmax), bool(flush), rounding == "rne",
              format_params(f), *tables, _P2, codes.reshape(-1), scale_codes)
    return (codes, scale_codes) if ok else None


def dequantize_blocks(codes2d, scale_codes, f):
    """``_mxfast.dequantize_blocks`` in one compiled pass, or None where it cannot run."""
    nb, blk = codes2d.shape
    out = np.empty((nb, blk), np.float32)
    ok = _run(nb, MIN_PART, kernels().dequantize, codes2d.reshape(-1), scale_codes, blk,
              _byte_table(f), _P2, out.reshape(-1))
    return out if ok else None


def philox_words(seed, first, nblocks):
    """uint32 words of Philox4x32-10 blocks ``first .. first + nblocks - 1`` under the 64-bit
    key ``seed`` (``sr.random_bits``' stream), or None where the kernel cannot run."""
    if first + nblocks >= 1 << 63:  # the kernel counts in int64
        return None
    out = np.empty(4 * nblocks, np.uint32)
    ok = _run(nblocks, MIN_PART, kernels().philox, seed & 0xFFFFFFFF, seed >> 32, first, out)
    return out if ok else None


def bf16_sr(bits, r, sr_bits, saturate):
    """``casting._bf16_sr`` for C-contiguous uint32 ``bits`` and ``r`` of one shape: uint16
    codes, or None where the kernel cannot run."""
    out = np.empty(bits.shape, np.uint16)
    mask = np.uint32(0xFFFFFFFF if sr_bits == 32 else (1 << sr_bits) - 1)
    ok = _run(bits.size, MIN_PART * 32, kernels().bf16_sr, bits.reshape(-1),
              r.astype(np.uint32, copy=False).reshape(-1), mask, np.uint32(sr_bits - 16),
              bool(saturate), out.reshape(-1))
    return out if ok else None


def encode_codes(bits, f, mode, saturate):
    """``casting._encode_table``'s codes (deterministic rounding, <= 3 mantissa bits) for
    C-contiguous float32 ``bits``, by ``_mxfast``'s key tables, or None where the kernel cannot
    run."""
    from ._mxfast import key_tables  # _mxfast imports casting, which imports this module

    out = np.empty(bits.shape, np.uint8)
    ok = _run(bits.size, MIN_PART * 32, kernels().encode_keyed, bits.reshape(-1),
              *key_tables(f, mode, saturate), out.reshape(-1))
    return out if ok else None


def nvfp4_quantize(x2d, per_tensor):
    """``nvfp4.nvfp4_quantize``'s codes, scale codes and ``s_dec`` for C-contiguous float32
    blocks ``x2d`` ``(nb, 16)`` (RNE elements), or None where the kernels cannot run; raises
    the same ValueError for a non-finite input."""
    nb, blk = x2d.shape
    xf = x2d.reshape(-1)
    amax = np.empty(nb, np.uint32)
    if not _run(nb, MIN_PART, kernels().block_amax, xf.view(np.uint32), blk, amax):
        return None
    top = int(amax.max())
    if top >= 0x7F800000:
        raise ValueError("nvfp4_quantize(): input must be finite (NVFP4 has no NaN/Inf)")
    f32 = np.float32
    amax_t = np.uint32(top).view(f32)
    s_enc = f32(f32(6 * 448) / amax_t) if per_tensor and amax_t > 0 else f32(1)
    s_dec = f32(f32(1) / s_enc) if per_tensor else f32(1)
    e4m3, e2m1 = get_format("fp8_e4m3"), get_format("fp4_e2m1")
    codes = np.empty((nb, blk), np.uint8)
    scodes = np.empty(nb, np.uint8)
    ok = _run(nb, MIN_PART, kernels().nvfp4_quantize, xf, blk, amax.view(f32), s_enc,
              format_params(e4m3), format_params(e2m1), _byte_table(e4m3), codes.reshape(-1),
              scodes)
    return (codes, scodes, s_dec) if ok else None


def nvfp4_dequantize(codes2d, scale_codes, s_dec):
    """``nvfp4.nvfp4_dequantize``'s float32 values for C-contiguous ``(nb, 16)`` codes, or
    None where the kernel cannot run."""
    nb, blk = codes2d.shape
    out = np.empty((nb, blk), np.float32)
    ok = _run(nb, MIN_PART, kernels().nvfp4_dequantize, codes2d.reshape(-1), scale_codes, blk,
              _byte_table(get_format("fp4_e2m1")), _byte_table(get_format("fp8_e4m3")),
              np.float32(s_dec), out.reshape(-1))
    return out if ok else None


@functools.cache
def _byte_table(f):
    """float32 values of all 256 byte values as codes of ``f``, the bits above the format's
    ignored (as ``_mxfast``'s bit-level decode does; no index can leave the table)."""
    t = decode_table_np(f, np.dtype(np.float32))[np.arange(256) & ((1 << f.bits) - 1)]
    t.setflags(write=False)
    return t
