"""The GEMMs of attention's backward written straight into the Cat of the q, k, v gradients
(tensorix._compile.cat_into): no Reshape copy and no concatenation left in the compiled
backward, and the gradients are eager's bit for bit (the same GEMMs and products, stored
in place)."""

import numpy as np
import pytest

import tensorix as tx
from tensorix.ops import movement

F = tx.nn.functional


def _block(x, w, b):
    """The GPT block's attention: fused q, k, v projection, head split, causal SDPA, merge."""
    n, t, d = x.shape
    q, k, v = F.linear(x, w, b).split(d, dim=2)
    q, k, v = (z.reshape(n, t, 2, d // 2).transpose(1, 2) for z in (q, k, v))
    a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return a.transpose(1, 2).reshape(n, t, d)


def _params(dt):
    r = np.random.default_rng(0)
    return [tx.from_numpy(r.standard_normal(s).astype(dt)).requires_grad_(True)
            for s in ((3, 6, 8), (24, 8), (24,))]


def _grads(fn, params, weight):
    for p in params:
        p.grad = None
    (fn(*params) * weight).sum().backward()
    return [p.grad.numpy().copy() for p in params]


@pytest.fixture
def copies(monkeypatch):
    count = {"reshape": 0, "concatenate": 0}
    reshape_copy, concat = movement.Reshape.copy, np.concatenate

    def copy(data, shape):
        count["reshape"] += 1
        return reshape_copy(data, shape)

    def concatenate(*a, **k):
        count["concatenate"] += 1
        return concat(*a, **k)

    monkeypatch.setattr(movement.Reshape, "copy", staticmethod(copy))
    monkeypatch.setattr(np, "concatenate", concatenate)
    return count


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_qkv_gradients_written_into_the_cat_match_eager_bit_for_bit(copies, dt):
    params = _params(dt)
    weight = tx.from_numpy(np.random.default_rng(1).standard_normal((3, 6, 8)).astype(dt))
    expected = _grads(_block, params, weight)
    fn = tx.compile(_block, options={"kernels": "numpy"})
    _grads(fn, params, weight)  # the trace
    _grads(fn, params, weight)
    copies.update(reshape=0, concatenate=0)
    got = _grads(fn, params, weight)
    assert copies == {"reshape": 0, "concatenate": 0}
    for g, e in zip(got, expected):
        assert np.array_equal(g, e)


def test_the_plan_finds_the_three_pieces_and_falls_back_when_a_piece_is_elsewhere():
    from tensorix._compile.cat_into import cat_pieces
    from tensorix.fx import symbolic_trace

    def pieces(a, b, c):
        n, h, t, d = a.shape
        return tx.cat([(a @ b).transpose(1, 2).reshape(n, t, h * t),
                       (a @ c).transpose(1, 2).reshape(n, t, h * d)], 2)

    def other_reader(a, b, c):
        y = a @ b
        return tx.cat([y.transpose(1, 2).reshape(2, 5, 15), y.sum() + y.transpose(1, 2)
                       .reshape(2, 5, 15)], 2)

    r = np.random.default_rng(2)
    a, c = (tx.from_numpy(r.standard_normal(s)) for s in ((2, 3, 5, 4), (2, 3, 4, 4)))
    b = tx.from_numpy(r.standard_normal((2, 3, 4, 5)))
    plan = cat_pieces(symbolic_trace(pieces, a, b, c).graph)
    assert sorted(getattr(n.op, "__name__", n.op) for n in plan) == ["Cat", "MatMul", "MatMul"]
    assert cat_pieces(symbolic_trace(other_reader, a, b, c).graph) == {}
    for f in (pieces, other_reader):
        out = tx.compile(f, options={"kernels": "numpy"})
        out(a, b, c)
        assert np.array_equal(out(a, b, c).numpy(), f(a, b, c).numpy())


def test_a_constant_broadcast_input_is_copied_once_and_values_match_eager(monkeypatch):
    """The causal mask of the fused softmax is a "mat" input (broadcast to the scores'
    shape): the numba kernel keeps its copy across calls, and the gradients stay eager's."""
    pytest.importorskip("numba")
    from tensorix._compile import executor

    graphs, closures = [], executor.CompiledGraph._closures
    monkeypatch.setattr(executor.CompiledGraph, "_closures",
                        lambda self: graphs.append(self) or closures(self))
    params = _params(np.float64)
    weight = tx.from_numpy(np.random.default_rng(1).standard_normal((3, 6, 8)))
    expected = _grads(_block, params, weight)
    fn = tx.compile(_block, options={"kernels": "numba"})
    for _ in range(3):
        got = _grads(fn, params, weight)
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12)
    kept = [k.kept for g in graphs for k in g._kernels if getattr(k, "kept", None)]
    assert kept  # the mask's copy, made at the first call and reused since
    for copies in kept:
        for x, y in copies.values():
            assert np.array_equal(y.reshape(-1, x.shape[-1])[: x.shape[0]], x)
