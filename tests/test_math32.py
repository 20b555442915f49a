"""The float32 kernels of tensorix/kernels/_math32.py (exp, log, expm1, log1p, sinh, cosh,
atanh, erf, erfc, ...): each within its stated ulp bound of a float64 function on a dense
sweep, the numba form bit-identical to the NumPy form, and the ops built on them against torch."""

import numpy as np
import pytest

import tensorix as tx
from tensorix.kernels import _cpu, _math32

REFERENCE = {"exp32": np.exp, "log32": np.log, "log1p32": np.log1p, "expm1_32": np.expm1,
             "sinh32": np.sinh, "cosh32": np.cosh, "atanh32": np.arctanh,
             "softplus32": lambda x: np.logaddexp(0, x), "i0_32": lambda x: _i0_reference(x),
             "gelu32": lambda x: _gelu_reference(x),
             "erf32": lambda x: _erf_reference("erf_kernel", x),
             "erfc32": lambda x: _erf_reference("erfc_kernel", x),
             # beyond 2^19 the kernel says nan and the op takes NumPy's tan
             "tan32": lambda x: np.where(np.abs(x) <= _math32.TAN_LIMIT, np.tan(x), np.nan)}


def _gelu_reference(x):
    from tensorix.ops._erf import erfc_kernel

    return 0.5 * x * erfc_kernel(-x / np.sqrt(2))  # nan at -inf, as x * 0


def _erf_reference(name, x):
    from tensorix.ops import _erf

    return getattr(_erf, name)(x)  # float64, within 1.1e-15 of mpmath


def _i0_reference(x):
    from tensorix.ops.special import bessel_kernel

    return bessel_kernel(x, 0)  # nan at +-inf, as torch's
OPS = {"expm1": "expm1_32", "log1p": "log1p32", "sinh": "sinh32", "cosh": "cosh32",
       "atanh": "atanh32"}
SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 1e-45, -1e-45, 1e-38, 0.5,
                    -0.5, 88.7, 88.72283935546875, 89.4, -89.4, 90.0, -1 + 2 ** -24, 2.0,
                    -2.0], np.float32)


def _bits(a):
    return a.view(np.uint32)


def _sweep(step):
    bits = np.arange(0, 0x7F800000, step, dtype=np.uint32).view(np.float32)
    dense = np.linspace(-12, 12, 1 << 19, dtype=np.float32)
    return np.concatenate([bits, -bits, dense, SPECIAL])


def _ulp_error(got, x, name):
    with np.errstate(all="ignore"):
        ref = REFERENCE[name](x.astype(np.float64))
        ref32 = ref.astype(np.float32)
    finite = np.isfinite(ref32)
    ulp = np.spacing(np.abs(ref32[finite])).astype(np.float64)
    err = np.zeros(x.shape)
    err[finite] = np.abs(got[finite].astype(np.float64) - ref[finite]) / ulp
    # beyond float32's range: the same inf, or nan, as the rounded reference
    same = (got[~finite] == ref32[~finite]) | (np.isnan(got[~finite]) & np.isnan(ref32[~finite]))
    err[np.flatnonzero(~finite)[~same]] = np.inf
    return err


@pytest.mark.parametrize("name", sorted(_math32.ULP))
def test_kernel_within_its_ulp_bound_on_a_dense_sweep(name):
    x = _sweep(1021)  # every 1021st float32 of each sign, and [-12, 12]
    got = _cpu.float32_math(name, x)
    assert got.dtype == np.float32
    err = _ulp_error(got, x, name)
    assert err.max() <= _math32.ULP[name], (err.max(), x[err.argmax()], got[err.argmax()])
    assert np.median(err) <= 1  # most values within one ulp


@pytest.mark.parametrize("name", _math32.KERNELS)
def test_numba_form_gives_the_numpy_forms_bits(name):
    pytest.importorskip("numba")
    kernel = _cpu.jit_kernel(name, np.empty(1, np.float32), np.ones(1, np.float32))
    assert kernel is not None, "numba is installed but the kernel did not build"
    x = np.concatenate([np.arange(0, 0xFFFFFFFF, 4099, dtype=np.uint32).view(np.float32),
                        SPECIAL])  # every 4099th float32, both signs, nan payloads included
    got = np.empty_like(x)
    kernel(got, x)
    with np.errstate(all="ignore"):
        want = getattr(_math32, name)(x)
    assert np.array_equal(_bits(got), _bits(want))


def test_without_numba_the_ops_give_the_same_bits(monkeypatch):
    x = np.random.default_rng(0).uniform(-0.99, 0.99, (1 << 19) + 3).astype(np.float32)
    with_jit = {op: getattr(tx, op)(tx.tensor(x)).numpy() for op in OPS}
    monkeypatch.setattr(_cpu, "_state", {"m": None})  # as without numba
    for op in OPS:
        assert np.array_equal(_bits(getattr(tx, op)(tx.tensor(x)).numpy()),
                              _bits(with_jit[op])), op


def test_the_split_over_threads_gives_the_same_bits():
    x = np.random.default_rng(1).uniform(-20, 20, (1 << 20) + 5).astype(np.float32)
    before = tx.get_num_threads()
    try:
        tx.set_num_threads(1)
        one = _cpu.float32_math("sinh32", x)
        tx.set_num_threads(2)
        two = _cpu.float32_math("sinh32", x)
    finally:
        tx.set_num_threads(before)
    assert np.array_equal(_bits(one), _bits(two))


@pytest.mark.parametrize("op", sorted(OPS))
def test_ops_match_torch_values_and_gradients(op):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    x = rng.uniform(-0.99, 0.99, 3000) if op == "atanh" else rng.uniform(-0.9, 30, 3000) \
        if op == "log1p" else rng.uniform(-30, 30, 3000)
    x = x.astype(np.float32).reshape(30, 100)[:, ::2]  # a strided view, too
    a, t = tx.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    y, ty = getattr(tx, op)(a), getattr(torch, op)(t)
    assert y.dtype == tx.float32
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=4e-7, atol=0)
    g = rng.standard_normal(x.shape).astype(np.float32)
    y.backward(tx.tensor(g))
    ty.backward(torch.tensor(g))
    # expm1's gradient g (out + 1) keeps out's absolute error: one ulp of 1 where out ~ -1
    err = np.abs(a.grad.numpy() - t.grad.numpy())
    assert (err <= 2e-6 * np.abs(t.grad.numpy()) + 1.2e-7 * np.abs(g)).all(), err.max()


@pytest.mark.parametrize("op", sorted(OPS))
def test_ops_special_values(op):
    """inf, nan, +-0, subnormals, the poles of atanh and sinh/cosh up to float32's limit
    (torch's cosh and sinh give inf from 88.7 on, where the value is still finite)."""
    got = getattr(tx, op)(tx.tensor(SPECIAL)).numpy()
    with np.errstate(all="ignore"):
        want = REFERENCE[OPS[op]](SPECIAL.astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    finite = np.isfinite(want)
    np.testing.assert_array_equal(got[~finite], want[~finite])
    np.testing.assert_allclose(got[finite], want[finite], rtol=4e-7, atol=0)
    np.testing.assert_array_equal(np.signbit(got[:2]), np.signbit(want[:2]))  # +-0


@pytest.mark.parametrize("op", sorted(OPS))
def test_float64_and_float16_inputs_keep_their_paths(op):
    x = np.linspace(-0.9, 0.9, 101)
    with np.errstate(all="ignore"):
        want = getattr(np, {"atanh": "arctanh"}.get(op, op))(x)
    np.testing.assert_allclose(getattr(tx, op)(tx.tensor(x)).numpy(), want, rtol=1e-15)
    half = getattr(tx, op)(tx.tensor(x, dtype=tx.float16))
    assert half.dtype == tx.float16
    np.testing.assert_allclose(half.numpy().astype(np.float64), want, rtol=2e-3, atol=1e-4)


@pytest.mark.parametrize("op", ["logaddexp", "logaddexp2"])
def test_logaddexp_float32_against_torch(op):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    a = (rng.standard_normal((300, 40)) * 30).astype(np.float32)
    b = (rng.standard_normal(40) * 30).astype(np.float32)  # broadcast
    a[0, :8] = [np.inf, -np.inf, np.nan, 0, -0.0, np.inf, 5, -np.inf]
    b[:8] = [np.inf, -np.inf, 1, 0, 0, -np.inf, 5, 3]
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    xa, xb = tx.tensor(a, requires_grad=True), tx.tensor(b, requires_grad=True)
    got, want = getattr(tx, op)(xa, xb), getattr(torch, op)(ta, tb)
    g, w = got.detach().numpy(), want.detach().numpy()
    assert got.dtype == tx.float32
    np.testing.assert_array_equal(g[~np.isfinite(w)], w[~np.isfinite(w)])
    # max(a, b) + log1p(2^-|d|) cancels near 0: the error is relative to the larger term
    fin = np.isfinite(w)
    scale = np.maximum(np.abs(np.maximum(a, b)), 1)[fin]
    assert (np.abs(g[fin] - w[fin]) <= 6e-7 * scale).all()
    rows = np.isfinite(a).all(1)
    got[rows].sum().backward()
    want[torch.tensor(rows)].sum().backward()
    np.testing.assert_allclose(xa.grad.numpy()[rows], ta.grad.numpy()[rows], rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("name", ["softplus", "logsigmoid", "mish"])
def test_softplus_family_float32_against_torch(name):
    torch = pytest.importorskip("torch")
    import tensorix.nn.functional as F

    x = (np.random.default_rng(4).standard_normal(5000) * 30).astype(np.float32)
    x[:6] = [np.inf, -np.inf, np.nan, 0, -0.0, -100]
    a, t = tx.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    y, ty = getattr(F, name)(a), getattr(torch.nn.functional, name)(t)
    w = ty.detach().numpy()
    ok = np.isfinite(w) & (np.abs(w) > 1e-37)  # subnormal results: within a subnormal ulp
    np.testing.assert_array_equal(np.isnan(y.detach().numpy()), np.isnan(w))
    np.testing.assert_allclose(y.detach().numpy()[ok], w[ok], rtol=5e-7)
    fin = np.isfinite(x)
    y[tx.tensor(fin)].sum().backward()
    ty[torch.tensor(fin)].sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=2e-6, atol=2e-7)


@pytest.mark.parametrize("dim", [0, 1])
def test_logcumsumexp_float32_scan_against_torch(dim):
    torch = pytest.importorskip("torch")
    x = (np.random.default_rng(5).standard_normal((64, 37)) * 40).astype(np.float32)
    x[3, :5] = [-np.inf, -np.inf, 0, np.inf, 1]
    a, t = tx.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    y, ty = tx.logcumsumexp(a, dim), torch.logcumsumexp(t, dim)
    w = ty.detach().numpy()
    np.testing.assert_array_equal(y.detach().numpy()[~np.isfinite(w)], w[~np.isfinite(w)])
    np.testing.assert_allclose(y.detach().numpy(), w, rtol=1e-6, atol=1e-6)
    rows = np.isfinite(x).all(1)
    y[tx.tensor(rows)].sum().backward()
    ty[torch.tensor(rows)].sum().backward()
    np.testing.assert_allclose(a.grad.numpy()[rows], t.grad.numpy()[rows], rtol=1e-4, atol=1e-5)


def test_rsqrt_and_norm_keep_their_values():
    torch = pytest.importorskip("torch")
    x = np.float32([4, 0, -1, np.inf, 1e-40, 2])
    np.testing.assert_array_equal(tx.rsqrt(tx.tensor(x)).numpy(), torch.rsqrt(torch.tensor(x)))
    assert float(tx.rsqrt(tx.tensor(np.float32(4)))) == 0.5  # 0-d
    v = np.random.default_rng(6).standard_normal((50, 40)).astype(np.float32)
    np.testing.assert_allclose(tx.norm(tx.tensor(v), dim=1).numpy(),
                               torch.norm(torch.tensor(v), dim=1).numpy(), rtol=1e-6)
    c = (v[:, :20] + 1j * v[:, 20:]).astype(np.complex64)
    np.testing.assert_allclose(tx.norm(tx.tensor(c)).numpy(), torch.norm(torch.tensor(c)),
                               rtol=1e-6)


@pytest.mark.parametrize("name", sorted(_math32.GAMMA_BOUNDS))
def test_gamma_kernels_within_their_bounds_on_a_dense_sweep(name):
    """ulp where |result| >= 1/2, absolute near the zeros; x > 0 and x < 0 apart, against the
    float64 kernels of ops/special.py (themselves within 1e-13 of mpmath)."""
    from tensorix.ops.special import digamma_kernel, lgamma_kernel

    ref_fn = {"lgamma32": lgamma_kernel, "digamma32": digamma_kernel}[name]
    x = _sweep(1021)
    got = _cpu.float32_math(name, x)
    with np.errstate(all="ignore"):
        ref = ref_fn(x.astype(np.float64))
        ref32 = ref.astype(np.float32)
    fin = np.isfinite(ref32)
    np.testing.assert_array_equal(got[~fin], ref32[~fin])  # poles, +-inf, nan
    err = np.abs(got[fin].astype(np.float64) - ref[fin])
    ulp = err / np.spacing(np.abs(ref32[fin])).astype(np.float64)
    big = np.abs(ref[fin]) >= 0.5
    for side, (ulps, absolute) in zip((x[fin] > 0, x[fin] < 0), _math32.GAMMA_BOUNDS[name]):
        assert ulp[side & big].max() <= ulps, (name, ulp[side & big].max())
        assert err[side & ~big].max() <= absolute, (name, err[side & ~big].max())


@pytest.mark.parametrize("op", ["lgamma", "digamma", "mvlgamma", "polygamma0", "i0"])
def test_gamma_ops_float32_against_torch(op):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    x = rng.uniform(-20, 40, 4000).astype(np.float32)
    if op == "i0":
        x = x * 2  # up to 80: torch's float i0 overflows from 88.7 (ours from 91.9)
    if op == "mvlgamma":
        x = np.abs(x) + 1.5
    x[:6] = [0.5, 1.0, 2.0, 1e-30, 3e3, 1e6] if op != "mvlgamma" else x[:6]
    fns = {"lgamma": (tx.lgamma, torch.lgamma), "digamma": (tx.digamma, torch.digamma),
           "mvlgamma": (lambda a: tx.mvlgamma(a, 3), lambda t: torch.mvlgamma(t, 3)),
           "polygamma0": (lambda a: tx.polygamma(0, a), lambda t: torch.polygamma(0, t)),
           "i0": (tx.i0, torch.i0)}
    f, tf = fns[op]
    a, t = tx.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    y, ty = f(a), tf(t)
    assert y.dtype == tx.float32
    w = ty.detach().numpy()
    # the bounds above, against torch's own float32 values (within 1 ulp of the truth)
    np.testing.assert_allclose(y.detach().numpy(), w, rtol=4e-6, atol=3e-6)
    if op in ("lgamma", "mvlgamma", "i0"):
        g = rng.standard_normal(x.shape).astype(np.float32)
        y.backward(tx.tensor(g))
        ty.backward(torch.tensor(g))
        np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=4e-6, atol=3e-6)
