"""AWQ folded into the previous op (AutoAWQ's form) with real packed int4 weights: the same
function as awq_'s unfolded Q(W diag(s)) diag(1/s), 8x smaller weights, one scale per
group of linears, and the errors for ops that cannot take the scales."""

import numpy as np
import pytest

import tensorix as tx
from tensorix import nn
from tensorix.quant import QuantizedLinear
from tensorix.quant.methods import awq_fold_, weight_scheme
from tensorix.quant.methods._grid import fake_quant_array


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(64)
        self.q = nn.Linear(64, 64)
        self.k = nn.Linear(64, 32)
        self.fc = nn.Linear(64, 16)

    def forward(self, x):
        h = self.ln(x)
        return self.fc(self.q(h)).sum(-1, keepdim=True) + self.k(h).sum(-1, keepdim=True)


def _data(rng, n=4):
    out = []
    for _ in range(n):
        x = rng.standard_normal((8, 64)).astype(np.float32)
        x[:, [3, 40]] *= 20  # salient channels for AWQ to protect
        out.append(tx.tensor(x))
    return out


def _pair(rng):
    tx.manual_seed(0)
    a = Net()
    with tx.no_grad():
        a.ln.weight.copy_(tx.tensor(rng.uniform(0.5, 2.0, 64).astype(np.float32)))
    b = Net()
    b.load_state_dict(a.state_dict())
    return a, b


def test_awq_fold_keeps_the_function(rng):
    a, b = _pair(rng)
    calib = _data(rng)
    r = awq_fold_(a, calib, {"ln": ["q", "k"], "q": ["fc"]}, weight_scheme(4, 32),
                  quantize=False)
    assert set(r) == {"ln", "q"} and r["ln"].scales.shape == (64,)
    assert np.ptp(r["ln"].scales) > 0  # the salient channels got their own scales
    x = _data(rng, 1)[0]
    with tx.no_grad():
        np.testing.assert_allclose(a(x).numpy(), b(x).numpy(), rtol=1e-4, atol=1e-4)


def test_awq_fold_matches_unfolded_awq_with_int4_weights(rng):
    a, b = _pair(rng)
    calib = _data(rng)
    scheme = weight_scheme(4, 32)
    folded = awq_fold_(a, calib, {"ln": ["q", "k"]}, scheme)
    for name in ("q", "k"):
        layer = getattr(a, name)
        assert isinstance(layer, QuantizedLinear) and layer.weight_codes.dtype == tx.uint8
        assert layer.weight_nbytes(with_qparams=False) * 8 == layer.in_features * \
            layer.out_features * 4  # two codes per byte: 8x smaller than float32
    # the unfolded form Q(W diag(s)) diag(1/s) with the same s (q and k share ln's)
    s = folded["ln"].scales
    for name in ("q", "k"):
        lin = getattr(b, name)
        w = lin.weight.detach().numpy().astype(np.float64)
        with tx.no_grad():
            lin.weight.copy_(tx.tensor((fake_quant_array(w * s, scheme) / s).astype(np.float32)))
    x = _data(rng, 1)[0]
    with tx.no_grad():
        ya, yb = a(x).numpy(), b(x).numpy()
    np.testing.assert_allclose(ya, yb, rtol=1e-4, atol=1e-4 * np.abs(yb).max())


def test_awq_fold_rmsnorm_and_state_dict(rng):
    tx.manual_seed(1)
    model = nn.Sequential(nn.RMSNorm(64), nn.Linear(64, 8))
    calib = _data(rng, 2)
    with tx.no_grad():
        before = model(calib[0]).numpy()
    awq_fold_(model, calib, {"0": ["1"]}, weight_scheme(4, 64))
    with tx.no_grad():
        after = model(calib[0]).numpy()
    assert np.abs(after - before).max() < 0.1 * np.abs(before).max()
    assert "1.weight_codes" in model.state_dict()


def test_awq_fold_bad_input(rng):
    model = nn.Sequential(nn.Linear(64, 32), nn.GELU(), nn.Linear(32, 8))
    calib = _data(rng, 1)
    with pytest.raises(ValueError, match="'1' must name a LayerNorm or RMSNorm with a weight, "
                                         "or an nn.Linear"):
        awq_fold_(model, calib, {"1": ["2"]})
    with pytest.raises(ValueError, match="'2' must be an nn.Linear reading the 64 outputs"):
        awq_fold_(nn.Sequential(nn.LayerNorm(64), nn.Linear(64, 8), nn.Linear(8, 2)), calib,
                  {"0": ["2"]})
    with pytest.raises(ValueError, match="calibration data is empty"):
        awq_fold_(model, [], {"0": ["2"]})
