"""Every collective on 2 and 4 ranks against the result computed here, in one process."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent / "_scripts"))
from collectives import data  # noqa: E402  (importing runs nothing: the script body is guarded)


@pytest.fixture(scope="module", params=[2, 4])
def ranks(request, tmp_path_factory):
    """One launch per world size, shared by the checks below (launches cost seconds)."""
    from ._launch import run_script

    n = request.param
    return n, run_script("collectives.py", n, tmp_path_factory.mktemp(f"coll{n}"))[1]


def test_process_group_basics(ranks):
    n, res = ranks
    assert [r["rank"] for r in res] == list(range(n))
    assert all(r["world"] == n and r["init"] and r["backend"] == "mpi" for r in res)


def test_all_reduce_ops(ranks):
    n, res = ranks
    stack = np.stack([data(r) for r in range(n)])
    expected = {"SUM": stack.sum(0), "AVG": stack.mean(0), "MAX": stack.max(0),
                "MIN": stack.min(0), "PRODUCT": stack.prod(0)}
    for r in res:
        for op, want in expected.items():
            np.testing.assert_allclose(r[f"all_reduce_{op}"], want, rtol=1e-15)
        np.testing.assert_array_equal(r["all_reduce_int"], stack.sum(0).astype(np.int64))
        np.testing.assert_allclose(r["all_reduce_bf16"], stack.sum(0), rtol=2 ** -8)
        view = data(r["rank"], (4, 4))
        view[:, 1] = sum(data(k, (4, 4))[:, 1] for k in range(n))
        np.testing.assert_array_equal(r["all_reduce_view"], view)
        assert r["all_reduce_cuda"][0].startswith("cuda")
        np.testing.assert_array_equal(r["all_reduce_cuda"][1], stack.sum(0))
        assert r["async"][0] is True
        np.testing.assert_array_equal(r["async"][1], stack.sum(0))


def test_rooted_and_gathers(ranks):
    n, res = ranks
    stack = np.stack([data(r) for r in range(n)])
    for k, r in enumerate(res):
        want = stack.sum(0) if k == n - 1 else data(k)
        np.testing.assert_array_equal(r["reduce"], want)
        np.testing.assert_array_equal(r["broadcast"], data(1))
        np.testing.assert_array_equal(r["all_gather"], stack)
        np.testing.assert_array_equal(r["all_gather_into_tensor"], stack.reshape(2 * n, 3))
        np.testing.assert_array_equal(
            r["reduce_scatter"], sum(data(j) * (k + 1) for j in range(n)))
        np.testing.assert_array_equal(
            r["reduce_scatter_tensor"], sum(data(j, (2 * n, 3)) for j in range(n))[2 * k:2 * k + 2])
        np.testing.assert_array_equal(r["gather"], stack if k == 0 else None)
        np.testing.assert_array_equal(r["scatter"], data(k))


def test_all_to_all_uneven(ranks):
    n, res = ranks
    for k, r in enumerate(res):
        want = np.concatenate([np.full((j + 1, 2), 100 * j + k) for j in range(n)])
        np.testing.assert_array_equal(r["all_to_all_single"], want)
        for j, got in enumerate(r["all_to_all"]):
            np.testing.assert_array_equal(got, np.full(j + 1, 10 * j + k))


def test_point_to_point_and_groups(ranks):
    n, res = ranks
    for k, r in enumerate(res):
        prev = (k - 1) % n
        assert r["ring"] == [prev, [float(prev)] * 3]
        assert r["iring"] == [float(prev)] * 3
        if k % 2 == 0:
            evens = [j for j in range(n) if j % 2 == 0]
            assert r["group"][:2] == [evens.index(k), len(evens)]
            np.testing.assert_array_equal(r["group"][2], sum(data(j) for j in evens))
        else:
            assert r["group"] == [-1, None, None]


def test_object_collectives(ranks):
    n, res = ranks
    for k, r in enumerate(res):
        assert r["all_gather_object"] == [{"rank": j, "name": f"r{j}"} for j in range(n)]
        assert r["broadcast_object_list"] == [0, ""]
        assert r["gather_object"] == ([["g", j] for j in range(n)] if k == 0 else None)
        assert r["scatter_object_list"] == [f"s{k}"]


def test_differentiable_collectives(ranks):
    """Gradients of sum_r <w_r, f(x)_r> through each collective, from the single-process
    adjoint: all_reduce -> all_reduce, all_gather -> reduce_scatter, broadcast -> reduce."""
    n, res = ranks
    w = [data(k + 5) for k in range(n)]
    for k, r in enumerate(res):
        np.testing.assert_array_equal(r["grad_all_reduce"], sum(w))
        gathered, grad = r["grad_all_gather"]
        np.testing.assert_array_equal(gathered, [data(j) for j in range(n)])
        np.testing.assert_array_equal(grad, sum(data(j + 5 + k) for j in range(n)))
        y, grad = r["grad_reduce_scatter"]
        np.testing.assert_array_equal(y, sum(data(j, (n, 2, 3))[k] for j in range(n)))
        np.testing.assert_array_equal(grad, np.stack([data(j + 5) for j in range(n)]))
        y, grad = r["grad_broadcast"]
        np.testing.assert_array_equal(y, data(1))
        np.testing.assert_array_equal(grad, sum(w) if k == 1 else np.zeros((2, 3)))


def test_differentiable_all_to_all(ranks):
    """dfn.all_to_all (equal parts along dim 1, gathered along dim 0) and all_to_all_single
    (rank k sends j + 1 rows to rank j): one Function, values here; gradients below."""
    n, res = ranks
    rows = n * (n + 1) // 2
    starts = np.cumsum([0] + [j + 1 for j in range(n)])
    for k, r in enumerate(res):
        want = np.concatenate([data(i, (2, n, 3))[:, k:k + 1] for i in range(n)], axis=0)
        np.testing.assert_array_equal(r["a2a_dims"], want)
        want = np.concatenate([data(i, (rows, 3))[starts[k]:starts[k + 1]] for i in range(n)])
        np.testing.assert_array_equal(r["a2a_single"], want)


def test_differentiable_collectives_gradcheck(ranks):
    """float64 directional derivative of the sum over ranks, analytic against numerical."""
    _, res = ranks
    for r in res:
        for name, (analytic, numerical) in r["gradcheck"].items():
            assert np.isclose(analytic, numerical, rtol=1e-6, atol=1e-6), name
