"""The performance fast paths give bit-for-bit the results of the general code they bypass.

Each fast path only takes inputs above a size or of a shape the op matrix's small samples do
not reach (large selects and ReLUs as bit operations, max pooling over tiling windows), so
these tests feed such inputs and compare with the plain NumPy / general path.
"""

from __future__ import annotations

import importlib
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import tensorix as tx
import tensorix.nn.functional as F
from tensorix import _alloc
from tensorix.autograd import grad_mode
from tensorix.autograd.grad_mode import modes
from tensorix.nn.functional import _pool

RNG = np.random.default_rng(7)


def _specials(x):
    """Put -0.0, nan, -inf and inf into a float array (in place) and return it."""
    if x.dtype.kind == "f":
        flat = x.reshape(-1)
        flat[:4] = [-0.0, np.nan, -np.inf, np.inf]
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int64, np.int8,
                                   np.uint8, np.bool_])
def test_large_where_equals_numpy(dtype):
    a = _specials((RNG.standard_normal((96, 80)) * 50).astype(dtype))
    b = (RNG.standard_normal((96, 80)) * 50).astype(dtype)
    c = RNG.random((96, 80)) < 0.5
    got = tx.where(tx.from_numpy(c), tx.from_numpy(a), tx.from_numpy(b)).numpy()
    assert got.dtype == a.dtype and got.tobytes() == np.where(c, a, b).tobytes()


def test_large_where_broadcasts_and_strides():
    a = RNG.standard_normal((80, 96)).astype(np.float32).T  # non-contiguous
    b = RNG.standard_normal((96, 1)).astype(np.float32)
    c = RNG.random((1, 80)) < 0.3
    got = tx.where(tx.from_numpy(c), tx.from_numpy(a), tx.from_numpy(b)).numpy()
    assert got.tobytes() == np.where(c, a, b).tobytes()
    got = tx.where(tx.from_numpy(c), tx.from_numpy(a), 0.0).numpy()
    assert got.tobytes() == np.where(c, a, np.float32(0)).tobytes()


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_large_relu_matches_torch_bits(dtype):
    torch = pytest.importorskip("torch")
    x = _specials(RNG.standard_normal((64, 100)).astype(dtype))
    got = F.relu(tx.from_numpy(x)).numpy()
    assert got.tobytes() == torch.relu(torch.from_numpy(x)).numpy().tobytes()
    t = tx.from_numpy(x.copy()).requires_grad_()
    F.relu(t).backward(tx.ones_like(t))
    ref = torch.from_numpy(x.copy()).requires_grad_()
    torch.relu(ref).backward(torch.ones_like(ref))
    assert t.grad.numpy().tobytes() == ref.grad.numpy().tobytes()



@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("shape", [(3, 5), (64, 100), ()])
def test_relu_backward_pass_matches_torch_bits(dtype, shape):
    """ReluBackward (first order: one bit mask) against torch's threshold_backward, with
    -0.0, nan and infinities in the input and in the upstream gradient, and a transposed
    (non-contiguous) upstream gradient."""
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal(shape).astype(dtype)
    g = RNG.standard_normal(shape[::-1]).astype(dtype).T  # non-contiguous where 2-d
    if shape:
        x, g = _specials(x), _specials(g.T.copy()).T
        x.reshape(-1)[4:6] = [0.0, -0.0]
    t = tx.from_numpy(x.copy()).requires_grad_()
    F.relu(t).backward(tx.from_numpy(g))
    ref = torch.from_numpy(x.copy()).requires_grad_()
    torch.relu(ref).backward(torch.from_numpy(np.array(g, order="C")))
    assert t.grad.numpy().tobytes() == ref.grad.numpy().tobytes()


def test_relu_double_backward_matches_torch():
    """With create_graph the composite backward runs; ReluBackward's own backward (applied
    directly) gives the same gradient of the gradient."""
    torch = pytest.importorskip("torch")
    from tensorix.ops._relu_grad import ReluBackward

    x = RNG.standard_normal((6, 7))
    g = RNG.standard_normal((6, 7))
    t, tg = tx.from_numpy(x.copy()).requires_grad_(), tx.from_numpy(g.copy()).requires_grad_()
    (gx,) = tx.autograd.grad(F.relu(t), t, tg, create_graph=True)
    (gx * gx).sum().backward()
    ref, rg = torch.from_numpy(x.copy()).requires_grad_(), torch.from_numpy(g.copy())
    rg.requires_grad_()
    (rgx,) = torch.autograd.grad(torch.relu(ref), ref, rg, create_graph=True)
    (rgx * rgx).sum().backward()
    assert np.allclose(gx.detach().numpy(), rgx.detach().numpy(), rtol=0, atol=0)
    assert np.allclose(tg.grad.numpy(), rg.grad.numpy(), rtol=1e-12, atol=0)
    out = F.relu(tx.from_numpy(x))
    tg2 = tx.from_numpy(g.copy()).requires_grad_()
    (ReluBackward.apply(tg2, out) ** 2).sum().backward()
    assert np.array_equal(tg2.grad.numpy(), tg.grad.numpy())

def _pool_run(x, kernel, stride, general):
    """max_pool2d value, input gradient and saved argmax, on the fast or the general path."""
    orig = _pool._tiled
    if general:
        _pool._tiled = lambda *args: None
    try:
        t = tx.from_numpy(x.copy()).requires_grad_()
        y = F.max_pool2d(t, kernel, stride)
        g = np.random.default_rng(0).standard_normal(tuple(y.shape)).astype(x.dtype)
        y.backward(tx.from_numpy(g))
        return y.detach().numpy(), t.grad.numpy(), y.grad_fn.idx
    finally:
        _pool._tiled = orig


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("shape,kernel,stride", [((2, 3, 8, 8), 2, 2), ((2, 3, 9, 7), 2, None),
                                                 ((1, 2, 9, 9), 3, 3),
                                                 ((2, 2, 6, 8), (2, 4), (2, 4))])
@pytest.mark.parametrize("special", [False, True])
def test_tiled_max_pool_equals_general_path(dtype, shape, kernel, stride, special):
    x = RNG.integers(-3, 3, shape).astype(dtype)  # many ties: the first maximum must win
    if special:
        x.reshape(-1)[3], x.reshape(-1)[7] = -0.0, np.nan
    fast = _pool_run(x, kernel, stride, general=False)
    slow = _pool_run(x, kernel, stride, general=True)
    for a, b in zip(fast, slow):
        assert a.tobytes() == b.tobytes()


@pytest.mark.parametrize("shape,kernel,stride", [((4, 3, 8, 8), 2, 2), ((5, 2, 9, 7), 2, None)])
@pytest.mark.parametrize("special", [None, 0, 4])
def test_tiled_max_pool_split_by_samples_is_bit_identical(monkeypatch, counted_parts, shape,
                                                           kernel, stride, special):
    """The tiled fast path split over the pool by samples (forced here) gives the one-thread
    bits; a NaN or -0.0 in any one part sends the whole op to the general path."""
    from tensorix import _threads

    x = RNG.integers(-3, 3, shape).astype(np.float32)
    if special is not None:  # in the first or the last sample only
        x[special % shape[0]].reshape(-1)[5] = np.nan
    slow = _pool_run(x, kernel, stride, general=True)
    monkeypatch.setattr(_threads, "COSTLY", 1)
    split = _pool_run(x, kernel, stride, general=False)
    assert counted_parts and max(counted_parts) > 1  # forward and backward split
    for a, b in zip(split, slow):
        assert a.tobytes() == b.tobytes()


def test_tiled_max_pool_against_torch():
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((4, 3, 28, 28)).astype(np.float32)
    y, gx, _ = _pool_run(x, 2, 2, general=False)
    ref = torch.from_numpy(x).requires_grad_()
    out = torch.nn.functional.max_pool2d(ref, 2)
    out.backward(torch.from_numpy(np.random.default_rng(0).standard_normal(y.shape)
                                  .astype(np.float32)))
    np.testing.assert_array_equal(y, out.detach().numpy())
    np.testing.assert_array_equal(gx, ref.grad.numpy())


def test_malloc_tuning_opt_out():
    code = "import tensorix._alloc as a; print(a.tune())"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    env["TENSORIX_MALLOC_TUNING"] = "0"
    env["PYTHONPATH"] = os.pathsep.join([str(pathlib.Path(__file__).resolve().parents[1]),
                                         env.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == "False"
    assert isinstance(_alloc.tune(), bool)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(), (7,), (3, 70000)])
def test_fused_gelu_tanh_equals_composite(dtype, shape, monkeypatch):
    from tensorix.ops import activation

    x = np.asarray(RNG.standard_normal(shape) * 3, dtype=dtype)
    if x.size > 4:
        _specials(x)
    g = np.asarray(RNG.standard_normal(shape), dtype=dtype)

    def run():
        t = tx.from_numpy(x.copy()).requires_grad_()
        y = F.gelu(t, approximate="tanh")
        y.backward(tx.from_numpy(g.copy()))
        return y.detach().numpy(), t.grad.numpy()

    fused = run()
    monkeypatch.setattr(activation, "_fusable", lambda *t: False)
    for a, b in zip(fused, run()):
        assert a.tobytes() == b.tobytes()


def test_fused_gelu_tanh_second_derivative_matches_torch():
    torch = pytest.importorskip("torch")
    x, g = RNG.standard_normal(50) * 3, RNG.standard_normal(50)
    t, gt = tx.from_numpy(x).requires_grad_(), tx.from_numpy(g).requires_grad_()
    (d,) = tx.autograd.grad(F.gelu(t, approximate="tanh"), t, gt, create_graph=True)
    got = tx.autograd.grad((d * d).sum(), [t, gt])
    T, G = torch.from_numpy(x).requires_grad_(), torch.from_numpy(g).requires_grad_()
    (D,) = torch.autograd.grad(torch.nn.functional.gelu(T, approximate="tanh"), T, G,
                               create_graph=True)
    ref = torch.autograd.grad((D * D).sum(), [T, G])
    for a, b in zip(got, ref):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-12)


def test_quiet_context_for_hot_ops():
    from tensorix.ops import elementwise

    big = tx.tensor([3e38, 0.0], dtype=tx.float32)
    before = np.geterr()
    with np.errstate(all="raise"):  # tensorix ops stay quiet like torch; the state is kept
        out = (big + big, big * big, big - (-big), big / 0)
        assert np.geterr()["over"] == "raise"
    assert np.geterr() == before
    assert [float(o[0]) for o in out] == [np.inf] * 4 and np.isnan(float((big / 0)[1]))
    # the shared quiet context is already entered here (as when another thread is inside
    # it): the ops take the slow path and give the same results
    ops = (lambda: big + big, lambda: big - big, lambda: big * big, lambda: big / big)
    for op in ops:
        inner = elementwise._run_quiet(op)
        assert inner.numpy().tobytes() == op().numpy().tobytes()


@pytest.mark.parametrize("inside", [False, True])
def test_fold_split_by_samples_is_bit_identical(monkeypatch, counted_parts, inside):
    """Fold (conv's input gradient, col2im) split over the pool (forced here: by samples, or
    by channels for windows laid out batch-inside, (C, *K, N, *O)) gives the one-thread bits."""
    from tensorix import _threads
    from tensorix.nn.functional import _conv

    cols = RNG.standard_normal((5, 3, 3, 3, 6, 7)).astype(np.float32)
    if inside:  # as conv's backward hands them over
        cols = np.ascontiguousarray(cols.transpose(1, 2, 3, 0, 4, 5)).transpose(3, 0, 1, 2, 4, 5)
    args = ((5, 3, 8, 9), (3, 3), (1, 1), (1, 0), (1, 1))
    tx.set_num_threads(1)
    want = _conv._fold_raw(cols, *args)
    tx.set_num_threads(2)
    assert counted_parts == []
    monkeypatch.setattr(_threads, "COSTLY", 1)
    got = _conv._fold_raw(cols, *args)
    assert counted_parts and max(counted_parts) > 1
    assert got.shape == want.shape == (5, 3, 8, 9) and got.tobytes() == want.tobytes()
    t = tx.from_numpy(cols)  # and against the sum of windows written out with NumPy
    ref = np.zeros((5, 3, 10, 9), np.float32)  # padded by 1 in height
    for i in range(3):
        for j in range(3):
            ref[:, :, i:i + 6, j:j + 7] += t.numpy()[:, :, i, j]
    np.testing.assert_allclose(got, ref[:, :, 1:9], rtol=1e-6, atol=1e-6)


@pytest.fixture
def codes_in_process():
    """Storage codes made on a device earlier in the process (as after a full run's GPU
    tests): every op then passes the dispatcher's code check (``state.hooked``), which must
    not turn the raw backward paths off."""
    seen = grad_mode._CODES[0]
    grad_mode._CODES[0] = True
    modes.state._rehook()
    yield
    grad_mode._CODES[0] = seen
    modes.state._rehook()


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,dim", [((32, 10), 1), ((4, 5, 6), 0), ((4, 5, 6), -1), ((7,), 0)])
def test_softmax_raw_backward_equals_op_form(name, dtype, shape, dim, monkeypatch,
                                             codes_in_process):
    """The first-order (log_)softmax backward on raw arrays gives the bits of the op form
    (which runs where a graph is recorded: create_graph), and torch's values."""
    torch = pytest.importorskip("torch")
    sm = importlib.import_module("tensorix.ops.softmax")  # (tensorix.ops.softmax: the function)
    taken, raw_grad = [], sm._raw_grad
    monkeypatch.setattr(sm, "_raw_grad", lambda *a: taken.append(raw_grad(*a)) or taken[-1])
    x = (RNG.standard_normal(shape) * 3).astype(dtype)
    g = RNG.standard_normal(shape).astype(dtype)
    fn = getattr(F, name)
    grads = []
    for create_graph in (False, True):
        t = tx.from_numpy(x.copy()).requires_grad_()
        (gx,) = tx.autograd.grad(fn(t, dim), t, tx.from_numpy(g), create_graph=create_graph)
        grads.append(gx.detach().numpy())
    assert taken[0] is not None and taken[1] is None  # raw, then the op form
    assert grads[0].tobytes() == grads[1].tobytes()
    ref = torch.from_numpy(x.copy()).requires_grad_()
    getattr(torch, name)(ref, dim).backward(torch.from_numpy(g))
    np.testing.assert_allclose(grads[0], ref.grad.numpy(), rtol=1e-5 if dtype == np.float32
                               else 1e-12, atol=1e-6 if dtype == np.float32 else 1e-13)


@pytest.mark.parametrize("kw", [{}, dict(reduction="sum"), dict(reduction="none"),
                                dict(ignore_index=1, weight=True)])
@pytest.mark.parametrize("shape", [(6, 4), (3, 4, 5)])
def test_nll_raw_backward_equals_op_form(kw, shape, monkeypatch, codes_in_process):
    """nll_loss's first-order backward on raw arrays gives the bits of the op form (which
    runs where a graph is recorded: create_graph), and torch's values."""
    torch = pytest.importorskip("torch")
    from tensorix.nn.functional import _core

    calls, orig = [], _core.NLLLossCoeff.apply
    monkeypatch.setattr(_core.NLLLossCoeff, "apply",
                        staticmethod(lambda *a: calls.append(1) or orig(*a)))
    kw = dict(kw)
    w = RNG.uniform(0.5, 2, shape[1]).astype(np.float32) if kw.pop("weight", None) else None
    x = RNG.standard_normal(shape).astype(np.float32)
    y = RNG.integers(0, shape[1], (shape[0],) + shape[2:])
    g = RNG.standard_normal(y.shape if kw.get("reduction") == "none" else ()).astype(np.float32)
    grads = []
    for create_graph in (False, True):
        t = tx.from_numpy(x.copy()).requires_grad_()
        loss = F.nll_loss(t, tx.from_numpy(y), None if w is None else tx.from_numpy(w), **kw)
        (gx,) = tx.autograd.grad(loss, t, tx.from_numpy(g), create_graph=create_graph)
        grads.append(gx.detach().numpy())
        # the op form only where a graph is recorded (through the dispatcher's code check the
        # patched apply is entered twice per op)
        assert bool(calls) == create_graph
    assert grads[0].tobytes() == grads[1].tobytes()
    ref = torch.from_numpy(x.copy()).requires_grad_()
    torch.nn.functional.nll_loss(ref, torch.from_numpy(y), None if w is None else
                                 torch.from_numpy(w), **kw).backward(torch.from_numpy(g))
    np.testing.assert_allclose(grads[0], ref.grad.numpy(), rtol=1e-6, atol=1e-7)
