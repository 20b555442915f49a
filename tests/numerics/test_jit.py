"""The compiled CPU kernels (numerics/_jit.py, with numba) outside MX - the Philox stream of
``random_bits`` and float32 -> bf16 stochastic rounding - against the xp code they replace,
and the fallback when numba is missing. The MX kernels are tested in test_mx_fast.py."""

import sys

import numpy as np
import pytest

from tensorix import numerics as nx
from tensorix.numerics import _jit

from .test_mx_fast import assert_same, general, tricky_blocks


def needs_numba():
    if _jit.kernels() is None:
        pytest.skip("numba is not installed (the 'jit' extra)")


def test_jit_random_bits_match_the_xp_philox(monkeypatch):
    """``random_bits`` through the compiled Philox: the same words as the xp version, for
    offsets inside a counter block, a 64-bit seed and counter, and split over threads."""
    needs_numba()
    monkeypatch.setattr(_jit, "MIN_PART", 1000)
    old = nx.get_num_threads()
    try:
        nx.set_num_threads(3)
        for seed, offset, n in [(0, 0, 1 << 16), (12345, 7, 70001), (2**64 - 1, 2**62 - 5, 65539),
                                (2**33 + 1, 2**34 + 2, 65536)]:
            got = nx.random_bits(seed, offset, n)
            monkeypatch.setattr(_jit, "ENABLED", False)
            want = nx.random_bits(seed, offset, n)
            monkeypatch.setattr(_jit, "ENABLED", True)
            assert got.dtype == np.uint32 and np.array_equal(got, want), (seed, offset)
    finally:
        nx.set_num_threads(old)


def test_jit_bf16_stochastic_rounding_matches_numpy(monkeypatch):
    """``encode(.., "bf16", rounding="sr")``: every special (Inf, max, NaN payloads, signed
    zero, the largest finite bf16) and random patterns, sr_bits 16..32, with and without
    saturation; the same codes as the NumPy passes."""
    needs_numba()
    monkeypatch.setattr(_jit, "MIN_PART", 1000)
    rng = np.random.default_rng(2)
    n = 1 << 16
    bits = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    special = [0x7F800000, 0xFF800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x7FC00000, 0xFFFFFFFF,
               0x7F800001, 0, 0x80000000, 0x7F7F8000, 0x7F7F7FFF, 0x0000FFFF]
    bits[:1200] = np.tile(np.array(special, np.uint32), 100)
    r = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    r[:12] = 0xFFFFFFFF
    x = bits.view(np.float32)
    for saturate in (False, True):
        for sr_bits in (16, 17, 24, 31, 32):
            kw = dict(rounding="sr", rbits=r, sr_bits=sr_bits, saturate=saturate)
            got = nx.encode(x, "bf16", **kw)
            monkeypatch.setattr(_jit, "ENABLED", False)
            want = nx.encode(x, "bf16", **kw)
            monkeypatch.setattr(_jit, "ENABLED", True)
            assert np.array_equal(got, want), (saturate, sr_bits)


def test_without_numba_everything_takes_the_numpy_path(monkeypatch):
    """numba missing (or failing to import): no compiled kernels, the same results."""
    import tensorix.numerics

    monkeypatch.setitem(sys.modules, "numba", None)  # makes 'import numba' raise ImportError
    monkeypatch.delitem(sys.modules, "tensorix.numerics._jit_kernels", raising=False)
    monkeypatch.delattr(tensorix.numerics, "_jit_kernels", raising=False)
    monkeypatch.setattr(_jit, "_state", {})
    monkeypatch.setattr(_jit, "MIN_SIZE", 0)
    assert _jit.kernels() is None and not _jit.usable(1 << 20)
    r = np.arange(1000, dtype=np.uint32) * np.uint32(2654435761)
    assert nx.encode(np.ones(1000, np.float32), "bf16", rounding="sr", rbits=r).dtype == np.uint16
    x = tricky_blocks("fp8_e4m3", 6)
    assert_same(nx.mx_quantize(x, "fp8_e4m3"), general(nx.mx_quantize, x, "fp8_e4m3"))
    assert nx.random_bits(3, 5, 1000).dtype == np.uint32
