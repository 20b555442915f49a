"""LBFGS against torch's, iterate by iterate, in float64 (Rosenbrock and a least-squares
model), with and without the strong-Wolfe line search."""

import numpy as np
import pytest

import tensorix as tx

torch = pytest.importorskip("torch")


def _rosenbrock(lib, xy):
    x, y = xy[0], xy[1]
    return (1 - x) ** 2 + 100 * (y - x**2) ** 2


def _run(lib, start, loss_fn, steps, **kw):
    """Iterates of LBFGS on ``loss_fn`` from ``start`` (a list of arrays) in library ``lib``."""
    params = [lib.tensor(a.copy(), dtype=lib.float64, requires_grad=True) for a in start]
    opt = lib.optim.LBFGS(params, **kw)

    def closure():
        opt.zero_grad()
        loss = loss_fn(lib, *params)
        loss.backward()
        return loss

    path = []
    for _ in range(steps):
        loss = opt.step(closure)
        path.append((float(loss.detach()), [p.detach().numpy().copy() for p in params]))
    state = opt.state[params[0]]
    return path, state["func_evals"], state["n_iter"]


def _least_squares(lib, w, b):
    rng = np.random.default_rng(0)
    x = lib.tensor(rng.normal(size=(32, 5)), dtype=lib.float64)
    y = lib.tensor(rng.normal(size=(32, 2)), dtype=lib.float64)
    pred = x @ w + b
    return ((pred - y) ** 2).mean() + 0.01 * (w**2).sum()


CASES = {
    "rosenbrock": (lambda: [np.array([-1.5, 2.0])], lambda lib, p: _rosenbrock(lib, p)),
    "least_squares": (lambda: [np.random.default_rng(1).normal(size=(5, 2)), np.zeros(2)],
                      _least_squares),
}


@pytest.mark.parametrize("case", sorted(CASES))
# torch's ``add_(v, alpha=a)`` is a fused multiply-add (one rounding), NumPy's ``+= a * v``
# rounds twice; along Rosenbrock's curved valley that last-bit difference grows about 10x per
# 20 iterations (1e-16 at iteration 7, 2e-12 at 14 with history_size=3), so the runs are as
# long as stays within 1e-10: the fixed-step run overshoots (loss 3 -> 25 at step 7) and
# takes 4 steps, the short-history one 2 steps (14 iterations).
@pytest.mark.parametrize("kw,steps", [
    (dict(line_search_fn="strong_wolfe"), 6),
    (dict(line_search_fn=None, lr=0.1), 4),
    (dict(line_search_fn="strong_wolfe", history_size=3, max_iter=7, tolerance_change=1e-12), 2),
    (dict(line_search_fn=None, lr=0.05, history_size=2, max_iter=5, max_eval=4), 6),
], ids=["wolfe", "fixed", "wolfe-short-history", "fixed-max-eval"])
def test_iterates_match_torch(case, kw, steps):
    start, fn = CASES[case]
    ours, evals, iters = _run(tx, start(), fn, steps, **kw)
    theirs, t_evals, t_iters = _run(torch, start(), fn, steps, **kw)
    assert (evals, iters) == (t_evals, t_iters)
    for (l1, p1), (l2, p2) in zip(ours, theirs):
        assert abs(l1 - l2) <= 1e-10 * max(1.0, abs(l2))
        for a, b in zip(p1, p2):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)


def test_rosenbrock_converges_with_strong_wolfe():
    path, _, _ = _run(tx, [np.array([-1.5, 2.0])], lambda lib, p: _rosenbrock(lib, p), 10,
                      line_search_fn="strong_wolfe", max_iter=50)
    # stops on tolerance_change: the valley is flat, so the point is 1e-5 from the minimum
    np.testing.assert_allclose(path[-1][1][0], [1.0, 1.0], atol=1e-5)
    assert path[-1][0] < 1e-9


def test_state_dict_round_trip_continues_identically():
    start, fn = CASES["least_squares"]
    kw = dict(line_search_fn="strong_wolfe", max_iter=3)
    ref, _, _ = _run(tx, start(), fn, 4, **kw)

    params = [tx.tensor(a.copy(), requires_grad=True) for a in start()]
    opt = tx.optim.LBFGS(params, **kw)

    def closure():
        opt.zero_grad()
        loss = fn(tx, *params)
        loss.backward()
        return loss

    for _ in range(2):
        opt.step(closure)
    sd = opt.state_dict()
    opt2 = tx.optim.LBFGS(params, **kw)
    opt2.load_state_dict(sd)
    opt = opt2
    for _ in range(2):
        opt.step(closure)
    np.testing.assert_allclose(params[0].detach().numpy(), ref[-1][1][0], rtol=0, atol=0)


def test_bad_arguments_name_the_argument():
    w = tx.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="line_search_fn"):
        tx.optim.LBFGS([w], line_search_fn="armijo")
    with pytest.raises(ValueError, match="lr"):
        tx.optim.LBFGS([w], lr=-1)
    with pytest.raises(ValueError, match="parameter groups"):
        tx.optim.LBFGS([{"params": [w]}, {"params": [tx.zeros(1, requires_grad=True)]}])
    with pytest.raises(RuntimeError, match="closure"):
        tx.optim.LBFGS([w]).step(None)
