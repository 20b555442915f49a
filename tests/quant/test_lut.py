"""LUT-based mixed-precision GEMM and Bipolar-INT: exact against the dequantized GEMM with
integer activations, to rounding with float ones, the half tables of bipolar weights, the
bit-plane round trip, and bad input."""

import numpy as np
import pytest

import tensorix as tx
from tensorix.quant.lut import (
    bipolar_quantize,
    from_bitplanes,
    lut_gemm,
    lut_tables,
    to_bitplanes,
)


@pytest.mark.parametrize("bits", [1, 2, 3, 4])
@pytest.mark.parametrize("g", [2, 4])
def test_bipolar_lut_gemm_exact(bits, g, rng, device):
    w = rng.standard_normal((24, 64)).astype(np.float32)
    codes, scale = bipolar_quantize(tx.tensor(w, device=device), bits)
    c = codes.cpu().numpy().astype(np.int64)
    top = 2 ** bits - 1
    assert (c % 2 != 0).all() and np.abs(c).max() == top  # odd, the row maxima at the ends
    planes = to_bitplanes(codes, bits)
    np.testing.assert_array_equal(from_bitplanes(planes).cpu().numpy(), c)
    x = rng.integers(-128, 128, (5, 64)).astype(np.int8)
    y = lut_gemm(tx.tensor(x, device=device), planes, g)
    assert y.dtype == tx.int64
    np.testing.assert_array_equal(y.cpu().numpy(), x.astype(np.int64) @ c.T)
    # the dequantized GEMM, with the scales after
    xf = rng.standard_normal((3, 64))
    yf = lut_gemm(tx.tensor(xf, device=device), planes, g).cpu().numpy() * \
        scale.cpu().numpy().T
    np.testing.assert_allclose(yf, xf @ (c * scale.cpu().numpy()).T, rtol=1e-12, atol=1e-12)


def test_unsigned_lut_gemm_exact(rng):
    c = rng.integers(0, 16, (10, 32))
    planes = to_bitplanes(tx.tensor(c), 4, bipolar=False)
    x = rng.integers(-128, 128, (4, 32))
    np.testing.assert_array_equal(lut_gemm(tx.tensor(x), planes, 4, bipolar=False).numpy(),
                                  x @ c.T)


def test_bipolar_tables_are_antisymmetric(rng):
    a = rng.standard_normal((2, 8))
    t = lut_tables(a, 4)
    assert t.shape == (2, 2, 16)
    np.testing.assert_array_equal(t[..., 15 - np.arange(16)], -t)  # T[~p] = -T[p]
    full = a.reshape(2, 2, 4) @ (2 * ((np.arange(16)[:, None] >> np.arange(4)) & 1) - 1).T
    np.testing.assert_allclose(t, full, rtol=0, atol=1e-12)


def test_bipolar_quantize_nearest_odd(rng):
    w = tx.tensor([[7.0, 5.2, 0.1, -0.9, -7.0]])
    codes, scale = bipolar_quantize(w, 3)  # scale 1: nearest odd in [-7, 7]
    assert codes.tolist() == [[7, 5, 1, -1, -7]] and scale.item() == pytest.approx(1.0)


def test_lut_bad_input():
    with pytest.raises(ValueError, match="bipolar codes must be odd integers in \\[-3, 3\\]"):
        to_bitplanes(tx.tensor([[2, 1]]), 2)
    with pytest.raises(ValueError, match="unsigned codes must lie in \\[0, 3\\]"):
        to_bitplanes(tx.tensor([[4]]), 2, bipolar=False)
    with pytest.raises(ValueError, match="argument 'bits' must be an int in \\[1, 8\\]"):
        bipolar_quantize(tx.ones(2, 2), 0)
    with pytest.raises(ValueError, match="argument 'g' must divide K = 6"):
        lut_gemm(tx.ones(1, 6), to_bitplanes(tx.ones(2, 6, dtype=tx.int64), 1), 4)
    with pytest.raises(TypeError, match="argument 'a' must be a Tensor"):
        lut_gemm(np.ones((1, 4)), to_bitplanes(tx.ones(2, 4, dtype=tx.int64), 1))
