"""Every learning-rate scheduler against torch.optim.lr_scheduler: the lr (and cycled
momentum) of each param group over 20+ steps, state_dict resumption, errors."""

import math

import numpy as np
import pytest

import tensorix as tx
from tensorix import optim
from tensorix.optim import lr_scheduler as S

torch = pytest.importorskip("torch")
TS = torch.optim.lr_scheduler

STEPS = 20


class Halve:
    """A callable object: its __dict__ is saved in LambdaLR's state_dict."""

    def __init__(self):
        self.factor = 0.5

    def __call__(self, epoch):
        return self.factor ** (epoch // 4)


# name -> (optimizer name, optimizer kwargs, scheduler kwargs, steps)
CASES = {
    "LambdaLR": ("SGD", {}, dict(lr_lambda=lambda e: 0.9 ** e + 0.01 * e)),
    "LambdaLR-per-group": ("SGD", {}, dict(lr_lambda=[lambda e: 1 / (e + 1), Halve()])),
    "MultiplicativeLR": ("SGD", {}, dict(lr_lambda=lambda e: 0.95 if e % 3 else 0.7)),
    "StepLR": ("SGD", {}, dict(step_size=3, gamma=0.5)),
    "StepLR-float-step": ("SGD", {}, dict(step_size=1.0, gamma=0.95)),  # pytorch/examples
    "MultiStepLR": ("SGD", {}, dict(milestones=[2, 5, 5, 11], gamma=0.3)),
    "ConstantLR": ("SGD", {}, dict(factor=0.25, total_iters=6)),
    "LinearLR": ("SGD", {}, dict(start_factor=0.1, end_factor=0.9, total_iters=8)),
    "ExponentialLR": ("SGD", {}, dict(gamma=0.87)),
    "CosineAnnealingLR": ("SGD", {}, dict(T_max=7, eta_min=0.001)),
    "CosineAnnealingLR-long": ("SGD", {}, dict(T_max=13)),
    "CosineAnnealingWarmRestarts": ("SGD", {}, dict(T_0=3, T_mult=2, eta_min=1e-3)),
    "CosineAnnealingWarmRestarts-mult1": ("SGD", {}, dict(T_0=4)),
    "OneCycleLR-cos-sgd": ("SGD", {"momentum": 0.9}, dict(max_lr=[0.5, 0.1], total_steps=21)),
    "OneCycleLR-linear-adam": ("Adam", {}, dict(max_lr=0.2, total_steps=25,
                                                anneal_strategy="linear", pct_start=0.4)),
    "OneCycleLR-three-phase": ("AdamW", {}, dict(max_lr=0.3, epochs=3, steps_per_epoch=7,
                                                 three_phase=True, base_momentum=0.8,
                                                 max_momentum=0.9, div_factor=10.0,
                                                 final_div_factor=100.0)),
    "OneCycleLR-no-momentum": ("RMSprop", {}, dict(max_lr=0.3, total_steps=20,
                                                   cycle_momentum=False)),
}


def _make(lib, opt_name, opt_kwargs):
    """An optimizer with two param groups (lr 0.1 and 0.02) in either framework."""
    if lib == "tx":
        ps = [tx.zeros(2, requires_grad=True), tx.zeros(3, requires_grad=True)]
        cls = getattr(optim, opt_name)
    else:
        ps = [torch.zeros(2, requires_grad=True), torch.zeros(3, requires_grad=True)]
        cls = getattr(torch.optim, opt_name)
    return cls([{"params": ps[:1]}, {"params": ps[1:], "lr": 0.02}], lr=0.1, **opt_kwargs)


def _sched(lib, name, opt, kwargs):
    mod = S if lib == "tx" else TS
    return getattr(mod, name.split("-")[0])(opt, **kwargs)


def _snapshot(opt, sched):
    rows = []
    for g in opt.param_groups:
        rows.append((g["lr"], g.get("momentum"), tuple(g["betas"]) if "betas" in g else None))
    return rows, list(sched.get_last_lr())


def _trajectory(lib, name, steps=STEPS):
    opt_name, opt_kwargs, kwargs = CASES[name]
    opt = _make(lib, opt_name, opt_kwargs)
    sched = _sched(lib, name, opt, kwargs)
    out = [_snapshot(opt, sched)]
    for _ in range(steps):
        opt.step()
        sched.step()
        out.append(_snapshot(opt, sched))
    return out


def _assert_same(ours, theirs):
    for i, (a, b) in enumerate(zip(ours, theirs)):
        for (lr_a, m_a, be_a), (lr_b, m_b, be_b) in zip(a[0], b[0]):
            assert math.isclose(lr_a, lr_b, rel_tol=1e-13, abs_tol=1e-17), (i, lr_a, lr_b)
            # momentum/betas are None for optimizers without them; pytest >= 9.2 refuses
            # approx(None) with a relative tolerance, so None is compared by identity
            for ours_v, theirs_v in ((m_a, m_b), (be_a, be_b)):
                if theirs_v is None:
                    assert ours_v is None, (i, ours_v)
                else:
                    assert ours_v == pytest.approx(theirs_v, rel=1e-13), (i, ours_v, theirs_v)
        np.testing.assert_allclose(a[1], b[1], rtol=1e-13, err_msg=f"get_last_lr at step {i}")


@pytest.mark.parametrize("name", list(CASES))
def test_schedule_matches_torch(name):
    steps = CASES[name][2].get("total_steps", STEPS) - 1 if "OneCycle" in name else STEPS
    ours, theirs = _trajectory("tx", name, steps), _trajectory("torch", name, steps)
    _assert_same(ours, theirs)
    assert len({round(row[0][0][0], 12) for row in ours}) > 1  # the lr really changed


def test_cosine_annealing_values_are_torchs_recursive_form():
    """Bit-equal, not just close: the recursive form differs from the closed form in the last
    bits, so matching exactly shows we compute what torch computes."""
    ours, theirs = _trajectory("tx", "CosineAnnealingLR-long", 40), \
        _trajectory("torch", "CosineAnnealingLR-long", 40)
    assert [r[0] for r in ours] == [r[0] for r in theirs]


def test_sequential_lr_matches_torch():
    def build(lib):
        opt = _make(lib, "SGD", {"momentum": 0.9})
        mod = S if lib == "tx" else TS
        warm = mod.LinearLR(opt, start_factor=0.1, total_iters=4)
        cos = mod.CosineAnnealingLR(opt, T_max=8, eta_min=0.001)
        step = mod.StepLR(opt, step_size=2, gamma=0.5)
        return opt, mod.SequentialLR(opt, [warm, cos, step], milestones=[4, 12])

    traj = {}
    for lib in ("tx", "torch"):
        opt, sched = build(lib)
        rows = [_snapshot(opt, sched)]
        for _ in range(STEPS):
            opt.step()
            sched.step()
            rows.append(_snapshot(opt, sched))
        traj[lib] = rows
    _assert_same(traj["tx"], traj["torch"])


def test_two_chained_schedulers_compose_like_torch():
    traj = {}
    for lib in ("tx", "torch"):
        opt = _make(lib, "SGD", {})
        mod = S if lib == "tx" else TS
        a, b = mod.ExponentialLR(opt, gamma=0.9), mod.StepLR(opt, step_size=3, gamma=0.5)
        rows = []
        for _ in range(STEPS):
            opt.step()
            a.step()
            b.step()
            rows.append(_snapshot(opt, b))
        traj[lib] = rows
    _assert_same(traj["tx"], traj["torch"])


PLATEAU = [
    dict(),
    dict(mode="max", factor=0.5, patience=1, threshold=0.1, threshold_mode="abs"),
    dict(mode="min", factor=0.5, patience=0, cooldown=2, min_lr=[0.01, 0.005]),
    dict(mode="min", factor=0.3, patience=2, threshold_mode="abs", threshold=0.05,
         min_lr=0.004, eps=1e-3),
    dict(mode="max", patience=1, threshold=0.2),
]


@pytest.mark.parametrize("kwargs", PLATEAU, ids=[str(k) for k in PLATEAU])
def test_reduce_lr_on_plateau_matches_torch(kwargs):
    rng = np.random.default_rng(0)
    metrics = list(np.round(np.concatenate([np.linspace(1, 0.5, 5), 0.5 + rng.random(8) * 0.1,
                                            np.linspace(0.5, 0.2, 4), np.full(13, 0.2)]), 6))
    traj = {}
    for lib in ("tx", "torch"):
        opt = _make(lib, "SGD", {})
        sched = (S if lib == "tx" else TS).ReduceLROnPlateau(opt, **kwargs)
        rows = []
        for m in metrics:
            opt.step()
            sched.step(float(m))
            rows.append((_snapshot(opt, sched), sched.num_bad_epochs, sched.cooldown_counter,
                         sched.best))
        traj[lib] = rows
    for a, b in zip(traj["tx"], traj["torch"]):
        _assert_same([a[0]], [b[0]])
        assert a[1:] == b[1:]
    assert traj["tx"][-1][0][0][0][0] < 0.1  # the lr was reduced at least once


def test_reduce_lr_on_plateau_accepts_tensor_metric():
    opt = _make("tx", "SGD", {})
    sched = S.ReduceLROnPlateau(opt, patience=0)
    sched.step(tx.tensor(1.0))
    sched.step(tx.tensor(2.0))
    assert sched.get_last_lr() == pytest.approx([0.01, 0.002])


RESUMABLE = ["LambdaLR-per-group", "MultiStepLR", "LinearLR", "CosineAnnealingLR",
             "CosineAnnealingWarmRestarts", "OneCycleLR-linear-adam", "OneCycleLR-cos-sgd",
             "ExponentialLR", "ConstantLR", "StepLR"]


@pytest.mark.parametrize("name", RESUMABLE)
def test_state_dict_resume(name, tmp_path):
    """Save optimizer + scheduler mid-run (through a file), restore into fresh objects built
    the same way, and continue exactly as the uninterrupted schedule."""
    straight = _trajectory("tx", name, 18)
    opt_name, opt_kwargs, kwargs = CASES[name]
    opt = _make("tx", opt_name, opt_kwargs)
    sched = _sched("tx", name, opt, kwargs)
    for _ in range(7):
        opt.step()
        sched.step()
    tx.save({"opt": opt.state_dict(), "sched": sched.state_dict()}, tmp_path / "s.safetensors")
    if name == "LambdaLR-per-group":
        sched.lr_lambdas[1].factor = 0.5  # saved in the state dict

    opt2 = _make("tx", opt_name, opt_kwargs)
    sched2 = _sched("tx", name, opt2, kwargs)
    if name == "LambdaLR-per-group":
        sched2.lr_lambdas[1].factor = 0.9  # overwritten by the load
    ck = tx.load(tmp_path / "s.safetensors")
    opt2.load_state_dict(ck["opt"])
    sched2.load_state_dict(ck["sched"])
    rows = [_snapshot(opt2, sched2)]
    for _ in range(11):
        opt2.step()
        sched2.step()
        rows.append(_snapshot(opt2, sched2))
    _assert_same(rows, straight[7:])


def test_sequential_and_plateau_state_dict_round_trip(tmp_path):
    opt = _make("tx", "SGD", {})
    seq = S.SequentialLR(opt, [S.ConstantLR(opt, factor=0.5, total_iters=3),
                               S.ExponentialLR(opt, gamma=0.8)], milestones=[3])
    plateau_opt = _make("tx", "SGD", {})
    plateau = S.ReduceLROnPlateau(plateau_opt, mode="max", patience=0)
    for i in range(5):
        seq.step()
        plateau.step(-i)
    tx.save({"seq": seq.state_dict(), "plateau": plateau.state_dict()}, tmp_path / "s.st")
    ck = tx.load(tmp_path / "s.st")
    opt2, popt2 = _make("tx", "SGD", {}), _make("tx", "SGD", {})
    seq2 = S.SequentialLR(opt2, [S.ConstantLR(opt2, factor=0.5, total_iters=3),
                                 S.ExponentialLR(opt2, gamma=0.8)], milestones=[3])
    plateau2 = S.ReduceLROnPlateau(popt2, mode="max", patience=0)
    seq2.load_state_dict(ck["seq"])
    plateau2.load_state_dict(ck["plateau"])
    opt2.load_state_dict(opt.state_dict())
    popt2.load_state_dict(plateau_opt.state_dict())
    for i in range(5, 9):
        seq.step()
        seq2.step()
        plateau.step(-i)
        plateau2.step(-i)
        assert seq.get_last_lr() == seq2.get_last_lr()
        assert plateau.get_last_lr() == plateau2.get_last_lr()
    assert plateau2.best == plateau.best and plateau2.mode_worse == -math.inf


def test_closed_form_with_epoch_argument_warns_like_torch():
    opt = _make("tx", "SGD", {})
    sched = S.StepLR(opt, step_size=2, gamma=0.5)
    with pytest.warns(UserWarning, match="epoch parameter"):
        sched.step(5)
    assert sched.get_last_lr() == pytest.approx([0.1 * 0.25, 0.02 * 0.25])


def test_warm_restarts_fractional_epochs_match_torch():
    rows = {}
    for lib in ("tx", "torch"):
        opt = _make(lib, "SGD", {})
        sched = (S if lib == "tx" else TS).CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=3)
        out = []
        for epoch in range(6):
            for i in range(4):
                opt.step()
                sched.step(epoch + i / 4)
                out.append(list(sched.get_last_lr()))
        rows[lib] = out
    np.testing.assert_allclose(rows["tx"], rows["torch"], rtol=1e-13)


def test_resume_with_last_epoch_needs_initial_lr():
    opt = _make("tx", "SGD", {})
    with pytest.raises(KeyError, match="StepLR: param 'initial_lr' is not specified in "
                                       r"param_groups\[0\]"):
        S.StepLR(opt, step_size=2, last_epoch=3)


ERRORS = [
    (lambda o: S.StepLR(o, step_size=0), ValueError, "StepLR: step_size must be a positive"),
    (lambda o: S.LinearLR(o, start_factor=0), ValueError, "LinearLR: start_factor expected"),
    (lambda o: S.LinearLR(o, end_factor=2), ValueError, "LinearLR: end_factor expected"),
    (lambda o: S.ConstantLR(o, factor=2), ValueError, "ConstantLR: factor expected"),
    (lambda o: S.LambdaLR(o, [lambda e: 1]), ValueError, "LambdaLR: expected 2 lr_lambdas"),
    (lambda o: S.MultiplicativeLR(o, 0.5), TypeError, "MultiplicativeLR: lr_lambda should be"),
    (lambda o: S.CosineAnnealingWarmRestarts(o, T_0=0), ValueError,
     "expected positive integer T_0"),
    (lambda o: S.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=0), ValueError,
     "expected integer T_mult >= 1"),
    (lambda o: S.OneCycleLR(o, max_lr=1.0), ValueError,
     "OneCycleLR: you must define either total_steps"),
    (lambda o: S.OneCycleLR(o, max_lr=1.0, total_steps=-2), ValueError,
     "expected positive integer total_steps"),
    (lambda o: S.OneCycleLR(o, max_lr=1.0, total_steps=5, pct_start=2.0), ValueError,
     "expected float between 0 and 1 pct_start"),
    (lambda o: S.OneCycleLR(o, max_lr=1.0, total_steps=5, anneal_strategy="exp"), ValueError,
     "anneal_strategy must be one of"),
    (lambda o: S.OneCycleLR(o, max_lr=[1.0], total_steps=5), ValueError,
     "OneCycleLR: max_lr must have the same length as optimizer.param_groups"),
    (lambda o: S.OneCycleLR(o, max_lr=1.0, total_steps=5), ValueError,
     "optimizer must support momentum or beta1"),
    (lambda o: S.ReduceLROnPlateau(o, factor=1.0), ValueError, "factor should be < 1.0"),
    (lambda o: S.ReduceLROnPlateau(o, mode="mid"), ValueError, "mode 'mid' is unknown"),
    (lambda o: S.ReduceLROnPlateau(o, threshold_mode="x"), ValueError,
     "threshold mode 'x' is unknown"),
    (lambda o: S.ReduceLROnPlateau(o, min_lr=[0.1]), ValueError,
     "min_lr must have the same length"),
    (lambda o: S.SequentialLR(o, [], milestones=[]), ValueError, "at least one scheduler"),
    (lambda o: S.SequentialLR(o, [S.StepLR(o, 2), S.StepLR(o, 3)], milestones=[]),
     ValueError, "one milestone fewer than schedulers"),
    (lambda o: S.SequentialLR(o, [S.ReduceLROnPlateau(o)], milestones=[]), ValueError,
     "does not support ReduceLROnPlateau"),
    (lambda o: S.StepLR("sgd", 2), TypeError, "StepLR: str is not an Optimizer"),
]


@pytest.mark.parametrize("build,exc,match", ERRORS, ids=[m for _, _, m in ERRORS])
def test_scheduler_errors(build, exc, match):
    # RMSprop has neither `momentum` cycling disabled nor betas -> has momentum; use Adagrad
    # (no momentum, no betas) for the OneCycleLR momentum error
    opt = _make("tx", "Adagrad", {})
    with pytest.raises(exc, match=match):
        build(opt)


def test_one_cycle_too_many_steps():
    opt = _make("tx", "SGD", {"momentum": 0.9})
    sched = S.OneCycleLR(opt, max_lr=0.5, total_steps=3)
    for _ in range(3):
        sched.step()
    with pytest.raises(ValueError, match="OneCycleLR: tried to step 4 times"):
        sched.step()
