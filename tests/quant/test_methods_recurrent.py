"""Binary / ternary / quaternary weights for LSTM and GRU (tensorix.quant.methods.recurrent)."""

import numpy as np
import pytest

import tensorix as tx
from tensorix import nn
from tensorix.quant.methods.recurrent import (
    LEVELS,
    binarize,
    lowbit_recurrent_,
    quaternarize,
    ternarize,
)


def _levels(q):
    """Per row: the distinct magnitudes divided by the row's smallest nonzero one."""
    out = []
    for row in np.abs(q):
        nz = row[row > 0]
        out.append(sorted(set(np.round(nz / nz.min(), 6))))
    return out


def test_codes_and_scales(rng):
    w = tx.tensor(rng.standard_normal((6, 50)))
    b, t, q = binarize(w).numpy(), ternarize(w).numpy(), quaternarize(w).numpy()
    wn = w.numpy()
    assert all(lv == [1.0] for lv in _levels(b)) and np.all(b != 0)
    np.testing.assert_allclose(np.abs(b).max(1), np.abs(wn).mean(1))   # binary: mean |w|
    assert all(lv == [1.0] for lv in _levels(t)) and np.any(t == 0)
    keep = np.abs(wn) > 0.7 * np.abs(wn).mean(1, keepdims=True)        # TWN threshold
    np.testing.assert_array_equal(t != 0, keep)
    np.testing.assert_allclose(np.abs(t).max(1), (np.abs(wn) * keep).sum(1) / keep.sum(1))
    assert all(lv == [1.0, 3.0] for lv in _levels(q)) and np.all(q != 0)
    np.testing.assert_array_equal(np.sign(b), np.sign(wn))


def test_binary_scale_is_least_squares_and_error_falls_with_levels(rng):
    w = rng.standard_normal((4, 64))
    b = binarize(tx.tensor(w)).numpy()
    alpha = np.abs(b).max(1, keepdims=True)
    for factor in (0.9, 1.1):  # mean |w| minimises ||w - a sign(w)||
        assert np.sum((w - b) ** 2) < np.sum((w - factor * alpha * np.sign(w)) ** 2)
    errs = [np.linalg.norm(w - f(tx.tensor(w)).numpy()) for f in LEVELS.values()]
    assert errs[0] > errs[1] > errs[2]  # binary > ternary > quaternary


def test_straight_through_gradient():
    w = tx.randn(3, 8, dtype=tx.float64, requires_grad=True)
    c = tx.randn(3, 8, dtype=tx.float64)
    for fn in LEVELS.values():
        w.grad = None
        (fn(w) * c).sum().backward()
        np.testing.assert_array_equal(w.grad.numpy(), c.numpy())


@pytest.mark.parametrize("kind", [nn.LSTM, nn.GRU, nn.LSTMCell])
def test_lowbit_recurrent_layers(kind):
    tx.manual_seed(0)
    layer = kind(16, 32)
    x = tx.randn(5, 16)
    errors = {lv: lowbit_recurrent_(tx.nn.Sequential(kind(16, 32)), lv) for lv in LEVELS}
    names = set(errors["binary"])
    assert names and all(n.split(".")[-1].startswith("weight") for n in names)
    for n in names:
        assert errors["binary"][n] > errors["ternary"][n] > errors["quaternary"][n]
    lowbit_recurrent_(layer, "ternary")
    w = layer.weight_hh if kind is nn.LSTMCell else layer.weight_hh_l0
    assert all(lv == [1.0] for lv in _levels(w.detach().numpy()))
    out = layer(x)  # still a working layer
    assert np.isfinite((out[0] if isinstance(out, tuple) else out).detach().numpy()).all()


def test_bad_input():
    with pytest.raises(ValueError, match="'levels' must be one of"):
        lowbit_recurrent_(nn.LSTM(4, 4), "octal")
    with pytest.raises(ValueError, match="no recurrent layer"):
        lowbit_recurrent_(nn.Linear(4, 4))
    with pytest.raises(TypeError, match="ternarize\\(\\): argument 'weight' must be a 2-d"):
        ternarize(tx.randn(4))
