"""The subspace power method: exact symmetric decompositions above the dimension (where
TensorLy's symmetric power iteration, the oracle for the error, cannot follow), and errors."""

import numpy as np
import pytest

import tensorix as tx
from tensorix import decomp

from ._helpers import rel_err


def _symmetric(rng, size, rank, order=4):
    A = rng.standard_normal((size, rank))
    A /= np.linalg.norm(A, axis=0)
    lam = rng.uniform(1, 2, rank) * np.sign(rng.standard_normal(rank))
    letters = "ijklmn"[:order]
    spec = "r," + ",".join(f"{c}r" for c in letters) + "->" + letters
    return np.einsum(spec, lam, *[A] * order), A, lam


def test_spm_recovers_a_symmetric_tensor_of_rank_above_its_dimension(rng):
    T, A, lam = _symmetric(rng, 6, 10)
    cp = decomp.subspace_power_method(tx.tensor(T), 10, random_state=0)
    assert cp.rank == 10 and len(cp.factors) == 4 and cp.factors[0] is cp.factors[3]
    assert rel_err(cp.to_tensor(), T) < 1e-7
    np.testing.assert_allclose(np.sort(cp.weights.numpy()), np.sort(lam), rtol=1e-6)
    # every planted a_i found, up to sign (even order)
    found = cp.factors[0].numpy()
    assert np.abs(A.T @ found).max(1).min() > 1 - 1e-8


def test_spm_beats_tensorlys_symmetric_power_iteration(rng):
    tl = pytest.importorskip("tensorly")
    from tensorly.decomposition import symmetric_parafac_power_iteration

    T, _, _ = _symmetric(rng, 5, 4, order=6)
    cp = decomp.subspace_power_method(tx.tensor(T), 4, random_state=1)
    w, f = symmetric_parafac_power_iteration(T, 4, n_repeat=10, n_iteration=50)
    theirs = rel_err(tl.cp_to_tensor((w, [f] * 6)), T)
    ours = rel_err(cp.to_tensor(), T)
    assert ours < 1e-7 and ours <= theirs


def test_spm_on_device(device, rng):
    T, _, _ = _symmetric(rng, 4, 3)
    cp = decomp.subspace_power_method(tx.tensor(T).to(device), 3, random_state=0)
    assert cp.weights.device.type == device
    assert rel_err(cp.to_tensor().cpu(), T) < 1e-7


def test_spm_bad_input(rng):
    T, _, _ = _symmetric(rng, 4, 2)
    with pytest.raises(ValueError, match=r"rank must be an int in \[1, 10\]"):
        decomp.subspace_power_method(tx.tensor(T), 11)
    with pytest.raises(ValueError, match="expected a tensor of order >= 3 with equal dims"):
        decomp.subspace_power_method(tx.tensor(T[..., 0, 0]), 2)
    with pytest.raises(ValueError, match="expected a tensor of order >= 3 with equal dims"):
        decomp.subspace_power_method(tx.tensor(T[:3]), 2)
    with pytest.raises(ValueError, match="tensor is not symmetric"):
        decomp.subspace_power_method(tx.tensor(rng.standard_normal((3, 3, 3, 3))), 2)


@pytest.mark.parametrize("size, rank, order", [(5, 5, 3), (5, 10, 5)])
def test_spm_odd_order_recovers_components_up_to_rank_binom(rng, size, rank, order):
    # order 3: rank up to I (the flattening's row side); order 5 in dim 5: rank 10 > I
    T, A, lam = _symmetric(rng, size, rank, order=order)
    cp = decomp.subspace_power_method(tx.tensor(T), rank, random_state=0)
    assert len(cp.factors) == order and rel_err(cp.to_tensor(), T) < 1e-8
    found = cp.factors[0].numpy()
    match = (A.T @ found)                           # (true, found) cosines
    pairs = np.abs(match).argmax(1)
    assert np.abs(match).max(1).min() > 1 - 1e-8
    # odd order: a found -a_i carries the sign in its weight
    signed = cp.weights.numpy()[pairs] * np.sign(match[np.arange(rank), pairs])
    np.testing.assert_allclose(signed, lam, rtol=1e-6)


def test_spm_odd_order_rank_bound_and_symmetry_check(rng):
    T, _, _ = _symmetric(rng, 4, 3, order=3)
    with pytest.raises(ValueError, match=r"rank must be an int in \[1, 4\]"):
        decomp.subspace_power_method(tx.tensor(T), 5)
    skew = T + 0.1 * rng.standard_normal(T.shape)
    with pytest.raises(ValueError, match="tensor is not symmetric"):
        decomp.subspace_power_method(tx.tensor(skew), 2)
