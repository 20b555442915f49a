"""tensorix.utils.checkpoint and autograd.graph.saved_tensors_hooks, against plain runs and
against torch."""

import threading

import numpy as np
import pytest

import tensorix as tx
from tensorix import nn
from tensorix.autograd.graph import disable_saved_tensors_hooks, saved_tensors_hooks
from tensorix.utils.checkpoint import CheckpointError, checkpoint, checkpoint_sequential


def _model():
    tx.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 12), nn.GELU(), nn.Dropout(0.25), nn.Linear(12, 12),
                         nn.Tanh(), nn.Linear(12, 3))


def _grads(model, run, x):
    model.zero_grad()
    x.grad = None
    tx.manual_seed(7)  # same dropout masks for every run
    y = run(x)
    (y * y).sum().backward()
    return [y.detach().numpy()] + [p.grad.numpy().copy() for p in model.parameters()] + \
        [x.grad.numpy().copy()]


@pytest.mark.parametrize("reentrant", [False, True])
def test_checkpoint_equals_plain_run_with_dropout(reentrant):
    m = _model()
    x = tx.randn(5, 6, requires_grad=True)
    ref = _grads(m, m, x)
    got = _grads(m, lambda t: checkpoint(m, t, use_reentrant=reentrant), x)
    seq = _grads(m, lambda t: checkpoint_sequential(m, 3, t, use_reentrant=reentrant), x)
    for r, a, b in zip(ref, got, seq):
        np.testing.assert_array_equal(a, r)
        np.testing.assert_array_equal(b, r)


def test_non_reentrant_works_with_autograd_grad_and_kwargs():
    w = tx.randn(4, 4, requires_grad=True)

    def f(x, scale=1.0):
        return (x @ w).sin() * scale

    x = tx.randn(3, 4, requires_grad=True)
    ref = tx.autograd.grad(f(x, scale=2.0).sum(), [x, w])
    got = tx.autograd.grad(checkpoint(f, x, scale=2.0, use_reentrant=False).sum(), [x, w])
    for r, g in zip(ref, got):
        np.testing.assert_array_equal(g.numpy(), r.numpy())


def test_nested_checkpoint():
    w = tx.randn(4, 4, requires_grad=True)

    def inner(x):
        return (x @ w).tanh()

    def outer(x):
        return checkpoint(inner, x.exp(), use_reentrant=False) * 3

    x = tx.randn(2, 4, requires_grad=True)
    ref = tx.autograd.grad((inner(x.exp()) * 3).sum(), [x, w])
    got = tx.autograd.grad(checkpoint(outer, x, use_reentrant=False).sum(), [x, w])
    for r, g in zip(ref, got):
        np.testing.assert_allclose(g.numpy(), r.numpy(), rtol=0, atol=0)


def test_checkpoint_matches_torch():
    torch = pytest.importorskip("torch")
    from torch.utils.checkpoint import checkpoint as tcheckpoint

    rng = np.random.default_rng(0)
    w1, w2 = rng.standard_normal((6, 8)), rng.standard_normal((8, 2))
    xn = rng.standard_normal((4, 6))
    x = tx.tensor(xn, requires_grad=True)
    a, b = tx.tensor(w1, requires_grad=True), tx.tensor(w2, requires_grad=True)
    y = checkpoint(lambda t: ((t @ a).relu() @ b).sigmoid(), x, use_reentrant=False)
    y.sum().backward()
    tx_ = torch.tensor(xn, requires_grad=True)
    ta, tb = torch.tensor(w1, requires_grad=True), torch.tensor(w2, requires_grad=True)
    ty = tcheckpoint(lambda t: ((t @ ta).relu() @ tb).sigmoid(), tx_, use_reentrant=False)
    ty.sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-12)
    for mine, theirs in ((x, tx_), (a, ta), (b, tb)):
        np.testing.assert_allclose(mine.grad.numpy(), theirs.grad.numpy(), rtol=1e-12)


def test_checkpoint_lowers_peak_memory():
    m = nn.Sequential(*[nn.Sequential(nn.Linear(256, 256), nn.GELU()) for _ in range(12)])
    x = tx.randn(128, 256, requires_grad=True)

    def measure(segments):
        with tx.memory.track() as mem:
            base = tx.memory.memory_allocated()
            y = checkpoint_sequential(m, segments, x, use_reentrant=False) if segments else m(x)
            held = tx.memory.memory_allocated() - base  # what forward keeps for backward
            y.sum().backward()
        return held, mem.peak

    # why one thread: tracemalloc counts every thread's temporaries, and kernels split over the
    # pool hold one set per part at once, more or fewer with the machine's load
    threads = tx.get_num_threads()
    tx.set_num_threads(1)
    try:
        measure(0), measure(4)  # a first call's one-time allocations (tables, caches) go here
        (plain_held, plain), (four_held, four) = measure(0), measure(4)
    finally:
        tx.set_num_threads(threads)
    # 12 layers keep 24 activations of 128 KiB; with four segments forward keeps the inputs of
    # the first three and the last segment's 6 activations (torch runs the last one plainly):
    # 9/24 = 0.375 (measured 0.38); backward recomputes one segment at a time (peak 0.45x)
    assert four_held < 0.45 * plain_held, (plain_held, four_held)
    assert four < 0.6 * plain, (plain, four)


@pytest.mark.parametrize("second, match", [
    (lambda x: x.exp(), "saved 1 tensors"),         # fewer saved tensors than the first run
    (lambda x: x[:2].exp().exp(), "shape"),         # other shapes
])
def test_recomputation_that_differs_raises(second, match):
    calls = []

    def f(x):
        calls.append(1)
        return x.exp().exp() if len(calls) == 1 else second(x)

    x = tx.randn(3, requires_grad=True)
    y = checkpoint(f, x, use_reentrant=False)
    with pytest.raises(CheckpointError, match=match):
        y.sum().backward()


def test_checkpoint_arguments():
    x = tx.randn(3, requires_grad=True)
    with pytest.warns(UserWarning, match="use_reentrant"):
        checkpoint(lambda t: t * 2, x)
    with pytest.raises(ValueError, match="Unexpected keyword"):
        checkpoint(lambda t, k=1: t * k, x, k=2, use_reentrant=True)
    with pytest.raises(TypeError, match="callable"):
        checkpoint(3, x, use_reentrant=False)
    with pytest.raises(ValueError, match="segments"):
        checkpoint_sequential([nn.Tanh()], 2, x, use_reentrant=False)


def test_saved_tensors_hooks_pack_and_unpack():
    x = tx.randn(4, requires_grad=True, dtype=tx.float64)
    packed = []

    def pack(t):
        packed.append(t)
        return ("box", t.to(tx.float16))

    def unpack(box):
        return box[1].to(tx.float64)

    with saved_tensors_hooks(pack, unpack):
        y = (x * x).sum()
    assert packed, "the multiplication saves its inputs"
    y.backward()
    expected = 2 * x.detach().to(tx.float16).to(tx.float64)
    np.testing.assert_array_equal(x.grad.numpy(), expected.numpy())


def test_saved_tensors_hooks_errors_and_threads():
    x = tx.randn(3, requires_grad=True)
    with saved_tensors_hooks(lambda t: t, lambda t: 3):
        y = (x * x).sum()
    with pytest.raises(TypeError, match="unpack hook"):
        y.backward()
    with disable_saved_tensors_hooks("no hooks here"), \
            pytest.raises(RuntimeError, match="no hooks here"), \
            saved_tensors_hooks(lambda t: t, lambda t: t):
        pass
    seen = []
    with saved_tensors_hooks(lambda t: seen.append(1) or t, lambda t: t):
        th = threading.Thread(target=lambda: (x * x).sum())
        th.start()
        th.join()
    assert not seen  # hooks are per thread
    with pytest.raises(TypeError, match="callable"):
        saved_tensors_hooks(1, 2)


def test_memory_statistics():
    if tx.memory.is_tracking():
        pytest.skip("tracemalloc is already on in this process")
    with pytest.raises(RuntimeError, match="track"):
        tx.memory.memory_allocated()
    with tx.memory.track() as mem:
        a = np.ones(1 << 20)  # 8 MiB
        held = tx.memory.memory_allocated()
        del a
    assert mem.peak >= 8 << 20 and held >= 8 << 20
    assert mem.current < 1 << 20
    assert not tx.memory.is_tracking()
