"""The one dispatch point's rules and hooks (tensorix/autograd/dispatch.py): the tracer slot,
the GEMM hook, and storage-code rules that cost nothing until codes exist."""

import subprocess
import sys
import threading

import numpy as np
import pytest

import tensorix as tx
from tensorix import nn
from tensorix.autograd import Function, grad_mode
from tensorix.autograd.grad_mode import modes

F = nn.functional


class Recorder:
    """A tracer: ``record`` sees each op, ``read`` each time Python reads a tensor's data."""

    def __init__(self):
        self.ops, self.reads = [], []

    def record(self, cls, args, out):
        self.ops.append((cls, args, out))

    def read(self, t, what):
        self.reads.append(what)


@pytest.fixture
def tracer():
    rec = Recorder()
    modes.state.tracer = rec
    try:
        yield rec
    finally:
        modes.state.tracer = None


class Twice(Function):
    """A composite primitive: its forward calls ops, which must not be reported."""

    @staticmethod
    def forward(ctx, x):
        return (x * 2 + x)._data

    @staticmethod
    def backward(ctx, g):
        return g * 3


def test_tracer_records_top_level_ops_with_their_arguments(tracer):
    a = tx.randn(3, 4, requires_grad=True)
    b = tx.randn(4, 2)
    y = Twice.apply(a @ b).sum()
    names = [cls.__name__ for cls, _, _ in tracer.ops]
    assert names == ["MatMul", "Twice", "Sum"]  # Twice's inner Mul and Add are not reported
    cls, args, out = tracer.ops[0]
    assert args[0] is a and args[1] is b and out.shape == (3, 2)
    modes.state.tracer = None
    # re-running cls.apply with new tensors reproduces the op (what an interpreter does)
    a2, b2 = tx.randn(3, 4), tx.randn(4, 2)
    env = {id(a): a2, id(b): b2}
    val = None
    for cls, args, out in tracer.ops:
        new = [env.get(id(x), x) for x in args]
        val = cls.apply(*new)
        env[id(out)] = val
    assert np.allclose(val.numpy(), (3 * (a2 @ b2)).sum().numpy())
    y.backward()
    assert np.allclose(a.grad.numpy(), 3 * np.ones((3, 2)) @ b.numpy().T)


def test_tracer_is_per_thread_and_off_by_default(tracer):
    seen = []
    t = threading.Thread(target=lambda: seen.append((modes.state.tracer, modes.state.hooked)))
    t.start()
    t.join()
    codes = grad_mode._CODES[0]  # storage codes made earlier in this process hook every thread
    assert seen == [(None, codes)]
    modes.state.tracer = None
    assert modes.state.hooked is codes
    tx.ones(2) + 1
    assert tracer.ops == []


def test_gemm_hook_sees_every_gemm_of_plain_code():
    seen = []

    def hook(cls, args):
        seen.append(cls.__name__)
        return None  # run as usual

    x = tx.randn(2, 3, 8)
    state = modes.state
    state.gemm = hook
    try:
        x @ tx.randn(8, 4)
        tx.bmm(x, tx.randn(2, 8, 5))
        tx.einsum("bij,jk->bik", x, tx.randn(8, 3))
        F.linear(x, tx.randn(5, 8))
        F.conv2d(tx.randn(1, 2, 5, 5), tx.randn(3, 2, 3, 3))
        F.scaled_dot_product_attention(x, x, x)
        x + 1  # not a GEMM
    finally:
        state.gemm = None
    assert seen == ["MatMul", "MatMul", "Contract", "Linear", "MatMul", "MatMul", "MatMul"]


def test_gemm_hook_result_replaces_the_op_and_is_traced_once(tracer):
    def hook(cls, args):
        return args[0] @ args[1] * 0  # its own GEMM runs plain, unreported

    state = modes.state
    state.gemm = hook
    try:
        out = tx.ones(2, 2) @ tx.ones(2, 2)
    finally:
        state.gemm = None
    assert out.numpy().tolist() == [[0, 0], [0, 0]]
    assert [cls.__name__ for cls, _, _ in tracer.ops] == ["MatMul"]


def test_rules_are_declared_on_the_classes():
    from tensorix.autograd import function
    from tensorix.ops import elementwise, linalg, movement

    assert not hasattr(function, "device_codes")  # nothing patched in on import
    assert Function._codes is None and Function._gemm is None
    assert movement.Reshape._codes == "move" and elementwise.Add._codes == "math"
    assert linalg.MatMul._gemm is not None and elementwise.Add._gemm is None


_COUNT = """
import tensorix as tx
from tensorix.autograd import dispatch
calls = [0]
route = dispatch.codes_route
def counted(*a):
    calls[0] += 1
    return route(*a)
dispatch.codes_route = counted
with tx.backend.fake_cuda():
    a = tx.randn(8, 8, device="cuda", requires_grad=True)
    (a @ a).sum().backward()
    print(calls[0])
    tx.zeros(2, dtype=tx.float8_e4m3fn, device="cuda")  # codes exist from now on
    (a @ a).sum().backward()
    print(calls[0])
"""


def test_storage_code_check_costs_nothing_until_codes_exist():
    out = subprocess.run([sys.executable, "-c", _COUNT], capture_output=True, text=True,
                         check=True, timeout=120).stdout.split()
    assert out[0] == "0" and int(out[1]) > 0


class Cube(Function):
    """A primitive that declares 16-bit inputs compute in float32."""

    _widen16 = True
    seen = []

    @staticmethod
    def forward(ctx, x):
        Cube.seen.append(x.dtype)
        ctx.save_for_backward(x)
        return x._data ** 3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x * x * g


@pytest.mark.parametrize("dtype", [tx.bfloat16, tx.float16])
def test_widen16_rule_computes_in_float32_and_rounds_once(dtype):
    x32 = tx.tensor([1.1, -2.3, 0.7])
    x = x32.to(dtype).requires_grad_()
    Cube.seen.clear()
    y = Cube.apply(x)
    assert Cube.seen == [tx.float32] and y.dtype is dtype
    want = (x.detach().to(tx.float32) ** 3).to(dtype)  # one rounding of the float32 result
    assert np.array_equal(y.detach().float().numpy(), want.float().numpy())
    (g,) = tx.autograd.grad(y.sum(), x, create_graph=True)
    assert g.dtype is dtype
    (gg,) = tx.autograd.grad(g.sum(), x)  # second order flows through the casts
    assert np.allclose(gg.float().numpy(), 6 * x.detach().float().numpy(), rtol=2e-2)
    Cube.seen.clear()
    Cube.apply(x32)
    assert Cube.seen == [tx.float32]


def test_widen16_costs_other_ops_nothing():
    from tensorix.ops import elementwise
    from tensorix.ops.softmax import Softmax

    assert elementwise.Add.apply.__func__ is Function.apply.__func__
    assert Softmax.apply.__func__ is not Function.apply.__func__  # declared, inherited


def test_ops_on_storage_codes_are_traced_once(cuda, tracer):
    x = tx.tensor([1.0, 2.0, 3.0, 4.0], device=cuda).to(tx.float8_e4m3fn)
    tracer.ops.clear()
    y = x.reshape(2, 2)  # "move": runs on the codes
    z = x + x  # "math": decoded, computed, encoded back
    assert y.dtype is tx.float8_e4m3fn and z.dtype is tx.float8_e4m3fn
    assert [cls.__name__ for cls, _, _ in tracer.ops] == ["Reshape", "Add"]
    assert tracer.ops[1][2] is z
    assert z.float().cpu().numpy().tolist() == [2.0, 4.0, 6.0, 8.0]
