"""The executor's raw GEMM steps (tensorix._compile.gemm_steps): a MatMul of two tensors and a
Linear run as NumPy's BLAS call, with eager's bits, and through ``apply`` where one BLAS call
is not the op's forward (a dispatch hook, 1-d inputs)."""

import numpy as np
import pytest

import tensorix as tx
import tensorix.nn.functional as F
from tensorix._compile import executor
from tensorix._compile.gemm_steps import linear_step, matmul_step
from tensorix.autograd.grad_mode import modes
from tensorix.nn.functional._core import Linear
from tensorix.ops.linalg import MatMul


def _t(*shape, seed=0, dt=np.float32):
    return tx.from_numpy(np.random.default_rng(seed).standard_normal(shape).astype(dt))


def _kinds(cf):
    (entry,) = cf.entries.values()
    graphs = [g for g in (getattr(entry, "fwd", None), getattr(entry, "bwd", None),
                          getattr(entry, "graph", None)) if g is not None]
    return [s[0] for g in graphs for s in g._steps]


def _via_apply(op):
    """A step factory that runs ``op.apply`` on the slots (the executor before raw steps)."""
    def make(out, *slots_and_dtype):
        args = [executor._Slot(s) if s is not None else None for s in slots_and_dtype[:-1]]
        return executor._call_closure(out, op.apply, args, True)
    return make


def _run(fn, args):
    cf = tx.compile(fn, options={"kernels": "numpy"})
    for _ in range(2):  # the trace, then the compiled forward and backward
        got = cf(*args)
        grads = tx.autograd.grad(got, args)
    return cf, got, grads


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_mlp_and_attention_gemms_run_raw_with_applys_bits(dt, monkeypatch):
    x, w1, b1, w2 = _t(4, 6, 8, dt=dt), _t(16, 8, seed=1, dt=dt), _t(16, seed=2, dt=dt), \
        _t(8, 16, seed=3, dt=dt)
    q, k = _t(2, 3, 5, 4, seed=4, dt=dt), _t(2, 3, 5, 4, seed=5, dt=dt)

    def fn(x, w1, b1, w2, q, k):
        h = F.linear(x, w1, b1)               # 3-d input, with a bias
        y = F.linear(h.transpose(0, 1), w2)   # a strided 3-d input, no bias
        s = q @ k.transpose(-2, -1)           # batched, a transposed operand
        return y.sum() + s.sum() + (x[0] @ w1.T).sum()

    args = [t.requires_grad_(True) for t in (x, w1, b1, w2, q, k)]
    cf, got, grads = _run(fn, args)
    kinds = _kinds(cf)
    assert "linear" in kinds and "matmul" in kinds
    monkeypatch.setitem(executor._DIRECT, "matmul", _via_apply(MatMul))
    monkeypatch.setitem(executor._DIRECT, "linear", _via_apply(Linear))
    _, want, gwant = _run(fn, args)
    assert got.item() == want.item()  # the same BLAS calls in the same order: the same bits
    for a, b in zip(grads, gwant):
        assert np.array_equal(a.numpy(), b.numpy())
    eager = fn(*args)  # and eager's values, to rounding (eager sums in another order)
    np.testing.assert_allclose(got.item(), eager.item(), rtol=1e-5)


class _Count:
    def __init__(self):
        self.ops = []

    def record(self, cls, args, out):
        self.ops.append(cls.__name__)


def test_a_dispatch_hook_sends_the_steps_through_apply():
    a, b, bias = _t(5, 3), _t(3, 4, seed=1), _t(4, seed=2)
    env = [a, b, bias, None, None]
    mm = matmul_step(3, 0, 1, tx.float32)
    lin = linear_step(4, 0, 1, 2, tx.float32)
    env[1] = _t(4, 3, seed=1)  # Linear's weight is (out, in)
    mm_env = [a, b, None, None]
    mm(mm_env)
    lin(env)
    raw_mm, raw_lin = mm_env[3].numpy().copy(), env[4].numpy().copy()
    count = _Count()
    modes.state.tracer = count
    try:
        mm(mm_env)
        lin(env)
    finally:
        modes.state.tracer = None
    assert count.ops == ["MatMul", "Linear"]  # the hook saw both: they ran through apply
    assert np.array_equal(mm_env[3].numpy(), raw_mm)
    assert np.array_equal(env[4].numpy(), raw_lin)
    np.testing.assert_allclose(raw_lin, a.numpy() @ env[1].numpy().T + bias.numpy(),
                               rtol=1e-6, atol=1e-6)


def test_one_dim_inputs_keep_apply():
    v, w = _t(3), _t(4, 3, seed=1)
    env = [v, w, None]
    linear_step(2, 0, 1, None, tx.float32)(env)
    assert env[2].shape == (4,)
    np.testing.assert_allclose(env[2].numpy(), w.numpy() @ v.numpy(), rtol=1e-6)
    env = [v, _t(3, seed=2), None]
    matmul_step(2, 0, 1, tx.float32)(env)  # a dot product: MatMul.apply's 1-d rules
    assert env[2].shape == ()
    np.testing.assert_allclose(env[2].item(), float(v.numpy() @ env[1].numpy()), rtol=1e-6)
