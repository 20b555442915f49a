"""Tensor-ring ALS against TensorLy, and the structure searches (greedy rank growth, TnALE) on
planted tensor rings and trains: exact structures are recovered, errors measured by NumPy."""

import numpy as np
import pytest

import tensorix as tx
from tensorix import decomp, tn
from tests.decomp._helpers import chain


def planted(ranks, shape, seed):
    """A tensor ring with bond ranks ``ranks`` (``ranks[0]`` closes it; 1 is a train), as the
    NumPy tensor and its tensorix float64 twin."""
    rng = np.random.default_rng(seed)
    n = len(shape)
    cores = [rng.standard_normal((ranks[k], shape[k], ranks[(k + 1) % n])) for k in range(n)]
    full = chain(cores, ring=True)
    return full, tx.tensor(full)


def rel_error(approx, full):
    return np.linalg.norm(approx.numpy() - full) / np.linalg.norm(full)


# -- tensor_ring_als ------------------------------------------------------------------------------
def test_tensor_ring_als_recovers_a_planted_ring_and_errors_never_rise():
    full, X = planted([2, 3, 2, 2], (6, 7, 5, 6), seed=0)
    tr, errors = decomp.tensor_ring_als(X, [2, 3, 2, 2, 2], n_iter_max=200, tol=0.0,
                                        random_state=0, return_errors=True)
    assert tr.rank == (2, 3, 2, 2, 2)
    assert rel_error(tr.to_tensor(), full) < 1e-9
    assert errors[-1] == pytest.approx(rel_error(tr.to_tensor(), full), abs=1e-9)
    assert all(b <= a + 1e-12 for a, b in zip(errors, errors[1:]))   # ALS is monotone


def test_tensor_ring_als_error_matches_tensorly_on_a_full_rank_tensor():
    tl = pytest.importorskip("tensorly")
    from tensorly.decomposition import tensor_ring_als as tl_tensor_ring_als

    x = np.random.default_rng(3).standard_normal((6, 5, 7, 4))
    rank = [2, 3, 3, 2, 2]
    ours = [rel_error(decomp.tensor_ring_als(tx.tensor(x), rank, n_iter_max=100, tol=0.0,
                                             random_state=s).to_tensor(), x) for s in range(3)]
    theirs = [np.linalg.norm(tl.tr_to_tensor(tl_tensor_ring_als(
        x, rank, n_iter_max=100, tol=0.0, random_state=s)) - x) / np.linalg.norm(x)
        for s in range(3)]
    # different random starts reach different local minima: compare the best of three
    assert min(ours) <= min(theirs) * 1.02, (ours, theirs)


def test_tensor_ring_als_warm_start_device_and_float32(device):
    full, X = planted([1, 2, 2], (5, 6, 4), seed=1)
    X = X.float().to(device)
    tr = decomp.tensor_ring_als(X, [1, 2, 2, 1], random_state=0)
    assert tr.factors[0].device.type == device and tr.factors[0].dtype == tx.float32
    again, errors = decomp.tensor_ring_als(X, [1, 2, 2, 1], init=tr, n_iter_max=3,
                                           return_errors=True)
    assert errors[0] < 1e-4                       # the warm start begins where tr ended
    assert rel_error(again.to_tensor().to("cpu").double(), full) < 1e-4


def test_tensor_ring_als_bad_input():
    X = tx.randn(4, 5, 6, dtype=tx.float64)
    with pytest.raises(ValueError, match="tensor_ring_als: rank must be"):
        decomp.tensor_ring_als(X, [2, 2, 2, 3])
    with pytest.raises(ValueError, match="tensor_ring_als: init must have shape"):
        decomp.tensor_ring_als(X, 2, init=decomp.tensor_ring_als(X, 3, n_iter_max=1))
    with pytest.raises(ValueError, match="n_iter_max must be a positive int"):
        decomp.tensor_ring_als(X, 2, n_iter_max=0)
    bad = X.clone()
    bad[0, 0, 0] = float("nan")
    with pytest.raises(ValueError, match="tensor_ring_als: tensor contains inf or nan"):
        decomp.tensor_ring_als(bad, 2)


# -- structure search -----------------------------------------------------------------------------
@pytest.mark.parametrize("ranks, shape", [([1, 2, 3, 2], (5, 6, 6, 5)),        # a train
                                          ([2, 2, 3, 1, 2], (4, 5, 4, 5, 4))])  # a ring
def test_greedy_rank_search_recovers_planted_ranks(ranks, shape):
    full, X = planted(ranks, shape, seed=0)
    res = tn.greedy_rank_search(X, tol=1e-8, random_state=0)
    assert res.ranks == tuple(ranks)
    assert res.error < 1e-8 and rel_error(res.to_tensor(), full) < 1e-8
    assert res.size == sum(ranks[k] * shape[k] * ranks[(k + 1) % len(shape)]
                           for k in range(len(shape)))
    assert res.size < full.size and res.compression == pytest.approx(full.size / res.size)
    # each step grew one bond by one: the fits are 1 start + (N candidates per step)
    assert res.history[0][0] == (1,) * len(shape)


@pytest.mark.parametrize("seed", [0, 1])
def test_tnale_recovers_a_planted_ring_from_the_default_start(seed):
    full, X = planted([2, 3, 2, 2], (6, 6, 6, 6), seed=seed)
    res = tn.tnale(X, random_state=0)
    assert res.ranks == (2, 3, 2, 2)
    assert rel_error(res.to_tensor(), full) < 1e-8
    assert res.score == pytest.approx(res.size / full.size + res.error)


def test_tnale_continues_a_greedy_result_without_losing_it():
    full, X = planted([2, 3, 2, 2], (6, 6, 6, 6), seed=2)
    greedy = tn.greedy_rank_search(X, tol=1e-8, random_state=0)
    res = tn.tnale(X, start=greedy, random_state=0)
    assert res.score <= greedy.score + 1e-12
    assert res.ranks == (2, 3, 2, 2) and rel_error(res.to_tensor(), full) < 1e-8


def test_tnale_order_search_finds_a_smaller_exact_network_for_shuffled_modes():
    full, _ = planted([1, 3, 3, 3, 3], (4, 4, 4, 4, 4), seed=0)
    shuffled = np.ascontiguousarray(full.transpose(2, 0, 4, 1, 3))
    X = tx.tensor(shuffled)
    plain = tn.tnale(X, random_state=0)
    searched = tn.tnale(X, search_order=True, random_state=0)
    assert searched.order != tuple(range(5))
    assert rel_error(searched.to_tensor(), shuffled) < 1e-8           # exact in the new order
    assert searched.score < plain.score and searched.error < plain.error
    assert searched.size < shuffled.size


def test_searches_are_deterministic_with_a_seed_and_tt_pins_the_closing_bond():
    _, X = planted([2, 2, 2, 2], (5, 5, 5, 5), seed=4)
    first = tn.tnale(X, radius=1, n_rounds=2, topology="tt", random_state=7)
    second = tn.tnale(X, radius=1, n_rounds=2, topology="tt", random_state=7)
    assert [h[:2] for h in first.history] == [h[:2] for h in second.history]
    assert [h[2] for h in first.history] == [h[2] for h in second.history]
    assert all(h[0][0] == 1 for h in first.history)
    greedy = tn.greedy_rank_search(X, tol=1e-8, topology="tt", max_rank=4, random_state=0)
    assert greedy.ranks[0] == 1


def test_greedy_respects_the_size_budget(device):
    _, X = planted([2, 3, 2, 2], (6, 6, 6, 6), seed=0)
    res = tn.greedy_rank_search(X.to(device), tol=1e-8, max_size=100, random_state=0)
    assert res.size <= 100 and res.error > 1e-3     # the budget stops it short of exact
    assert res.network.factors[0].device.type == device


def test_structure_search_bad_input():
    X = tx.randn(4, 4, 4, dtype=tx.float64)
    with pytest.raises(ValueError, match="tnale: topology must be 'tr' or 'tt'"):
        tn.tnale(X, topology="tree")
    with pytest.raises(ValueError, match=r"tnale: ranks must be 3 ints in \[1, max_rank=8\]"):
        tn.tnale(X, ranks=[2, 2])
    with pytest.raises(ValueError, match="greedy_rank_search: order must be a permutation"):
        tn.greedy_rank_search(X, order=(0, 0, 1))
    with pytest.raises(ValueError, match="greedy_rank_search: max_rank must be a positive"):
        tn.greedy_rank_search(X, max_rank=0)
    with pytest.raises(ValueError, match="tnale: start must be a StructureSearchResult"):
        tn.tnale(X, start=(2, 2, 2))
    _, planted_ring = planted([2, 2, 2], (4, 4, 4), seed=0)
    ring = tn.greedy_rank_search(planted_ring, tol=1e-8, random_state=0)
    assert ring.ranks[0] == 2
    with pytest.raises(ValueError, match="tnale: topology='tt' needs a start whose closing"):
        tn.tnale(planted_ring, start=ring, topology="tt")
    with pytest.raises(TypeError, match="greedy_rank_search: expected tensor to be a tensorix"):
        tn.greedy_rank_search(np.ones((3, 3)))
