"""Tensor completion (CP-WOPT, TT-ALS) judged on held-out entries, against masked CP by EM and
TensorLy's masked parafac; clear errors for masks that observe nothing."""

import numpy as np
import pytest

import tensorix as tx
from tensorix import decomp

from ._helpers import chain, cp_tensor


def _held_out_error(pred, x, observed):
    pred = pred.detach().cpu().numpy()
    return np.linalg.norm((pred - x)[~observed]) / np.linalg.norm(x[~observed])


def test_cp_wopt_completes_a_low_rank_tensor_from_20_percent(rng):
    x, _ = cp_tensor(rng, (15, 16, 17), 3)
    observed = rng.random(x.shape) < 0.2
    data = tx.tensor(np.where(observed, x, np.nan))  # missing entries may hold nan
    cp, errors = decomp.cp_wopt(data, 3, tx.tensor(observed), random_state=0,
                                return_errors=True)
    assert isinstance(cp, decomp.CPTensor) and cp.rank == 3
    assert errors[-1] < 1e-6 < errors[0]
    assert _held_out_error(cp.to_tensor(), x, observed) < 1e-5


def test_cp_wopt_held_out_error_no_worse_than_tensorly_masked_parafac(rng):
    tl = pytest.importorskip("tensorly")
    from tensorly.decomposition import parafac as tl_parafac

    x, _ = cp_tensor(rng, (10, 11, 12), 2)
    x = x + 0.01 * rng.standard_normal(x.shape)  # noisy: neither recovers exactly
    observed = rng.random(x.shape) < 0.4
    cp = decomp.cp_wopt(tx.tensor(x), 2, tx.tensor(observed), random_state=1)
    ref = tl_parafac(np.where(observed, x, 0.0), 2, mask=observed.astype(float),
                     n_iter_max=500, init="random", random_state=1)
    ours = _held_out_error(cp.to_tensor(), x, observed)
    theirs = np.linalg.norm((tl.cp_to_tensor(ref) - x)[~observed]) / np.linalg.norm(
        x[~observed])
    assert ours <= 1.05 * theirs, (ours, theirs)


def test_tt_completion_from_30_percent(rng):
    x = chain([rng.standard_normal(s) for s in [(1, 8, 3), (3, 9, 3), (3, 10, 3), (3, 7, 1)]])
    observed = rng.random(x.shape) < 0.3
    for init in ("svd", "random"):
        tt, errors = decomp.tt_completion(tx.tensor(np.where(observed, x, np.nan)),
                                          [1, 3, 3, 3, 1], tx.tensor(observed), init=init,
                                          random_state=0, return_errors=True)
        assert isinstance(tt, decomp.TTTensor) and tt.rank == (1, 3, 3, 3, 1)
        assert errors[-1] < 1e-8
        assert _held_out_error(tt.to_tensor(), x, observed) < 1e-7


def test_completion_on_device(device, rng):
    x, _ = cp_tensor(rng, (6, 7, 8), 2)
    observed = rng.random(x.shape) < 0.5
    t = tx.tensor(x.astype(np.float32)).to(device)
    m = tx.tensor(observed).to(device)
    tt = decomp.tt_completion(t, 2, m, n_iter_max=3)
    assert tt.factors[1].device.type == device and tt.factors[1].dtype == tx.float32
    cp = decomp.cp_wopt(t, 2, m, n_iter_max=5, random_state=0)
    assert cp.factors[0].device.type == device and cp.factors[0].dtype == tx.float32


@pytest.mark.parametrize("fit", ["cp_wopt", "tt_completion", "parafac"])
def test_a_mask_observing_nothing_is_a_clear_error(fit):
    x = tx.randn(4, 5, 6, dtype=tx.float64)
    none = tx.zeros(4, 5, 6, dtype=tx.bool)
    fn = getattr(decomp, fit)
    with pytest.raises(ValueError, match=f"{fit}: mask has no observed entries"):
        fn(x, 2, mask=none)
    if fit != "parafac":
        with pytest.raises(ValueError, match=f"{fit}: mask is required"):
            fn(x, 2, None)
        with pytest.raises(ValueError, match="mask must be a Tensor of the tensor's shape"):
            fn(x, 2, tx.ones(4, 5, dtype=tx.bool))
