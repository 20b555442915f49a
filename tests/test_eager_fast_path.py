"""autograd.function.binary, the no-record path of the ops that declare an ``_eager`` rule
(add, sub, mul, div): where no node is recorded and no hook is set it runs the rule alone,
without a ctx; its result must be the one ``apply`` gives (values, dtype, Tensor slots), and
a node must be recorded exactly where ``apply`` records one."""

import numpy as np
import pytest

import tensorix as tx
from tensorix.autograd.function import binary
from tensorix.autograd.grad_mode import modes
from tensorix.ops import elementwise as ew
from tensorix.tensor import Tensor

OPS = [(ew.Add, np.add), (ew.Sub, np.subtract), (ew.Mul, np.multiply),
       (ew.Div, np.true_divide)]
RNG = np.random.default_rng(13)


def _slots(t):
    got = {s: getattr(t, s, "<unset>") for s in Tensor.__slots__ if s != "__weakref__"}
    return got.pop("_data"), got.pop("_version"), got


def _same(got, want):
    (d1, v1, s1), (d2, v2, s2) = _slots(got), _slots(want)
    assert type(d1) is type(d2) and d1.dtype == d2.dtype and d1.shape == d2.shape
    assert d1.tobytes() == d2.tobytes()
    assert v1 == v2 == [0] and v1 is not v2
    assert s1 == s2


@pytest.mark.parametrize("cls,ref", OPS, ids=[c.__name__ for c, _ in OPS])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "float16", "bfloat16"])
@pytest.mark.parametrize("shapes", [((3,), (3,)), ((2, 3), (3,)), ((), ()), ((4, 1), (1, 5))])
def test_eager_result_is_applys(cls, ref, dtype, shapes):
    if cls is ew.Div and dtype == "int32":
        pytest.skip("div promotes integers before the op")
    d = getattr(tx, dtype)
    x = tx.tensor(RNG.uniform(1, 4, shapes[0])).to(d)
    y = tx.tensor(RNG.uniform(1, 4, shapes[1])).to(d)
    with tx.no_grad():
        got = binary(cls, x, y)
        want = cls.apply(x, y)
    _same(got, want)
    if dtype in ("float32", "float64", "int32"):  # NumPy computes these itself: the oracle
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(got.numpy(), ref(x.numpy(), y.numpy()))
    assert got.grad_fn is None and not got.requires_grad


def test_records_exactly_when_apply_would():
    a = tx.randn(3, requires_grad=True)
    b = tx.randn(3)
    c = tx.randn(3)
    assert binary(ew.Mul, a, b).grad_fn is not None  # one input requires grad: a node
    assert binary(ew.Mul, b, a).grad_fn.needs_input_grad == (False, True)
    out = binary(ew.Mul, b, c)  # grad mode on, nothing requires grad: no node, as in apply
    assert out.grad_fn is None and not out.requires_grad
    with tx.no_grad():
        out = binary(ew.Mul, a, a)  # no_grad: no node although the inputs require grad
    assert out.grad_fn is None and not out.requires_grad
    y = binary(ew.Div, a, binary(ew.Add, b, c))
    y.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), 1 / (b.numpy() + c.numpy()), rtol=1e-6)


def test_operators_use_it_under_no_grad_and_gradients_still_match_torch():
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((4, 3))
    y = RNG.uniform(0.5, 2, (3,))
    a, b = tx.tensor(x, requires_grad=True), tx.tensor(y, requires_grad=True)
    ta, tb = torch.tensor(x, requires_grad=True), torch.tensor(y, requires_grad=True)
    ((a + b) * (a - b) / b).sum().backward()
    ((ta + tb) * (ta - tb) / tb).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-12)
    with tx.no_grad(), torch.no_grad():
        got = ((a + b) * (a - b) / b).numpy()
        want = ((ta + tb) * (ta - tb) / tb).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_hooks_take_apply():
    """A tracer sees the ops under no_grad too (it is reached only through apply)."""
    seen = []

    class Rec:
        def record(self, cls, args, out):
            seen.append(cls.__name__)

    a, b = tx.ones(3), tx.ones(3)
    state = modes.state
    state.tracer = Rec()
    try:
        with tx.no_grad():
            a + b, a * b, a - b, a / b
    finally:
        state.tracer = None
    assert seen == ["Add", "Mul", "Sub", "Div"]


def test_broadcast_error_names_the_op_in_both_paths():
    a, b = tx.ones(3), tx.ones(4)
    for mode in (tx.no_grad, tx.enable_grad):
        with mode(), pytest.raises(RuntimeError, match=r"add\(\): The size of tensor a \(3\)"):
            binary(ew.Add, a, b)


def test_large_operands_split_the_same_without_a_node(monkeypatch):
    """The eager rule is the forward: big arrays take the thread split on both paths."""
    monkeypatch.setattr(ew, "_SPLIT_SIZE", 16)
    x = tx.tensor(RNG.standard_normal((64, 33)).astype(np.float32))
    y = tx.tensor(RNG.standard_normal(33).astype(np.float32))
    with tx.no_grad():
        got = x * y
    assert got.numpy().tobytes() == (x.numpy() * y.numpy()).tobytes()


def test_inplace_and_version_counters_unchanged():
    a = tx.ones(3)
    v = a._version[0]
    with tx.no_grad():
        a.add_(tx.ones(3))
        out = a + a
    assert a._version[0] == v + 1 and out._version == [0]
    assert a.tolist() == [2.0, 2.0, 2.0] and out.tolist() == [4.0, 4.0, 4.0]
