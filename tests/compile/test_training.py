"""Training inside tensorix.compile and graph breaks as partial graphs: a compiled step
(forward, backward(), optimizer step, zero_grad) equals eager's parameters after N steps, with
dropout drawing eager's masks; a data-dependent branch runs as compiled pieces around the
break, each branch traced once, the break shown by ``explain()``."""

import numpy as np
import pytest

import tensorix as tx
import tensorix.nn.functional as F
from tensorix._compile.segments import RECOMPILE_LIMIT
from tensorix.fx import GraphBreak

NUMPY = {"kernels": "numpy"}


def _np(t):
    return t.detach().cpu().numpy()


def _mlp(dtype, dropout=0.0):
    tx.manual_seed(0)
    return tx.nn.Sequential(tx.nn.Linear(6, 32), tx.nn.GELU(), tx.nn.Dropout(dropout),
                            tx.nn.Linear(32, 3)).to(dtype)


def _train(model, compiled, steps, make_batch, loss_fn, opt_cls=tx.optim.AdamW):
    """``steps`` training steps written as torch.compile users write them; returns the
    losses, the compiled function (or None) and the default generator's state after."""
    opt = opt_cls(model.parameters(), lr=1e-2)

    def step(x, y):
        opt.zero_grad()
        loss = loss_fn(model, x, y)
        loss.backward()
        opt.step()
        return loss

    fn = tx.compile(step, options=NUMPY) if compiled else step
    batches = tx.Generator().manual_seed(3)
    tx.manual_seed(5)  # the stream dropout draws from
    losses = [fn(*make_batch(batches)).item() for _ in range(steps)]
    return losses, (fn if compiled else None), _np(tx.default_generator.get_state())


def _mse(model, x, y):
    return F.mse_loss(model(x), y)


@pytest.mark.parametrize("dtype,tol", [(tx.float64, 1e-12), (tx.float32, 1e-6)])
def test_compiled_training_step_with_dropout_equals_eager(dtype, tol):
    def batch(g):
        return tx.randn(16, 6, generator=g, dtype=dtype), tx.randn(16, 3, generator=g,
                                                                   dtype=dtype)

    ref, comp = _mlp(dtype, 0.3), _mlp(dtype, 0.3)
    losses_ref, _, rng_ref = _train(ref, False, 5, batch, _mse)
    losses, fn, rng = _train(comp, True, 5, batch, _mse)
    np.testing.assert_allclose(losses, losses_ref, rtol=tol, atol=tol)
    for p, q in zip(ref.parameters(), comp.parameters()):
        np.testing.assert_allclose(_np(q), _np(p), rtol=tol, atol=tol)
    np.testing.assert_array_equal(rng, rng_ref)  # the generator advanced as in eager
    assert fn.stats["compiles"] == 1 and fn.stats["hits"] == 4 and not fn.stats["breaks"]
    report = fn.explain()
    # zero_grad, backward and step are replayed effects, not breaks (explain lists them apart)
    assert report.graph_count == 1 and report.graph_break_count == 0
    assert report.effect_count == 3 and report.effects[1] == "backward()"
    assert "DropoutMask" in str(next(iter(fn.entries.values())).program.steps[1].graph.code)


class _PlainSGD(tx.optim.Optimizer):
    """An optimizer written as torch users write their own: its own ``step`` and
    ``zero_grad``, updating parameters in place."""

    def __init__(self, params, lr):
        super().__init__(params, {"lr": lr})

    @tx.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.sub_(group["lr"] * p.grad)

    def zero_grad(self, set_to_none=True):
        for group in self.param_groups:
            for p in group["params"]:
                p.grad = None


def test_a_users_own_optimizer_step_is_replayed_like_the_builtin_ones():
    """Every Optimizer subclass's step and zero_grad are recorded effects inside compile (a
    user's own too), so the compiled step equals eager's and is one graph."""
    def batch(g):
        return (tx.randn(16, 6, generator=g, dtype=tx.float64),
                tx.randn(16, 3, generator=g, dtype=tx.float64))

    ref, comp = _mlp(tx.float64), _mlp(tx.float64)
    losses_ref, _, _ = _train(ref, False, 4, batch, _mse, _PlainSGD)
    losses, fn, _ = _train(comp, True, 4, batch, _mse, _PlainSGD)
    np.testing.assert_allclose(losses, losses_ref, rtol=1e-12, atol=1e-12)
    for p, q in zip(ref.parameters(), comp.parameters()):
        np.testing.assert_allclose(_np(q), _np(p), rtol=1e-12, atol=1e-12)
    report = fn.explain()
    assert fn.stats["compiles"] == 1 and not fn.stats["breaks"]
    # zero_grad, backward and step are replayed effects, not breaks (explain lists them apart)
    assert report.graph_count == 1 and report.graph_break_count == 0
    assert report.effect_count == 3 and report.effects[1] == "backward()"


@pytest.mark.parametrize("clip", ["norm", "value"])
def test_gradient_clipping_and_lr_schedulers_are_replayed_effects(clip):
    """clip_grad_norm_ / clip_grad_value_ (read and scale .grad between backward and step)
    and lr schedulers' step (set the optimizer's lr: Python state) are effects inside
    compile: one graph, replayed on every call, and the parameters, the lrs and the returned
    norm equal eager's."""
    def run(compiled):
        tx.manual_seed(0)
        net = tx.nn.Sequential(tx.nn.Linear(6, 16), tx.nn.Tanh(),
                               tx.nn.Linear(16, 3)).to(tx.float64)
        opt = tx.optim.AdamW(net.parameters(), lr=0.1)
        steplr = tx.optim.lr_scheduler.StepLR(opt, 2, 0.5)
        plateau = tx.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=0, factor=0.9)

        def step(x, y):
            opt.zero_grad()
            loss = F.mse_loss(net(x), y)
            loss.backward()
            if clip == "norm":
                norm = tx.nn.utils.clip_grad_norm_(net.parameters(), 0.05)
            else:
                tx.nn.utils.clip_grad_value_(net.parameters(), 0.01)
                norm = loss
            opt.step()
            steplr.step()
            plateau.step(loss)
            return loss, norm

        fn = tx.compile(step) if compiled else step
        g = tx.Generator().manual_seed(1)
        out = [fn(tx.randn(8, 6, generator=g, dtype=tx.float64) * 5,
                  tx.randn(8, 3, generator=g, dtype=tx.float64)) for _ in range(6)]
        lrs = [opt.param_groups[0]["lr"]]
        return net, [(float(a), float(b)) for a, b in out], lrs, fn

    ref, out_ref, lrs_ref, _ = run(False)
    comp, out, lrs, fn = run(True)
    if clip == "norm":
        assert max(n for _, n in out_ref) > 0.05  # the clipping did something
    np.testing.assert_allclose(out, out_ref, rtol=1e-12, atol=1e-12)
    assert lrs == lrs_ref and lrs[0] < 0.1 * 0.5 ** 2
    for p, q in zip(ref.parameters(), comp.parameters()):
        np.testing.assert_allclose(_np(q), _np(p), rtol=1e-12, atol=1e-12)
    report = fn.explain()
    assert fn.stats["compiles"] == 1 and not fn.stats["breaks"] and report.graph_count == 1
    assert "clip_grad" in str(report) and "StepLR.step()" in str(report)
    # the clipping and the scheduler are listed as effects, none as a graph break
    assert report.graph_break_count == 0 and "StepLR.step()" in report.effects
    assert any("clip_grad" in e for e in report.effects)


def test_compiled_gpt_training_step_equals_eager():
    from tensorix import demo

    def model():
        tx.manual_seed(0)
        return demo.CharGPT(17, 8, d_model=16, n_heads=2, n_layers=1).to(tx.float64)

    def batch(g):
        return tx.randint(0, 17, (2, 8), generator=g), tx.randint(0, 17, (2, 8), generator=g)

    ref, comp = model(), model()
    losses_ref, _, _ = _train(ref, False, 3, batch, demo._lm_loss)
    losses, fn, _ = _train(comp, True, 3, batch, demo._lm_loss)
    np.testing.assert_allclose(losses, losses_ref, rtol=1e-12)
    for p, q in zip(ref.parameters(), comp.parameters()):
        np.testing.assert_allclose(_np(q), _np(p), rtol=1e-12, atol=1e-12)
    assert fn.explain().graph_count == 1


def test_dropout_masks_are_eagers_and_two_draws_stay_two():
    drop = tx.nn.Dropout(0.5)
    f = lambda x: drop(x) + drop(x)  # noqa: E731  two draws: never merged by CSE
    cf = tx.compile(f, options=NUMPY)
    x = tx.ones(64)
    for _ in range(3):
        state = tx.get_rng_state()
        out = cf(x)
        after = _np(tx.get_rng_state())
        tx.set_rng_state(state)
        np.testing.assert_array_equal(_np(out), _np(f(x)))
        np.testing.assert_array_equal(_np(tx.get_rng_state()), after)
    assert cf.stats == {**cf.stats, "compiles": 1, "hits": 2, "breaks": []}
    a, b = cf(x), cf(x)
    assert not np.array_equal(_np(a), _np(b))  # each call draws anew


def test_random_numbers_drawn_outside_the_dispatcher_are_a_break():
    cf = tx.compile(lambda x: x + tx.rand(x.shape[0]), options=NUMPY)
    a, b = cf(tx.zeros(32)), cf(tx.zeros(32))
    assert not np.array_equal(_np(a), _np(b))
    assert any("drawn outside the dispatcher" in r for r in cf.stats["breaks"])


def _branchy(x, w):
    h = (x * w).tanh()
    if h.sum() > 0:  # data-dependent Python
        return (h * 2.0).exp().sum()
    return (h - 1.0).sin().sum()


def test_a_data_dependent_branch_compiles_into_pieces_around_the_break():
    cf = tx.compile(_branchy, options=NUMPY)
    w = tx.randn(5, dtype=tx.float64, requires_grad=True)
    pos, neg = tx.ones(5, dtype=tx.float64), -tx.ones(5, dtype=tx.float64)
    sign = 1.0 if float(w.sum()) > 0 else -1.0
    for x in (pos * sign, neg * sign, pos * sign, neg * sign, pos * sign * 2):
        ref = _branchy(x, w)
        (g_ref,) = tx.autograd.grad(ref, [w])
        out = cf(x, w)
        (g,) = tx.autograd.grad(out, [w])  # through the pieces' compiled backwards
        np.testing.assert_allclose(_np(out), _np(ref), rtol=1e-12)
        np.testing.assert_allclose(_np(g), _np(g_ref), rtol=1e-12, atol=1e-14)
    assert cf.stats["compiles"] == 1 and cf.stats["recompiles"] == 1  # the second branch
    report = cf.explain()
    assert report.graph_break_count == 1 and "item()/bool()" in report.break_reasons[0]
    assert report.graph_count == 3  # before the break, and one per branch
    text = str(report)
    assert "when item()/bool() = True" in text and "when item()/bool() = False" in text
    with pytest.raises(GraphBreak, match="fullgraph"):
        tx.compile(_branchy, fullgraph=True)(pos, w)


def test_a_value_read_recompiles_until_the_limit_then_runs_eagerly():
    f = lambda x: x * x.sum().item()  # noqa: E731  a float guard: a new value each call
    cf = tx.compile(f, options=NUMPY)
    for k in range(RECOMPILE_LIMIT + 3):
        x = tx.full((3,), float(k))
        np.testing.assert_array_equal(_np(cf(x)), _np(f(x)))
    assert cf.stats["recompiles"] == RECOMPILE_LIMIT + 1  # the last one gave up
    assert any("recompile limit" in r for r in cf.stats["breaks"])


def test_a_read_after_an_effect_runs_that_key_eagerly():
    model = _mlp(tx.float64)
    opt = tx.optim.SGD(model.parameters(), lr=0.1)

    def step(x, y):
        loss = _mse(model, x, y)
        loss.backward()
        if loss > 1e9:  # after backward(): no resuming from here on a new branch
            opt.zero_grad()
        opt.step()
        return loss

    cf = tx.compile(step, options=NUMPY)
    cf(tx.randn(4, 6, dtype=tx.float64), tx.randn(4, 3, dtype=tx.float64))
    assert any("after an effect" in r for r in cf.stats["breaks"])


def test_grad_mode_inside_a_piece_is_kept():
    def f(x):
        with tx.no_grad():
            scale = x.abs().max()
        if scale > 0:
            return (x / scale).sum()
        return x.sum()

    cf = tx.compile(f, options=NUMPY)
    for _ in range(2):
        x = tx.randn(6, dtype=tx.float64, requires_grad=True)
        (g_ref,) = tx.autograd.grad(f(x), [x])
        (g,) = tx.autograd.grad(cf(x), [x])
        np.testing.assert_allclose(_np(g), _np(g_ref), rtol=1e-12)


def test_a_non_leaf_input_gets_its_gradient():
    # was: the compiled backward only returned gradients for leaves, so x.grad stayed None
    cf = tx.compile(lambda h: (h * h).sum(), options=NUMPY)
    x = tx.randn(4, dtype=tx.float64, requires_grad=True)
    for _ in range(2):
        x.grad = None
        cf(x * 2.0).backward()
        np.testing.assert_allclose(_np(x.grad), 8.0 * _np(x), rtol=1e-12)


def test_a_parameter_changed_behind_the_dispatcher_is_a_break():
    w = tx.randn(3)

    def f(x):
        out = (x * w).sum()
        w._data += 1.0  # an update no op and no recorded effect made
        w._version[0] += 1
        return out

    cf = tx.compile(f, options=NUMPY)
    cf(tx.ones(3))
    assert any("changed in place" in r for r in cf.stats["breaks"])
