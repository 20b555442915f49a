"""The compiled CPU kernels (numerics/_jit.py, with numba) outside MX - the Philox stream of
``random_bits``, float32 -> bf16 stochastic rounding and NVFP4 - against the code they
replace, and the fallback when numba is missing. The MX kernels are tested in
test_mx_fast.py."""

import sys

import numpy as np
import pytest

from tensorix import numerics as nx
from tensorix.numerics import _jit, get_format

from . import test_blocks
from .test_mx_fast import assert_same, general, needs_numba, tricky_blocks

F32 = np.float32


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


@pytest.mark.parametrize("check", [test_blocks.test_n1_nvfp4_vector,
                                   test_blocks.test_nvfp4_properties])
def test_jit_nvfp4_spec_vector_and_properties(check, monkeypatch):
    """The NVFP4 spec vector (N1) and properties, every size through the compiled kernels."""
    needs_numba()
    monkeypatch.setattr(_jit, "MIN_SIZE", 0)
    check()


def test_jit_nvfp4_matches_the_general_path(monkeypatch):
    """Codes, E4M3 scale codes, tensor scale and dequantized bits: wide-range values, zero
    blocks, float32 subnormals, exact E2M1 ties (a block whose scale is 1), both axes,
    padding, per_tensor off, split over threads."""
    needs_numba()
    monkeypatch.setattr(_jit, "MIN_SIZE", 0)
    monkeypatch.setattr(_jit, "MIN_PART", 7)
    rng = np.random.default_rng(8)
    x = (rng.standard_normal((96, 160)) * np.exp2(rng.integers(-40, 40, (96, 160)))).astype(F32)
    x[0, :16] = 0
    x[1, :16] = rng.standard_normal(16) * 1e-40
    x[3, :16] = [6, 2.5, 0.75, 5, 0.25, 1.25, 1.75, 3.5, -2.5, -0.75, -5, -0.25, 0, 1, 3, 4]
    old = nx.get_num_threads()
    try:
        nx.set_num_threads(3)
        for kw in (dict(), dict(axis=0), dict(axis=1, pad=True), dict(per_tensor=False),
                   dict(axis=0, per_tensor=False, pad=True)):
            xs = x[:, :150] if kw.get("pad") else x
            got = nx.nvfp4_quantize(xs, **kw)
            monkeypatch.setattr(_jit, "ENABLED", False)
            want = nx.nvfp4_quantize(xs, **kw)
            d_want = nx.nvfp4_dequantize(want).numpy()
            monkeypatch.setattr(_jit, "ENABLED", True)
            assert np.array_equal(got.codes.numpy(), want.codes.numpy()), kw
            assert np.array_equal(got.scale_codes.numpy(), want.scale_codes.numpy()), kw
            assert got.tensor_scale == want.tensor_scale
            d = nx.nvfp4_dequantize(got).numpy()
            assert np.array_equal(d.view(np.uint32), d_want.view(np.uint32)), kw
    finally:
        nx.set_num_threads(old)
    t = np.zeros((2, 16), F32)
    t[0, 0] = 2688  # amax_t: s_enc = 1, and the second block's scale is 1
    t[1] = x[3, :16]
    q = nx.nvfp4_quantize(t)
    assert q.tensor_scale == 1.0 and q.scale_codes.numpy().reshape(-1)[1] == 0x38  # 1.0, E4M3
    ties = nx.decode(q.codes.numpy()[1], "e2m1").tolist()
    assert ties[:8] == [6, 2, 1, 4, 0, 1, 2, 4]  # to even: 2.5->2, 0.75->1, 5->4, ...
    # block maxima whose scale (amax / 6) * s_enc lands on, or one ulp off, every E4M3
    # rounding midpoint (s_enc = 1): a scale step done differently shows up here
    f = get_format("fp8_e4m3")
    grid = np.array([f.value_of_magnitude_code(c) for c in range(f.max_code + 1)])
    am = (6 * (grid[:-1] + grid[1:]) / 2).astype(F32)
    am = np.concatenate([am, np.nextafter(am, F32(0)), np.nextafter(am, F32(np.inf))])
    m = np.zeros((am.size + 1, 16), F32)
    m[0, 0] = 2688
    m[1:, 0], m[1:, 1] = am, am / 7
    got = nx.nvfp4_quantize(m)
    monkeypatch.setattr(_jit, "ENABLED", False)
    want = nx.nvfp4_quantize(m)
    monkeypatch.setattr(_jit, "ENABLED", True)
    assert np.array_equal(got.scale_codes.numpy(), want.scale_codes.numpy())
    assert np.array_equal(got.codes.numpy(), want.codes.numpy())
    for bad in (np.inf, -np.inf, np.nan):
        xb = x.copy()
        xb[50, 70] = bad
        with pytest.raises(ValueError, match="nvfp4_quantize\\(\\): input must be finite"):
            nx.nvfp4_quantize(xb)


def test_numba_disable_jit_means_no_kernels(monkeypatch):
    """NUMBA_DISABLE_JIT=1 turns numba functions into Python loops: not kernels to use."""
    needs_numba()
    import numba

    monkeypatch.setattr(numba.config, "DISABLE_JIT", True)
    monkeypatch.setattr(_jit, "_state", {})
    assert _jit.kernels() is None


@pytest.mark.parametrize("fmt,rounding", [("fp8_e4m3", "rne"), ("fp8_e5m2", "rne"),
                                          ("fp6_e3m2", "rne"), ("fp6_e2m3", "rne"),
                                          ("fp4_e2m1", "rne"), ("fp8_e4m3", "rtz"),
                                          ("fp8_e4m3", "rna"), ("fp8_e4m3", "rup"),
                                          ("fp8_e5m2", "rdn")])
def test_jit_encode_matches_the_numpy_table(fmt, rounding, monkeypatch):
    """``encode`` to <= 8-bit formats: every sign/exponent/top-7-mantissa pattern with low
    bits at tie edges and at random (Inf, NaN and signed zeros included), with and without
    saturation: the compiled key-table lookup gives the NumPy table's codes."""
    needs_numba()
    rng = np.random.default_rng(12)
    low = np.concatenate([[0, 1, 0x7FF, 0x800, 0xFFF, 0x1000, 0x7FFF, 0x8000, 0xFFFF],
                          rng.integers(0, 1 << 16, 7)])
    bits = ((np.arange(1 << 16, dtype=np.uint32)[:, None] << np.uint32(16)) |
            low.astype(np.uint32)[None, :]).reshape(-1)
    x = bits.view(F32)
    for saturate in (False, True):
        kw = dict(rounding=rounding, saturate=saturate, nan_policy="zero")
        got = nx.encode(x, fmt, **kw)
        monkeypatch.setattr(_jit, "ENABLED", False)
        want = nx.encode(x, fmt, **kw)
        monkeypatch.setattr(_jit, "ENABLED", True)
        assert got.dtype == want.dtype and np.array_equal(got, want), saturate
