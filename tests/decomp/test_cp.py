"""CP decompositions: exact recovery, masks, line search, HALS, and TensorLy as the oracle."""

import numpy as np
import pytest

import tensorix as tx
from tensorix import decomp
from tensorix.testing import assert_close, gradcheck

from ._helpers import cp_tensor, rel_err


@pytest.mark.parametrize("kwargs", [dict(init="svd"), dict(init="random", random_state=3),
                                    dict(init="svd", linesearch=True),
                                    dict(init="svd", normalize_factors=True)])
def test_parafac_recovers_an_exact_low_rank_tensor(rng, kwargs):
    x, _ = cp_tensor(rng, (6, 7, 8), 3)
    cp = decomp.parafac(tx.tensor(x), 3, n_iter_max=500, tol=1e-14, **kwargs)
    assert isinstance(cp, decomp.CPTensor) and cp.shape == (6, 7, 8) and cp.rank == 3
    assert rel_err(cp.to_tensor(), x) < 1e-10
    if kwargs.get("normalize_factors"):
        for f in cp.factors:
            assert_close(f.norm(dim=0), np.ones(3))


def test_parafac_with_mask_recovers_the_missing_entries(rng):
    x, _ = cp_tensor(rng, (8, 9, 10), 2)
    observed = rng.random(x.shape) > 0.3
    data = np.where(observed, x, np.nan)  # missing entries may hold anything, even nan
    cp = decomp.parafac(tx.tensor(data), 2, n_iter_max=1000, tol=1e-15,
                        mask=tx.tensor(observed))
    assert rel_err(cp.to_tensor(), x) < 1e-10


def test_parafac_error_at_most_tensorlys_at_equal_iterations(rng):
    tl = pytest.importorskip("tensorly")
    from tensorly.decomposition import parafac as tl_parafac

    x = rng.standard_normal((10, 11, 12))  # full rank: the fit is genuinely approximate
    for linesearch in (False, True):
        cp, errors = decomp.parafac(tx.tensor(x), 4, n_iter_max=30, tol=0,
                                    linesearch=linesearch, return_errors=True)
        ref, ref_errors = tl_parafac(x, 4, n_iter_max=30, tol=0, init="svd",
                                     linesearch=linesearch, return_errors=True)
        ours = rel_err(cp.to_tensor(), x)
        theirs = rel_err(tl.cp_to_tensor(ref), x)
        assert ours <= theirs * (1 + 1e-8), (linesearch, ours, theirs)
        assert len(errors) == 30
        if not linesearch:  # TensorLy records no error on its line-search iterations
            assert_close(np.array(errors), np.array([float(e) for e in ref_errors]), rtol=1e-6)


def test_non_negative_parafac_hals(rng):
    tl = pytest.importorskip("tensorly")
    from tensorly.decomposition import non_negative_parafac_hals

    # sparse non-negative factors: well-conditioned enough for HALS to converge in ~100 sweeps
    factors = [rng.random((s, 3)) * (rng.random((s, 3)) > 0.5) + np.eye(s, 3) for s in (6, 7, 8)]
    x = np.einsum("ir,jr,kr->ijk", *factors)
    cp = decomp.non_negative_parafac(tx.tensor(x), 3, n_iter_max=100, tol=1e-14)
    assert all(float(f.min()) >= 0 for f in cp.factors)
    assert rel_err(cp.to_tensor(), x) < 1e-10
    noisy = np.abs(rng.standard_normal((6, 7, 8)))
    cp = decomp.non_negative_parafac(tx.tensor(noisy), 3, n_iter_max=50, tol=0)
    ref = non_negative_parafac_hals(noisy, 3, n_iter_max=50, tol=0)
    assert all(float(f.min()) >= 0 for f in cp.factors)
    # same NNDSVDa start, same five inner sweeps: the same iterates
    assert_close(rel_err(cp.to_tensor(), noisy), rel_err(tl.cp_to_tensor(ref), noisy),
                 rtol=1e-9)


def test_cp_on_device_and_low_precision(device, rng):
    x, _ = cp_tensor(rng, (5, 6, 7), 2)
    t = tx.tensor(x.astype(np.float32)).to(device)
    cp = decomp.parafac(t, 2, n_iter_max=200, tol=1e-10)
    assert cp.factors[0].device.type == device and cp.weights.dtype == tx.float32
    assert rel_err(cp.to_tensor().cpu(), x) < 1e-4
    nn = decomp.non_negative_parafac(t.abs(), 2, n_iter_max=5)
    assert nn.factors[2].device.type == device
    cp16 = decomp.parafac(t.to(tx.bfloat16), 2, n_iter_max=50)
    assert cp16.to_tensor().dtype == tx.bfloat16
    assert rel_err(cp16.to_tensor().float().cpu(), x) < 2e-2


def test_cp_reconstruction_is_differentiable():
    w = tx.randn(3, dtype=tx.float64, requires_grad=True)
    fs = [tx.randn(s, 3, dtype=tx.float64, requires_grad=True) for s in (2, 3, 4)]
    gradcheck(lambda w, *f: decomp.CPTensor((w, f)).to_tensor(), [w, *fs], name="cp_to_tensor")
    gradcheck(lambda w, *f: decomp.cp_norm((w, f)), [w, *fs], name="cp_norm")


def test_cp_norm_normalize_and_unfolded_agree_with_the_full_tensor(rng):
    x, factors = cp_tensor(rng, (4, 5, 6), 3)
    cp = decomp.CPTensor((tx.tensor(rng.standard_normal(3)), [tx.tensor(f) for f in factors]))
    full = cp.to_tensor()
    assert_close(cp.norm(), full.norm())
    assert_close(cp.normalize().to_tensor(), full)
    for mode in range(3):
        assert_close(cp.to_unfolded(mode), decomp.unfold(full, mode))
    weights, fs = cp  # unpacks like TensorLy's CPTensor
    assert len(fs) == 3 and weights.shape == (3,)


def test_parafac_bad_input_errors(rng):
    x = tx.randn(3, 4, 5, dtype=tx.float64)
    with pytest.raises(ValueError, match=r"parafac: rank must be an int in \[1, 12\]"):
        decomp.parafac(x, 13)
    with pytest.raises(ValueError, match="parafac: rank must be"):
        decomp.parafac(x, 0)
    bad = x.clone()
    bad[0, 0, 0] = float("nan")
    with pytest.raises(ValueError, match="parafac: tensor contains inf or nan"):
        decomp.parafac(bad, 2)
    holes = x.clone()
    holes[1, 2, 3] = float("inf")
    observed = tx.ones(3, 4, 5, dtype=tx.bool)
    with pytest.raises(ValueError, match="parafac: tensor contains inf or nan values at observed"):
        decomp.parafac(holes, 2, mask=observed)
    observed[1, 2, 3] = False  # the same inf, now at a missing entry: allowed
    assert decomp.parafac(holes, 2, mask=observed, n_iter_max=3).to_tensor().isfinite().all()
    with pytest.raises(ValueError, match="parafac: mask must be a Tensor of the tensor's shape"):
        decomp.parafac(x, 2, mask=tx.ones(3, 4))
    with pytest.raises(ValueError, match="parafac: init must be"):
        decomp.parafac(x, 2, init="nndsvd")
    with pytest.raises(ValueError, match="parafac: svd must be one of"):
        decomp.parafac(x, 2, svd="lanczos")
    with pytest.raises(ValueError, match="CPTensor: factors must be matrices"):
        decomp.CPTensor((None, [tx.randn(3, 2), tx.randn(4, 3)]))
    with pytest.raises(TypeError, match="non_negative_parafac: expected tensor to have a float"):
        decomp.non_negative_parafac(tx.ones(3, 4, dtype=tx.int64), 2)


def test_parafac_rank_above_a_mode_size_and_user_init(rng):
    x, _ = cp_tensor(rng, (3, 8, 9), 5)  # rank 5 > 3 = first mode: svd init pads randomly
    cp = decomp.parafac(tx.tensor(x), 5, n_iter_max=3000, tol=1e-16, random_state=0,
                        linesearch=True)
    assert rel_err(cp.to_tensor(), x) < 1e-8
    again = decomp.parafac(tx.tensor(x), 5, n_iter_max=1, init=cp)
    assert rel_err(again.to_tensor(), x) < 1e-8
