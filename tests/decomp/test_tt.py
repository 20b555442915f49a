"""Tensor train and tensor ring: TT-SVD, TT rounding and TR-SVD against TensorLy."""

import numpy as np
import pytest

import tensorix as tx
from tensorix import decomp
from tensorix.testing import assert_close, gradcheck

from ._helpers import chain, rel_err

TT_SHAPES = [(1, 5, 2), (2, 6, 3), (3, 7, 2), (2, 4, 1)]


def _cores(rng, shapes):
    return [rng.standard_normal(s) for s in shapes]


def test_tensor_train_recovers_an_exact_tt_tensor(rng):
    x = chain(_cores(rng, TT_SHAPES))
    tt = decomp.tensor_train(tx.tensor(x), [1, 2, 3, 2, 1])
    assert isinstance(tt, decomp.TTTensor) and tt.rank == (1, 2, 3, 2, 1)
    assert rel_err(tt.to_tensor(), x) < 1e-12
    tt = decomp.tensor_train(tx.tensor(x), 3)  # an int bound, capped at the first/last bond
    assert tt.rank == (1, 3, 3, 3, 1) and rel_err(tt.to_tensor(), x) < 1e-12
    tt = decomp.tensor_train(tx.tensor(x), 3, svd="randomized_svd", random_state=0)
    assert rel_err(tt.to_tensor(), x) < 1e-10


def test_tensor_train_matches_tensorly(rng):
    tl = pytest.importorskip("tensorly")
    from tensorly.decomposition import tensor_train as tl_tt

    x = rng.standard_normal((4, 5, 6, 3))
    tt = decomp.tensor_train(tx.tensor(x), [1, 3, 4, 2, 1])
    ref = tl_tt(x, [1, 3, 4, 2, 1])
    assert_close(tt.to_tensor(), tl.tt_to_tensor(ref))
    for ours, theirs in zip(tt.factors, ref.factors):
        assert ours.shape == theirs.shape


def test_tt_round_removes_redundant_rank_and_truncates(rng):
    x = chain(_cores(rng, TT_SHAPES))
    tt = decomp.tensor_train(tx.tensor(x), 6)  # ranks above the true ones
    rounded = decomp.tt_round(tt, tol=1e-10)
    assert rounded.rank == (1, 2, 3, 2, 1)
    assert rel_err(rounded.to_tensor(), x) < 1e-12
    y = rng.standard_normal((4, 5, 6, 3))
    full = decomp.tensor_train(tx.tensor(y), 30)
    capped = decomp.tt_round(full, max_rank=2)
    assert max(capped.rank) <= 2
    direct = decomp.tensor_train(tx.tensor(y), 2)
    # rounding an exact TT to rank 2 is TT-SVD at rank 2: the same quasi-optimal error
    assert abs(rel_err(capped.to_tensor(), y) - rel_err(direct.to_tensor(), y)) < 1e-8
    loose = decomp.tt_round(full, tol=0.3)
    assert rel_err(loose.to_tensor(), y) <= 0.3 and max(loose.rank) < max(full.rank)


def test_tensor_ring_matches_tensorly_for_every_first_mode(rng):
    tl = pytest.importorskip("tensorly")
    from tensorly.decomposition import tensor_ring as tl_tr

    x = chain(_cores(rng, [(2, 5, 2), (2, 6, 3), (3, 7, 2)]), ring=True)
    for mode in range(3):
        tr = decomp.tensor_ring(tx.tensor(x), [2, 2, 3, 2], mode=mode)
        ref = tl_tr(x, [2, 2, 3, 2], mode=mode)
        assert isinstance(tr, decomp.TRTensor)
        assert [tuple(f.shape) for f in tr.factors] == [f.shape for f in ref.factors]
        assert_close(tr.to_tensor(), tl.tr_to_tensor(ref))


def test_tensor_ring_recovers_an_exact_ring(rng):
    x = chain(_cores(rng, [(2, 5, 3), (3, 6, 2), (2, 8, 2)]), ring=True)
    # TR-SVD is exact once the later ranks reach those of the sequential unfoldings
    tr = decomp.tensor_ring(tx.tensor(x), [1, 5, 6, 1])
    assert rel_err(tr.to_tensor(), x) < 1e-12
    # a ring with r_0 r_1 = 4 < 5: the first split is exact too, with the true r_0 = r_3
    x = chain(_cores(rng, [(2, 5, 2), (2, 6, 3), (3, 8, 2)]), ring=True)
    tr = decomp.tensor_ring(tx.tensor(x), [2, 2, 12, 2])
    assert tr.rank[0] == tr.rank[-1] == 2
    assert rel_err(tr.to_tensor(), x) < 1e-12


def test_tt_and_tr_on_device_and_low_precision(device, rng):
    x = chain(_cores(rng, TT_SHAPES)).astype(np.float32)
    t = tx.tensor(x).to(device)
    tt = decomp.tensor_train(t, 3)
    assert tt.factors[1].device.type == device and tt.factors[1].dtype == tx.float32
    assert rel_err(tt.to_tensor().cpu(), x) < 1e-5
    assert decomp.tt_round(tt, tol=1e-4).to_tensor().device.type == device
    tr = decomp.tensor_ring(t, [1, 3, 3, 2, 1])
    assert tr.to_tensor().device.type == device
    bf = decomp.tensor_train(t.to(tx.bfloat16), 3)
    assert bf.to_tensor().dtype == tx.bfloat16


def test_tt_contractions_and_rounding_are_differentiable():
    cores = [tx.randn(*s, dtype=tx.float64, requires_grad=True)
             for s in ((1, 3, 2), (2, 2, 3), (3, 2, 1))]
    gradcheck(lambda *c: decomp.TTTensor(c).to_tensor(), cores, name="tt_to_tensor")
    ring = [tx.randn(*s, dtype=tx.float64, requires_grad=True)
            for s in ((2, 3, 2), (2, 2, 3), (3, 2, 2))]
    gradcheck(lambda *c: decomp.TRTensor(c).to_tensor(), ring, name="tr_to_tensor")
    # rounding at the full rank: a function of the cores with a well-defined gradient
    gradcheck(lambda *c: decomp.tt_round(c, max_rank=6).to_tensor(), cores, name="tt_round")


def test_tt_bad_input_errors():
    x = tx.randn(3, 4, 5, dtype=tx.float64)
    with pytest.raises(ValueError, match=r"tensor_train: rank must be an int or 4 positive"):
        decomp.tensor_train(x, [1, 4, 2, 1])  # 4 > 3 = the first unfolding's rows
    with pytest.raises(ValueError, match="tensor_train: rank must be an int or 4 positive"):
        decomp.tensor_train(x, [2, 2, 2, 1])
    with pytest.raises(ValueError, match="tensor_train: rank must be positive"):
        decomp.tensor_train(x, 0)
    with pytest.raises(ValueError, match="tensor_train: tensor contains inf or nan"):
        decomp.tensor_train(x.log(), 2) if float(x.min()) < 0 else decomp.tensor_train(
            x * float("inf"), 2)
    with pytest.raises(ValueError, match=r"tensor_ring: rank\[0\] \* rank\[1\] = 6 exceeds"):
        decomp.tensor_ring(x, [2, 3, 2, 2])
    with pytest.raises(ValueError, match="tensor_ring: rank must be an int or 4 positive"):
        decomp.tensor_ring(x, [2, 3, 2, 1])
    with pytest.raises(ValueError, match="tt_round: give max_rank, tol or both"):
        decomp.tt_round(decomp.tensor_train(x, 2))
    with pytest.raises(ValueError, match="TTTensor: core ranks do not chain"):
        decomp.TTTensor([tx.randn(1, 3, 2), tx.randn(3, 4, 1)])
    with pytest.raises(ValueError, match=r"TRTensor: core ranks do not chain .* r_N == r_0"):
        decomp.TRTensor([tx.randn(2, 3, 2), tx.randn(2, 4, 3)])
