"""RNN/LSTM/GRU (and cells), MultiheadAttention and the Transformer family against torch with
identical weights: outputs, hidden states, input and parameter gradients."""

from __future__ import annotations

import numpy as np
import pytest

import tensorix as tx
from tensorix import nn

from ._util import compare_modules, copy_module, torch

tnn = torch.nn


def _pair(name, *args, **kwargs):
    torch.manual_seed(0)
    theirs = getattr(tnn, name)(*args, **kwargs).double()
    ours = getattr(nn, name)(*args, **kwargs).double()
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    return copy_module(ours, theirs), theirs


def _r(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


RNNS = [
    ("RNN", (3, 4), {}),
    ("RNN", (3, 4, 2), dict(nonlinearity="relu", bidirectional=True)),
    ("LSTM", (3, 4), {}),
    ("LSTM", (3, 4, 2), dict(bidirectional=True, batch_first=True)),
    ("LSTM", (3, 5, 2), dict(proj_size=2, bias=False)),
    ("GRU", (3, 4), {}),
    ("GRU", (3, 4, 3), dict(bidirectional=True)),
]


@pytest.mark.parametrize("name,args,kw", RNNS)
def test_recurrent_layers(name, args, kw):
    ours, theirs = _pair(name, *args, **kw)
    x = _r(2, 5, 3) if kw.get("batch_first") else _r(5, 2, 3)
    compare_modules(ours, theirs, [x], atol=1e-8)
    assert repr(ours) == repr(theirs)


@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
def test_recurrent_initial_state_and_unbatched(name):
    ours, theirs = _pair(name, 3, 4, 2, bidirectional=True)
    x = _r(6, 2, 3)
    h0 = _r(4, 2, 4, seed=1)
    if name == "LSTM":
        c0 = _r(4, 2, 4, seed=2)
        a = ours(tx.tensor(x), (tx.tensor(h0), tx.tensor(c0)))
        b = theirs(torch.tensor(x), (torch.tensor(h0), torch.tensor(c0)))
        pairs = [(a[0], b[0]), (a[1][0], b[1][0]), (a[1][1], b[1][1])]
    else:
        a = ours(tx.tensor(x), tx.tensor(h0))
        b = theirs(torch.tensor(x), torch.tensor(h0))
        pairs = [(a[0], b[0]), (a[1], b[1])]
    for u, v in pairs:
        np.testing.assert_allclose(u.detach().numpy(), v.detach().numpy(), atol=1e-10)
    out, _ = ours(tx.tensor(x[:, 0]))  # unbatched (L, H_in)
    ref, _ = theirs(torch.tensor(x[:, 0]))
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), atol=1e-10)


def test_recurrent_errors_and_dropout_warning():
    gru = nn.GRU(3, 4)
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size"):
        gru(tx.randn(5, 2, 2))
    with pytest.raises(RuntimeError, match="Expected hidden size \\(1, 2, 4\\), got"):
        gru(tx.randn(5, 2, 3), tx.randn(1, 3, 4))
    with pytest.raises(RuntimeError, match="hx should also be 2-D"):
        gru(tx.randn(5, 3), tx.randn(1, 2, 4))
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        nn.LSTM(3, 4, dropout=0.5)
    with pytest.raises(ValueError, match="proj_size argument is only supported for LSTM"):
        nn.GRU(3, 4, proj_size=2)


def test_recurrent_dropout_between_layers_only_in_training():
    m = nn.LSTM(3, 8, 3, dropout=0.5)
    x = tx.randn(4, 2, 3)
    m.eval()
    a, b = m(x)[0], m(x)[0]
    assert np.array_equal(a.detach().numpy(), b.detach().numpy())
    m.train()
    a, b = m(x)[0], m(x)[0]
    assert not np.array_equal(a.detach().numpy(), b.detach().numpy())


@pytest.mark.parametrize("name,kw", [("RNNCell", {}), ("RNNCell", dict(nonlinearity="relu")),
                                     ("LSTMCell", {}), ("GRUCell", dict(bias=False))])
def test_cells(name, kw):
    ours, theirs = _pair(name, 3, 4, **kw)
    x, h = _r(5, 3), _r(5, 4, seed=1)
    if name == "LSTMCell":
        c = _r(5, 4, seed=2)
        a = ours(tx.tensor(x), (tx.tensor(h), tx.tensor(c)))
        b = theirs(torch.tensor(x), (torch.tensor(h), torch.tensor(c)))
        for u, v in zip(a, b):
            np.testing.assert_allclose(u.detach().numpy(), v.detach().numpy(), atol=1e-10)
    else:
        compare_modules(ours, theirs, [x, h], atol=1e-10)
    compare_modules(ours, theirs, [x[0]], atol=1e-10)  # unbatched, zero state
    assert repr(ours) == repr(theirs)


@pytest.mark.parametrize("kw", [{}, dict(batch_first=True), dict(bias=False),
                                dict(add_bias_kv=True, add_zero_attn=True),
                                dict(kdim=3, vdim=5)])
@pytest.mark.parametrize("need_weights", [True, False])
def test_multihead_attention(kw, need_weights):
    ours, theirs = _pair("MultiheadAttention", 8, 2, **kw)
    n, length, s = 3, 4, 5
    lead = (n, length) if kw.get("batch_first") else (length, n)
    lead_s = (n, s) if kw.get("batch_first") else (s, n)
    q = _r(*lead, 8)
    k, v = _r(*lead_s, kw.get("kdim", 8), seed=1), _r(*lead_s, kw.get("vdim", 8), seed=2)
    kpm = np.zeros((n, s), dtype=bool)
    kpm[0, 3:] = True
    ours.eval(), theirs.eval()

    def run_ours(q, k, v):
        return ours(q, k, v, key_padding_mask=tx.tensor(kpm), need_weights=need_weights)

    def run_theirs(q, k, v):
        return theirs(q, k, v, key_padding_mask=torch.tensor(kpm), need_weights=need_weights)

    _run_pair(ours, theirs, run_ours, run_theirs, [q, k, v])


def _run_pair(ours, theirs, run_ours, run_theirs, inputs, atol=1e-9):
    xs = [tx.tensor(a, requires_grad=True) for a in inputs]
    ts = [torch.tensor(a, requires_grad=True) for a in inputs]
    a, b = run_ours(*xs), run_theirs(*ts)
    a, b = (a if isinstance(a, tuple) else (a,)), (b if isinstance(b, tuple) else (b,))
    w = _r(*a[0].shape, seed=9)
    for u, v in zip(a, b):
        if v is None:
            assert u is None
        else:
            np.testing.assert_allclose(u.detach().numpy(), v.detach().numpy(), atol=atol)
    (a[0] * tx.tensor(w)).sum().backward()
    (b[0] * torch.tensor(w)).sum().backward()
    for u, v in zip(xs, ts):
        np.testing.assert_allclose(u.grad.numpy(), v.grad.numpy(), atol=atol)
    theirs_p = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), theirs_p[name].grad.numpy(), atol=atol,
                                   err_msg=name)


def test_multihead_attention_self_attention_masks_and_weights():
    ours, theirs = _pair("MultiheadAttention", 8, 4, batch_first=True)
    x = _r(2, 5, 8)
    mask = np.triu(np.ones((5, 5), dtype=bool), 1)
    for avg in (True, False):
        _run_pair(ours, theirs,
                  lambda x: ours(x, x, x, attn_mask=tx.tensor(mask), average_attn_weights=avg),
                  lambda x: theirs(x, x, x, attn_mask=torch.tensor(mask),
                                   average_attn_weights=avg), [x])
        ours.zero_grad(), theirs.zero_grad()


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_transformer_encoder(norm_first, activation):
    layer_kw = dict(dim_feedforward=16, dropout=0.0, activation=activation,
                    batch_first=True, norm_first=norm_first)
    torch.manual_seed(0)
    t_layer = tnn.TransformerEncoderLayer(8, 2, **layer_kw)
    theirs = tnn.TransformerEncoder(t_layer, 2, norm=tnn.LayerNorm(8),
                                    enable_nested_tensor=False).double()
    ours = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, **layer_kw), 2,
                                 norm=nn.LayerNorm(8), enable_nested_tensor=False).double()
    copy_module(ours, theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    x = _r(3, 6, 8)
    mask = nn.Transformer.generate_square_subsequent_mask(6, dtype=tx.float64)
    tmask = tnn.Transformer.generate_square_subsequent_mask(6, dtype=torch.float64)
    kpm = np.zeros((3, 6))
    kpm[1, 4:] = -np.inf
    _run_pair(ours, theirs, lambda x: ours(x, mask=mask, src_key_padding_mask=tx.tensor(kpm)),
              lambda x: theirs(x, mask=tmask, src_key_padding_mask=torch.tensor(kpm)), [x])


def test_transformer_decoder_and_full_model():
    kw = dict(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=2,
              dim_feedforward=16, dropout=0.0, batch_first=True)
    ours, theirs = _pair("Transformer", **kw)
    src, tgt = _r(2, 5, 8), _r(2, 4, 8, seed=1)
    tmask_x = nn.Transformer.generate_square_subsequent_mask(4, dtype=tx.float64)
    tmask_t = tnn.Transformer.generate_square_subsequent_mask(4, dtype=torch.float64)
    assert np.array_equal(tmask_x.numpy(), tmask_t.numpy())
    _run_pair(ours, theirs, lambda s, t: ours(s, t, tgt_mask=tmask_x),
              lambda s, t: theirs(s, t, tgt_mask=tmask_t), [src, tgt])
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        ours(tx.randn(2, 5, 8, dtype=tx.float64), tx.randn(3, 4, 8, dtype=tx.float64))
    dec_kw = dict(dim_feedforward=16, dropout=0.0, norm_first=True, batch_first=True)
    ours_d, theirs_d = _pair("TransformerDecoderLayer", 8, 2, **dec_kw)
    _run_pair(ours_d, theirs_d, lambda t, m: ours_d(t, m, tgt_is_causal=False),
              lambda t, m: theirs_d(t, m, tgt_is_causal=False), [tgt, src])


def test_transformer_default_init_is_xavier():
    m = nn.Transformer(d_model=16, nhead=2, num_encoder_layers=2, num_decoder_layers=1,
                       dim_feedforward=32)
    w = m.encoder.layers[0].linear1.weight.detach().numpy()
    bound = np.sqrt(6 / (16 + 32))
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.8 * bound
    a, b = m.encoder.layers[0].linear1.weight, m.encoder.layers[1].linear1.weight
    assert a is not b and not np.array_equal(a.detach().numpy(), b.detach().numpy())
