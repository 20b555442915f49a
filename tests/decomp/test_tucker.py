"""Tucker decompositions: HOSVD/HOOI exact recovery, non-negative MU, TensorLy as the oracle."""

import numpy as np
import pytest

import tensorix as tx
from tensorix import decomp
from tensorix.testing import assert_close, gradcheck

from ._helpers import rel_err, tucker_tensor


@pytest.mark.parametrize("kwargs", [dict(n_iter_max=0), dict(), dict(init="random",
                                                                     random_state=0),
                                    dict(svd="randomized_svd", random_state=0)])
def test_tucker_recovers_an_exact_low_multilinear_rank_tensor(rng, kwargs):
    x, _, _ = tucker_tensor(rng, (6, 7, 8, 5), (2, 3, 4, 2))
    tk = decomp.tucker(tx.tensor(x), [2, 3, 4, 2], **kwargs)
    assert isinstance(tk, decomp.TuckerTensor) and tk.rank == (2, 3, 4, 2)
    assert rel_err(tk.to_tensor(), x) < 1e-10
    for f in tk.factors:  # orthonormal factors
        assert_close(f.mT @ f, np.eye(f.shape[1]), atol=1e-10)


def test_tucker_error_at_most_tensorlys(rng):
    tl = pytest.importorskip("tensorly")
    from tensorly.decomposition import tucker as tl_tucker

    x = rng.standard_normal((8, 9, 10))
    for n_iter in (0, 5):
        tk = decomp.tucker(tx.tensor(x), [3, 4, 5], n_iter_max=n_iter, tol=0)
        ref = tl_tucker(x, [3, 4, 5], n_iter_max=n_iter, tol=0, init="svd")
        ours, theirs = rel_err(tk.to_tensor(), x), rel_err(tl.tucker_to_tensor(ref), x)
        assert ours <= theirs * (1 + 1e-10), (n_iter, ours, theirs)
        assert_close(tk.core.abs(), np.abs(ref.core), atol=1e-8)  # equal up to signs


def test_tucker_int_rank_is_capped_per_mode_and_errors_decrease(rng):
    x = rng.standard_normal((3, 6, 7))
    tk, errors = decomp.tucker(tx.tensor(x), 4, return_errors=True, tol=0, n_iter_max=10)
    assert tk.rank == (3, 4, 4)
    assert all(b <= a + 1e-12 for a, b in zip(errors, errors[1:]))


def test_non_negative_tucker(rng):
    tl = pytest.importorskip("tensorly")
    from tensorly.decomposition import non_negative_tucker as tl_nn_tucker

    x = np.abs(rng.standard_normal((6, 7, 8)))
    tk, errors = decomp.non_negative_tucker(tx.tensor(x), [2, 3, 4], n_iter_max=30, tol=0,
                                            return_errors=True)
    assert float(tk.core.min()) >= 0 and all(float(f.min()) >= 0 for f in tk.factors)
    assert all(b <= a + 1e-12 for a, b in zip(errors, errors[1:]))  # MU never increases it
    ref = tl_nn_tucker(x, [2, 3, 4], n_iter_max=30, tol=0)
    assert rel_err(tk.to_tensor(), x) <= rel_err(tl.tucker_to_tensor(ref), x) * 1.001
    rand = decomp.non_negative_tucker(tx.tensor(x), [2, 3, 4], init="random", random_state=0)
    assert float(rand.core.min()) >= 0


def test_tucker_on_device_and_low_precision(device, rng):
    x, _, _ = tucker_tensor(rng, (5, 6, 7), (2, 2, 3))
    t = tx.tensor(x.astype(np.float32)).to(device)
    tk = decomp.tucker(t, [2, 2, 3])
    assert tk.core.device.type == device and tk.core.dtype == tx.float32
    assert rel_err(tk.to_tensor().cpu(), x) < 1e-5
    nn = decomp.non_negative_tucker(t.abs(), [2, 2, 3], n_iter_max=3)
    assert nn.factors[0].device.type == device
    half = decomp.tucker(t.to(tx.float16), [2, 2, 3])
    assert half.to_tensor().dtype == tx.float16
    assert rel_err(half.to_tensor().float().cpu(), x) < 5e-3


def test_tucker_reconstruction_is_differentiable():
    core = tx.randn(2, 3, 2, dtype=tx.float64, requires_grad=True)
    fs = [tx.randn(s, r, dtype=tx.float64, requires_grad=True) for s, r in ((3, 2), (4, 3), (2, 2))]
    gradcheck(lambda c, *f: decomp.TuckerTensor((c, f)).to_tensor(), [core, *fs],
              name="tucker_to_tensor")


def test_tucker_bad_input_errors():
    x = tx.randn(3, 4, 5, dtype=tx.float64)
    with pytest.raises(ValueError, match=r"tucker: rank must be an int or 3 ints with 1 <= "):
        decomp.tucker(x, [2, 5, 2])
    with pytest.raises(ValueError, match="tucker: rank must be an int or 3 ints"):
        decomp.tucker(x, [2, 2])
    with pytest.raises(ValueError, match="tucker: rank must be positive"):
        decomp.tucker(x, 0)
    with pytest.raises(ValueError, match="non_negative_tucker: tensor contains inf or nan"):
        decomp.non_negative_tucker(x / 0, 2)
    with pytest.raises(ValueError, match="tucker: init must be"):
        decomp.tucker(x, 2, init="hosvd")
    with pytest.raises(ValueError, match="TuckerTensor: factors must be matrices"):
        decomp.TuckerTensor((tx.randn(2, 2), [tx.randn(3, 2), tx.randn(3, 3)]))


def test_tucker_rank_for_budget_packs_the_budget_where_the_spectra_need_it(rng):
    tl = pytest.importorskip("tensorly")
    from tensorly.tucker_tensor import validate_tucker_rank

    from ._helpers import tucker_tensor

    x, _, _ = tucker_tensor(rng, (12, 14, 16), (2, 6, 6))  # anisotropic multilinear rank
    x = x + 1e-3 * np.linalg.norm(x) / np.sqrt(x.size) * rng.standard_normal(x.shape)
    size = 2 * 6 * 6 + 12 * 2 + 14 * 6 + 16 * 6
    rank = decomp.tucker_rank_for_budget(tx.tensor(x), size)
    assert rank == [2, 6, 6]  # exactly the planted ranks fit the planted size
    for budget in (0.05, 0.1, 300):
        rank = decomp.tucker_rank_for_budget(tx.tensor(x), budget)
        limit = budget if isinstance(budget, int) else int(budget * x.size)
        assert decomp._tucker._tucker_size(x.shape, rank) <= limit
        # against TensorLy's data-blind choice of the same parameter fraction
        theirs = validate_tucker_rank(x.shape, rank=limit / x.size)
        assert decomp._tucker._tucker_size(x.shape, theirs) <= limit * 1.05
        ours_err = rel_err(decomp.tucker(tx.tensor(x), rank, n_iter_max=5, tol=0).to_tensor(), x)
        their_err = rel_err(tl.tucker_to_tensor(tl.decomposition.tucker(
            x, theirs, n_iter_max=5, tol=0, init="svd")), x)
        assert ours_err <= their_err * (1 + 1e-9), (budget, rank, theirs)


def test_tucker_rank_for_budget_bad_input():
    x = tx.randn(4, 5, 6, dtype=tx.float64)
    with pytest.raises(ValueError, match=r"tucker_rank_for_budget: budget must be an int >= 16"):
        decomp.tucker_rank_for_budget(x, 10)
    with pytest.raises(ValueError, match="budget must be"):
        decomp.tucker_rank_for_budget(x, 1.5)
