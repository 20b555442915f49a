"""tensorix.quant.methods: Hadamard transforms, GPTQ and AWQ on single layers (against
round-to-nearest with the same quantizer, and the spec's AWQ vectors). Small and seeded."""

import numpy as np
import pytest

import tensorix as tx
from tensorix.quant import QScheme, dequantize, quantize
from tensorix.quant.methods import (
    HadamardRotation,
    awq_clip,
    awq_scales,
    awq_search,
    fwht,
    gptq_quantize,
    hadamard_matrix,
    weight_scheme,
)
from tensorix.quant.methods._grid import fake_quant_array
from tensorix.testing.gradcheck import gradcheck


def _correlated(rng, n=1024, k=256, rank=12):
    """Inputs whose channels are strongly correlated and unevenly scaled, as LLM activations
    are: where GPTQ's Hessian-weighted error feedback pays off."""
    x = rng.standard_normal((n, rank)) @ rng.standard_normal((rank, k))
    x = x * np.exp(rng.standard_normal(k))
    return x + 0.05 * rng.standard_normal((n, k))


def _out_err(x, w, q):
    return float(np.mean((x @ w.T - x @ q.T) ** 2))


# -- Hadamard --------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [1, 2, 4, 64, 256])
def test_hadamard_matrix_orthogonal_symmetric_pm_entries(n):
    h = hadamard_matrix(n)
    np.testing.assert_allclose(h @ h.T, np.eye(n), atol=1e-13)
    np.testing.assert_array_equal(h, h.T)
    np.testing.assert_allclose(np.abs(h) * np.sqrt(n), np.ones((n, n)), rtol=1e-14)
    if n > 1:  # Sylvester's recursion H_2n = [[H, H], [H, -H]] / sqrt(2)
        half = hadamard_matrix(n // 2)
        np.testing.assert_allclose(h, np.block([[half, half], [half, -half]]) / np.sqrt(2),
                                   atol=1e-15)


def test_fwht_is_its_own_inverse_and_matches_the_dense_product(rng):
    x = rng.standard_normal((3, 5, 128))
    np.testing.assert_allclose(fwht(x), x @ hadamard_matrix(128), atol=1e-12)
    np.testing.assert_allclose(fwht(fwht(x)), x, atol=1e-12)
    # block-diagonal: each 32-wide block on its own
    blocks = fwht(x, 32)
    np.testing.assert_allclose(blocks[..., 32:64], x[..., 32:64] @ hadamard_matrix(32),
                               atol=1e-12)


@pytest.mark.parametrize("n,block", [(256, None), (384, None), (512, 128)])
def test_rotation_orthogonal_exact_inverse_and_preserves_products(n, block, rng, device):
    r = HadamardRotation(n, block=block, seed=3)
    dense = r.matrix()
    np.testing.assert_allclose(dense @ dense.T, np.eye(n), atol=1e-13)
    x = tx.tensor(rng.standard_normal((6, n)), device=device)
    w = tx.tensor(rng.standard_normal((4, n)), device=device)
    assert r.rotate(x).device == x.device
    host = x.cpu().numpy()
    np.testing.assert_allclose(r.unrotate(r.rotate(x)).cpu().numpy(), host, atol=1e-13)
    np.testing.assert_allclose(r.rotate(x).cpu().numpy(), host @ dense, atol=1e-12)
    np.testing.assert_allclose((r.rotate(x) @ r.rotate(w).T).cpu().numpy(),
                               (x @ w.T).cpu().numpy(), atol=1e-11)


def test_rotation_seeds_differ_and_plain_hadamard_has_no_signs():
    a, b = HadamardRotation(64, seed=0).matrix(), HadamardRotation(64, seed=1).matrix()
    assert not np.allclose(a, b)
    np.testing.assert_allclose(HadamardRotation(64, signs=False).matrix(), hadamard_matrix(64))


def test_rotation_gradient_float64():
    r = HadamardRotation(16, seed=0)
    x = tx.randn(3, 16, dtype=tx.float64, requires_grad=True)
    gradcheck(lambda t: r.rotate(t) ** 2, [x], name="HadamardRotation.rotate")


def test_hadamard_bad_sizes():
    with pytest.raises(ValueError, match="fwht: block must be a power of two, got 12"):
        fwht(np.zeros((2, 12)))
    with pytest.raises(ValueError, match=r"fwht: the last axis \(100\) must be a multiple"):
        fwht(np.zeros((2, 100)), 64)
    with pytest.raises(ValueError, match="must have size 64"):
        HadamardRotation(64).rotate(np.zeros((2, 32)))


# -- GPTQ ------------------------------------------------------------------------------------
@pytest.mark.parametrize("scheme,act_order", [
    (weight_scheme(4, 128), False),
    (weight_scheme(4, 128), True),
    (weight_scheme(3, None), False),
    (QScheme(4, True, "per_group", group_size=64), False),
])
def test_gptq_output_error_below_rtn_on_correlated_inputs(scheme, act_order, rng):
    x = _correlated(rng)
    w = rng.standard_normal((48, 256))
    h = 2 * x.T @ x / len(x)
    r = gptq_quantize(w, h, scheme, act_order=act_order)
    rtn = fake_quant_array(w, scheme)
    assert _out_err(x, w, r.weight) < 0.5 * _out_err(x, w, rtn)


def test_gptq_weights_lie_on_their_groups_grids(rng):
    x = _correlated(rng, k=128)
    w = rng.standard_normal((8, 128)).astype(np.float32)
    scheme = weight_scheme(4, 32)
    r = gptq_quantize(w, 2 * x.T @ x / len(x), scheme, act_order=True)
    assert r.weight.dtype == np.float32 and r.scales.shape == (8, 4)
    scale = r.scales[:, :, None]
    zp = r.zero_points[:, :, None]
    codes = quantize(r.weight.astype(np.float64), scale, zp, scheme)
    back = dequantize(codes, scale, zp, scheme, np.float64).numpy()
    np.testing.assert_allclose(back, r.weight, rtol=1e-6, atol=1e-7)  # the same grid points
    assert set(np.unique(codes.numpy())) <= set(range(scheme.qmin, scheme.qmax + 1))


def test_gptq_dead_inputs_and_device_parity(rng, device):
    x = _correlated(rng, n=256, k=64)
    x[:, 5] = 0.0  # an input channel that never fires
    w = rng.standard_normal((16, 64))
    h = 2 * x.T @ x / len(x)
    ref = gptq_quantize(w, h, weight_scheme(4, 32))
    assert np.all(ref.weight[:, 5] == 0.0)
    got = gptq_quantize(tx.tensor(w, device=device)._data, tx.tensor(h, device=device)._data,
                        weight_scheme(4, 32))
    assert type(got.weight) is type(tx.tensor(w, device=device)._data)
    np.testing.assert_allclose(tx.as_tensor(got.weight).cpu().numpy(), ref.weight, atol=1e-12)


def test_gptq_bad_input():
    w, h = np.zeros((4, 96)), np.eye(96)
    with pytest.raises(ValueError, match="group_size 128 does not divide the input dimension 96"):
        gptq_quantize(w, h)
    with pytest.raises(ValueError, match=r"'hessian' must have shape \(96, 96\)"):
        gptq_quantize(w, np.eye(5), weight_scheme(4, 32))
    with pytest.raises(ValueError, match="'damp' must be > 0"):
        gptq_quantize(w, h, weight_scheme(4, 32), damp=0)
    with pytest.raises(ValueError, match="'weight' must be 2-d"):
        gptq_quantize(np.zeros(4), h)


# -- AWQ (spec numerics.md 7.2) ---------------------------------------------------------------
def test_awq_spec_a1_group_quantizer():
    w = np.array([[-1, -0.25, 0, 0.5, 2, 2.75, 0.3, 1.1]])
    np.testing.assert_allclose(fake_quant_array(w, weight_scheme(4, 8)),
                               [[-1, -0.25, 0, 0.5, 2, 2.75, 0.25, 1.0]], atol=1e-15)


def _spec_a3():
    rng = np.random.default_rng(0)
    w = rng.standard_normal((32, 64))
    x = rng.standard_normal((512, 64))
    x[:, [3, 17]] *= 25
    return w, x


def test_awq_spec_a2_alpha_zero_is_rtn_bit_for_bit():
    w, x = _spec_a3()
    np.testing.assert_array_equal(awq_scales(np.abs(x).mean(0), 0.0), np.ones(64))
    r = awq_search(w, x, weight_scheme(3, 32), n_grid=1)
    assert r.alpha == 0.0
    np.testing.assert_array_equal(r.weight, fake_quant_array(w, weight_scheme(3, 32)))


def test_awq_spec_a3_toy_search():
    w, x = _spec_a3()
    r = awq_search(w, x, weight_scheme(3, 32))
    assert len(r.losses) == 20
    assert r.losses[0] == pytest.approx(48.565, abs=5e-4)  # RTN
    assert r.alpha == pytest.approx(0.45)
    assert min(r.losses) == pytest.approx(14.878, abs=5e-4)
    assert r.losses[-1] == pytest.approx(33.49, abs=5e-3)
    assert 0.3 <= r.alpha <= 0.6 and min(r.losses) / r.losses[0] < 0.5
    assert _out_err(x, w, r.weight) == pytest.approx(min(r.losses))
    # the curve falls to the optimum and rises after 0.5
    assert r.losses[0] > r.losses[5] > r.losses[9] and r.losses[10] < r.losses[15]


def test_awq_int4_g128_below_rtn_with_salient_channels(rng):
    w = rng.standard_normal((64, 256))
    x = rng.standard_normal((512, 256))
    x[:, rng.choice(256, 6, replace=False)] *= 20
    r = awq_search(w, x)
    assert r.alpha > 0
    assert _out_err(x, w, r.weight) < 0.8 * _out_err(x, w, fake_quant_array(w, weight_scheme()))


def test_awq_bad_input():
    with pytest.raises(ValueError, match="must agree on in"):
        awq_search(np.zeros((4, 8)), np.zeros((3, 9)))
    with pytest.raises(ValueError, match="holds no calibration tokens"):
        awq_search(np.zeros((4, 8)), np.zeros((0, 8)))


def test_awq_clip_never_worse_than_no_clip_on_its_tokens(rng):
    w = rng.standard_t(3, (64, 256))  # heavy tails: clipping the extremes pays
    x = rng.standard_normal((512, 256))
    scheme = weight_scheme(4, 128)
    plain = fake_quant_array(w, scheme)
    clipped = fake_quant_array(awq_clip(w, x, scheme), scheme)
    assert _out_err(x, w, clipped) < 0.97 * _out_err(x, w, plain)
    # per group the ratio r = 1 (no clip) is a candidate, so no group gets worse
    xs, d = x.reshape(512, 2, 128), (w - plain).reshape(64, 2, 128)
    dc = (w - clipped).reshape(64, 2, 128)
    per_group = np.einsum("ngk,ogk->nog", xs, d) ** 2
    per_group_c = np.einsum("ngk,ogk->nog", xs, dc) ** 2
    assert np.all(per_group_c.mean(0) <= per_group.mean(0) + 1e-12)
