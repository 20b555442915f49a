"""TT-cross: exact recovery of a TT tensor from a fraction of its entries, a black-box function
against TensorLy's tensor_train_cross, evaluations counted, and clear errors."""

import numpy as np
import pytest

import tensorix as tx
from tensorix import decomp
from tensorix.decomp._cross import maxvol

from ._helpers import chain, rel_err


def test_tt_cross_recovers_an_exact_tt_tensor_from_few_entries(rng):
    x = chain([rng.standard_normal(s) for s in [(1, 8, 3), (3, 9, 4), (4, 10, 3), (3, 7, 1)]])
    tt, info = decomp.tensor_train_cross(tx.tensor(x), [1, 3, 4, 3, 1], random_state=0,
                                         return_info=True)
    assert isinstance(tt, decomp.TTTensor) and tt.rank == (1, 3, 4, 3, 1)
    assert rel_err(tt.to_tensor(), x) < 1e-10 and info["errors"][-1] < 1e-10
    assert info["n_evals"] < x.size / 4  # read a quarter of the entries at most
    assert info["n_test_evals"] == 1000


def _hilbert(idx):
    return 1.0 / (1.0 + idx.sum(1).double())


def test_tt_cross_of_a_function_matches_tensorly(rng):
    tl = pytest.importorskip("tensorly")
    from tensorly.contrib.decomposition import tensor_train_cross as tl_cross

    shape = (12,) * 5
    full = 1.0 / (1.0 + np.indices(shape).sum(0))
    calls = []
    tt, info = decomp.tensor_train_cross(lambda i: calls.append(i.shape) or _hilbert(i), 6,
                                         shape=shape, random_state=0, return_info=True)
    assert sum(c[0] for c in calls) == info["n_evals"] + info["n_test_evals"]
    assert all(c[1] == 5 for c in calls)
    ours = rel_err(tt.to_tensor(), full)
    ref = tl_cross(full, [1, 6, 6, 6, 6, 1], tol=1e-10, n_iter_max=10, random_state=0)
    theirs = rel_err(tl.tt_to_tensor(ref), full)
    assert ours < 1e-3 and ours < 3 * theirs, (ours, theirs)
    assert info["n_evals"] < full.size / 10


def test_maxvol_picks_a_dominant_submatrix(rng):
    a = rng.standard_normal((50, 5))
    rows = maxvol(a)
    assert len(set(rows)) == 5
    coef = np.linalg.solve(a[rows].T, a.T).T
    assert np.abs(coef).max() <= 1.05 + 1e-12
    # the volume is at least that of the rows a plain pivoted elimination would give
    assert abs(np.linalg.det(a[rows])) >= abs(np.linalg.det(a[:5])) * 0.999


def test_tt_cross_on_device(device, rng):
    x = chain([rng.standard_normal(s) for s in [(1, 5, 2), (2, 6, 2), (2, 4, 1)]])
    t = tx.tensor(x.astype(np.float32)).to(device)
    tt = decomp.tensor_train_cross(t, 2, random_state=0)
    assert tt.factors[0].device.type == device and tt.factors[0].dtype == tx.float32
    assert rel_err(tt.to_tensor().cpu(), x) < 1e-4


def test_tt_cross_bad_input():
    with pytest.raises(ValueError, match="tensor_train_cross: a function needs shape="):
        decomp.tensor_train_cross(_hilbert, 3)
    with pytest.raises(ValueError, match=r"must return a Tensor of shape \(\d+,\)"):
        decomp.tensor_train_cross(lambda i: i.double(), 3, shape=(4, 5))
    with pytest.raises(TypeError, match="expected a Tensor or a function"):
        decomp.tensor_train_cross(np.ones((3, 3)), 2)
    with pytest.raises(ValueError, match="rank must be positive"):
        decomp.tensor_train_cross(_hilbert, 0, shape=(4, 5))
    with pytest.raises(ValueError, match="contains inf or nan"):
        decomp.tensor_train_cross(tx.tensor(np.full((3, 4), np.inf)), 2)
