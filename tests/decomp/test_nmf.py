"""NMF (HALS, multiplicative updates) and shift-invariant NMF, with TensorLy as the oracle."""

import numpy as np
import pytest

import tensorix as tx
from tensorix import decomp
from tensorix.testing import assert_close

from ._helpers import rel_err


def _nonneg_low_rank(rng, m, n, k):
    W = rng.random((m, k)) * (rng.random((m, k)) > 0.4) + np.eye(m, k)
    H = rng.random((k, n)) * (rng.random((k, n)) > 0.4) + np.eye(k, n)
    return W @ H


@pytest.mark.parametrize("method", ["hals", "mu"])
def test_nmf_fits_a_non_negative_low_rank_matrix(rng, method):
    x = _nonneg_low_rank(rng, 20, 15, 3)
    W, H, errors = decomp.non_negative_factorization(tx.tensor(x), 3, method=method,
                                                     n_iter_max=2000, tol=0,
                                                     return_errors=True)
    assert W.shape == (20, 3) and H.shape == (3, 15)
    assert float(W.min()) >= 0 and float(H.min()) >= 0
    # HALS converges to the exact factorisation; MU (Lee & Seung) slowly but never goes up
    assert rel_err(W @ H, x) < (1e-8 if method == "hals" else 1e-2)
    if method == "mu":
        assert all(b <= a * (1 + 1e-12) for a, b in zip(errors, errors[1:]))


def test_nmf_equals_tensorly_at_equal_iterations(rng):
    tl = pytest.importorskip("tensorly")
    from tensorly.decomposition import non_negative_parafac, non_negative_parafac_hals

    x = np.abs(rng.standard_normal((12, 10)))  # not low rank: a genuine approximation
    for method, ref_fn in (("mu", non_negative_parafac), ("hals", non_negative_parafac_hals)):
        W, H = decomp.non_negative_factorization(tx.tensor(x), 4, method=method,
                                                 n_iter_max=25, tol=0)
        ref = tl.cp_to_tensor(ref_fn(x, 4, n_iter_max=25, tol=0, init="svd"))
        assert_close(W @ H, ref, rtol=1e-7, atol=1e-9)  # the same NNDSVDa start and updates


def test_non_negative_parafac_mu_matches_tensorly_on_a_tensor(rng):
    tl = pytest.importorskip("tensorly")
    from tensorly.decomposition import non_negative_parafac

    x = np.abs(rng.standard_normal((6, 7, 8)))
    cp = decomp.non_negative_parafac(tx.tensor(x), 3, n_iter_max=20, tol=0, method="mu")
    assert all(float(f.min()) >= 0 for f in cp.factors)
    ref = non_negative_parafac(x, 3, n_iter_max=20, tol=0, init="svd")
    assert_close(cp.to_tensor(), tl.cp_to_tensor(ref), rtol=1e-7, atol=1e-9)


def test_nmf_bad_input_is_a_clear_error(rng):
    x = tx.tensor(np.abs(rng.standard_normal((5, 6))))
    with pytest.raises(ValueError, match="non_negative_parafac: tensor must be non-negative"):
        decomp.non_negative_factorization(-x, 2)
    with pytest.raises(ValueError, match="non_negative_factorization: expected a matrix"):
        decomp.non_negative_factorization(x.reshape(5, 3, 2), 2)
    with pytest.raises(ValueError, match=r"rank must be an int in \[1, 5\]"):
        decomp.non_negative_factorization(x, 6)
    with pytest.raises(ValueError, match="method must be 'hals' or 'mu'"):
        decomp.non_negative_factorization(x, 2, method="cd")


def _shifted_mixture(rng, m=10, T=64):
    t = np.arange(T)
    H = np.stack([np.exp(-0.5 * ((t - 20) / 3) ** 2), np.exp(-0.5 * ((t - 40) / 5) ** 2)])
    W = rng.random((m, 2)) + 0.2
    tau = rng.integers(-6, 7, (m, 2))
    X = np.stack([sum(W[n, d] * np.roll(H[d], tau[n, d]) for d in range(2))
                  for n in range(m)])
    return X, tau


def test_shift_nmf_recovers_delayed_components(rng):
    x, tau = _shifted_mixture(rng)
    res = decomp.shift_nmf(tx.tensor(x), 2, max_delay=12, random_state=0)
    assert res.W.shape == (10, 2) and res.H.shape == (2, 64) and res.delays.shape == (10, 2)
    assert float(res.W.min()) >= 0 and float(res.H.min()) >= 0
    assert res.errors[-1] < 1e-8  # the planted model, exactly
    # plain NMF with the same number of components cannot follow the shifts
    W, H = decomp.non_negative_factorization(tx.tensor(x), 2)
    assert rel_err(W @ H, x) > 10 * res.errors[-1]
    # delays are defined up to one offset per component (and modulo T, circular shifts);
    # match the components by which recovered delay pattern fits which true one
    found = res.delays.numpy()
    rel_found = (found - found[:1]) % 64
    rel_true = (tau - tau[:1]) % 64
    assert {tuple(c) for c in rel_found.T} == {tuple(c) for c in rel_true.T}


def test_shift_nmf_on_device_and_bad_input(device, rng):
    x, _ = _shifted_mixture(rng, m=4, T=16)
    res = decomp.shift_nmf(tx.tensor(x.astype(np.float32)).to(device), 2, n_iter_max=5,
                           n_starts=2, tol=0)
    assert res.W.device.type == device and res.W.dtype == tx.float32 and len(res.errors) == 5
    with pytest.raises(ValueError, match="shift_nmf: X must be non-negative"):
        decomp.shift_nmf(tx.tensor(-x), 2)
    with pytest.raises(ValueError, match=r"shift_nmf: n_components must be an int in \[1, 4\]"):
        decomp.shift_nmf(tx.tensor(x), 5)
    with pytest.raises(ValueError, match="shift_nmf: X contains inf or nan"):
        decomp.shift_nmf(tx.tensor(np.full((3, 4), np.nan)), 1)
    with pytest.raises(ValueError, match="shift_nmf: n_starts must be a positive int"):
        decomp.shift_nmf(tx.tensor(x), 1, n_starts=0)


def _stretched_mixture(seed, m=8, F=256):
    """Two harmonic spectra (three partials, log-Gaussian peaks) on f = 1..F, each row holding
    both at its own pitch: stretches ``exp(k du)`` on the log grid ``stretch_nmf`` uses."""
    rng = np.random.default_rng(seed)
    f = np.arange(1, F + 1.0)
    du = np.log(F) / (2 * F - 1)

    def spectrum(f0, fr):
        return sum(np.exp(-(np.log(fr) - np.log(h * f0)) ** 2 / (2 * 0.1 ** 2)) / h
                   for h in range(1, 4))

    k = rng.integers(-10, 11, (m, 2))
    W = rng.uniform(0.5, 2, (m, 2))
    x = sum(W[:, d:d + 1] * spectrum(f0, f[None] / np.exp(k[:, d:d + 1] * du))
            for d, f0 in enumerate((20.0, 29.0)))
    return x, k, du


def test_stretch_nmf_follows_pitch_changes_plain_nmf_cannot():
    x, k, du = _stretched_mixture(0)
    res = decomp.stretch_nmf(tx.tensor(x), 2, max_stretch=1.3, n_starts=4, n_iter_max=100,
                             random_state=0)
    assert res.W.shape == (8, 2) and res.H.shape == (2, res.grid.shape[0])
    assert res.stretches.shape == (8, 2) and float(res.stretches.min()) >= 1 / 1.3 - 1e-9
    assert float(res.W.min()) >= 0 and float(res.H.min()) >= 0
    # the residual is the linear interpolation onto the log grid (peaks ~2 samples wide)
    assert res.errors[-1] < 0.05
    W, H = decomp.non_negative_factorization(tx.tensor(x), 2)
    assert rel_err(W @ H, x) > 4 * res.errors[-1]
    # stretches are defined up to one factor per component: compare relative to row 0, in
    # grid steps, matching components by the better fit
    found = np.rint(np.log(res.stretches.numpy()) / du).astype(int)
    rel_found, rel_true = found - found[:1], k - k[:1]
    miss = min(max(np.abs(rel_found[:, p] - rel_true[:, d]).max() for d, p in enumerate(perm))
               for perm in ((0, 1), (1, 0)))
    assert miss <= 2


def test_stretch_nmf_device_and_bad_input(device):
    x, _, _ = _stretched_mixture(1, m=3, F=32)
    res = decomp.stretch_nmf(tx.tensor(x.astype(np.float32)).to(device), 1, n_iter_max=3,
                             n_starts=1, tol=0)
    assert res.W.device.type == device and res.stretches.dtype == tx.float32
    with pytest.raises(ValueError, match="stretch_nmf: axis must hold 32 positive, increasing"):
        decomp.stretch_nmf(tx.tensor(x), 1, axis=tx.arange(32.0))
    with pytest.raises(ValueError, match="stretch_nmf: max_stretch must be > 1"):
        decomp.stretch_nmf(tx.tensor(x), 1, max_stretch=1.0)
    with pytest.raises(ValueError, match="stretch_nmf: n_bins must be an int >= 2"):
        decomp.stretch_nmf(tx.tensor(x), 1, n_bins=1)
    with pytest.raises(ValueError, match="stretch_nmf: expected a matrix X"):
        decomp.stretch_nmf(tx.tensor(x[None]), 1)
    with pytest.raises(ValueError, match="shift_nmf: X must be non-negative"):
        decomp.stretch_nmf(tx.tensor(-x), 1)
