"""Every optimizer (and its variants) against torch.optim: the parameter trajectory over 20
steps from identical weights and the same loss, param groups, state_dict resumption, errors."""

import numpy as np
import pytest

import tensorix as tx
from tensorix import optim

torch = pytest.importorskip("torch")

STEPS = 20
SHAPES = [(3, 4), (5,)]


class TorchLion(torch.optim.Optimizer):
    """The reference Lion (the paper's Algorithm 2, as in lion-pytorch) - torch has none."""

    def __init__(self, params, lr=1e-4, betas=(0.9, 0.99), weight_decay=0.0, maximize=False):
        super().__init__(params, dict(lr=lr, betas=betas, weight_decay=weight_decay,
                                      maximize=maximize))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            b1, b2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = -p.grad if group["maximize"] else p.grad
                st = self.state[p]
                if not st:
                    st["exp_avg"] = torch.zeros_like(p)
                m = st["exp_avg"]
                p.mul_(1 - group["lr"] * group["weight_decay"])
                p.add_((m * b1 + g * (1 - b1)).sign(), alpha=-group["lr"])
                m.mul_(b2).add_(g, alpha=1 - b2)


def torch_class(name):
    return TorchLion if name == "Lion" else getattr(torch.optim, name)


# (optimizer, kwargs): the variants checked against torch
CASES = [
    ("SGD", dict(lr=0.05)),
    ("SGD", dict(lr=0.05, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True)),
    ("SGD", dict(lr=0.05, momentum=0.5, maximize=True)),
    ("Adam", dict(lr=0.05)),
    ("Adam", dict(lr=0.05, amsgrad=True, weight_decay=0.1)),
    ("Adam", dict(lr=0.05, betas=(0.8, 0.9), maximize=True)),
    ("AdamW", dict(lr=0.05)),
    ("AdamW", dict(lr=0.05, weight_decay=0.3, amsgrad=True)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.05, weight_decay=0.1, initial_accumulator_value=0.5)),
    ("Adagrad", dict(lr=0.1, eps=1e-6, maximize=True)),
    ("Adadelta", dict(lr=1.0)),
    ("Adadelta", dict(lr=0.5, rho=0.8, eps=1e-4, weight_decay=0.1)),
    ("Adadelta", dict(lr=1.0, maximize=True)),
    ("Adamax", dict(lr=0.05)),
    ("Adamax", dict(lr=0.05, betas=(0.8, 0.95), weight_decay=0.1, maximize=True)),
    ("NAdam", dict(lr=0.05)),
    ("NAdam", dict(lr=0.05, momentum_decay=0.1, weight_decay=0.1)),
    ("NAdam", dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("RAdam", dict(lr=0.05)),
    ("RAdam", dict(lr=0.05, betas=(0.9, 0.9), weight_decay=0.1)),  # rho_t > 5 from step 6
    ("RAdam", dict(lr=0.05, betas=(0.9, 0.8), weight_decay=0.1, decoupled_weight_decay=True,
                   maximize=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, centered=True)),
    ("RMSprop", dict(lr=0.01, momentum=0.9)),
    ("RMSprop", dict(lr=0.01, alpha=0.9, centered=True, momentum=0.5, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.01, maximize=True)),
    ("Lion", dict(lr=0.01)),
    ("Lion", dict(lr=0.01, betas=(0.95, 0.98), weight_decay=0.5, maximize=True)),
]
ALL = sorted({name for name, _ in CASES})
DEFAULT_LR = {name: kw["lr"] for name, kw in reversed(CASES)}


def _problem(seed=0):
    rng = np.random.default_rng(seed)
    inits = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    consts = [(rng.standard_normal(s).astype(np.float32),
               rng.uniform(0.5, 2.0, s).astype(np.float32)) for s in SHAPES]
    return inits, consts


def _loss(params, consts):
    """The same expression in both frameworks: a weighted quadratic plus a wiggle, so the
    gradient depends on the current parameters (the trajectory feeds back)."""
    total = 0.0
    for p, (t, c) in zip(params, consts):
        total = total + (c * (p - t) ** 2).sum() + 0.3 * (p * 3.0).sin().sum()
    return total


def _groups(params, split):
    if not split:
        return params
    return [{"params": [params[0]]}, {"params": params[1:], "lr": split}]


def _trajectory(lib, opt_class, kwargs, steps, split, dtype):
    """The parameters after each step of ``opt_class`` on the shared problem, built with
    ``lib`` (tensorix or torch: the same calls in both)."""
    inits, consts = _problem()
    params = [lib.tensor(a.astype(dtype), requires_grad=True) for a in inits]
    cs = [(lib.tensor(t.astype(dtype)), lib.tensor(c.astype(dtype))) for t, c in consts]
    opt = opt_class(_groups(params, split), **kwargs)
    out = []
    for _ in range(steps):
        opt.zero_grad()
        _loss(params, cs).backward()
        opt.step()
        out.append([p.detach().numpy().copy() for p in params])
    return out


def run_tensorix(name, kwargs, steps=STEPS, split=None, dtype=np.float32):
    return _trajectory(tx, getattr(optim, name), kwargs, steps, split, dtype)


def run_torch(name, kwargs, steps=STEPS, split=None, dtype=np.float32):
    return _trajectory(torch, torch_class(name), kwargs, steps, split, dtype)


def assert_trajectories_close(ours, theirs, rtol=2e-5, atol=2e-6):
    for step, (a, b) in enumerate(zip(ours, theirs)):
        for i, (x, y) in enumerate(zip(a, b)):
            np.testing.assert_allclose(x, y, rtol=rtol, atol=atol,
                                       err_msg=f"step {step + 1}, parameter {i}")


@pytest.mark.parametrize("name,kwargs", CASES, ids=[f"{n}-{kw}" for n, kw in CASES])
def test_trajectory_matches_torch(name, kwargs):
    ours, theirs = run_tensorix(name, kwargs), run_torch(name, kwargs)
    assert not np.allclose(ours[-1][0], _problem()[0][0])  # the parameters did move
    assert_trajectories_close(ours, theirs)


@pytest.mark.parametrize("name", ALL)
def test_param_groups_with_different_lr(name):
    kwargs = {"lr": DEFAULT_LR[name]}
    split = DEFAULT_LR[name] * 0.3
    ours = run_tensorix(name, kwargs, split=split)
    assert_trajectories_close(ours, run_torch(name, kwargs, split=split))
    # and the second group really followed its own lr
    alone = run_tensorix(name, kwargs)
    assert not np.allclose(ours[-1][1], alone[-1][1])


@pytest.mark.parametrize("name", ["Adam", "RMSprop", "Adagrad", "NAdam", "Lion", "SGD"])
def test_float64_trajectory(name):
    kwargs = {"lr": DEFAULT_LR[name]}
    assert_trajectories_close(run_tensorix(name, kwargs, dtype=np.float64),
                              run_torch(name, kwargs, dtype=np.float64), rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("name", ["Adam", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam",
                                  "RMSprop", "SGD"])
def test_complex_parameters_match_torch(name):
    """Complex parameters are updated as (real, imag) pairs, as torch's view_as_real does."""
    rng = np.random.default_rng(3)
    init = (rng.standard_normal(6) + 1j * rng.standard_normal(6)).astype(np.complex64)
    grads = [(rng.standard_normal(6) + 1j * rng.standard_normal(6)).astype(np.complex64)
             for _ in range(8)]
    kwargs = {"lr": DEFAULT_LR[name]}
    if name in ("SGD", "RMSprop"):
        kwargs["momentum"] = 0.9
    ours, theirs = tx.tensor(init, requires_grad=True), torch.tensor(init, requires_grad=True)
    opt_a = getattr(optim, name)([ours], **kwargs)
    opt_b = torch_class(name)([theirs], **kwargs)
    for g in grads:
        ours.grad, theirs.grad = tx.tensor(g), torch.tensor(g)
        opt_a.step()
        opt_b.step()
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(),
                                   rtol=2e-5, atol=2e-6)


def _train(opt, params, cs, steps):
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = _loss(params, cs)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


CASES_BY_NAME = {}
for _n, _kw in CASES:
    CASES_BY_NAME[_n] = _kw  # the last (most featureful) variant of each optimizer


@pytest.mark.parametrize("through_file", [False, True], ids=["in-memory", "file"])
@pytest.mark.parametrize("name", ALL)
def test_state_dict_resume_is_identical(name, through_file, tmp_path):
    """An optimizer restored mid-run into fresh objects continues bit-identically."""
    kwargs = CASES_BY_NAME[name]
    inits, consts = _problem()
    cs = [(tx.tensor(t), tx.tensor(c)) for t, c in consts]

    params = [tx.tensor(a, requires_grad=True) for a in inits]
    opt = getattr(optim, name)(_groups(params, kwargs["lr"] * 0.5), **kwargs)
    straight = _train(opt, params, cs, 16)
    final = [p.detach().numpy().copy() for p in params]

    params = [tx.tensor(a, requires_grad=True) for a in inits]
    opt = getattr(optim, name)(_groups(params, kwargs["lr"] * 0.5), **kwargs)
    first = _train(opt, params, cs, 7)
    state = opt.state_dict()
    weights = [p.detach().numpy().copy() for p in params]
    if through_file:
        tx.save(state, tmp_path / "opt.safetensors")
        state = tx.load(tmp_path / "opt.safetensors")

    params = [tx.tensor(w, requires_grad=True) for w in weights]
    opt2 = getattr(optim, name)(_groups(params, 123.0), **kwargs)  # lr restored by the load
    opt2.load_state_dict(state)
    second = _train(opt2, params, cs, 9)
    assert first + second == straight
    for p, f in zip(params, final):
        np.testing.assert_array_equal(p.detach().numpy(), f)


def test_state_dict_is_a_copy():
    p = tx.tensor(np.ones(3, np.float32), requires_grad=True)
    opt = optim.Adam([p], lr=0.1)
    p.grad = tx.ones(3)
    opt.step()
    sd = opt.state_dict()
    before = sd["state"][0]["exp_avg"].numpy().copy()
    opt.step()
    np.testing.assert_array_equal(sd["state"][0]["exp_avg"].numpy(), before)
    assert sd["param_groups"][0]["params"] == [0]
    assert sd["state"][0]["step"] == 1


def test_load_state_dict_mismatch_errors():
    a = [tx.zeros(2, requires_grad=True), tx.zeros(3, requires_grad=True)]
    sd = optim.SGD([{"params": a[:1]}, {"params": a[1:]}], lr=0.1).state_dict()
    with pytest.raises(ValueError, match="SGD: loaded state dict has a different number of "
                                         "parameter groups"):
        optim.SGD(a, lr=0.1).load_state_dict(sd)
    sd = optim.SGD(a, lr=0.1).state_dict()
    with pytest.raises(ValueError, match="doesn't match the size"):
        optim.SGD(a[:1], lr=0.1).load_state_dict(sd)


def test_parameters_without_grad_are_skipped_and_state_is_lazy():
    a, b = tx.ones(2, requires_grad=True), tx.ones(2, requires_grad=True)
    opt = optim.Adam([a, b], lr=0.1)
    a.grad = tx.ones(2)
    opt.step()
    assert b.tolist() == [1.0, 1.0] and a.tolist() != [1.0, 1.0]
    assert b not in opt.state or not opt.state[b]
    # Adagrad creates its accumulators eagerly, like torch (initial_accumulator_value)
    ada = optim.Adagrad([a, b], initial_accumulator_value=0.25)
    assert ada.state[b]["sum"].tolist() == [0.25, 0.25]


def test_closure_and_zero_grad():
    p = tx.tensor([1.0, 2.0], requires_grad=True)
    opt = optim.SGD([p], lr=0.5)

    def closure():
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    loss = opt.step(closure)
    assert loss.item() == 5.0
    assert p.tolist() == [0.0, 0.0]
    opt.zero_grad(set_to_none=False)
    assert p.grad.tolist() == [0.0, 0.0]
    opt.zero_grad()
    assert p.grad is None


def test_step_bumps_version_and_records_no_graph():
    p = tx.tensor([1.0, 2.0], requires_grad=True)
    opt = optim.Adam([p], lr=0.1)
    v = p._version[0]
    (p * p).sum().backward()
    opt.step()
    assert p._version[0] == v + 1
    assert p.grad_fn is None and p.is_leaf


def test_repr_lists_groups():
    p = tx.zeros(2, requires_grad=True)
    text = repr(optim.RMSprop([p], lr=0.1, centered=True))
    assert text.startswith("RMSprop (") and "lr: 0.1" in text and "centered: True" in text


BAD = [
    ("SGD", dict(lr=-0.1), r"SGD: invalid lr value: -0\.1"),
    ("SGD", dict(lr=0.1, momentum=-1), "SGD: invalid momentum value"),
    ("SGD", dict(lr=0.1, nesterov=True), "SGD: Nesterov momentum requires"),
    ("Adam", dict(lr=0.1, betas=(1.0, 0.9)), r"Adam: invalid betas\[0\] value: 1\.0"),
    ("AdamW", dict(eps=-1.0), "AdamW: invalid eps value"),
    ("Adagrad", dict(lr_decay=-1.0), "Adagrad: invalid lr_decay value"),
    ("Adagrad", dict(initial_accumulator_value=-1.0),
     "Adagrad: invalid initial_accumulator_value value"),
    ("Adadelta", dict(rho=1.5), r"Adadelta: invalid rho value: 1\.5 \(expected 0 <= rho"),
    ("Adamax", dict(betas=(0.9, -0.1)), r"Adamax: invalid betas\[1\] value"),
    ("Adamax", dict(weight_decay=-0.1), "Adamax: invalid weight_decay value"),
    ("NAdam", dict(momentum_decay=-1.0), "NAdam: invalid momentum_decay value"),
    ("RAdam", dict(lr=-1.0), "RAdam: invalid lr value"),
    ("RAdam", dict(betas=(0.9,)), "RAdam: invalid betas value"),
    ("RMSprop", dict(alpha=-0.5), "RMSprop: invalid alpha value"),
    ("RMSprop", dict(momentum=-0.5), "RMSprop: invalid momentum value"),
    ("Lion", dict(betas=(0.9, 1.5)), r"Lion: invalid betas\[1\] value"),
    ("Lion", dict(weight_decay=-1.0), "Lion: invalid weight_decay value"),
]


@pytest.mark.parametrize("name,kwargs,match", BAD, ids=[f"{n}-{kw}" for n, kw, _ in BAD])
def test_bad_hyperparameters(name, kwargs, match):
    with pytest.raises(ValueError, match=match):
        getattr(optim, name)([tx.zeros(2, requires_grad=True)], **kwargs)


def test_bad_params_arguments():
    with pytest.raises(TypeError, match="Adam: params argument given to the optimizer"):
        optim.Adam(tx.zeros(2, requires_grad=True))
    with pytest.raises(ValueError, match="NAdam: optimizer got an empty parameter list"):
        optim.NAdam([])
    with pytest.raises(TypeError, match="Lion: optimizer can only optimize Tensors"):
        optim.Lion([1.0])
    x = tx.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="RMSprop: can't optimize a non-leaf Tensor"):
        optim.RMSprop([x * 2])
    with pytest.raises(ValueError, match="some parameters appear in more than one"):
        optim.Adagrad([{"params": [x]}, {"params": [x]}])
    with pytest.raises(ValueError, match="SGD: parameter group didn't specify a value of "
                                         "required optimization parameter lr"):
        optim.SGD([{"params": [x]}], lr=optim.optimizer.required)


def test_pure_update_functions_work_on_raw_arrays():
    p = np.ones(3, np.float32)
    g = np.full(3, 0.5, np.float32)
    m = np.zeros(3, np.float32)
    optim.lion_update(p, g, m, lr=0.1, beta1=0.9, beta2=0.99, weight_decay=0.0,
                      maximize=False)
    np.testing.assert_allclose(p, 0.9)
    np.testing.assert_allclose(m, 0.005)
    s = np.zeros(3, np.float32)
    optim.adagrad_update(p, g, s, 1, lr=0.1, lr_decay=0.0, weight_decay=0.0, eps=0.0,
                         maximize=False)
    np.testing.assert_allclose(p, 0.8, rtol=1e-6)


def test_load_state_dict_casts_moments_to_the_parameter_dtype():
    """Like torch: a float32 optimizer state loads into float64 parameters as float64."""
    a = tx.ones(3, requires_grad=True)
    opt = optim.NAdam([a], lr=0.1)
    a.grad = tx.ones(3)
    opt.step()
    b = tx.ones(3, dtype=tx.float64, requires_grad=True)
    opt64 = optim.NAdam([b], lr=0.1)
    opt64.load_state_dict(opt.state_dict())
    st = opt64.state[b]
    assert st["exp_avg"].dtype == tx.float64 and st["exp_avg_sq"].dtype == tx.float64
    assert st["mu_product"].dtype == tx.float32  # the scalar keeps its precision
    b.grad = tx.ones(3, dtype=tx.float64)
    opt64.step()
    assert b.dtype == tx.float64


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta",
                                  "Adamax", "NAdam", "RAdam"])
def test_zero_dim_parameters_match_torch(name):
    """0-d parameters (a scalar temperature, a bias) take the same steps as in torch."""
    torch = pytest.importorskip("torch")
    kw = {"lr": 0.1, **({"momentum": 0.9} if name == "SGD" else {})}
    p = tx.tensor(1.5, requires_grad=True)
    q = torch.tensor(1.5, requires_grad=True)
    opt, topt = getattr(tx.optim, name)([p], **kw), getattr(torch.optim, name)([q], **kw)
    for _ in range(3):
        (p * p * p).backward()
        (q * q * q).backward()
        opt.step()
        topt.step()
        opt.zero_grad()
        topt.zero_grad()
    assert abs(p.item() - q.item()) < 1e-6
