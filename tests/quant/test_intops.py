"""Integer-only softmax, exp, GELU, sqrt and LayerNorm (I-BERT / MobileQuant) against float
references (torch where installed), within the bounds stated in tensorix/quant/intops.py,
and bad input."""

import math

import numpy as np
import pytest

import tensorix as tx
from tensorix.quant.intops import (
    int_exp,
    int_gelu,
    int_layer_norm,
    int_poly,
    int_softmax,
    int_sqrt,
)

torch = pytest.importorskip("torch")


def _codes(rng, scale, lo=-8.0, hi=8.0, shape=(32, 96)):
    q = np.round(rng.uniform(lo, hi, shape) / scale).astype(np.int64)
    return q, q * scale


@pytest.mark.parametrize("scale", [0.01, 0.002, 0.0005])
def test_int_exp_and_softmax(scale, rng):
    q, x = _codes(rng, scale)
    neg = -np.abs(q)
    codes, s = int_exp(tx.tensor(neg), scale)
    assert codes.dtype == tx.int64
    assert np.abs(codes.numpy() * s - np.exp(neg * scale)).max() <= 0.004
    ref = torch.softmax(torch.tensor(x), -1).numpy()
    for bits in (8, 16):
        codes, s = int_softmax(tx.tensor(q), scale, out_bits=bits)
        assert s == 2.0 ** -bits and codes.numpy().min() >= 0
        assert (np.abs(codes.numpy() * s - ref) <= 2.0 ** -bits + 0.01 * ref + 5e-4).all()
    # along another axis
    codes, s = int_softmax(tx.tensor(q), scale, dim=0, out_bits=16)
    ref0 = torch.softmax(torch.tensor(x), 0).numpy()
    assert (np.abs(codes.numpy() * s - ref0) <= 2.0 ** -16 + 0.01 * ref0 + 5e-4).all()


@pytest.mark.parametrize("scale", [0.01, 0.002])
def test_int_gelu(scale, rng):
    q, x = _codes(rng, scale)
    codes, s = int_gelu(tx.tensor(q), scale)
    ref = torch.nn.functional.gelu(torch.tensor(x)).numpy()
    assert s > 0
    assert np.abs(codes.numpy() * s - ref).max() <= 0.019


def test_int_poly(rng):
    q, x = _codes(rng, 0.001, -1, 1, (50,))
    codes, s = int_poly(tx.tensor(q), 0.001, 0.5, 0.25, 0.1)
    assert np.abs(codes.numpy() * s - (0.5 * (x + 0.25) ** 2 + 0.1)).max() <= 0.002


def test_int_sqrt_exact(rng):
    n = np.concatenate([rng.integers(0, 2 ** 62, 2000), np.arange(0, 300),
                        np.arange(1, 200) ** 2, np.arange(1, 200) ** 2 - 1])
    r = int_sqrt(tx.tensor(n)).numpy()
    assert all(int(a) == math.isqrt(int(b)) for a, b in zip(r, n))


@pytest.mark.parametrize("bits", [8, 16])
def test_int_layer_norm(bits, rng, device):
    q = rng.integers(-128, 128, (16, 256))
    q[0] = 5  # a constant row: zero output, no division by zero
    codes, s = int_layer_norm(tx.tensor(q, device=device), out_bits=bits)
    ref = torch.nn.functional.layer_norm(torch.tensor(q, dtype=torch.float64), (256,),
                                         eps=0).numpy()
    ref[0] = 0
    assert np.abs(codes.cpu().numpy() * s - ref).max() <= 2.0 ** -bits + 0.001


def test_bad_input():
    with pytest.raises(TypeError, match="int_softmax\\(\\): argument 'q' must be an integer "
                                        "Tensor"):
        int_softmax(tx.ones(3), 0.1)
    with pytest.raises(ValueError, match="int_gelu\\(\\): argument 'scale' must be a positive"):
        int_gelu(tx.tensor([1, 2]), 0.0)
    with pytest.raises(ValueError, match="int_exp\\(\\): expects non-positive inputs"):
        int_exp(tx.tensor([1, -2]), 0.1)
    with pytest.raises(ValueError, match="int_sqrt\\(\\): expects non-negative"):
        int_sqrt(tx.tensor([-1]))
