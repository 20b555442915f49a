"""The one-pass CPU kernels behind the registry speed table's slowest ops (issue 13): each
kernel's numba form against its NumPy form (the same bits), and the op's values against a
float64 reference and torch."""

import numpy as np
import pytest

import tensorix as tx
from tensorix.kernels import jit_kernel
from tensorix.ops import special


def _igamma_points(rng, n=4000):
    a = 10 ** rng.uniform(-1.5, 2.5, n)
    x = a * rng.uniform(0.01, 4.0, n)
    edges_a = [0.0, 1.0, -1.0, 1.0, 2.0, np.inf, 3.0, 0.0, np.nan, 2.0, np.inf, 1e-3, 5e3]
    edges_x = [0.0, 0.0, 1.0, -1.0, np.inf, 2.0, 0.0, 2.0, 1.0, np.nan, np.inf, 1e-4, 5.1e3]
    return np.concatenate([a, edges_a]), np.concatenate([x, edges_x])


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("tol", [1e-17, special.IGAMMA_TOL32])
def test_igamma_numba_form_adds_the_numpy_forms_terms(rng, upper, tol):
    pytest.importorskip("numba")
    k = jit_kernel("igamma64", np.empty(1), np.ones(1), np.ones(1), False, 1e-17)
    assert k is not None, "numba is installed but the kernel did not build"
    a, x = _igamma_points(rng)
    got = np.empty_like(a)
    k(got, a, x, upper, tol)
    want = special.igamma_kernel(a, x, upper, tol)
    # the same terms; the prefactor x^a e^-x / Gamma(a) takes the C library's exp, log and
    # lgamma here, NumPy's and Lanczos' there: for large a its exponent is a difference of
    # large numbers, so float64 values agree to ~1e-13 (each is that far from the truth)
    np.testing.assert_allclose(got, want, rtol=2e-12, atol=1e-300)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    g32, w32 = got.astype(np.float32), want.astype(np.float32)
    same = (g32 == w32) | np.isnan(w32)
    assert same.mean() > 0.999
    assert np.all(np.abs(g32[~same] - w32[~same]) <= np.spacing(np.abs(w32[~same])))


@pytest.mark.parametrize("op", ["igamma", "igammac"])
def test_igamma_float32_within_an_ulp_of_float64(rng, op, device):
    a, x = (v.astype(np.float32) for v in _igamma_points(rng))
    got = getattr(tx, op)(tx.tensor(a, device=device), tx.tensor(x, device=device))
    got = got.cpu().numpy()
    assert got.dtype == np.float32
    ref = special.igamma_kernel(a.astype(np.float64), x.astype(np.float64), op == "igammac")
    fin = np.isfinite(ref)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    ulp = np.spacing(np.abs(ref[fin]).astype(np.float32)).astype(np.float64)
    err = np.abs(got[fin] - ref[fin]) / np.maximum(ulp, np.float64(2.0 ** -149))
    assert err.max() <= 1.0, (err.max(), a[fin][err.argmax()], x[fin][err.argmax()])


@pytest.mark.parametrize("op", ["igamma", "igammac"])
def test_igamma_float32_against_torch(rng, op):
    torch = pytest.importorskip("torch")
    a, x = (v.astype(np.float32) for v in _igamma_points(rng))
    got = getattr(tx, op)(tx.tensor(a), tx.tensor(x)).numpy()
    want = getattr(torch, op)(torch.tensor(a).double(), torch.tensor(x).double()).numpy()
    np.testing.assert_allclose(got, want, rtol=2e-7, atol=1e-30)


def _cum_inputs(rng):
    ties = rng.integers(0, 4, (3, 50, 5)).astype(np.float32)
    nans = rng.standard_normal((4, 7, 33)).astype(np.float64)
    nans[rng.random(nans.shape) < 0.05] = np.nan
    ints = rng.integers(-3, 3, (6, 40))
    # last-axis rows with a nan first, last, alone or twice, signed zeros tying, infinities
    edge = np.float32([[np.nan, 1, 2, np.nan, 0], [0.0, -0.0, 0.0, -0.0, np.nan],
                       [np.nan] * 5, [-np.inf, np.inf, np.inf, -np.inf, 1],
                       [-0.0, 0.0, -np.inf, -0.0, -1], [3, 2, 1, 0, -1]])
    wide = rng.standard_normal((300, 700)).astype(np.float32)  # split over the pool
    wide[rng.random(wide.shape) < 1e-3] = np.nan
    return [(ties, 1), (ties, 0), (ties, -1), (nans, 2), (nans, 1), (ints, 1), (ints, 0),
            (np.float32([2.0]), 0), (edge, 1), (edge, 0), (ints.astype(np.int32), 1),
            (wide, 1), (np.sort(wide, 1), 1)]


@pytest.mark.parametrize("op", ["cummax", "cummin"])
def test_cum_extreme_kernel_matches_the_numpy_path_and_torch(rng, op, monkeypatch):
    torch = pytest.importorskip("torch")
    from tensorix.ops import _along

    for x, d in _cum_inputs(rng):
        got = getattr(tx, op)(tx.tensor(x), d)
        want = getattr(torch, op)(torch.tensor(x), d)
        np.testing.assert_array_equal(got.values.numpy(), want.values.numpy())
        np.testing.assert_array_equal(np.signbit(got.values.numpy()),
                                      np.signbit(want.values.numpy()))  # -0.0 kept
        np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())
        with monkeypatch.context() as m:  # the NumPy passes, as where no kernel serves
            m.setattr(_along, "running_extreme", lambda *a: None)
            slow = getattr(tx, op)(tx.tensor(x), d)
        np.testing.assert_array_equal(got.values.numpy(), slow.values.numpy())
        np.testing.assert_array_equal(got.indices.numpy(), slow.indices.numpy())


def test_cum_extreme_gradient_goes_to_the_indexed_elements():
    torch = pytest.importorskip("torch")
    x = np.float32([[1, 3, 3, 2, 5], [4, 4, 1, 0, 4]])
    a, t = tx.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    (tx.cummax(a, 1).values * tx.arange(5.0)).sum().backward()
    (torch.cummax(t, 1).values * torch.arange(5.0)).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), t.grad.numpy())


def _sweep32():
    bits = np.arange(0, 0x7F800000, 4099, dtype=np.uint32).view(np.float32)
    special_values = np.float32([0.0, -0.0, np.inf, -np.inf, np.nan, -87.3, -88.8, -104.0])
    return np.concatenate([bits, -bits, np.linspace(-20, 20, 1 << 19, dtype=np.float32),
                           special_values])


def _within(got, ref, scale, x, bound):
    """Error in ulp of ``scale`` where e^x is normal (x >= -87.3), 2^-142 absolute below."""
    fin = np.isfinite(ref)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    ulp = np.maximum(np.spacing(np.abs(scale).astype(np.float32)).astype(np.float64), 2.0 ** -149)
    np.testing.assert_array_equal(got[np.isinf(ref)], ref[np.isinf(ref)])
    with np.errstate(invalid="ignore"):
        err = np.abs(got.astype(np.float64) - ref)
    normal = fin & (x >= -87.3)
    assert (err[normal] / ulp[normal]).max() <= bound, x[normal][np.argmax(err[normal] /
                                                                          ulp[normal])]
    assert err[fin & ~normal].max() <= 2.0 ** -142


def test_silu_float32_within_its_ulp_bounds():
    from tensorix.kernels import _math32

    x = _sweep32()
    xd = x.astype(np.float64)
    with np.errstate(all="ignore"):
        s = 1 / (1 + np.exp(-xd))
        ref, dref = xd * s, s * (1 + xd * (1 - s))
        dscale = np.abs(s) + np.abs(s * xd * (1 - s))
    ref[x == -np.inf] = np.nan
    dref[np.isinf(x)] = np.nan
    got = tx.silu(tx.tensor(x)).numpy()
    _within(got, ref, ref, x, _math32.SILU_ULP)
    t = tx.tensor(x, requires_grad=True)
    tx.silu(t).backward(tx.ones_like(t))
    _within(t.grad.numpy(), dref, dscale, x, _math32.SILU_GRAD_ULP)


def test_silu_against_torch_and_double_backward():
    torch = pytest.importorskip("torch")
    x = np.linspace(-30, 30, 2001, dtype=np.float32)
    a, t = tx.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    (g,) = tx.autograd.grad(tx.silu(a).sum(), [a], create_graph=True)
    (gt,) = torch.autograd.grad(torch.nn.functional.silu(t).sum(), [t], create_graph=True)
    np.testing.assert_allclose(tx.silu(a).detach().numpy(),
                               torch.nn.functional.silu(t).detach().numpy(), rtol=4e-7,
                               atol=1e-30)
    np.testing.assert_allclose(g.detach().numpy(), gt.detach().numpy(), rtol=1e-6, atol=3e-7)
    g.sum().backward()
    gt.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-6)


GATES = {"hardshrink": ((0.5,), {}), "softshrink": ((0.5,), {}), "threshold": ((0.5, -2.0), {})}


def _gate_input():
    x = np.float32([-np.inf, -1.0, -0.5, -0.49, -0.0, 0.0, 0.3, 0.5, 0.5000001, 2.0, np.inf,
                    np.nan])
    return np.concatenate([x, np.linspace(-3, 3, 1001, dtype=np.float32)])


@pytest.mark.parametrize("name", sorted(GATES))
def test_gate_values_and_gradient_match_torch(name, device):
    torch = pytest.importorskip("torch")
    F = tx.nn.functional
    args, _ = GATES[name]
    for dtype in (np.float32, np.float64):
        x = _gate_input().astype(dtype)
        a = tx.tensor(x, requires_grad=True, device=device)
        t = torch.tensor(x, requires_grad=True)
        out = getattr(F, name)(a, *args)
        want = getattr(torch.nn.functional, name)(t, *args)
        np.testing.assert_array_equal(out.detach().cpu().numpy(), want.detach().numpy())
        out.backward(tx.ones_like(a))
        want.backward(torch.ones_like(t))
        np.testing.assert_array_equal(a.grad.cpu().numpy(), t.grad.numpy())


@pytest.mark.parametrize("name", sorted(GATES))
def test_gate_kernel_gives_the_numpy_forms_bits(name):
    pytest.importorskip("numba")
    from tensorix.ops import activation

    cls = getattr(activation, name.capitalize())
    args, _ = GATES[name]
    for dtype in (np.float32, np.float64):
        with np.errstate(invalid="ignore"):  # signalling nan payloads
            x = np.concatenate([_gate_input(), np.arange(0, 0xFFFFFFFF, 4099, dtype=np.uint32)
                                .view(np.float32)]).astype(dtype)
        p = tuple(dtype(v) for v in args)
        k = jit_kernel(name, np.empty(1, dtype), np.ones(1, dtype), *p)
        assert k is not None
        got = np.empty_like(x)
        k(got, x, *p)
        with np.errstate(all="ignore"):
            want = cls.numpy_form(np, x, *p)
        assert np.array_equal(got.view(np.uint8), want.view(np.uint8))


def test_gate_double_backward_and_integer_threshold():
    x = tx.tensor([-1.0, 0.2, 1.5], dtype=tx.float64, requires_grad=True)
    (g,) = tx.autograd.grad((tx.nn.functional.softshrink(x) ** 2).sum(), [x],
                            create_graph=True)
    (h,) = tx.autograd.grad(g.sum(), [x])
    np.testing.assert_array_equal(h.numpy(), [2.0, 0.0, 2.0])
    out = tx.nn.functional.threshold(tx.tensor([1, 5, 3]), 3, -7)
    assert out.dtype is tx.int64 and out.tolist() == [-7, 5, -7]


def test_kernels_keep_zero_dim_shapes():
    for out in (tx.igamma(tx.tensor(2.0), tx.tensor(1.0)), tx.silu(tx.tensor(2.0)),
                tx.nn.functional.softshrink(tx.tensor(2.0)), tx.cummax(tx.tensor(2.0), 0).values):
        assert out.shape == ()
    assert abs(tx.igamma(tx.tensor(2.0), tx.tensor(1.0)).item() - 0.26424111765711533) < 1e-7


def test_logcumsumexp_scan_kernel_is_its_numpy_body_in_order(rng):
    pytest.importorskip("numba")
    from tensorix.kernels import _math32

    x = rng.uniform(-30, 30, (3, 200, 4)).astype(np.float32)
    x[0, 5, 0], x[1, 7, 1], x[2, 0, 2], x[2, 1, 2] = np.inf, -np.inf, -np.inf, -np.inf
    x[1, 50, 3] = np.nan
    k = jit_kernel("logcumsumexp32", np.empty((1, 2, 1), np.float32),
                   np.ones((1, 2, 1), np.float32))
    assert k is not None
    rows = rng.uniform(-30, 30, (37, 50, 1)).astype(np.float32)  # blocks of 16 rows, 5 left
    rows[20, 3, 0], rows[36, 0, 0] = np.nan, -np.inf
    for v in (x, np.ascontiguousarray(x.transpose(0, 2, 1)).reshape(12, 200, 1), rows):
        got = np.empty_like(v)
        k(got, v)
        want = v.copy()
        with np.errstate(all="ignore"):
            for i in range(1, v.shape[1]):  # the body, one position after the other
                want[:, i] = _math32._logaddexp32(want[:, i - 1], v[:, i])
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_logcumsumexp_float32_against_torch(rng, dim):
    torch = pytest.importorskip("torch")
    x = rng.uniform(-20, 20, (64, 300)).astype(np.float32)
    got = tx.logcumsumexp(tx.tensor(x), dim).numpy()
    want = torch.logcumsumexp(torch.tensor(x).double(), dim).numpy()
    np.testing.assert_allclose(got, want, rtol=3e-6, atol=1e-6)
    np.testing.assert_allclose(got, torch.logcumsumexp(torch.tensor(x), dim).numpy(),
                               rtol=3e-6, atol=1e-6)


def test_tan_float32_within_its_bound_next_to_the_multiples_of_pi(device):
    from tensorix.kernels import _math32

    near = (np.arange(1, 700000) * (np.pi / 4)).astype(np.float32)  # up to 2^19
    x = np.concatenate([near, np.nextafter(near, np.float32(0)), -near,
                        np.float32([0.0, -0.0, 1e-30, 6e5, -3e38, np.inf, np.nan])])
    got = tx.tan(tx.tensor(x, device=device)).cpu().numpy()
    with np.errstate(all="ignore"):
        ref = np.tan(x.astype(np.float64))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    fin = np.isfinite(ref)
    ulp = np.spacing(np.abs(ref[fin]).astype(np.float32)).astype(np.float64)
    err = np.abs(got[fin] - ref[fin]) / ulp
    # beyond 2^19 float64 tan rounded (NumPy's float32 tan is 3.4 ulp on AVX-512 machines)
    # on "cuda" tensorix calls cupy.tan: the CUDA Math API's tanf bound, 4 ulp (the stand-in's
    # NumPy float32 tan reaches 3.7 on AVX-512 machines)
    bound = _math32.ULP["tan32"] if device == "cpu" else 4
    assert err.max() <= bound, x[fin][err.argmax()]
    assert np.signbit(got[-6]) and got[-6] == 0 and not np.signbit(got[-7])  # -0 stays -0


def test_tan_against_torch_with_gradient():
    torch = pytest.importorskip("torch")
    x = np.linspace(-20, 20, 4001, dtype=np.float32)
    a, t = tx.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    tx.tan(a).backward(tx.ones_like(a))
    torch.tan(t).backward(torch.ones_like(t))
    np.testing.assert_allclose(tx.tan(a).detach().numpy(), torch.tan(t).detach().numpy(),
                               rtol=5e-7, atol=1e-7)
    np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=2e-6)


def _atan2_points(rng):
    bits = np.arange(0, 0x7F800000, 4099 * 7, dtype=np.uint32).view(np.float32)
    normal = rng.standard_normal(1 << 18).astype(np.float32)
    edge = np.float32([0, -0.0, np.inf, -np.inf, np.nan, 1, -1, 1e-45, 3e38, -3e38])
    ye, xe = (v.ravel() for v in np.meshgrid(edge, edge))
    y = np.concatenate([bits, -bits, normal, ye])
    x = np.concatenate([rng.permutation(bits), -rng.permutation(bits), rng.permutation(normal),
                        xe])
    return y, x


def test_atan2_float32_within_its_bound_with_ieee_edges(rng):
    from tensorix.kernels import _math32

    y, x = _atan2_points(rng)  # (a GPU takes its own arctan2)
    got = tx.atan2(tx.tensor(y), tx.tensor(x)).numpy()
    ref = np.arctan2(y.astype(np.float64), x.astype(np.float64))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    fin = ~np.isnan(ref)
    ulp = np.maximum(np.spacing(np.abs(ref[fin]).astype(np.float32)).astype(np.float64),
                     2.0 ** -149)
    assert (np.abs(got[fin] - ref[fin]) / ulp).max() <= _math32.ATAN2_ULP
    assert np.array_equal(np.signbit(got[fin]), np.signbit(ref[fin]))  # signed zeros too
    edges = slice(-100, None)  # zeros and infinities: the rounded exact value
    np.testing.assert_array_equal(got[edges], ref[edges].astype(np.float32))


def test_atan2_numba_form_gives_the_numpy_forms_bits(rng):
    pytest.importorskip("numba")
    from tensorix.kernels import _math32

    y, x = _atan2_points(rng)
    k = jit_kernel("atan2_32", np.empty(1, np.float32), np.ones(1, np.float32),
                   np.ones(1, np.float32))
    assert k is not None
    got = np.empty_like(x)
    k(got, y, x)
    with np.errstate(all="ignore"):
        want = _math32.atan2_32(y, x)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


def test_atan2_against_torch_with_gradient(rng):
    torch = pytest.importorskip("torch")
    y, x = (rng.standard_normal(5000).astype(np.float32) for _ in range(2))
    a, b = tx.tensor(y, requires_grad=True), tx.tensor(x, requires_grad=True)
    ta, tb = torch.tensor(y, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, tout = tx.atan2(a, b), torch.atan2(ta, tb)
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=3e-7,
                               atol=1e-7)
    out.backward(tx.ones_like(out))
    tout.backward(torch.ones_like(tout))
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-5)
    np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-5)


def test_compiled_silu_is_fused_and_matches_torch():
    torch = pytest.importorskip("torch")
    F = tx.nn.functional
    cg = tx.compile(lambda x: F.silu(x) * x.tanh(), options={"kernels": "numpy"})
    x = np.random.default_rng(0).standard_normal((40, 30))
    t = tx.tensor(x, requires_grad=True)
    y = cg(t)
    y.backward(tx.ones_like(y))
    tt = torch.tensor(x, requires_grad=True)
    yt = torch.nn.functional.silu(tt) * tt.tanh()
    yt.backward(torch.ones_like(yt))
    np.testing.assert_allclose(y.detach().numpy(), yt.detach().numpy(), rtol=1e-12,
                               atol=1e-12)
    np.testing.assert_allclose(t.grad.numpy(), tt.grad.numpy(), rtol=1e-10, atol=1e-12)
    assert next(iter(cg.entries.values())).fwd.report["groups"] >= 1


_ORDER_OPS = {  # the order primitives (ops/order.py) and the composites built on them
    "sort": lambda x: tx.sort(x, 1, descending=True)[0],
    "topk": lambda x: tx.topk(x, 2, 1)[0].repeat(1, 3)[:, :5],
    "kthvalue": lambda x: tx.kthvalue(x, 3, 0, keepdim=True)[0].expand(4, 5),
    "median": lambda x: tx.median(x, 1, keepdim=True)[0] * x,
    "median-all": lambda x: tx.median(x) * x,
    "nanmedian": lambda x: tx.nanmedian(x, 0)[0] + x,
    "quantile": lambda x: tx.quantile(x, tx.tensor([0.3, 0.8], dtype=tx.float64), 1).t()
    .repeat(1, 3)[:, :5],
    "max-dim": lambda x: tx.max(x, 1, keepdim=True)[0] * x,
    "amax": lambda x: x.amax(0) * x,
    "argmax": lambda x: x * x.argmax(1, keepdim=True),
    "searchsorted": lambda x: x * tx.searchsorted(tx.sort(x, 1)[0], x.flip(1)),
    "cummin": lambda x: tx.cummin(x, 0)[0] * x,
}


@pytest.mark.parametrize("op", ["hardshrink", "softshrink", "threshold", "silu", "cummax",
                                "hardswish", "elu", "selu", "celu", "gelu", *_ORDER_OPS])
def test_new_primitives_backward_is_recorded_not_frozen_by_compile(op):
    """A primitive whose backward builds its mask or gradient from raw arrays is a constant in
    the compiler's joint graph: traced on one input, the compiled gradient kept that input's
    mask (hardshrink: gradients off by up to 16 at merge time). Traced on other values, the
    compiled gradients must equal eager's. The order ops' positions were raw arrays computed
    outside the dispatcher (a frozen sort order); they are primitives now, so the compiled
    call must be one graph without breaks, its gradients eager's on new values."""
    F = tx.nn.functional
    fn = {"hardshrink": F.hardshrink, "softshrink": F.softshrink, "silu": F.silu,
          "threshold": lambda x: F.threshold(x, 0.5, 0.3),
          "cummax": lambda x: tx.cummax(x, 1)[0],
          # shifted and scaled so that the traced and the new values straddle the kinks
          "hardswish": lambda x: F.hardswish((x - 0.55) * 12), "elu": lambda x: F.elu(x - 0.55),
          "selu": lambda x: F.selu(x - 0.55), "celu": lambda x: F.celu(x - 0.55, 2.0),
          "gelu": lambda x: F.gelu(x - 0.55), **_ORDER_OPS}[op]
    rng = np.random.default_rng(0)
    weight = tx.tensor(np.arange(20.0).reshape(4, 5))

    def grad(f, x):
        t = tx.tensor(x, requires_grad=True)
        (f(t) * weight).sum().backward()
        return t.grad.numpy()

    compiled = tx.compile(fn, options={"kernels": "numpy"})
    grad(compiled, rng.uniform(0.2, 0.9, (4, 5)))  # traced here
    if op in _ORDER_OPS or op == "cummax":
        assert compiled.stats["breaks"] == [], compiled.stats["breaks"]
    x = rng.uniform(0.2, 0.9, (4, 5))
    np.testing.assert_allclose(grad(compiled, x), grad(fn, x), rtol=1e-12, atol=1e-12)


def test_float32_norm_of_a_large_tensor_sums_in_float64_chunks():
    """The 2-norm of 64 Ki or more float32 elements takes kernels.sum_squares (BLAS dots of
    chunks, added in float64): within float32 rounding of the exact norm, keepdim shapes, the
    gradient as before, and against torch."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((300, 1001)) * 7 + 3).astype(np.float32)  # 4.6 chunks
    exact = np.sqrt((x.astype(np.float64) ** 2).sum())
    t = tx.tensor(x, requires_grad=True)
    n = t.norm()
    assert n.dtype == tx.float32 and n.shape == ()
    assert abs(n.item() - exact) <= np.spacing(np.float32(exact))
    assert tx.norm(t, dim=(0, 1), keepdim=True).shape == (1, 1)
    assert tx.linalg.norm(t).item() == n.item()
    n.backward()
    tt = torch.tensor(x, requires_grad=True)
    tt.norm().backward()
    np.testing.assert_allclose(n.item(), tt.norm().item(), rtol=2e-5)
    np.testing.assert_allclose(t.grad.numpy(), tt.grad.numpy(), rtol=2e-5, atol=1e-9)
    from tensorix.kernels import sum_squares

    assert sum_squares(np.float32([3, 4])) == 25.0 and sum_squares(np.float32([])) == 0


def test_angle_of_real_tensors_matches_torch_one_pass():
    torch = pytest.importorskip("torch")
    x = np.concatenate([np.random.default_rng(0).standard_normal(5000),
                        [0.0, -0.0, np.nan, np.inf, -np.inf, 1e-45, -1e-45]])
    for d in (np.float32, np.float64, np.float16):
        got = tx.angle(tx.tensor(x.astype(d))).numpy()
        want = torch.angle(torch.tensor(x.astype(d))).numpy()
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)  # nan where nan
    t = tx.tensor(x[:10].reshape(2, 5).T, requires_grad=True)  # strided
    a = tx.angle(t)
    np.testing.assert_array_equal(a.detach().numpy(), torch.angle(torch.tensor(x[:10].reshape(
        2, 5).T)).numpy())
    a.sum().backward()
    np.testing.assert_array_equal(t.grad.numpy(), np.zeros((5, 2)))


@pytest.mark.parametrize("name, kw", [("hardswish", {}), ("elu", {}), ("elu", {"alpha": 0.3}),
                                      ("selu", {}), ("celu", {"alpha": 2.5})])
def test_one_pass_activations_match_torch(name, kw):
    """hardswish bit for bit (the same float32 operations), the ELU family within expm1_32's
    2 ulp plus a rounding; gradients against torch, 16-bit inputs rounded once."""
    torch = pytest.importorskip("torch")
    x = np.concatenate([np.random.default_rng(1).standard_normal(20000) * 4,
                        [0.0, -0.0, 3.0, -3.0, 100.0, -100.0, np.nan, np.inf, -np.inf]])
    for d in (np.float32, np.float64, np.float16):
        t, tt = tx.tensor(x.astype(d), requires_grad=True), torch.tensor(x.astype(d),
                                                                          requires_grad=True)
        y, ty = getattr(tx.nn.functional, name)(t, **kw), getattr(torch.nn.functional, name)(
            tt, **kw)
        yn, tyn = y.detach().numpy(), ty.detach().numpy()
        if name == "hardswish" or d is not np.float32:
            rtol = 1e-15 if d is np.float64 else 0
            np.testing.assert_allclose(yn, tyn, rtol=rtol, atol=0)
        else:
            np.testing.assert_allclose(yn, tyn, rtol=4 * 2 ** -23, atol=0)
        np.testing.assert_array_equal(np.signbit(yn[~np.isnan(yn)]),
                                      np.signbit(tyn[~np.isnan(tyn)]))
        g = np.random.default_rng(2).standard_normal(x.size).astype(d)
        y.backward(tx.tensor(g))
        ty.backward(torch.tensor(g))
        fin = np.isfinite(x)
        np.testing.assert_allclose(t.grad.numpy()[fin], tt.grad.numpy()[fin],
                                   rtol=1e-14 if d is np.float64 else 4e-3 if d is np.float16
                                   else 4e-7, atol=0)


@pytest.mark.parametrize("name, base", [("logaddexp32", np.e), ("logaddexp2_32", 2.0)])
def test_logaddexp_kernels_one_pass_same_bits_both_forms(name, base):
    """logaddexp / logaddexp2 in one float32 pass: numba's loop gives the NumPy form's bits,
    which are the formula's (max + softplus32(-|d| ln b) / ln b, a + log_b 2 at a == b), and
    values within 4 ulp of float64 where the result is not near a cancellation."""
    pytest.importorskip("numba")
    from tensorix.kernels import _math32

    rng = np.random.default_rng(7)
    a = np.concatenate([rng.standard_normal(50000) * 30, [0, -0.0, np.inf, -np.inf, np.nan,
                                                          np.inf, 5, 1e-45]]).astype(np.float32)
    b = np.concatenate([rng.standard_normal(50000) * 30, [0, 0, np.inf, -np.inf, 1, -np.inf,
                                                          5, -1e-45]]).astype(np.float32)
    k = jit_kernel(name, np.empty(1, np.float32), np.ones(1, np.float32), np.ones(1, np.float32))
    assert k is not None
    got = np.empty_like(a)
    k(got, a, b)
    with np.errstate(all="ignore"):
        want = getattr(_math32, name)(a, b)
        ln = np.float32(np.log(base))
        d = -np.abs(a - b)
        formula = np.maximum(a, b) + _math32.softplus32(d * ln) / ln if base == 2.0 else \
            np.maximum(a, b) + _math32.softplus32(d)
        formula = np.where(a == b, a + (np.float32(1) if base == 2.0 else np.float32(
            np.log(2.0))), formula)
        ref = (np.logaddexp2 if base == 2.0 else np.logaddexp)(a.astype(np.float64), b)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    assert np.array_equal(want.view(np.uint32), formula.astype(np.float32).view(np.uint32))
    far = (np.abs(ref) > 1) & np.isfinite(ref)  # away from the cancellation near 0
    err = np.abs(got[far] - ref[far]) / np.spacing(np.abs(ref[far]).astype(np.float32))
    assert err.max() <= 4


@pytest.mark.parametrize("name", ["angle_real", "hardswish", "elu32"])
def test_one_pass_numpy_forms_give_numbas_bits(name, monkeypatch):
    """Without numba (the kernel not served) angle, hardswish and the ELU family run their
    NumPy forms: the same bits as numba's pass, specials included."""
    pytest.importorskip("numba")
    from tensorix.kernels import _cpu

    F = tx.nn.functional
    fn = {"angle_real": tx.angle, "hardswish": F.hardswish,
          "elu32": lambda t: F.celu(t, 1.7)}[name]
    x = np.concatenate([np.random.default_rng(3).standard_normal(70000) * 6,
                        [0.0, -0.0, 3.0, -3.0, np.nan, np.inf, -np.inf, 1e-45]])
    x = x.astype(np.float32)
    jit_out = fn(tx.tensor(x)).numpy()
    monkeypatch.setitem(_cpu._state, ("k", name), None)
    numpy_out = fn(tx.tensor(x)).numpy()
    assert np.array_equal(jit_out.view(np.uint32), numpy_out.view(np.uint32))
