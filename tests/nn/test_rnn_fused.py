"""The fused LSTM/GRU gate nodes (nn/layers/rnn.py): float64 numerical gradient checks (first
order on the raw-array backward, second order on the Tensor one) and values and gradients
against torch's cells."""

import numpy as np
import pytest

import tensorix as tx
from tensorix.nn.layers.rnn import GRUGates, LSTMGates
from tensorix.testing.gradcheck import gradcheck, gradgradcheck


def _t(rng, *shape):
    return tx.tensor(rng.standard_normal(shape), dtype=tx.float64, requires_grad=True)


def test_lstm_gates_gradcheck():
    rng = np.random.default_rng(0)
    gi, gh, c = _t(rng, 3, 8), _t(rng, 3, 8), _t(rng, 3, 2)
    gradcheck(lambda *a: LSTMGates.apply(*a), [gi, gh, c], name="LSTMGates")
    gradcheck(lambda *a: LSTMGates.apply(*a)[0], [gi, gh, c], name="LSTMGates h only")
    gradgradcheck(lambda *a: LSTMGates.apply(*a), [gi, gh, c], name="LSTMGates")


def test_gru_gates_gradcheck():
    rng = np.random.default_rng(1)
    gi, gh, h = _t(rng, 3, 6), _t(rng, 3, 6), _t(rng, 3, 2)
    gradcheck(lambda *a: GRUGates.apply(*a), [gi, gh, h], name="GRUGates")
    gradgradcheck(lambda *a: GRUGates.apply(*a), [gi, gh, h], name="GRUGates")


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_fused_layers_match_torch(kind):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    ref = getattr(torch.nn, kind)(5, 4, num_layers=2, batch_first=True)
    mine = getattr(tx.nn, kind)(5, 4, num_layers=2, batch_first=True)
    mine.load_state_dict({k: tx.tensor(v.detach().numpy()) for k, v in ref.state_dict().items()})
    x = np.random.default_rng(2).standard_normal((3, 7, 5)).astype(np.float32)
    tx_x, t_x = tx.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, _ = mine(tx_x)
    tout, _ = ref(t_x)
    assert out.grad_fn is not None
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-5,
                               atol=1e-6)
    (out * out).sum().backward()
    (tout * tout).sum().backward()
    np.testing.assert_allclose(tx_x.grad.numpy(), t_x.grad.numpy(), rtol=1e-4, atol=1e-6)
    for name, p in ref.named_parameters():
        np.testing.assert_allclose(mine._parameters[name].grad.numpy(), p.grad.numpy(),
                                   rtol=1e-4, atol=1e-5, err_msg=name)


def test_cells_take_the_fused_node_and_16_bit_the_composite():
    cell = tx.nn.LSTMCell(4, 3)
    h, c = cell(tx.randn(2, 4))
    assert type(h.grad_fn).__name__ == "LSTMGates"
    gru = tx.nn.GRUCell(4, 3)
    assert type(gru(tx.randn(2, 4)).grad_fn).__name__ == "GRUGates"
    half = tx.nn.GRUCell(4, 3).to(tx.bfloat16)
    assert type(half(tx.randn(2, 4).to(tx.bfloat16)).grad_fn).__name__ != "GRUGates"


def test_steps_node_gradcheck_with_unused_steps():
    from tensorix.nn.layers.rnn import _Steps

    x = _t(np.random.default_rng(3), 4, 2, 3)
    gradcheck(lambda x: _Steps.apply(x)[1] * 2 + _Steps.apply(x)[3], [x], name="_Steps")
    steps = _Steps.apply(x)
    assert len(steps) == 4 and steps[0].grad_fn is steps[3].grad_fn  # one node
