"""The one-pass CPU kernels of hypot, nextafter, mvlgamma and igamma/igammac
(kernels/_jit_13spec.py): values against torch and float64 (nextafter bit for bit, NaN, signed
zeros, infinities and subnormals included), the numba pass bit-identical to the NumPy fallback
the op keeps, gradients against torch, and the ops' errors unchanged."""

import math

import numpy as np
import pytest

import tensorix as tx
from tensorix.kernels import _cpu

torch = pytest.importorskip("torch")


def _ints(x):
    return x.view(np.int32 if x.dtype == np.float32 else np.int64)


def _same_bits(got, want):
    return np.array_equal(_ints(got), _ints(want))


@pytest.fixture
def no_jit(monkeypatch):
    """Run the ops as without numba (their NumPy fallbacks)."""
    monkeypatch.setattr(_cpu, "_state", {"m": None})


def _pairs(dtype, n=50000, seed=0):
    """Every pair of the special values, then random bit patterns (every exponent, NaNs with
    payloads, subnormals) and ordinary values."""
    fi = np.finfo(dtype)
    special = np.array([0.0, -0.0, 1.0, -1.0, 2.5, -2.5, np.inf, -np.inf, np.nan, fi.max,
                        -fi.max, fi.tiny, -fi.tiny, fi.smallest_subnormal,
                        -fi.smallest_subnormal, fi.eps], dtype)
    a, b = (v.ravel() for v in np.meshgrid(special, special))
    rng = np.random.default_rng(seed)
    itype = np.uint32 if dtype == np.float32 else np.uint64
    wild = rng.integers(0, np.iinfo(itype).max, 2 * n, dtype=itype, endpoint=True).view(dtype)
    plain = rng.uniform(-3, 3, 2 * n).astype(dtype)
    return (np.concatenate([a, wild[:n], plain[:n]]),
            np.concatenate([b, wild[n:], plain[n:]]))


def _nan_bits_canonical(x):
    return bool(np.all(_ints(x[np.isnan(x)]) == _ints(np.array([np.nan], x.dtype))[0]))


# -- nextafter ---------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nextafter_bit_identical_to_torch(dtype):
    a, b = _pairs(dtype)
    got = tx.nextafter(tx.tensor(a), tx.tensor(b)).numpy()
    want = torch.nextafter(torch.from_numpy(a), torch.from_numpy(b)).numpy()
    assert got.dtype == dtype
    assert _same_bits(got, want)
    assert _nan_bits_canonical(got)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nextafter_fallback_gives_the_same_bits(dtype, no_jit):
    a, b = _pairs(dtype, seed=1)
    want = torch.nextafter(torch.from_numpy(a), torch.from_numpy(b)).numpy()
    assert _same_bits(tx.nextafter(tx.tensor(a), tx.tensor(b)).numpy(), want)


def test_nextafter_edges_broadcast_and_errors():
    f = np.float32
    one = tx.tensor(np.ones((3, 1), f))
    got = tx.nextafter(one, tx.tensor(np.array([2.0, 0.0, 1.0], f))).numpy()
    up, down = np.nextafter(f(1), f(2)), np.nextafter(f(1), f(0))
    assert _same_bits(got, np.tile(np.array([up, down, 1.0], f), (3, 1)))
    z = tx.nextafter(tx.tensor(np.float32([0.0, -0.0, 0.0])),
                     tx.tensor(np.float32([-1.0, 1.0, -0.0]))).numpy()
    assert _same_bits(z, np.array([-1e-45, 1e-45, -0.0], f))
    with pytest.raises(RuntimeError, match="nextafter"):
        tx.nextafter(tx.tensor([1, 2]), tx.tensor([3, 4]))


# -- hypot -------------------------------------------------------------------------------------
def _hypot_reference(a, b):
    """float64 sqrt of the exact sum of squares, rounded once; inf beats NaN."""
    with np.errstate(all="ignore"):
        x, y = a.astype(np.float64), b.astype(np.float64)
        r = np.sqrt(x * x + y * y)
        r[np.isinf(x) | np.isinf(y)] = np.inf
        return r.astype(np.float32)


def _ulps(got, want):
    return np.abs(_ints(got).astype(np.int64) - _ints(want).astype(np.int64))


@pytest.mark.parametrize("jit", [True, False])
def test_hypot_float32_against_float64_and_torch(jit, monkeypatch):
    if not jit:
        monkeypatch.setattr(_cpu, "_state", {"m": None})
    a, b = _pairs(np.float32)
    got = tx.hypot(tx.tensor(a), tx.tensor(b)).numpy()
    want = _hypot_reference(a, b)
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    assert _same_bits(got[~nan], want[~nan])  # the float64 value rounded once
    assert _nan_bits_canonical(got)
    t = torch.hypot(torch.from_numpy(a), torch.from_numpy(b)).numpy()
    assert np.array_equal(np.isnan(t), nan)
    ulp = _ulps(got[~nan], t[~nan])
    assert ulp.max() <= 1  # torch is 1 ulp off on a few results near the subnormal range
    assert (ulp == 0).mean() > 0.999
    assert np.isinf(got[np.isinf(a) | np.isinf(b)]).all()  # hypot(inf, nan) is inf


def test_hypot_jit_and_fallback_agree_on_split_sizes(monkeypatch):
    rng = np.random.default_rng(3)
    a = (rng.standard_normal((1 << 21) + 3) * 1e3).astype(np.float32)
    b = (rng.standard_normal((1 << 21) + 3) * 1e-3).astype(np.float32)
    fast = tx.hypot(tx.tensor(a), tx.tensor(b)).numpy()
    monkeypatch.setattr(_cpu, "_state", {"m": None})
    assert _same_bits(tx.hypot(tx.tensor(a), tx.tensor(b)).numpy(), fast)


def test_hypot_gradients_and_broadcast_match_torch():
    rng = np.random.default_rng(4)
    a = rng.uniform(-3, 3, (4, 5)).astype(np.float32)
    b = rng.uniform(-3, 3, (5,)).astype(np.float32)
    x, y = tx.tensor(a, requires_grad=True), tx.tensor(b, requires_grad=True)
    tx_, ty = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    out, tout = tx.hypot(x, y), torch.hypot(tx_, ty)
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1.2e-7)
    out.sum().backward()
    tout.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx_.grad.numpy(), rtol=3e-7, atol=1e-7)
    np.testing.assert_allclose(y.grad.numpy(), ty.grad.numpy(), rtol=3e-7, atol=1e-7)
    d = tx.hypot(tx.tensor(a.astype(np.float64)), tx.tensor(b.astype(np.float64)))
    np.testing.assert_array_equal(d.numpy(), np.hypot(a.astype(np.float64), b))


# -- mvlgamma ----------------------------------------------------------------------------------
def _mvlgamma64(x, p):
    x = x.astype(np.float64)
    lg = np.vectorize(math.lgamma)
    return sum(lg(x - j / 2) for j in range(p)) + p * (p - 1) / 4 * math.log(math.pi)


@pytest.mark.parametrize("p", [1, 3, 6])
def test_mvlgamma_float32_one_pass(p, monkeypatch):
    rng = np.random.default_rng(p)
    x = np.concatenate([rng.uniform((p - 1) / 2 + 1e-3, (p - 1) / 2 + 3, 20000),
                        rng.uniform((p - 1) / 2 + 1, 60, 20000)]).astype(np.float32)
    got = tx.mvlgamma(tx.tensor(x), p).numpy()
    assert got.dtype == np.float32
    want = _mvlgamma64(x, p)
    # each lgamma32 term within its bound (4 ulp, 2e-7 absolute near its zeros), one rounding
    err = np.abs(got - want) / np.maximum(np.abs(want), 1.0)
    assert err.max() < 1e-6, err.max()
    t = torch.mvlgamma(torch.from_numpy(x), p).numpy()
    assert (np.abs(got - t) / np.maximum(np.abs(t), 1.0)).max() < 1e-6
    monkeypatch.setattr(_cpu, "_state", {"m": None})
    assert _same_bits(tx.mvlgamma(tx.tensor(x), p).numpy(), got)


def test_mvlgamma_gradients_errors_and_other_dtypes():
    rng = np.random.default_rng(7)
    x = rng.uniform(1.6, 6, (3, 7)).astype(np.float32)
    a, t = tx.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    tx.mvlgamma(a, 3).sum().backward()
    torch.mvlgamma(t, 3).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-6)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(tx.mvlgamma(tx.tensor(x64), 3).numpy(), _mvlgamma64(x64, 3),
                               rtol=1e-13, atol=1e-13)
    with pytest.raises(RuntimeError, match="greater than"):
        tx.mvlgamma(tx.tensor(np.float32([0.9, 2.0])), 3)
    with pytest.raises(RuntimeError, match="p has to be"):
        tx.mvlgamma(tx.tensor(np.float32([2.0])), 0)
    with pytest.raises(TypeError, match="'p' must be an int"):
        tx.mvlgamma(tx.tensor(np.float32([2.0])), 2.0)


# -- igamma / igammac --------------------------------------------------------------------------
def _igamma_inputs(n=40000, seed=5):
    rng = np.random.default_rng(seed)
    sp = np.array([0.0, np.inf, np.nan, -1.0, 1e-300, 1e3, 0.5, 1e-10, 7.0])
    a, x = (v.ravel() for v in np.meshgrid(sp, sp))
    return (np.concatenate([a, rng.uniform(0.5, 5, n), 10 ** rng.uniform(-4, 4, n)]),
            np.concatenate([x, rng.uniform(0.1, 8, n), 10 ** rng.uniform(-4, 4, n)]))


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("tol", [1e-17, 2.0 ** -33])
def test_igamma_lanes_give_igamma64s_bits(upper, tol):
    lanes = _cpu.jit_kernel("igamma_lanes64", np.empty(1), np.ones(1), np.ones(1), False, tol)
    single = _cpu.jit_kernel("igamma64", np.empty(1), np.ones(1), np.ones(1), False, tol)
    if lanes is None or single is None:
        pytest.skip("numba unavailable")
    a, x = _igamma_inputs()
    got, want = np.empty_like(a), np.empty_like(a)
    lanes(got, a, x, upper, tol)
    single(want, a, x, upper, tol)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert _same_bits(got[~np.isnan(got)], want[~np.isnan(want)])


@pytest.mark.parametrize("op", ["igamma", "igammac"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_igamma_ops_match_torch_with_and_without_numba(op, dtype, monkeypatch):
    a, x = (v[81:].astype(dtype) for v in _igamma_inputs(5000, seed=6))  # no edge values
    got = getattr(tx, op)(tx.tensor(a), tx.tensor(x)).numpy()
    want = getattr(torch, op)(torch.from_numpy(a), torch.from_numpy(x)).numpy()
    ok = ~np.isnan(want)
    assert ok.all()
    tol = 2e-6 if dtype == np.float32 else 1e-8  # torch float64: 1.5e-9 off at large a, x
    np.testing.assert_allclose(got[ok], want[ok], rtol=tol, atol=tol)
    monkeypatch.setattr(_cpu, "_state", {"m": None})
    slow = getattr(tx, op)(tx.tensor(a), tx.tensor(x)).numpy()
    # the NumPy kernel's exp/log/lgamma differ from the C library's by an ulp in float64,
    # which the prefactor's exp of a large exponent (lgamma near 1e4) magnifies
    np.testing.assert_allclose(slow[ok], got[ok], rtol=1e-6 if dtype == np.float32 else 1e-10,
                               atol=1e-300)


# -- logaddexp / logaddexp2 --------------------------------------------------------------------
@pytest.mark.parametrize("op, name", [("logaddexp", "logaddexp32"),
                                      ("logaddexp2", "logaddexp2_32")])
def test_logaddexp_passes_give_the_one_pass_bits(op, name, monkeypatch):
    """The three-pass loops (what the ops run) give _math32's logaddexp32 / logaddexp2_32
    bits on every pair of special values, random bit patterns and ordinary values, as does
    the op without numba; values against torch."""
    a, b = _pairs(np.float32, seed=8)
    passes = _cpu.jit_kernel(name + "_passes", np.empty(1, np.float32),
                             np.ones(1, np.float32), np.ones(1, np.float32))
    if passes is None:
        pytest.skip("numba unavailable")
    from tensorix.kernels import _math32

    with np.errstate(all="ignore"):
        want = getattr(_math32, name)(a, b)
    got = np.empty_like(a)
    passes(got, a, b)
    assert _same_bits(got, want)
    fast = getattr(tx, op)(tx.tensor(a), tx.tensor(b)).numpy()
    assert _same_bits(fast, want)
    n = 256  # the ordinary values: torch within the kernels' bound away from cancellation
    t = getattr(torch, op)(torch.from_numpy(a[-n:]), torch.from_numpy(b[-n:])).numpy()
    far = np.abs(t) > 1
    assert (_ulps(fast[-n:][far], t[far]) <= 4).all()
    monkeypatch.setattr(_cpu, "_state", {"m": None})
    assert _same_bits(getattr(tx, op)(tx.tensor(a), tx.tensor(b)).numpy(), want)


@pytest.mark.parametrize("op", ["hypot", "nextafter", "mvlgamma", "igamma", "logaddexp2"])
def test_zero_dim_empty_and_strided_inputs_keep_their_shape(op):
    """A 0-d input stays 0-d (np.ascontiguousarray would make it 1-d), an empty one empty,
    and a strided view gives the values of its contiguous copy."""
    def call(x):
        return tx.mvlgamma(x, 2) if op == "mvlgamma" else getattr(tx, op)(x, x + 0.5)

    s = tx.tensor(np.float32(2.5))
    assert call(s).shape == ()
    assert call(tx.tensor(np.zeros((0, 3), np.float32) + 2)).shape == (0, 3)
    base = np.random.default_rng(9).uniform(1.5, 4, (6, 8)).astype(np.float32)
    got = call(tx.tensor(base)[:, ::2]).numpy()
    want = call(tx.tensor(np.ascontiguousarray(base[:, ::2]))).numpy()
    assert got.shape == (6, 4) and _same_bits(got, want)
