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
@pytest.mark.parametrize("size,layers,length", [(4, 2, 7), (64, 1, 16)])  # 64: model width
def test_fused_layers_match_torch(kind, size, layers, length):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    ref = getattr(torch.nn, kind)(5, size, num_layers=layers, batch_first=True)
    mine = getattr(tx.nn, kind)(5, size, num_layers=layers, batch_first=True)
    mine.load_state_dict({k: tx.tensor(v.detach().numpy()) for k, v in ref.state_dict().items()})
    x = np.random.default_rng(2).standard_normal((3, length, 5)).astype(np.float32)
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


# -- Recurrence: a whole direction of a layer as one node (nn/layers/_recurrence.py) ---------

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _recurrence_inputs(mode, dtype=tx.float64, t_len=5, n=3, hid=4, bias=True, seed=0):
    rng = np.random.default_rng(seed)
    g = _GATES[mode] * hid

    def t(*shape, scale=1.0):
        return tx.tensor(rng.standard_normal(shape) * scale, dtype=dtype, requires_grad=True)

    return [t(t_len, n, g), t(n, hid), t(n, hid) if mode == "LSTM" else None,
            t(g, hid, scale=0.5), t(g) if bias else None]


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("mode", list(_GATES))
def test_recurrence_gradcheck(mode, reverse):
    from tensorix.nn.layers._recurrence import Recurrence

    inputs = _recurrence_inputs(mode)
    if mode == "RNN_RELU":  # keep pre-activations away from relu's kink for the difference
        inputs[0] = (inputs[0].detach().abs() + 0.5).requires_grad_()
        inputs[3] = (inputs[3].detach().abs() * 0.1).requires_grad_()

    def fn(*a):
        return Recurrence.apply(*a, mode, reverse)

    gradcheck(fn, inputs, name=f"Recurrence {mode}")
    gradcheck(lambda *a: fn(*a)[0], inputs, name=f"Recurrence {mode} output only")
    gradcheck(lambda *a: fn(*a)[1], inputs, name=f"Recurrence {mode} h_n only")


@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN_TANH"])
def test_recurrence_double_backward(mode):
    from tensorix.nn.layers._recurrence import Recurrence

    inputs = _recurrence_inputs(mode, t_len=3, n=2, hid=2, seed=4)
    gradgradcheck(lambda *a: Recurrence.apply(*a, mode, True), inputs,
                  name=f"Recurrence {mode}")


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_recurrence_without_bias_and_without_input_grads(mode):
    from tensorix.nn.layers._recurrence import Recurrence, _unfused

    gi, h, c, w, _ = _recurrence_inputs(mode, bias=False, seed=5)
    h = h.detach()  # no gradient wanted for the initial state
    out = Recurrence.apply(gi, h, c, w, None, mode, False)
    ref = _unfused(mode, gi, h, c, w, None)
    np.testing.assert_allclose(out[0].detach().numpy(), ref[0].detach().numpy(), rtol=1e-12)
    out[0].sum().backward()
    ga, gw = gi.grad.numpy().copy(), w.grad.numpy().copy()
    gi.grad = w.grad = None
    ref[0].sum().backward()
    np.testing.assert_allclose(ga, gi.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gw, w.grad.numpy(), rtol=1e-10, atol=1e-12)
    assert h.grad is None


@pytest.mark.parametrize("kind,kw", [("LSTM", {}), ("GRU", dict(bidirectional=True)),
                                     ("RNN", dict(nonlinearity="relu", bidirectional=True)),
                                     ("RNN", {})])
def test_fused_sequence_matches_torch_with_states(kind, kw):
    torch = pytest.importorskip("torch")
    torch.manual_seed(1)
    ref = getattr(torch.nn, kind)(5, 6, **kw)
    mine = getattr(tx.nn, kind)(5, 6, **kw)
    mine.load_state_dict({k: tx.tensor(v.detach().numpy()) for k, v in ref.state_dict().items()})
    rng = np.random.default_rng(6)
    dirs = 2 if kw.get("bidirectional") else 1
    x = rng.standard_normal((9, 4, 5)).astype(np.float32)
    h0 = rng.standard_normal((dirs, 4, 6)).astype(np.float32)
    c0 = rng.standard_normal((dirs, 4, 6)).astype(np.float32)
    tx_in = [tx.tensor(a, requires_grad=True) for a in (x, h0, c0)]
    t_in = [torch.tensor(a, requires_grad=True) for a in (x, h0, c0)]
    if kind == "LSTM":
        out, (h, c) = mine(tx_in[0], (tx_in[1], tx_in[2]))
        tout, (th, tc) = ref(t_in[0], (t_in[1], t_in[2]))
        mine_outs, ref_outs = [out, h, c], [tout, th, tc]
    else:
        out, h = mine(tx_in[0], tx_in[1])
        tout, th = ref(t_in[0], t_in[1])
        mine_outs, ref_outs = [out, h], [tout, th]
    assert type(out.grad_fn).__name__ in ("Recurrence", "Concatenate", "Cat")
    ws = [rng.standard_normal(tuple(o.shape)).astype(np.float32) for o in ref_outs]
    for a, b in zip(mine_outs, ref_outs):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)
    sum((o * tx.tensor(w)).sum() for o, w in zip(mine_outs, ws)).backward()
    sum((o * torch.tensor(w)).sum() for o, w in zip(ref_outs, ws)).backward()
    used = 3 if kind == "LSTM" else 2
    for a, b in zip(tx_in[:used], t_in[:used]):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-4, atol=1e-5)
    for name, p in ref.named_parameters():
        np.testing.assert_allclose(mine._parameters[name].grad.numpy(), p.grad.numpy(),
                                   rtol=1e-4, atol=1e-5, err_msg=name)


def test_layers_take_the_fused_sequence_node_and_projections_the_composite():
    out, _ = tx.nn.LSTM(4, 3)(tx.randn(5, 2, 4))
    assert type(out.grad_fn).__name__ == "Recurrence"
    out, _ = tx.nn.LSTM(4, 3, proj_size=2)(tx.randn(5, 2, 4))
    assert type(out.grad_fn).__name__ != "Recurrence"
    out, _ = tx.nn.GRU(4, 3).to(tx.bfloat16)(tx.randn(5, 2, 4).to(tx.bfloat16))
    assert type(out.grad_fn).__name__ != "Recurrence"


def test_fused_sequence_outputs_do_not_alias_saved_states():
    lstm = tx.nn.LSTM(3, 4)
    x = tx.randn(6, 2, 3, requires_grad=True)
    out, (h, c) = lstm(x)
    out.sum().backward()
    ref = x.grad.numpy().copy()
    x.grad = None
    out, (h, c) = lstm(x)
    loss = out.sum()
    with tx.no_grad():
        h.mul_(0)  # h_n is a copy: the saved states that backward reads are untouched
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), ref, rtol=1e-6)


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_fused_sequence_on_device(kind, device):
    """The fused node on each device gives the CPU composite's values and gradients."""
    from tensorix.nn.layers._recurrence import _unfused

    mode = kind
    gi, h, c, w, b = _recurrence_inputs(mode, dtype=tx.float32, seed=7)
    ref = _unfused(mode, gi, h, c, w, b)
    ref[0].sum().backward()
    want = [t.grad.numpy() for t in (gi, w, b)]
    moved = [None if t is None else t.detach().to(device).requires_grad_()
             for t in (gi, h, c, w, b)]
    layer_out, _, _ = tx.nn.layers._recurrence.recurrence(mode, *moved)
    assert type(layer_out.grad_fn).__name__ == "Recurrence"
    assert layer_out.device.type == device
    np.testing.assert_allclose(layer_out.detach().cpu().numpy(), ref[0].detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    layer_out.sum().backward()
    for t, g in zip((moved[0], moved[3], moved[4]), want):
        assert t.grad.device.type == device
        np.testing.assert_allclose(t.grad.cpu().numpy(), g, rtol=1e-4, atol=1e-5)
