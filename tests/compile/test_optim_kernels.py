"""The fused optimizer update of a compiled training step (tensorix._compile.optim_kernels):
bit-identical to eager's per-parameter update, and eager's step where it does not apply."""

import functools

import numpy as np
import pytest

import tensorix as tx
from tensorix._compile import kernels, optim_kernels
from tensorix._compile.optim_kernels import fused_effect
from tensorix.optim.optimizer import Optimizer

pytest.importorskip("numba")

SHAPES = [(5, 7), (3,), (), (64, 33)]  # a 0-d parameter too (flat views of shape (1,))

CASES = [
    (tx.optim.AdamW, {}),
    (tx.optim.AdamW, dict(lr=3e-3, betas=(0.8, 0.95), weight_decay=0.1, eps=1e-6)),
    (tx.optim.Adam, dict(weight_decay=0.1)),
    (tx.optim.Adam, dict(maximize=True)),
    (tx.optim.SGD, dict(lr=0.1, momentum=0.9)),
    (tx.optim.SGD, dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)),
    (tx.optim.SGD, dict(lr=0.1, momentum=0.9, dampening=0.3, maximize=True)),
    (tx.optim.SGD, dict(lr=0.1)),
]


def _params(dt):
    r = np.random.default_rng(0)
    return [tx.from_numpy(r.standard_normal(s).astype(dt)).requires_grad_(True)
            for s in SHAPES]


def _state_arrays(opt, params):
    return [v._data for p in params for v in opt.state[p].values() if hasattr(v, "_data")]


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("cls,kw", CASES)
def test_fused_step_is_bit_identical_to_eager(cls, kw, dt):
    a, b = _params(dt), _params(dt)
    oa, ob = cls(a, **kw), cls(b, **kw)
    fused = fused_effect(functools.partial(Optimizer.step.__wrapped__, ob))
    assert fused is not None
    r = np.random.default_rng(1)
    for it in range(4):
        for x, y in zip(a, b):
            g = r.standard_normal(x.shape).astype(dt)
            x.grad, y.grad = tx.from_numpy(g.copy()), tx.from_numpy(g.copy())
        if it == 2:  # a scheduler's change of lr is read at each step
            oa.param_groups[0]["lr"] *= 0.5
            ob.param_groups[0]["lr"] *= 0.5
        oa.step()
        fused()
        for x, y in zip(a, b):
            assert np.array_equal(x._data, y._data), (it, x.shape)
            assert x._version == y._version
        for u, v in zip(_state_arrays(oa, a), _state_arrays(ob, b)):
            assert np.array_equal(u, v)
        assert [oa.state[p].get("step") for p in a] == [ob.state[p].get("step") for p in b]
    # SGD's first momentum step creates the buffers through eager's own step
    first_eager = cls is tx.optim.SGD and kw.get("momentum")
    assert fused.fused_calls == (3 if first_eager else 4)


def test_not_covered_runs_eager_step():
    p = _params(np.float32)
    opt = tx.optim.Adam(p, amsgrad=True)
    fused = fused_effect(functools.partial(Optimizer.step.__wrapped__, opt))
    for x in p:
        x.grad = tx.ones_like(x)
    fused()
    assert fused.fused_calls == 0 and opt.state[p[0]]["step"] == 1  # eager's step ran

    class Mine(tx.optim.SGD):  # a subclass may change the update: not fused
        pass

    assert fused_effect(functools.partial(Optimizer.step.__wrapped__, Mine(p))) is None
    assert fused_effect(print) is None


def test_without_numba_the_fallback_is_eager(monkeypatch):
    a, b = _params(np.float32), _params(np.float32)
    oa, ob = tx.optim.AdamW(a), tx.optim.AdamW(b)
    fused = fused_effect(functools.partial(Optimizer.step.__wrapped__, ob))
    monkeypatch.setattr(optim_kernels, "numba_available", lambda: False)
    for x, y in zip(a, b):
        x.grad = y.grad = tx.full(x.shape, 0.5)
    oa.step()
    fused()
    assert fused.fused_calls == 0
    assert all(np.array_equal(x._data, y._data) for x, y in zip(a, b))
    assert kernels.numba_available()  # only this module's view was patched


def test_compiled_training_step_uses_the_fused_update():
    """A whole step inside tensorix.compile: the same parameters as eager's step, bit for
    bit, with the AdamW update run by the fused kernel."""
    def make():
        tx.manual_seed(0)
        model = tx.nn.Sequential(tx.nn.Linear(6, 16), tx.nn.GELU(), tx.nn.Linear(16, 3))
        return model, tx.optim.AdamW(model.parameters(), lr=1e-2)

    x = tx.from_numpy(np.random.default_rng(2).standard_normal((8, 6)).astype(np.float32))
    y = tx.from_numpy(np.random.default_rng(3).integers(0, 3, 8))
    (m1, o1), (m2, o2) = make(), make()

    def step(model, opt):
        opt.zero_grad()
        loss = tx.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    compiled = tx.compile(functools.partial(step, m2, o2), options={"kernels": "numpy"})
    for _ in range(4):
        step(m1, o1)
        compiled()
    # the loss graph runs fused kernels (float sums in another order): close, not equal;
    # the update itself is checked bit for bit above
    for p, q in zip(m1.parameters(), m2.parameters()):
        np.testing.assert_allclose(p._data, q._data, rtol=1e-5, atol=1e-6)
    effects = [s.fn for s in compiled.entries[next(iter(compiled.entries))].program.steps
               if type(s).__name__ == "Effect"]
    fused = [f for f in effects if isinstance(f, optim_kernels.FusedStep)]
    assert len(fused) == 1 and fused[0].fused_calls == 3  # the first call is the trace


@pytest.mark.parametrize("cls,kw", [(tx.optim.AdamW, {}), (tx.optim.SGD, dict(lr=0.1))])
def test_more_parameters_than_one_chunk(cls, kw):
    """Parameters go to the kernel CHUNK at a time (the last chunk padded with empty
    arrays): 2.5 chunks update as eager's step does, bit for bit."""
    n = optim_kernels.CHUNK * 5 // 2
    r = np.random.default_rng(4)
    shapes = [tuple(r.integers(1, 6, r.integers(0, 3))) for _ in range(n)]
    a = [tx.from_numpy(r.standard_normal(s).astype(np.float32)) for s in shapes]
    b = [tx.from_numpy(t._data.copy()) for t in a]
    oa, ob = cls(a, **kw), cls(b, **kw)
    fused = fused_effect(functools.partial(Optimizer.step.__wrapped__, ob))
    for _ in range(2):
        for x, y in zip(a, b):
            g = r.standard_normal(x.shape).astype(np.float32)
            x.grad, y.grad = tx.from_numpy(g.copy()), tx.from_numpy(g.copy())
        oa.step()
        fused()
    assert fused.fused_calls == 2
    assert all(np.array_equal(x._data, y._data) for x, y in zip(a, b))
