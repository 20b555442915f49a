"""tensorix.quant.methods on whole (small) models: GPTQ, AWQ, SmoothQuant and W4A4 flows,
ActQuantLinear, static calibration, and the errors for bad input. Small and seeded."""

import copy

import numpy as np
import pytest

import tensorix as tx
from tensorix import nn
from tensorix.quant import QScheme, QuantizedLinear
from tensorix.quant.methods import (
    ActQuantLinear,
    HadamardRotation,
    awq_,
    gptq_,
    layer_sensitivity,
    mixed_precision_search,
    quantize_linears_,
    smooth_scales,
    smoothquant_,
    token_scheme,
    w4a4_,
    weight_scheme,
)

D = 128


def _mlp(seed=0):
    tx.manual_seed(seed)
    return nn.Sequential(nn.Linear(D, 2 * D), nn.GELU("tanh"), nn.Linear(2 * D, D))


def _inputs(rng, n, outliers=True):
    """Tokens (n, D) with correlated channels and, like LLM activations, a few outlier
    channels 30x the rest."""
    x = rng.standard_normal((n, 16)) @ rng.standard_normal((16, D)) / 4
    x = x + 0.3 * rng.standard_normal((n, D))
    if outliers:
        x[:, [7, 40, 99]] *= 30
    return tx.tensor(x.astype(np.float32))


def _data(outliers=True):
    rng = np.random.default_rng(0)
    calib = [_inputs(rng, 256, outliers) for _ in range(2)]
    return calib, _inputs(rng, 256, outliers)


def _err(model, ref_model, x):
    with tx.no_grad():
        return float(((model(x) - ref_model(x)) ** 2).mean() / (ref_model(x) ** 2).mean())


def _rtn(model, scheme):
    from tensorix.quant.methods._calib import linear_layers, set_weight
    from tensorix.quant.methods._grid import fake_quant_array

    m = copy.deepcopy(model)
    for layer in linear_layers(m).values():
        set_weight(layer, fake_quant_array(layer.weight._data, scheme))
    return m


def _awq_clip(model, calibration, scheme):
    return awq_(model, calibration, scheme, clip=True)


@pytest.mark.parametrize("method", [gptq_, awq_, _awq_clip])
def test_weight_only_methods_beat_rtn_on_the_model(method):
    calib, x = _data()
    model = _mlp()
    scheme = weight_scheme(3, 64)
    q = copy.deepcopy(model)
    results = method(q, calib, scheme)
    assert list(results) == ["0", "2"]
    # GPTQ's weights lie on their groups' grids: stored as packed codes; AWQ's are scaled
    assert type(q[0]) is (QuantizedLinear if method is gptq_ else nn.Linear)
    assert _err(q, model, x) < 0.8 * _err(_rtn(model, scheme), model, x)


def test_skip_leaves_layers_in_float():
    calib, _ = _data()
    model = _mlp()
    q = copy.deepcopy(model)
    assert list(gptq_(q, calib, weight_scheme(4, 64), skip=("2",))) == ["0"]
    np.testing.assert_array_equal(q[2].weight.detach().numpy(), model[2].weight.detach().numpy())
    assert isinstance(q[2], nn.Linear) and isinstance(q[0], QuantizedLinear)
    assert q[0].weight_codes.dtype == tx.uint8  # two int4 codes per byte


def test_gptq_packed_and_unpacked_layers_agree():
    calib, x = _data()
    model = _mlp()
    packed, plain = copy.deepcopy(model), copy.deepcopy(model)
    results = gptq_(packed, calib)
    gptq_(plain, calib, pack=False)
    for name in ("0", "2"):
        np.testing.assert_allclose(packed.get_submodule(name).dequantized_weight().numpy(),
                                   plain.get_submodule(name).weight.detach().numpy(),
                                   rtol=1e-6, atol=1e-6)
        assert packed.get_submodule(name).weight_nbytes(with_qparams=False) * 8 == \
            4 * results[name].weight.size
    with tx.no_grad():
        np.testing.assert_allclose(packed(x).numpy(), plain(x).numpy(), rtol=1e-4, atol=1e-4)


def test_smoothquant_w8a8_close_to_fp32_and_smoothing_helps():
    calib, x = _data()
    model = _mlp()
    sq = copy.deepcopy(model)
    layers = smoothquant_(sq, calib, alpha=0.5)
    assert isinstance(sq[0], ActQuantLinear) and sq[0].act_scale is not None  # static
    plain = copy.deepcopy(model)
    smoothquant_(plain, calib, alpha=0.0)
    err, err_plain = _err(sq, model, x), _err(plain, model, x)
    assert err < 1e-3, err
    assert err < 0.5 * err_plain
    assert set(layers) == {"0", "2"}


def test_smoothquant_per_token_dynamic():
    calib, x = _data()
    model = _mlp()
    sq = copy.deepcopy(model)
    smoothquant_(sq, calib, act_scheme=token_scheme(8))
    assert sq[0].act_scale is None
    assert _err(sq, model, x) < 1e-3


def test_smooth_scales_formula(rng):
    a, w = np.abs(rng.standard_normal(8)) + 0.1, rng.standard_normal((5, 8))
    s = smooth_scales(a, w, 0.3)
    np.testing.assert_allclose(s, a ** 0.3 / np.abs(w).max(0) ** 0.7)
    # after smoothing, activation and weight ranges meet at alpha = 0.5
    s = smooth_scales(a, w, 0.5)
    np.testing.assert_allclose(a / s, np.abs(w * s).max(0))


def test_w4a4_rotation_beats_no_rotation_with_outliers(device, rng):
    # three input channels 10x the rest: without rotation they set every token's scale and
    # the other channels round to zero; rotated, the energy is spread evenly
    x = rng.standard_normal((256, D))
    x[:, [7, 40, 99]] *= 10
    x = tx.tensor(x.astype(np.float32))
    tx.manual_seed(0)
    model = nn.Sequential(nn.Linear(D, 64))
    rot, plain = copy.deepcopy(model), copy.deepcopy(model)
    w4a4_(rot, rotate=True)
    w4a4_(plain, rotate=False)
    assert rot[0].rotation is not None and plain[0].rotation is None
    assert _err(rot, model, x) < 0.5 * _err(plain, model, x)
    if device == "cuda":  # the same quantized model on the device gives the same outputs
        with tx.no_grad():
            host = rot(x).numpy()
            np.testing.assert_allclose(rot.to(device)(x.to(device)).cpu().numpy(), host,
                                       rtol=1e-4, atol=1e-5)


def test_act_quant_linear_without_quantization_is_the_linear(rng):
    lin = _mlp()[0]
    s = np.abs(rng.standard_normal(D)).astype(np.float32) + 0.5
    layer = ActQuantLinear.from_linear(lin, None, None, smooth=s,
                                       rotation=HadamardRotation(D, seed=1))
    x = _inputs(rng, 32)
    with tx.no_grad():
        np.testing.assert_allclose(layer(x).numpy(), lin(x).numpy(), rtol=1e-4, atol=1e-4)


def test_mx_weights_and_activations():
    # (fp8 runs the same path through quantize_linears_; it is left to the benchmark because
    # its first encode builds a table for seconds)
    _, x = _data(outliers=False)
    x = x[:64]
    model = _mlp()
    errs = []
    for fmt in ("mxfp8", "mxfp4"):
        mx = copy.deepcopy(model)
        quantize_linears_(mx, QScheme(dtype=fmt), QScheme(dtype=fmt))
        assert mx[0].act_scheme.group_size == 32
        errs.append(_err(mx, model, x))
    assert errs[0] < 1e-2 and errs[0] < errs[1] < 0.1, errs


def test_bad_input():
    calib, _ = _data()
    with pytest.raises(ValueError, match="gptq_: calibration data is empty"):
        gptq_(_mlp(), [])
    with pytest.raises(ValueError, match="awq_: calibration data is empty"):
        awq_(_mlp(), None)
    with pytest.raises(ValueError, match="smoothquant_: calibration data is empty"):
        smoothquant_(_mlp(), iter([]))
    with pytest.raises(ValueError, match="no nn.Linear layer"):
        gptq_(nn.Sequential(nn.GELU()), calib)
    with pytest.raises(ValueError, match="group_size 96 does not divide"):
        w4a4_(_mlp(), group_size=96)
    with pytest.raises(ValueError, match="'alpha' must be in"):
        smoothquant_(_mlp(), calib, alpha=1.5)


# -- sensitivity-guided mixed precision -------------------------------------------------------
def test_layer_sensitivity_and_search_give_bits_to_the_sensitive_layer():
    calib, _ = _data()
    model = _mlp()
    with tx.no_grad():  # make layer "2" fragile: its weights get a few huge columns
        model[2].weight[:, :4] *= 40.0
    before = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    schemes = {"int3": weight_scheme(3, None), "int8": QScheme(8, True, "per_channel")}
    sens = layer_sensitivity(model, calib, schemes)
    for k, v in model.state_dict().items():  # the model is left as it was
        np.testing.assert_array_equal(v.numpy(), before[k])
    assert all(s["int8"] < s["int3"] for s in sens.values())
    sizes = {"0": model[0].weight.numel(), "2": model[2].weight.numel()}  # equal: 32768 each
    plan = mixed_precision_search(sens, schemes, sizes, budget_bits=5.5)
    assert plan.assignment == {"0": "int3", "2": "int8"} and plan.average_bits == 5.5
    assert mixed_precision_search(sens, schemes, sizes, 8).assignment == {"0": "int8",
                                                                         "2": "int8"}
    with pytest.raises(ValueError, match="below the cheapest scheme"):
        mixed_precision_search(sens, schemes, sizes, 2)


@pytest.mark.cuda
def test_weight_only_flows_on_the_device_match_the_cpu(cuda):
    calib, x = _data()
    model = _mlp()
    for method in (gptq_, _awq_clip):
        host, dev = copy.deepcopy(model), copy.deepcopy(model).to(cuda)
        method(host, calib, weight_scheme(4, 64))
        method(dev, [c.to(cuda) for c in calib], weight_scheme(4, 64))
        with tx.no_grad():
            np.testing.assert_allclose(dev(x.to(cuda)).cpu().numpy(), host(x).numpy(),
                                       rtol=1e-4, atol=1e-5)
