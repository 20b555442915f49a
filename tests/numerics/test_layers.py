"""Convolutions and layers under a precision policy; converting an nn model to them."""

import ml_dtypes
import numpy as np
import pytest

import tensorix as tx
from tensorix import nn
from tensorix import numerics as nx

F32 = np.float32
F = nn.functional


def t(rng, shape, rg=True):
    return tx.tensor(rng.standard_normal(shape).astype(F32), requires_grad=rg)


def _conv_as_policy_gemm(x, w, b, pol, padding):
    """conv2d written out: unfold, one policy GEMM (N*L, C*K) x (O, C*K)^T rounded to the
    policy's output, then the bias in float32."""
    n, o = x.shape[0], w.shape[0]
    cols = F.unfold(x, w.shape[2:], padding=padding)  # (N, C*K, L)
    ck = cols.shape[1]
    y = nx.linear(cols.transpose(1, 2).reshape(-1, ck), w.reshape(o, ck), None, pol)
    side = x.shape[2] + 2 * padding - w.shape[2] + 1
    return y.reshape(n, side, side, o).permute(0, 3, 1, 2) + b.reshape(o, 1, 1)


@pytest.mark.parametrize("pol", [nx.Policy("mxfp8", out="bf16", grad="mxfp8_e5m2"),
                                 nx.POLICIES["nvfp4"], nx.POLICIES["fp8"]])
def test_conv2d_is_the_policy_gemm_in_both_directions(pol):
    rng = np.random.default_rng(0)
    x, w, b = t(rng, (2, 8, 6, 6)), t(rng, (16, 8, 3, 3)), t(rng, (16,))
    y = nx.conv2d(x, w, b, padding=1, policy=pol)
    g = tx.tensor(rng.standard_normal(y.shape).astype(F32))
    y.backward(g)
    grads = [v.grad.numpy().copy() for v in (x, w, b)]
    for v in (x, w, b):
        v.grad = None
    ref = _conv_as_policy_gemm(x, w, b, pol, 1)
    ref.backward(g)
    assert np.allclose(y.detach().numpy(), ref.detach().numpy(), rtol=1e-6, atol=1e-6)
    for got, v in zip(grads, (x, w, b)):  # GEMMs summed in another order: 1 bf16 ulp at most
        assert np.allclose(got, v.grad.numpy(), rtol=2**-7, atol=1e-5)
    plain = F.conv2d(x, w, b, padding=1)  # and the policy really rounds
    assert not np.allclose(y.detach().numpy(), plain.detach().numpy(), rtol=1e-4, atol=1e-4)
    err = np.abs(y.detach().numpy() - plain.detach().numpy()).max()
    assert err < 0.5 * np.abs(plain.detach().numpy()).max()


def test_conv_mx_blocks_run_along_channels_times_kernel():
    # 8 channels x 2x2 kernel = 32: one MX block per output pixel and filter
    rng = np.random.default_rng(1)
    x, w = t(rng, (1, 8, 3, 3), False), t(rng, (4, 8, 2, 2), False)
    pol = nx.Policy("mxfp4", scale_mode="floor")
    y = nx.conv2d(x, w, policy=pol)
    cols = np.lib.stride_tricks.sliding_window_view(x.numpy()[0], (2, 2), axis=(1, 2))
    cols = cols.transpose(0, 3, 4, 1, 2).reshape(32, 4)  # (C*kh*kw, output pixels)
    qw = nx.mx_fake_quant(w.numpy().reshape(4, 32), "fp4_e2m1", axis=-1, scale_mode="floor")
    qc = nx.mx_fake_quant(cols, "fp4_e2m1", axis=0, scale_mode="floor")
    assert np.allclose(y.numpy().reshape(4, 4), qw @ qc, rtol=1e-6, atol=1e-6)


def test_conv1d_conv3d_groups_and_plain_fallback():
    rng = np.random.default_rng(2)
    x1, w1 = t(rng, (2, 4, 10), False), t(rng, (6, 2, 3), False)
    y = nx.conv1d(x1, w1, stride=2, groups=2, policy="bf16")
    ref = F.conv1d(x1, w1, stride=2, groups=2)
    assert y.shape == ref.shape and np.allclose(y.numpy(), ref.numpy(), rtol=2e-2, atol=2e-2)
    assert np.array_equal(y.numpy(), y.numpy().astype(ml_dtypes.bfloat16).astype(F32))
    x3, w3 = t(rng, (1, 2, 4, 4, 4), False), t(rng, (3, 2, 2, 2, 2), False)
    err = np.abs(nx.conv3d(x3, w3, policy="fp8").numpy() - F.conv3d(x3, w3).numpy())
    bound = F.conv3d(x3.abs(), w3.abs()).numpy() * 2.0**-3  # e4m3 operands: 2^-4 each
    assert np.all(err <= bound) and err.max() > 0
    # no policy (and no autocast): exactly nn.functional's convolution
    assert np.array_equal(nx.conv3d(x3, w3).numpy(), F.conv3d(x3, w3).numpy())
    with pytest.raises(ValueError, match=r"conv2d\(\): unknown policy 'fp12'"):
        nx.conv2d(tx.ones(1, 1, 3, 3), tx.ones(1, 1, 2, 2), policy="fp12")
    with pytest.raises(TypeError, match=r"conv1d\(\): argument 'policy' must be a Policy"):
        nx.conv1d(x1, w1, groups=2, policy=3)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3, padding=1, padding_mode="reflect")
        self.body = nn.Sequential(nn.Flatten(), nn.Linear(64, 16), nn.GELU())
        self.head = nn.Linear(16, 3)

    def forward(self, x):
        return self.head(self.body(self.conv(x)))


def test_convert_to_policy_keeps_classes_and_parameters():
    tx.manual_seed(0)
    model = Net()
    ref = Net()
    ref.load_state_dict(model.state_dict())
    params = [id(p) for p in model.parameters()]
    keys = list(model.state_dict())
    out = nx.convert_to_policy(model, "mxfp8", skip=lambda name, m: name == "head")
    assert out is model and [id(p) for p in model.parameters()] == params
    assert list(model.state_dict()) == keys
    # no class swapping: the layers stay nn's
    assert type(model.conv) is nn.Conv2d and type(model.body[1]) is nn.Linear
    assert type(model.head) is nn.Linear
    x = tx.randn(2, 2, 4, 4)
    y = model(x)
    h = nx.conv2d(F.pad(x, [1, 1, 1, 1], mode="reflect"), ref.conv.weight, ref.conv.bias,
                  policy="mxfp8")
    h = F.gelu(nx.linear(h.flatten(1), ref.body[1].weight, ref.body[1].bias, "mxfp8"))
    want = ref.head(h)  # skipped: plain float32
    assert np.array_equal(y.detach().numpy(), want.detach().numpy())
    y.sum().backward()
    assert all(p.grad is not None for p in model.parameters())
    # skipped layers stay full precision under autocast too; converting again replaces
    with nx.autocast("nvfp4"):
        z = model.head(h).detach().numpy()
    assert np.array_equal(z, ref.head(h).detach().numpy())
    nx.convert_to_policy(model, policy="bf16")
    with nx.autocast("nvfp4"):  # a layer's own policy wins over autocast
        z = model.head(h).detach().numpy()
    head = model.head
    assert np.array_equal(z, nx.linear(h, head.weight, head.bias, "bf16").detach().numpy())
    assert not np.array_equal(z, nx.linear(h, head.weight, head.bias, "nvfp4").detach().numpy())
    with pytest.raises(ValueError, match=r"convert_to_policy\(\): unknown policy 'fp5'"):
        nx.convert_to_policy(model, policy="fp5")


def test_autocast_reaches_plain_nn_layers():
    # the regression: before the dispatcher's GEMM hook, a plain nn model ran in float32
    # inside autocast, whatever the policy
    tx.manual_seed(0)
    model = Net()
    x = tx.randn(2, 2, 4, 4)
    with nx.autocast("mxfp8"):
        y = model(x).detach().numpy()
    conv, lin, head = model.conv, model.body[1], model.head
    h = nx.conv2d(F.pad(x, [1, 1, 1, 1], mode="reflect"), conv.weight, conv.bias,
                  policy="mxfp8")
    h = F.gelu(nx.linear(h.flatten(1), lin.weight, lin.bias, "mxfp8"))
    want = nx.linear(h, head.weight, head.bias, "mxfp8").detach().numpy()
    assert np.array_equal(y, want)
    assert not np.allclose(y, model(x).detach().numpy(), rtol=1e-4, atol=1e-4)


def test_policy_layers_built_directly():
    tx.manual_seed(1)
    lin = nx.Linear(32, 8, policy=nx.Policy("mxfp8"))
    x = tx.randn(4, 32)
    assert np.allclose(lin(x).detach().numpy(),
                       nx.linear(x, lin.weight, lin.bias, lin.policy).detach().numpy())
    conv = nx.Conv1d(3, 5, 2, policy="bf16")
    assert conv(tx.randn(2, 3, 7)).shape == (2, 5, 6)
    assert "policy='bf16'" in repr(conv)
    sd = conv.state_dict()
    plain = nn.Conv1d(3, 5, 2)
    plain.load_state_dict(sd)  # same keys and shapes as the nn layer


def test_explicit_full_precision_wins_over_autocast_for_stacked_inputs():
    rng = np.random.default_rng(3)
    x, w = t(rng, (2, 3, 32), False), t(rng, (4, 32), False)
    with nx.autocast("mxfp4"):
        y = nx.linear(x, w, policy="fp32").numpy()
        y4 = nx.linear(x, w).numpy()  # autocast's
    exact = (x @ w.mT).numpy()
    assert np.allclose(y, exact, rtol=1e-6, atol=1e-6)
    assert not np.allclose(y4, exact, rtol=1e-2, atol=1e-2)


def test_converted_model_deep_copies_and_runs_in_threads():
    import copy
    import threading

    tx.manual_seed(2)
    model = nx.convert_to_policy(Net(), "bf16")
    twin = copy.deepcopy(model)
    x = tx.randn(2, 2, 4, 4)
    want = model(x).detach().numpy()
    assert np.array_equal(twin(x).detach().numpy(), want)
    got = []
    threads = [threading.Thread(target=lambda: got.append(model(x).detach().numpy()))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 4 and all(np.array_equal(g, want) for g in got)
    assert tx.autograd.grad_mode.modes.state.gemm is None  # nothing left installed
