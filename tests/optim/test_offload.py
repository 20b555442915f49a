"""optim.offload.OffloadOptimizer: the state lives on the host or in memory-mapped files
between steps, and the weights equal the plain optimizer's exactly."""

import numpy as np
import pytest

import tensorix as tx
from tensorix import nn
from tensorix.optim.offload import OffloadOptimizer


def _model(device):
    tx.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 4)).to(tx.float64).to(device)


def _train(model, opt, device, steps=3):
    rng = np.random.default_rng(0)
    for _ in range(steps):
        x = tx.tensor(rng.standard_normal((5, 8))).to(device)
        opt.zero_grad()
        model(x).square().mean().backward()
        opt.step()


def _weights(model):
    return [p.detach().to("cpu").numpy() for p in model.parameters()]


@pytest.mark.parametrize("to", ["cpu", "disk"])
@pytest.mark.parametrize("overlap", [True, False])
def test_offloaded_adam_equals_adam(device, to, overlap, tmp_path):
    ref = _model(device)
    ref_opt = tx.optim.AdamW(ref.parameters(), lr=0.01)
    _train(ref, ref_opt, device)
    model = _model(device)
    opt = OffloadOptimizer(tx.optim.AdamW(model.parameters(), lr=0.01), to=to,
                           path=tmp_path / "state" if to == "disk" else None, overlap=overlap)
    _train(model, opt, device)
    for a, b in zip(_weights(model), _weights(ref)):
        np.testing.assert_array_equal(a, b)  # the same update, only moved around
    assert not opt.optimizer.state  # nothing stays with the optimizer between steps
    numel = sum(p.numel() for p in model.parameters())
    assert opt.host_bytes() == (2 * 8 * numel if to == "cpu" else 0)  # Adam's two moments
    if to == "disk":
        assert len(list((tmp_path / "state").iterdir())) == 2 * len(list(model.parameters()))
    # the state dict is the plain optimizer's, and loads back
    sd, want = opt.state_dict(), ref_opt.state_dict()
    assert sd["param_groups"] == want["param_groups"]
    for i, st in want["state"].items():
        assert sd["state"][i]["step"] == st["step"] == 3
        for k in ("exp_avg", "exp_avg_sq"):
            assert sd["state"][i][k].device == st[k].device
            np.testing.assert_array_equal(sd["state"][i][k].to("cpu").numpy(),
                                          st[k].to("cpu").numpy())
    again = OffloadOptimizer(tx.optim.AdamW(_model(device).parameters(), lr=0.01), to=to)
    again.load_state_dict(sd)
    got = again.state_dict()
    for i in sd["state"]:
        np.testing.assert_array_equal(got["state"][i]["exp_avg"].to("cpu").numpy(),
                                      sd["state"][i]["exp_avg"].to("cpu").numpy())


def test_offload_frees_device_memory(cuda):
    """On the device, the optimizer state is gone between steps: what the pool holds after a
    step is the parameters and their gradients, against 2 more copies for plain Adam."""
    import gc

    held = {}
    for offload in (False, True):
        model = _model("cuda")
        opt = tx.optim.Adam(model.parameters(), lr=0.01)
        opt = OffloadOptimizer(opt) if offload else opt
        _train(model, opt, "cuda")
        gc.collect()
        held[offload] = tx.cuda.memory_allocated()
        del model, opt
        gc.collect()
    param_bytes = 8 * (8 * 16 + 16 + 16 * 4 + 4)
    assert held[False] - held[True] >= 2 * param_bytes


def test_offload_matrix_optimizers():
    for make in (lambda ps: tx.optim.Muon([p for p in ps if p.dim() == 2], lr=0.02),
                 lambda ps: tx.optim.SOAP(ps, lr=0.01, precondition_frequency=2)):
        ref = _model("cpu")
        _train(ref, make(list(ref.parameters())), "cpu")
        model = _model("cpu")
        _train(model, OffloadOptimizer(make(list(model.parameters())), to="disk"), "cpu")
        for a, b in zip(_weights(model), _weights(ref)):
            np.testing.assert_array_equal(a, b)


def test_offload_errors():
    p = [nn.Parameter(tx.ones(2))]
    with pytest.raises(TypeError, match="OffloadOptimizer.*LBFGS"):
        OffloadOptimizer(tx.optim.LBFGS(p))
    with pytest.raises(ValueError, match="OffloadOptimizer.*to="):
        OffloadOptimizer(tx.optim.SGD(p, lr=0.1), to="gpu")
    with pytest.raises(TypeError, match="OffloadOptimizer.*Optimizer"):
        OffloadOptimizer(object())
