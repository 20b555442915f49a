"""Quantized layers and flows: quantize_ with torchao's configs, quantize_dynamic against
torch.ao, static prepare/convert, QAT, the Module API (state_dict, repr), memory, files, and
the errors for bad input."""

import copy

import numpy as np
import pytest

import tensorix as tx
from tensorix import nn
from tensorix.quant import (
    Int4WeightOnlyConfig,
    Int8DynamicActivationInt8WeightConfig,
    Int8WeightOnlyConfig,
    QATConfig,
    QScheme,
    QuantizedConv2d,
    QuantizedEmbedding,
    QuantizedLinear,
    StaticConfig,
    compute_qparams,
    convert,
    fake_quantize,
    load_quantized,
    prepare,
    prepare_qat,
    quantize_,
    quantize_dynamic,
    save_quantized,
)


def _mlp(seed=0):
    tx.manual_seed(seed)
    return nn.Sequential(nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 16))


def _fq_reference(lin, x, wscheme, ascheme=None):
    """The float model with fake-quantized weight (and input): what the layer must compute."""
    xq = x if ascheme is None else fake_quantize(x, ascheme)
    w = fake_quantize(lin.weight.detach(), wscheme)
    return (xq @ w.T + lin.bias.detach()).numpy()


@pytest.mark.parametrize("config", [Int8WeightOnlyConfig(), Int8WeightOnlyConfig(group_size=64),
                                    Int4WeightOnlyConfig(group_size=32),
                                    Int4WeightOnlyConfig(group_size=128)])
def test_weight_only_equals_fake_quant_reference(config, rng):
    model = _mlp()
    x = tx.tensor(rng.standard_normal((5, 256)).astype(np.float32))
    lin = copy.deepcopy(model[0])
    quantize_(model, config)
    assert isinstance(model[0], QuantizedLinear) and isinstance(model[2], QuantizedLinear)
    np.testing.assert_allclose(model[0](x).numpy(), _fq_reference(lin, x, config.weight),
                               rtol=1e-5, atol=1e-5)


def test_int8_dynamic_is_the_integer_product(rng):
    model = _mlp()
    lin = copy.deepcopy(model[0])
    x = tx.tensor(rng.standard_normal((7, 256)).astype(np.float32))
    cfg = Int8DynamicActivationInt8WeightConfig()
    quantize_(model, cfg)
    ref = _fq_reference(lin, x, cfg.weight, cfg.activation)
    np.testing.assert_allclose(model[0](x).numpy(), ref, rtol=1e-5, atol=1e-5)
    y = model(x.reshape(7, 1, 256))  # any leading dims
    assert tuple(y.shape) == (7, 1, 16)


def test_quantize_dynamic_close_to_torch_ao(rng):
    torch = pytest.importorskip("torch")
    import warnings

    model = _mlp(3)
    tm = torch.nn.Sequential(torch.nn.Linear(256, 128), torch.nn.ReLU(), torch.nn.Linear(128, 16))
    with torch.no_grad():
        for i in (0, 2):
            tm[i].weight.copy_(torch.tensor(model[i].weight.detach().numpy()))
            tm[i].bias.copy_(torch.tensor(model[i].bias.detach().numpy()))
    x = rng.standard_normal((9, 256)).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tq = torch.ao.quantization.quantize_dynamic(tm, {torch.nn.Linear}, dtype=torch.qint8)
        ty = tq(torch.tensor(x)).numpy()
    q = quantize_dynamic(model, {nn.Linear})
    assert isinstance(model[0], nn.Linear)  # not in place by default
    y = q(tx.tensor(x)).numpy()
    fp = model(tx.tensor(x)).detach().numpy()
    # both are int8 approximations of the float model with errors of the same size
    e_tx, e_torch = np.abs(y - fp).max(), np.abs(ty - fp).max()
    assert e_tx < 2 * e_torch + 1e-3 and np.abs(y - ty).max() < 3 * e_torch + 1e-3


def test_static_prepare_convert(rng):
    model = _mlp()
    calib = [tx.tensor(rng.standard_normal((16, 256)).astype(np.float32)) for _ in range(4)]
    prepared = prepare(model, StaticConfig(observer="minmax"))
    for b in calib:
        prepared(b)
    q = convert(prepared)
    assert "static" in repr(q[0]) and "act_scale" in q[0].state_dict()
    # the calibrated range is the calibration data's; the layer equals the fake-quant model
    allx = tx.cat(calib)
    s, z = compute_qparams(allx, StaticConfig().activation)
    assert float(q[0].act_scale) == float(s) and int(q[0].act_zero_point) == int(z)
    x = calib[0]
    ref = fake_quantize(x, StaticConfig().activation, s, z) @ fake_quantize(
        model[0].weight.detach(), StaticConfig().weight).T + model[0].bias.detach()
    np.testing.assert_allclose(q[0](x).numpy(), ref.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("observer", ["moving_average", "histogram", "mse"])
def test_static_observers_run(observer, rng):
    prepared = prepare(_mlp(), StaticConfig(observer=observer))
    for _ in range(2):
        prepared(tx.tensor(rng.standard_normal((16, 256)).astype(np.float32)))
    q = convert(prepared)
    x = tx.tensor(rng.standard_normal((4, 256)).astype(np.float32))
    assert np.abs(q(x).numpy() - _mlp()(x).detach().numpy()).max() < 0.1


def test_qat_trains_and_converts(rng):
    tx.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
    x = tx.tensor(rng.standard_normal((256, 8)).astype(np.float32))
    y = (x[:, :1] * 2 - x[:, 1:2]).detach()
    for learnable in (False, True):
        qat = prepare_qat(model, QATConfig(weight=QScheme(4, True, "per_channel"),
                                           learnable=learnable))
        opt = tx.optim.Adam(qat.parameters(), lr=1e-2)
        first = None
        for _ in range(60):
            opt.zero_grad()
            loss = ((qat(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            first = float(loss) if first is None else first
        assert float(loss) < 0.5 * first
        q = convert(qat)
        assert isinstance(q[0], QuantizedLinear)
        # the converted model computes what the trained QAT model computed
        with tx.no_grad():
            qat.eval()
            np.testing.assert_allclose(q(x).numpy(), qat(x).numpy(), rtol=1e-3, atol=2e-3)


def test_conv_and_embedding(rng):
    conv = nn.Conv2d(3, 8, 3, padding=1)
    qc = QuantizedConv2d.from_float(conv, QScheme(8, granularity="per_channel"))
    x = tx.tensor(rng.standard_normal((2, 3, 9, 9)).astype(np.float32))
    w = fake_quantize(conv.weight.detach(), QScheme(8, granularity="per_channel"))
    ref = nn.functional.conv2d(x, w, conv.bias.detach(), padding=1)
    np.testing.assert_allclose(qc(x).numpy(), ref.numpy(), rtol=1e-5, atol=1e-5)
    emb = nn.Embedding(50, 32)
    for scheme in (QScheme(8, granularity="per_channel"),
                   QScheme(4, False, "per_group", group_size=8)):
        qe = QuantizedEmbedding.from_float(emb, scheme)
        idx = tx.tensor([[3, 49], [0, 3]])
        table = fake_quantize(emb.weight.detach(), scheme).numpy()
        np.testing.assert_allclose(qe(idx).numpy(), table[idx.numpy()], rtol=1e-6)
    model = nn.Sequential(nn.Embedding(50, 32), nn.Linear(32, 4))
    quantize_(model, Int4WeightOnlyConfig(group_size=16),
              filter_fn=lambda m, fqn: isinstance(m, (nn.Linear, nn.Embedding)))
    assert isinstance(model[0], QuantizedEmbedding) and "int4" in repr(model[0])


def test_module_api_state_dict_and_repr():
    model = _mlp()
    quantize_(model, Int4WeightOnlyConfig(group_size=64))
    sd = model.state_dict()
    codes = sd["0.weight_codes"]
    assert codes.dtype == tx.uint8 and tuple(codes.shape) == (128, 128)
    assert tuple(sd["0.weight_scale"].shape) == (128, 4, 1)
    assert repr(model[0]) == ("QuantizedLinear(in_features=256, out_features=128, bias=True, "
                              "weight=int4 affine per_group(64))")
    other = _mlp(seed=5)
    quantize_(other, Int4WeightOnlyConfig(group_size=64))
    other.load_state_dict(sd)
    x = tx.randn(2, 256)
    np.testing.assert_array_equal(other(x).numpy(), model(x).numpy())
    assert model[0].bias is not None and len(list(model.parameters())) == 0


def test_weight_bytes_measured():
    lin = nn.Linear(1024, 1024)
    fp32 = lin.weight.detach().numpy().nbytes
    q8 = QuantizedLinear.from_float(lin, Int8WeightOnlyConfig().weight)
    q4 = QuantizedLinear.from_float(lin, Int4WeightOnlyConfig(128).weight)
    assert fp32 / q8.weight_nbytes(with_qparams=False) == 4
    assert fp32 / q4.weight_nbytes(with_qparams=False) == 8
    assert fp32 / q8.weight_nbytes() > 3.9 and fp32 / q4.weight_nbytes() > 7


@pytest.mark.parametrize("config", [Int4WeightOnlyConfig(group_size=64),
                                    Int8DynamicActivationInt8WeightConfig(), None])
def test_save_load_safetensors(config, tmp_path, rng):
    model = _mlp()
    if config is None:  # a static model
        q = prepare(model)
        q(tx.tensor(rng.standard_normal((8, 256)).astype(np.float32)))
        q = convert(q)
    else:
        q = copy.deepcopy(model)
        quantize_(q, config)
    path = tmp_path / "q.safetensors"
    save_quantized(q, str(path))
    loaded = load_quantized(_mlp(seed=9), str(path))
    x = tx.tensor(rng.standard_normal((3, 256)).astype(np.float32))
    np.testing.assert_array_equal(loaded(x).numpy(), q(x).numpy())
    assert repr(loaded) == repr(q)


def test_quantize_on_cuda_stand_in(device, rng):
    model = _mlp().to(device)
    x = tx.tensor(rng.standard_normal((4, 256)).astype(np.float32), device=device)
    for cfg in (Int4WeightOnlyConfig(64), Int8DynamicActivationInt8WeightConfig()):
        m = copy.deepcopy(model)
        quantize_(m, cfg)
        y = m(x)
        assert y.device.type == device
        cpu = copy.deepcopy(_mlp())
        quantize_(cpu, cfg)
        np.testing.assert_allclose(y.cpu().numpy(), cpu(x.cpu()).numpy(), rtol=1e-5, atol=1e-5)


# -- bad input ---------------------------------------------------------------------------------
def test_group_size_not_dividing_the_layer():
    model = nn.Sequential(nn.Linear(256, 100), nn.Linear(100, 8))
    with pytest.raises(ValueError, match="layer '1': compute_qparams\\(\\): group_size 128 "
                                         "does not divide the last dimension 100"):
        quantize_(model, Int4WeightOnlyConfig(group_size=128))


def test_calibration_with_no_data():
    prepared = prepare(_mlp())
    with pytest.raises(ValueError, match="calibration saw no data for layer '0'"):
        convert(prepared)


def test_layer_kind_without_quantized_form():
    model = nn.Sequential(nn.LSTM(4, 4), nn.Linear(4, 4))
    with pytest.raises(ValueError, match="layer '0' \\(LSTM\\) has no quantized form"):
        quantize_(model, Int8WeightOnlyConfig(), filter_fn=lambda m, fqn: fqn == "0")
    with pytest.raises(ValueError, match="layer kind LSTM has no dynamically quantized form"):
        quantize_dynamic(model, {nn.LSTM})
    with pytest.raises(ValueError, match="padding_mode 'reflect' has no quantized form"):
        QuantizedConv2d.from_float(nn.Conv2d(2, 2, 3, padding_mode="reflect"),
                                   QScheme(granularity="per_channel"))
    with pytest.raises(TypeError, match="argument 'config' must be a QuantConfig"):
        quantize_(model, "int8")
    with pytest.raises(ValueError, match="int8 activations need a symmetric int weight"):
        QuantizedLinear.from_float(nn.Linear(8, 8), QScheme(4, False, "per_group", group_size=4),
                                   QScheme(8))


@pytest.mark.parametrize("dtype", ["fp8_e4m3", "fp6_e3m2", "mxfp8", "mxfp4"])
def test_float_format_weight_only(dtype, rng):
    from tensorix.quant import QuantConfig

    model = _mlp()
    lin = copy.deepcopy(model[0])
    scheme = QScheme(dtype=dtype, granularity="per_channel")
    quantize_(model, QuantConfig(scheme))
    x = tx.tensor(rng.standard_normal((3, 256)).astype(np.float32))
    np.testing.assert_allclose(model[0](x).numpy(), _fq_reference(lin, x, scheme), rtol=1e-5,
                               atol=1e-5)
    assert model[0].weight_codes.dtype == tx.uint8 and dtype in repr(model[0])


def test_static_conv(rng):
    tx.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 4, 3))
    prepared = prepare(model)
    batches = [tx.tensor(rng.standard_normal((2, 3, 10, 10)).astype(np.float32))
               for _ in range(3)]
    for b in batches:
        prepared(b)
    q = convert(prepared)
    assert isinstance(q[0], QuantizedConv2d) and "static" in repr(q[2])
    act = StaticConfig().activation
    s, z = compute_qparams(tx.cat(batches), act)
    w = fake_quantize(model[0].weight.detach(), StaticConfig().weight)
    ref = nn.functional.conv2d(fake_quantize(batches[0], act, s, z), w, model[0].bias.detach(),
                               padding=1)
    np.testing.assert_allclose(q[0](batches[0]).numpy(), ref.numpy(), rtol=1e-5, atol=1e-5)
