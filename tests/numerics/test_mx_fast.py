"""The CPU fast paths of MX quantize/dequantize - NumPy (numerics/_mxfast.py) and compiled
(numerics/_jit.py, with numba) - against the general path: codes, scale codes and
dequantized bits must be identical on inputs built to hit every branch (exact ties, values
just off ties, float32 subnormals, zero/NaN/Inf blocks, saturation, every element code under
every scale, including the two-step scaling)."""

import os
import time
import types

import numpy as np
import pytest

import tensorix as tx
from tensorix import numerics as nx
from tensorix.numerics import _jit, _mxfast, get_format

F32 = np.float32
FLOAT_ELEMS = ["fp8_e4m3", "fp8_e5m2", "fp6_e3m2", "fp6_e2m3", "fp4_e2m1"]


def general(fn, *args, **kw):
    _mxfast.ENABLED = False
    try:
        return fn(*args, **kw)
    finally:
        _mxfast.ENABLED = True


def needs_numba():
    if _jit.kernels() is None:
        pytest.skip("numba is not installed (the 'jit' extra)")


@pytest.fixture(params=["numpy", "jit"])
def fast_path(request, monkeypatch):
    """Runs a test on the NumPy fast path and on the compiled one (any size goes to it)."""
    if request.param == "numpy":
        monkeypatch.setattr(_jit, "ENABLED", False)
    else:
        needs_numba()
        monkeypatch.setattr(_jit, "MIN_SIZE", 0)
    return request.param


def tricky_blocks(elem, seed):
    """Blocks of 32: wide-range normals, exact ties of the element grid at random scales, the
    same ties one float32 ulp either side, subnormal-amax blocks, special and zero blocks."""
    rng = np.random.default_rng(seed)
    f = get_format(elem)
    grid = np.array([f.value_of_magnitude_code(c) for c in range(f.max_code + 1)])
    ties = (grid[:-1] + grid[1:]) / 2
    parts = [rng.standard_normal(32 * 40) * np.exp2(rng.integers(-30, 30, 32 * 40))]
    t = rng.choice(ties, 32 * 40) * rng.choice([-1, 1], 32 * 40)
    t[::32] = grid[-1]  # block max at the top of the grid: the scale leaves ties as ties
    t = (t * np.exp2(rng.integers(-100, 100, 40).repeat(32))).astype(F32)
    parts += [t, np.nextafter(t, F32(np.inf)), np.nextafter(t, F32(-np.inf))]
    parts.append(rng.standard_normal(64) * 1e-39)  # float32 subnormal blocks
    parts.append(rng.standard_normal(32) * 1e-44)
    x = np.concatenate(parts + [np.zeros(64)]).astype(F32)
    x[-64] = -0.0
    x[5], x[32 * 7 + 3], x[32 * 9] = np.inf, np.nan, -np.inf
    return x


def assert_same(mx_fast, mx_ref):
    assert np.array_equal(mx_fast.codes.numpy(), mx_ref.codes.numpy())
    assert np.array_equal(mx_fast.scale_codes.numpy(), mx_ref.scale_codes.numpy())
    a = nx.mx_dequantize(mx_fast).numpy()
    b = general(nx.mx_dequantize, mx_ref).numpy()
    assert np.array_equal(a.view(np.uint32), b.view(np.uint32))


@pytest.mark.parametrize("elem", FLOAT_ELEMS)
@pytest.mark.parametrize("scale_mode", ["rceil", "floor"])
def test_fast_path_matches_general_rne(elem, scale_mode, fast_path):
    x = tricky_blocks(elem, 0)
    assert_same(nx.mx_quantize(x, elem, scale_mode=scale_mode),
                general(nx.mx_quantize, x, elem, scale_mode=scale_mode))


@pytest.mark.parametrize("elem,rounding", [("fp8_e4m3", "rtz"), ("fp8_e4m3", "rna"),
                                           ("fp8_e4m3", "rup"), ("fp8_e4m3", "rdn"),
                                           ("fp4_e2m1", "rna"), ("fp8_e5m2", "rtz")])
def test_fast_path_matches_general_other_modes(elem, rounding, fast_path):
    x = tricky_blocks(elem, 1)
    for scale_mode in ("rceil", "floor"):
        kw = dict(scale_mode=scale_mode, rounding=rounding)
        assert_same(nx.mx_quantize(x, elem, **kw), general(nx.mx_quantize, x, elem, **kw))


def test_fast_path_flush_axis_padding(fast_path):
    x = tricky_blocks("fp8_e4m3", 2)[:32 * 60].reshape(32, 60)
    for kw in (dict(axis=0, flush_fp32_subnorms=True), dict(axis=1, pad=True),
               dict(axis=-1, pad=True, block=16)):
        assert_same(nx.mx_quantize(x, "fp8_e4m3", **kw),
                    general(nx.mx_quantize, x, "fp8_e4m3", **kw))


@pytest.mark.parametrize("elem", FLOAT_ELEMS)
def test_fast_decode_every_code_every_scale(elem, fast_path):
    f = get_format(elem)
    codes = np.arange(256, dtype=np.uint8) & np.uint8((1 << f.bits) - 1)
    scales = np.array([0, 1, 20, 100, 127, 127 + f.bias, 128 + f.bias, 200, 254, 255], np.uint8)
    mx = nx.MXArray(tx.tensor(np.tile(codes, 10)), tx.tensor(np.repeat(scales, 8)), elem, 32,
                    0, (2560,))
    a = nx.mx_dequantize(mx).numpy()
    b = general(nx.mx_dequantize, mx).numpy()
    assert np.array_equal(np.isnan(a), np.isnan(b))
    assert np.array_equal(np.nan_to_num(a).view(np.uint32), np.nan_to_num(b).view(np.uint32))
    assert np.isnan(a[-256:]).all()


@pytest.mark.parametrize("elem", FLOAT_ELEMS)
def test_key_table_has_no_boundary_inside_the_dropped_bits(elem):
    """The table's premise: with the low 12 bits anything but zero the code is the same."""
    f = get_format(elem)
    table, exact, above = _mxfast.key_tables(f, "rne")
    k = np.arange(1 << 20, dtype=np.uint32) << np.uint32(12)
    top = _mxfast._codes_of(k | np.uint32(0xFFF), f, "rne", True)
    assert np.array_equal(above, top)
    assert np.array_equal(table[table != 0xFF], exact[table != 0xFF])
    assert (table == 0xFF).mean() < 0.01


def test_threads_and_chunks_do_not_change_bits(monkeypatch, fast_path):
    """Small chunks (an odd size) split over threads: the same bits with 1 and 3 threads, and
    the same as the general path; set_num_threads checks its argument."""
    monkeypatch.setattr(_mxfast, "_ROWS", 37)
    monkeypatch.setattr(_jit, "MIN_PART", 37)
    rng = np.random.default_rng(7)
    x = (rng.standard_normal(1 << 16) * np.exp2(rng.integers(-8, 8, 1 << 16))).astype(F32)
    x[::97] = np.round(x[::97] * 16) / 16  # exact ties on the e4m3 grid
    x[5000] = np.nan
    old = nx.get_num_threads()
    try:
        nx.set_num_threads(3)
        m3 = nx.mx_quantize(x, "fp8_e4m3", scale_mode="floor")
        d3 = nx.mx_dequantize(m3).numpy()
        nx.set_num_threads(1)
        m1 = nx.mx_quantize(x, "fp8_e4m3", scale_mode="floor")
        assert_same(m3, m1)
        assert np.array_equal(d3.view(np.uint32), nx.mx_dequantize(m1).numpy().view(np.uint32))
        assert_same(m3, general(nx.mx_quantize, x, "fp8_e4m3", scale_mode="floor"))
    finally:
        nx.set_num_threads(old)
    with pytest.raises(RuntimeError, match="set_num_threads\\(\\): expects a positive integer"):
        nx.set_num_threads(0)


# -- the compiled path -------------------------------------------------------------------------
def _rne_mismatches(elem, low_bits):
    """Finite float32 patterns ``hi << 16 | lo`` (every hi, lo from ``low_bits``) whose
    ``encode_rne`` code differs from the key tables' (the NumPy path's encoder)."""
    from tensorix.numerics import _jit_kernels as k

    f = get_format(elem)
    table, exact, above = _mxfast.key_tables(f, "rne")
    y = (np.arange(1 << 16, dtype=np.uint32)[:, None] << np.uint32(16)) | low_bits[None, :]
    y = y[(y & np.uint32(0x7F800000)) != np.uint32(0x7F800000)]  # finite only
    codes = np.empty(y.size, np.uint8)
    p = _jit.format_params(f)
    k.encode_rne(y, p[0], p[1], p[2], p[3], codes)
    key = y >> np.uint32(12)
    ref = np.where(table[key] != 0xFF, table[key],
                   np.where((y & np.uint32(0xFFF)) == 0, exact[key], above[key]))
    return int((codes != ref).sum())


@pytest.mark.parametrize("elem", FLOAT_ELEMS)
def test_jit_rne_encoder_matches_the_key_tables(elem):
    """The FPU-rounding encoder against the tables: every sign/exponent/top-7-mantissa pattern
    with low 16 bits at the edges of ties (0, 1, 0x7FFF, 0x8000, 0xFFFF) and at random."""
    needs_numba()
    rng = np.random.default_rng(11)
    low = np.concatenate([[0, 1, 0x7FFF, 0x8000, 0x8001, 0xFFFF],
                          rng.integers(0, 1 << 16, 26)]).astype(np.uint32)
    assert _rne_mismatches(elem, low) == 0


@pytest.mark.slow
def test_jit_rne_encoder_exhaustive_e4m3():
    """Every finite float32 (all 2^32 patterns) for MXFP8's element format, the comparison
    compiled too (NumPy would take minutes)."""
    needs_numba()
    import numba

    from tensorix.numerics import _jit_kernels as k

    @numba.njit(parallel=True)
    def mismatches(table, exact, above, p, bad):
        for hi in numba.prange(1 << 16):
            y = (np.uint32(hi) << np.uint32(16)) | np.arange(1 << 16).astype(np.uint32)
            codes = np.empty(1 << 16, np.uint8)
            k.encode_rne(y, p[0], p[1], p[2], p[3], codes)
            for j in range(1 << 16):
                key = y[j] >> np.uint32(12)
                c = table[key]
                if c == 0xFF:
                    c = exact[key] if (y[j] & np.uint32(0xFFF)) == 0 else above[key]
                finite = (y[j] & np.uint32(0x7F800000)) != np.uint32(0x7F800000)
                bad[hi] += finite and c != codes[j]

    f = get_format("fp8_e4m3")
    bad = np.zeros(1 << 16, np.int64)
    mismatches(*_mxfast.key_tables(f, "rne"), _jit.format_params(f), bad)
    assert bad.sum() == 0


def test_jit_failure_falls_back_to_numpy(monkeypatch):
    """A kernel that raises (no compiler target, say) switches the JIT off for good; the
    result comes from the NumPy path, with the same bits."""
    needs_numba()
    k = _jit.kernels()

    def broken(*args):
        raise RuntimeError("no target")

    monkeypatch.setitem(_jit._state, "k", types.SimpleNamespace(
        numba=k.numba, quantize=broken, dequantize=k.dequantize))
    monkeypatch.setattr(_jit, "MIN_SIZE", 0)
    x = tricky_blocks("fp8_e4m3", 3)
    m = nx.mx_quantize(x, "fp8_e4m3")
    assert _jit.kernels() is None
    assert_same(m, general(nx.mx_quantize, x, "fp8_e4m3"))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_forked_child_quantizes_on_both_paths(monkeypatch):
    """A forked child (a DataLoader worker) after the parent used the thread pool and the
    kernels: the pool is rebuilt there (it used to wait forever on the parent's dead threads)
    and the kernels run with the same bits."""
    monkeypatch.setattr(_mxfast, "_ROWS", 64)  # several parts on the pool at this size
    monkeypatch.setattr(_jit, "MIN_PART", 64)
    monkeypatch.setattr(_jit, "MIN_SIZE", 0)
    x = np.random.default_rng(5).standard_normal(1 << 16).astype(F32)
    old = nx.get_num_threads()
    nx.set_num_threads(2)
    try:
        want = general(nx.mx_quantize, x, "fp8_e4m3").codes.numpy().tobytes()
        jit = _jit.kernels() is not None
        nx.mx_quantize(x, "fp8_e4m3")  # the pool's threads start in the parent
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            try:
                same = nx.mx_quantize(x, "fp8_e4m3").codes.numpy().tobytes() == want
                _jit.ENABLED = False
                same &= nx.mx_quantize(x, "fp8_e4m3").codes.numpy().tobytes() == want
                os.write(w, b"same" if same else b"diff")
            finally:
                os._exit(0)
        os.close(w)
        deadline = time.monotonic() + 60
        while (done := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        if done[0] == 0:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
        got = os.read(r, 4)
        os.close(r)
        assert got == b"same", f"child {'hung' if done[0] == 0 else 'got ' + repr(got)} " \
                               f"(jit {'on' if jit else 'off'})"
    finally:
        nx.set_num_threads(old)
