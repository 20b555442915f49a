"""``import tensorix as torch``: the backend switches, accelerator, amp, nn.modules paths and
flatten_parameters that public PyTorch scripts use, answered from tensorix's backend and checked
against torch where it is the reference."""

import subprocess
import sys
import warnings

import numpy as np
import pytest

import tensorix as tx
import tensorix.backends.cudnn
from tensorix import nn

torch = pytest.importorskip("torch")


# -- backends ----------------------------------------------------------------------------------
def test_cudnn_switches_are_settable_with_torch_defaults():
    c = tensorix.backends.cudnn
    for name in ("benchmark", "deterministic", "enabled", "allow_tf32"):
        assert getattr(c, name) == getattr(torch.backends.cudnn, name), name
    old = c.benchmark
    try:
        c.benchmark = True
        assert tx.backends.cudnn.benchmark is True
    finally:
        c.benchmark = old
    assert c.is_available() is False and c.version() is None  # tensorix calls no cuDNN


def test_cuda_matmul_allow_tf32_is_tensorix_cuda_switch():
    m = tx.backends.cuda.matmul
    assert m.allow_tf32 is False  # torch's default
    try:
        m.allow_tf32 = True
        assert tx.cuda.matmul.allow_tf32 is True
        tx.cuda.matmul.allow_tf32 = False
        assert m.allow_tf32 is False
    finally:
        tx.cuda.matmul.allow_tf32 = False
    with pytest.raises(RuntimeError, match="expects a bool"):
        m.allow_tf32 = 1
    with pytest.raises(AttributeError, match="Unknown attribute"):
        m.allow_tf33 = True
    assert m.allow_bf16_reduced_precision_reduction is True


def test_backend_queries_answer_truthfully():
    import importlib.util

    assert tx.backends.mps.is_available() is False and tx.backends.mps.is_built() is False
    assert tx.backends.cuda.is_built() == (importlib.util.find_spec("cupy") is not None)
    assert tx.backends.cpu.get_cpu_capability() in ("AVX512", "AVX2", "ASIMD", "VSX",
                                                    "DEFAULT")
    assert tx.backends.opt_einsum.is_available()
    tx.backends.cuda.enable_flash_sdp(False)
    assert tx.backends.cuda.flash_sdp_enabled() is False
    tx.backends.cuda.enable_flash_sdp(True)


def test_accelerator_follows_the_backend():
    assert tx.accelerator.is_available() == tx.cuda.is_available()
    assert tx.accelerator.device_count() == tx.cuda.device_count()
    acc = tx.accelerator.current_accelerator(check_available=True)
    assert (acc is None) == (not tx.cuda.is_available())
    if not tx.cuda.is_available():
        with pytest.raises(RuntimeError, match="no accelerator"):
            tx.accelerator.synchronize()


def test_accelerator_with_the_cuda_stand_in():
    with tx.backend.fake_cuda():
        assert tx.accelerator.is_available()
        assert tx.accelerator.current_accelerator().type == "cuda"
        assert tx.accelerator.device_count() >= 1


# -- amp ---------------------------------------------------------------------------------------
def test_autocast_cpu_bf16_rounds_policy_gemms_and_nests():
    x, w = tx.randn(8, 16), tx.randn(4, 16)
    exact = (x @ w.mT).numpy()
    bf = lambda a: a.to(tx.bfloat16).to(tx.float32)  # noqa: E731
    with tx.autocast("cpu", dtype=tx.bfloat16):
        assert tx.amp.is_autocast_enabled("cpu") and not tx.amp.is_autocast_enabled("cuda")
        assert tx.amp.get_autocast_dtype("cpu") is tx.bfloat16
        y = tx.numerics.linear(x, w)
        with tx.autocast("cpu", enabled=False):
            assert not tx.amp.is_autocast_enabled("cpu")
            np.testing.assert_array_equal(tx.numerics.linear(x, w).numpy(), exact)
    assert not tx.amp.is_autocast_enabled("cpu")
    ref = bf(bf(x) @ bf(w).mT).numpy()  # bf16 operands, fp32 accumulation, bf16 result
    np.testing.assert_allclose(y.numpy(), ref, rtol=0, atol=0)
    # torch's autocast on the CPU rounds the same way
    with torch.autocast("cpu", dtype=torch.bfloat16):
        ty = torch.nn.functional.linear(torch.tensor(x.numpy()), torch.tensor(w.numpy()))
    np.testing.assert_allclose(y.numpy(), ty.float().numpy(), rtol=1e-2, atol=1e-2)


def test_autocast_as_decorator_and_through_converted_layers():
    model = tx.numerics.convert_to_policy(nn.Sequential(nn.Linear(16, 8)))
    x = tx.randn(4, 16)

    @tx.amp.autocast("cpu", dtype=tx.bfloat16)
    def run(inp):
        return model(inp)

    y = run(x)
    lin = model[0]
    bf = lambda a: a.to(tx.bfloat16).to(tx.float32)  # noqa: E731
    ref = bf(bf(x) @ bf(lin.weight.detach()).mT + lin.bias.detach())
    np.testing.assert_array_equal(y.detach().numpy(), ref.numpy())


def test_autocast_bad_arguments_like_torch():
    with pytest.raises(ValueError, match="device_type"):
        tx.autocast(1)
    with pytest.raises(RuntimeError, match="device_type"):
        tx.autocast("tpu")
    with pytest.warns(UserWarning, match="supports"):
        ac = tx.autocast("cpu", dtype=tx.float64)
    with ac:
        assert not tx.amp.is_autocast_enabled("cpu")
    if not tx.cuda.is_available():
        with pytest.warns(UserWarning, match="CUDA is not available"):
            ac = tx.cuda.amp.autocast()
        with ac:
            assert not tx.amp.is_autocast_enabled("cuda")


def _train_with_scaler(lib, scaler, steps=4):
    rng = np.random.default_rng(0)
    w = lib.tensor(rng.normal(size=(3,)), requires_grad=True)
    opt = lib.optim.SGD([w], lr=0.1)
    x = lib.tensor(rng.normal(size=(5, 3)))
    scales = []
    for i in range(steps):
        opt.zero_grad()
        # step 1 has an infinite gradient (skipped, the scale backs off)
        loss = ((x @ w) ** 2).mean() + (w * w * (float("inf") if i == 1 else 0.0)).sum()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        scales.append(scaler.get_scale())
    return w.detach().numpy(), scales


def test_grad_scaler_matches_torch_including_a_skipped_step():
    ours = _train_with_scaler(tx, tx.amp.GradScaler("cpu", init_scale=2.0**10,
                                                     growth_interval=2))
    theirs = _train_with_scaler(torch, torch.amp.GradScaler("cpu", init_scale=2.0**10,
                                                            growth_interval=2))
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-6)
    assert ours[1] == theirs[1]


def test_grad_scaler_state_and_disabled_passthrough():
    s = tx.amp.GradScaler("cpu", init_scale=8.0)
    t = torch.amp.GradScaler("cpu", init_scale=8.0)
    assert s.state_dict() == t.state_dict()
    s2 = tx.amp.GradScaler("cpu")
    s2.load_state_dict(s.state_dict())
    assert s2.get_scale() == 8.0
    assert (s.get_growth_factor(), s.get_backoff_factor(), s.get_growth_interval()) == (
        t.get_growth_factor(), t.get_backoff_factor(), t.get_growth_interval())
    off = tx.amp.GradScaler("cpu", enabled=False)
    loss = tx.tensor(3.0)
    assert off.scale(loss) is loss and off.get_scale() == 1.0 and off.state_dict() == {}
    assert not off.is_enabled()
    if not tx.cuda.is_available():
        with pytest.warns(UserWarning, match="CUDA is not available"):
            assert not tx.cuda.amp.GradScaler().is_enabled()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tx.cuda.amp.GradScaler(enabled=False).get_scale() == 1.0
    with pytest.raises(RuntimeError, match="closure"):
        w = tx.zeros(1, requires_grad=True)
        tx.amp.GradScaler("cpu").step(tx.optim.SGD([w]), closure=lambda: None)


# -- nn.modules and RNN --------------------------------------------------------------------
def test_nn_modules_import_paths_are_the_nn_classes():
    from tensorix.nn.modules.batchnorm import BatchNorm2d
    from tensorix.nn.modules.container import Sequential
    from tensorix.nn.modules.conv import Conv2d
    from tensorix.nn.modules.linear import Linear
    from tensorix.nn.modules.module import Module
    from tensorix.nn.modules.rnn import LSTM, RNNBase

    assert (Linear, Conv2d, BatchNorm2d, Sequential, Module, LSTM) == (
        nn.Linear, nn.Conv2d, nn.BatchNorm2d, nn.Sequential, nn.Module, nn.LSTM)
    assert issubclass(LSTM, RNNBase) and nn.modules.Module is nn.Module
    import torch.nn.modules as tm

    # every family torch has and tensorix has classes for, with the classes both have
    for fam in ("activation", "batchnorm", "channelshuffle", "container", "conv", "distance",
                "dropout", "flatten", "fold", "instancenorm", "linear", "loss", "module",
                "normalization", "padding", "pixelshuffle", "pooling", "rnn", "sparse",
                "transformer", "upsampling"):
        ours, theirs = getattr(nn.modules, fam), getattr(tm, fam)
        shared = [n for n in getattr(theirs, "__all__", dir(theirs))
                  if n[:1].isupper() and hasattr(nn, n)]
        for n in shared:
            assert getattr(ours, n) is getattr(nn, n), f"nn.modules.{fam}.{n}"


@pytest.mark.parametrize("cls", ["RNN", "LSTM", "GRU"])
def test_flatten_parameters_is_a_no_op_returning_none(cls):
    m = getattr(nn, cls)(3, 4, num_layers=2)
    before = {k: v.detach().numpy().copy() for k, v in m.state_dict().items()}
    assert m.flatten_parameters() is None
    assert getattr(torch.nn, cls)(3, 4).flatten_parameters() is None
    after = m.state_dict()
    assert all(np.array_equal(before[k], after[k].numpy()) for k in before)


# -- version -------------------------------------------------------------------------------
def test_version_from_metadata_and_cli():
    import importlib.metadata as md

    try:
        expected = md.version("tensorix")
    except md.PackageNotFoundError:
        expected = None
    if expected is not None:
        assert tx.__version__ == expected
    assert isinstance(tx.__version__, str) and tx.__version__[0].isdigit()
    r = subprocess.run([sys.executable, "-m", "tensorix", "--version"], capture_output=True,
                       text=True)
    assert r.returncode == 0 and r.stdout.strip() == f"tensorix {tx.__version__}"


def test_custom_fwd_casts_inputs_and_turns_autocast_off():
    seen = {}

    class Scale(tx.autograd.Function):
        @staticmethod
        @tx.amp.custom_fwd(device_type="cpu", cast_inputs=tx.float64)
        def forward(ctx, x):
            seen["dtype"], seen["on"] = x.dtype, tx.amp.is_autocast_enabled("cpu")
            return x * 2

        @staticmethod
        @tx.amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            return g * 2

    x = tx.ones(3, requires_grad=True)
    with tx.autocast("cpu", dtype=tx.bfloat16):
        Scale.apply(x)
    assert seen == {"dtype": tx.float64, "on": False}
    Scale.apply(x).sum().backward()  # outside autocast: unchanged
    assert seen == {"dtype": tx.float32, "on": False}
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0, 2.0])


# A training script as public PyTorch code writes it, run unmodified on both libraries
SCRIPT = '''
torch.backends.cudnn.benchmark = True
torch.backends.cuda.matmul.allow_tf32 = True
acc = torch.accelerator.current_accelerator()
device = acc.type if torch.accelerator.is_available() else "cpu"
use_amp = device == "cuda"
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(),
                            torch.nn.Linear(16, 1)).to(device)
opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
scaler = torch.amp.GradScaler(device, enabled=use_amp)
x = torch.randn(64, 4, device=device)
y = x.sum(1, keepdim=True)
losses = []
for step in range(40):
    with torch.autocast(device_type=device, dtype=torch.bfloat16, enabled=use_amp):
        loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad(set_to_none=True)
    scaler.scale(loss).backward()
    scaler.unscale_(opt)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(opt)
    scaler.update()
    losses.append(loss.item())
rnn = torch.nn.LSTM(4, 8, batch_first=True)
rnn.flatten_parameters()
out, _ = rnn(x.reshape(8, 8, 4))
assert torch.is_tensor(out) and torch.numel(out) == 8 * 8 * 8
assert torch.is_floating_point(out)
d = torch.cdist(x[:5], x[:5])
assert float(d.diagonal().abs().max()) == 0.0
w = torch.zeros(4, requires_grad=True)
lbfgs = torch.optim.LBFGS([w], line_search_fn="strong_wolfe")
def closure():
    lbfgs.zero_grad()
    err = ((x @ w - y.squeeze(1)) ** 2).mean()
    err.backward()
    return err
lbfgs.step(closure)
per_sample = torch.func.vmap(torch.func.grad(lambda w, xi, yi: ((xi @ w - yi) ** 2).sum()),
                             in_dims=(None, 0, 0))(w.detach(), x, y.squeeze(1))
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.benchmark = False
'''


@pytest.mark.parametrize("lib", ["tensorix", "torch"])
def test_a_public_training_script_runs_unmodified(lib):
    ns = {"torch": tx if lib == "tensorix" else torch}
    exec(compile(SCRIPT, f"<script on {lib}>", "exec"), ns)  # noqa: S102 - the test's point
    assert ns["losses"][-1] < ns["losses"][0] / 5
    np.testing.assert_allclose(ns["w"].detach().numpy(), np.ones(4), atol=1e-4)
    assert tuple(ns["per_sample"].shape) == (64, 4)
