"""Modes are per thread, as in PyTorch: grad mode, inference mode, anomaly mode and the
precision policy (autocast) set in one thread never leak into another, and a new thread
starts from the defaults."""

import copy
import sys
import threading

import numpy as np
import pytest

import tensorix as tx
from tensorix import nn, optim
from tensorix.autograd import (
    detect_anomaly,
    is_anomaly_enabled,
    set_detect_anomaly,
)
from tensorix.numerics.policy import POLICIES, autocast, get_policy


def _run_threads(*targets):
    """Run each target in its own thread; re-raise the first exception here."""
    errors = []

    def guard(fn):
        try:
            fn()
        except BaseException as e:  # noqa: BLE001 - handed to the test thread
            errors.append(e)

    threads = [threading.Thread(target=guard, args=(fn,)) for fn in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
        assert not t.is_alive(), "a test thread hung"
    if errors:
        raise errors[0]


@pytest.fixture
def fast_switching():
    """Switch threads every microsecond, so the two threads' ops interleave closely."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(old)


def _model_and_data(seed):
    tx.manual_seed(seed)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    x = tx.randn(32, 4)
    y = tx.randn(32, 1)
    return model, x, y


def _train(model, x, y, steps, start=None):
    opt = optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    if start is not None:
        start.wait()
    for _ in range(steps):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()  # runs under no_grad: must not switch recording off in the other thread
    return [p.detach().numpy().copy() for p in model.parameters()]


def test_two_threads_train_two_models_like_sequential_runs(fast_switching):
    setups = [_model_and_data(0), _model_and_data(1)]
    steps = 150
    sequential = [_train(copy.deepcopy(m), x, y, steps) for m, x, y in setups]
    results = [None, None]
    start = threading.Barrier(2)

    def job(k):
        m, x, y = setups[k]
        results[k] = _train(m, x, y, steps, start)

    _run_threads(lambda: job(0), lambda: job(1))
    for got, want in zip(results, sequential):
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)


def test_overlapping_no_grad_blocks_restore_each_thread():
    """A enters no_grad, B enters no_grad, A leaves, B leaves: with one process-wide flag,
    B's exit restored the "off" it saw on entry and left grad disabled for everyone."""
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    seen = {}

    def a():
        with tx.no_grad():
            a_in.set()
            assert b_in.wait(10)
        seen["a_after"] = tx.is_grad_enabled()
        a_out.set()

    def b():
        assert a_in.wait(10)
        seen["b_before"] = tx.is_grad_enabled()  # A's block does not reach this thread
        with tx.no_grad():
            b_in.set()
            assert a_out.wait(10)
            seen["b_inside"] = tx.is_grad_enabled()
        seen["b_after"] = tx.is_grad_enabled()

    _run_threads(a, b)
    assert seen == {"a_after": True, "b_before": True, "b_inside": False, "b_after": True}
    assert tx.is_grad_enabled()


def test_no_grad_in_one_thread_does_not_stop_recording_in_another():
    inside, done = threading.Event(), threading.Event()
    w = tx.ones(3, requires_grad=True)
    out = {}

    def holder():
        with tx.no_grad():
            inside.set()
            assert done.wait(10)

    def recorder():
        assert inside.wait(10)
        y = (w * 2).sum()
        out["requires_grad"] = y.requires_grad
        y.backward()
        done.set()

    _run_threads(holder, recorder)
    assert out["requires_grad"]
    assert w.grad.tolist() == [2.0, 2.0, 2.0]


def test_new_thread_starts_with_default_modes():
    seen = {}

    def child():
        seen["grad"] = tx.is_grad_enabled()
        seen["inference"] = tx.is_inference_mode_enabled()
        seen["anomaly"] = is_anomaly_enabled()
        seen["policy"] = get_policy()

    with tx.inference_mode(), detect_anomaly(), autocast("bf16"):
        assert not tx.is_grad_enabled() and tx.is_inference_mode_enabled()
        assert is_anomaly_enabled() and get_policy() is not None
        _run_threads(child)
    assert seen == {"grad": True, "inference": False, "anomaly": False, "policy": None}


def test_modes_set_in_a_thread_stay_in_it():
    def child():
        tx.set_grad_enabled(False)  # plain calls, never undone: they die with the thread
        set_detect_anomaly(True)
        cm = autocast("fp16")
        cm.__enter__()
        assert not tx.is_grad_enabled() and is_anomaly_enabled()
        assert get_policy() is POLICIES["fp16"]

    _run_threads(child)
    assert tx.is_grad_enabled() and not is_anomaly_enabled() and get_policy() is None


def test_policy_per_thread_in_matmul():
    """Each thread's autocast decides how its own GEMMs round."""
    from tensorix.numerics import matmul

    a = tx.tensor([[1.0 + 2.0**-12]])
    b = tx.tensor([[1.0]])
    out = {}
    entered, done = threading.Event(), threading.Event()

    def rounded():
        with autocast("bf16"):
            entered.set()
            assert done.wait(10)
            out["bf16"] = matmul(a, b).float().item()

    def plain():
        assert entered.wait(10)
        out["fp32"] = matmul(a, b).item()
        done.set()

    _run_threads(rounded, plain)
    assert out == {"bf16": 1.0, "fp32": np.float32(1.0 + 2.0**-12)}
