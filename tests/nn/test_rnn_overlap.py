"""A recurrent layer whose input projection and weight/input gradients run in chunks beside
its time loop (nn/layers/_overlap.py, ``_recurrence.layer``): values and gradients against
torch in float64 with several chunks (also a short last one), reverse directions, no bias,
GRU's b_hn; the same bits on one thread, on two with the pool offered a part, and with the
work too small to split; a failing producer; double backward through the composite."""

import numpy as np
import pytest

import tensorix as tx
from tensorix import _threads
from tensorix.nn.layers import _overlap


def _pair(kind, bias, rng, **kw):
    torch = pytest.importorskip("torch")
    torch.manual_seed(int(rng.integers(1000)))
    ref = getattr(torch.nn, kind)(6, 5, bias=bias, dtype=torch.float64, **kw)
    mine = getattr(tx.nn, kind)(6, 5, bias=bias, dtype=tx.float64, **kw)
    mine.load_state_dict({k: tx.tensor(v.detach().numpy()) for k, v in ref.state_dict().items()})
    return ref, mine


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("bias", [True, False])
def test_layer_node_matches_torch(kind, bias):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    ref, mine = _pair(kind, bias, rng, num_layers=2, bidirectional=True, batch_first=True)
    x = rng.standard_normal((64, 13, 6))  # batch 64: chunks of 4 steps, the last of 1
    assert _overlap.spans(13, 64) == [(0, 4), (4, 8), (8, 12), (12, 13)]
    tx_x, t_x = tx.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, hn = mine(tx_x)
    tout, thn = ref(t_x)
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-12,
                               atol=1e-12)
    hn, thn = (hn[0], thn[0]) if kind == "LSTM" else (hn, thn)
    np.testing.assert_allclose(hn.detach().numpy(), thn.detach().numpy(), atol=1e-12)
    w = rng.standard_normal(out.shape)
    ((out * tx.tensor(w)).sum() + (hn * hn).sum()).backward()
    ((tout * torch.tensor(w)).sum() + (thn * thn).sum()).backward()
    np.testing.assert_allclose(tx_x.grad.numpy(), t_x.grad.numpy(), rtol=1e-10, atol=1e-12)
    for name, p in ref.named_parameters():
        np.testing.assert_allclose(mine._parameters[name].grad.numpy(), p.grad.numpy(),
                                   rtol=1e-10, atol=1e-12, err_msg=name)


def _run(kind, x, state):
    mine = getattr(tx.nn, kind)(6, 5, bidirectional=True)
    mine.load_state_dict(state)
    a = tx.tensor(x, requires_grad=True)
    out, _ = mine(a)
    (out * out).sum().backward()
    return [out.detach().numpy(), a.grad.numpy()] + [p.grad.numpy()
                                                      for p in mine.parameters()]


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_same_bits_on_one_thread_two_threads_and_unsplit(kind, monkeypatch):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((11, 64, 6)).astype(np.float32)
    state = {k: tx.tensor(v.numpy()) for k, v in getattr(tx.nn, kind)(
        6, 5, bidirectional=True).state_dict().items()}
    before = tx.get_num_threads()
    try:
        tx.set_num_threads(1)
        one = _run(kind, x, state)
        tx.set_num_threads(2)
        ran = []
        real = _overlap.run_pair

        def spy(producer, consumer, work):
            ran.append(_threads.parts_for(work, _overlap.MIN_PART))
            real(producer, consumer, work)

        monkeypatch.setattr(_overlap, "run_pair", spy)
        monkeypatch.setattr(_overlap, "MIN_PART", 1)  # this small layer split too
        monkeypatch.setattr(_threads, "_machine_busy", lambda: False)  # the pool takes a part
        two = _run(kind, x, state)
        monkeypatch.setattr(_overlap, "MIN_PART", 1 << 40)  # too small to split: one thread
        busy = _run(kind, x, state)
    finally:
        tx.set_num_threads(before)
    assert ran and set(ran) == {2, 1}  # both tasks offered to the pool, then not
    for a, b, c in zip(one, two, busy):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)


def test_the_layer_node_computes_the_input_part():
    lstm = tx.nn.LSTM(6, 5)
    out, _ = lstm(tx.randn(9, 64, 6))
    assert type(out.grad_fn).__name__ == "Recurrence"
    assert out.grad_fn.saved_tensors[0] is None  # no gi: x and w_ih came in
    out16, _ = tx.nn.LSTM(6, 5, proj_size=3)(tx.randn(9, 4, 6))  # projections: composite
    assert type(out16.grad_fn).__name__ != "Recurrence"


def test_a_failing_projection_raises_and_does_not_hang(monkeypatch):
    """The loop thread waits for the projection's chunks: an error there must reach the
    caller, not leave the loop waiting."""
    lstm = tx.nn.LSTM(6, 5)
    x = tx.randn(9, 64, 6)
    monkeypatch.setattr(_threads, "_machine_busy", lambda: False)
    monkeypatch.setattr(_overlap, "MIN_PART", 1)
    real, calls = np.matmul, []

    def matmul(a, b, **kw):  # the first chunk's projection (the first GEMM with out=) fails
        calls.append(1)
        if len(calls) == 1 and "out" in kw:
            raise FloatingPointError("projection")
        return real(a, b, **kw)

    monkeypatch.setattr(np, "matmul", matmul)
    with pytest.raises(FloatingPointError, match="projection"):
        lstm(x)


def test_double_backward_through_the_layer_node():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    ref, mine = _pair("GRU", True, rng)
    x = rng.standard_normal((3, 64, 6))
    tx_x, t_x = tx.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, _ = mine(tx_x)
    tout, _ = ref(t_x)
    (g,) = tx.autograd.grad((out ** 2).sum(), [tx_x], create_graph=True)
    (tg,) = torch.autograd.grad((tout ** 2).sum(), [t_x], create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), tg.detach().numpy(), rtol=1e-10)
    (g ** 2).sum().backward()
    (tg ** 2).sum().backward()
    np.testing.assert_allclose(tx_x.grad.numpy(), t_x.grad.numpy(), rtol=1e-8, atol=1e-12)
    for name, p in ref.named_parameters():
        np.testing.assert_allclose(mine._parameters[name].grad.numpy(), p.grad.numpy(),
                                   rtol=1e-8, atol=1e-12, err_msg=name)
