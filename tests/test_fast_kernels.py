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
    return [(ties, 1), (ties, 0), (ties, -1), (nans, 2), (nans, 1), (ints, 1), (ints, 0),
            (np.float32([2.0]), 0)]


@pytest.mark.parametrize("op", ["cummax", "cummin"])
def test_cum_extreme_kernel_matches_the_numpy_path_and_torch(rng, op, monkeypatch):
    torch = pytest.importorskip("torch")
    from tensorix.ops import reduce

    for x, d in _cum_inputs(rng):
        got = getattr(tx, op)(tx.tensor(x), d)
        want = getattr(torch, op)(torch.tensor(x), d)
        np.testing.assert_array_equal(got.values.numpy(), want.values.numpy())
        np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())
        with monkeypatch.context() as m:  # the NumPy passes, as where no kernel serves
            m.setattr(reduce, "running_extreme", lambda *a: None)
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
