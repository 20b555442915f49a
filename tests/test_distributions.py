"""``tensorix.distributions`` against ``torch.distributions``: log_prob, cdf/icdf, entropy and
moments (values and parameter gradients), every registered KL pair, float64 numerical gradient
checks, sample statistics with a fixed seed, reparameterized-sample gradients (exact for the
location-scale families, per-sample equal to torch's implicit gradient for Gamma, equal in
expectation for Beta/Dirichlet), shapes, expand, validation and the KL registry."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tensorix as tx
from tensorix.distributions import constraints
from tensorix.testing import assert_close, gradcheck

torch = pytest.importorskip("torch")
D = tx.distributions
TD = torch.distributions


def _spd(rng, n, batch=()):
    a = rng.standard_normal(batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def _cases(rng):
    """name -> (parameter arrays, constructor keywords, a value generator on the support)."""
    pos = lambda *s: rng.uniform(0.5, 3.0, s)  # noqa: E731
    L = np.linalg.cholesky(_spd(rng, 3, (2,)))
    return {
        "Normal": (dict(loc=rng.standard_normal((2, 3)), scale=pos(2, 3)), {},
                   lambda: rng.standard_normal((4, 2, 3))),
        "Uniform": (dict(low=-pos(2, 3), high=pos(2, 3)), {},
                    lambda: rng.uniform(-0.4, 0.4, (4, 2, 3))),
        "Bernoulli[probs]": (dict(probs=rng.uniform(0.1, 0.9, (2, 3))), {},
                             lambda: rng.integers(0, 2, (4, 2, 3)).astype(float)),
        "Bernoulli[logits]": (dict(logits=rng.standard_normal((2, 3))), {},
                              lambda: rng.integers(0, 2, (4, 2, 3)).astype(float)),
        "Categorical[probs]": (dict(probs=pos(2, 5)), {}, lambda: rng.integers(0, 5, (4, 2))),
        "Categorical[logits]": (dict(logits=rng.standard_normal((2, 5))), {},
                                lambda: rng.integers(0, 5, (4, 2))),
        "Gamma": (dict(concentration=pos(2, 3), rate=pos(2, 3)), {},
                  lambda: rng.uniform(0.1, 4.0, (4, 2, 3))),
        "Beta": (dict(concentration1=pos(2, 3), concentration0=pos(2, 3)), {},
                 lambda: rng.uniform(0.05, 0.95, (4, 2, 3))),
        "Dirichlet": (dict(concentration=pos(2, 4)), {},
                      lambda: rng.dirichlet(np.ones(4), (4, 2))),
        "MultivariateNormal[scale_tril]": (dict(loc=rng.standard_normal((2, 3)), scale_tril=L),
                                           {}, lambda: rng.standard_normal((4, 2, 3))),
        "MultivariateNormal[covariance_matrix]": (
            dict(loc=rng.standard_normal(3), covariance_matrix=_spd(rng, 3, (2,))), {},
            lambda: rng.standard_normal((4, 2, 3))),
        "MultivariateNormal[precision_matrix]": (
            dict(loc=rng.standard_normal((2, 3)), precision_matrix=_spd(rng, 3)), {},
            lambda: rng.standard_normal((4, 2, 3))),
    }


NAMES = list(_cases(np.random.default_rng(0)))
METHODS = {"Normal": ("cdf", "icdf"), "Uniform": ("cdf", "icdf"), "Gamma": ("cdf",)}


def _make(lib, name, params, grad):
    cls = name.split("[")[0]
    if lib is tx:
        ps = {k: tx.tensor(v, requires_grad=grad) for k, v in params.items()}
        return getattr(D, cls)(**ps), ps
    ps = {k: torch.tensor(v, requires_grad=grad) for k, v in params.items()}
    return getattr(TD, cls)(**ps), ps


def _value(lib, arr, name):
    if name.startswith("Categorical"):
        return tx.tensor(arr) if lib is tx else torch.tensor(arr)
    return tx.tensor(arr) if lib is tx else torch.tensor(arr)


def _quantities(name, d, lib, value, unit):
    out = {"log_prob": d.log_prob(value), "entropy": d.entropy()}
    if not name.startswith("Categorical"):
        out.update(mean=d.mean, variance=d.variance, stddev=d.stddev)
    for m in METHODS.get(name, ()):
        out[m] = getattr(d, m)(unit if m == "icdf" else value)
    if name.startswith("MultivariateNormal"):
        out.update(scale_tril=d.scale_tril, covariance_matrix=d.covariance_matrix,
                   precision_matrix=d.precision_matrix)
    return out


@pytest.mark.parametrize("name", NAMES)
def test_values_and_gradients_against_torch(name):
    rng = np.random.default_rng(7)
    params, _, gen = _cases(rng)[name]
    value, unit = gen(), rng.uniform(0.05, 0.95, (4, 2, 3))
    results = {}
    for lib in (torch, tx):
        d, ps = _make(lib, name, params, True)
        q = _quantities(name, d, lib, _value(lib, value, name), lib.tensor(unit))
        assert tuple(d.batch_shape) == tuple(_make(torch, name, params, False)[0].batch_shape)
        grads = {}
        for key, out in q.items():
            w = np.random.default_rng(len(key)).standard_normal(tuple(out.shape))
            total = (out * lib.tensor(w)).sum()
            try:
                g = (torch.autograd.grad if lib is torch else tx.autograd.grad)(
                    total, list(ps.values()), allow_unused=True, retain_graph=True)
            except NotImplementedError:  # Gamma.cdf in its concentration, in both
                g = NotImplementedError
            grads[key] = g
        results[lib.__name__] = (q, grads)
    (tq, tg), (xq, xg) = results["torch"], results["tensorix"]
    for key in tq:
        assert_close(xq[key].detach(), tq[key], what=f"{name}.{key}")
        if tg[key] is NotImplementedError or xg[key] is NotImplementedError:
            assert tg[key] is xg[key], (name, key)
            continue
        for gx, gt, p in zip(xg[key], tg[key], params):
            if p == "scale_tril" and key == "precision_matrix":
                # torch's cholesky_inverse backward also fills the (unread) upper triangle
                gx, gt = gx.tril(), gt.tril()
            if gt is None:
                assert gx is None or float(gx.abs().max()) == 0, (name, key, p)
            else:
                assert_close(gx, gt, rtol=1e-6, atol=1e-8, what=f"d {name}.{key} / d {p}")


def _kl_pairs(rng):
    pos = lambda *s: tx.tensor(rng.uniform(0.5, 3.0, s))  # noqa: E731
    rl = lambda *s: tx.tensor(rng.standard_normal(s))  # noqa: E731
    f64 = tx.float64
    n = {"Normal": lambda: dict(loc=rl(3), scale=pos(3)),
         "Uniform": lambda: dict(low=tx.tensor([0.1, -1.0, 0.2], dtype=f64),
                                 high=tx.tensor([0.9, 2.0, 0.7], dtype=f64)),
         "UniformWide": lambda: dict(low=-pos(3) - 1, high=pos(3) + 1),
         "Bernoulli": lambda: dict(probs=tx.tensor([0.0, 0.3, 1.0, 0.6], dtype=f64)),
         "Bernoulli2": lambda: dict(probs=tx.tensor([0.2, 0.0, 0.5, 1.0], dtype=f64)),
         "Categorical": lambda: dict(probs=tx.tensor([[0.0, 0.5, 0.5], [0.2, 0.3, 0.5]],
                                                     dtype=f64)),
         "Categorical2": lambda: dict(logits=rl(2, 3)),
         "Gamma": lambda: dict(concentration=pos(3), rate=pos(3)),
         "Beta": lambda: dict(concentration1=pos(3), concentration0=pos(3)),
         "Dirichlet": lambda: dict(concentration=pos(2, 4)),
         "MultivariateNormal": lambda: dict(loc=rl(2, 3), scale_tril=tx.tensor(
             np.linalg.cholesky(_spd(rng, 3, (2,)))))}
    pairs = [("Normal", "Normal"), ("Bernoulli", "Bernoulli2"), ("Categorical", "Categorical2"),
             ("Categorical2", "Categorical"), ("Uniform", "UniformWide"),
             ("UniformWide", "Uniform"), ("Beta", "Beta"), ("Gamma", "Gamma"),
             ("Dirichlet", "Dirichlet"), ("MultivariateNormal", "MultivariateNormal"),
             ("Normal", "Beta"), ("Normal", "Gamma"), ("Normal", "Uniform"), ("Gamma", "Beta"),
             ("Gamma", "Uniform"), ("Beta", "Gamma"), ("Beta", "Normal"), ("Beta", "Uniform"),
             ("Beta", "UniformWide"), ("Gamma", "Normal"), ("Uniform", "Beta"),
             ("UniformWide", "Beta"), ("Uniform", "Gamma"), ("UniformWide", "Gamma"),
             ("Uniform", "Normal")]
    return [(a, b, n[a](), n[b]()) for a, b in pairs]


def _cls(key):
    return key.rstrip("2").replace("Wide", "")


def test_every_torch_kl_pair_among_these_is_registered():
    from torch.distributions.kl import _KL_REGISTRY

    from tensorix.distributions.kl import _KL_REGISTRY as OURS
    names = {"Normal", "Categorical", "Bernoulli", "Uniform", "MultivariateNormal", "Beta",
             "Gamma", "Dirichlet", "Independent"}
    theirs = {(p.__name__, q.__name__) for p, q in _KL_REGISTRY
              if p.__name__ in names and q.__name__ in names}
    assert theirs == {(p.__name__, q.__name__) for p, q in OURS}


@pytest.mark.parametrize("case", range(25))
def test_kl_values_and_gradients_against_torch(case):
    a, b, pa, pb = _kl_pairs(np.random.default_rng(3))[case]
    out = {}
    for lib in (torch, tx):
        conv = (lambda t: torch.tensor(t.numpy(), requires_grad=True)) if lib is torch else (
            lambda t: t.detach().clone().requires_grad_())
        qa, qb = {k: conv(v) for k, v in pa.items()}, {k: conv(v) for k, v in pb.items()}
        mod = TD if lib is torch else D
        kl = mod.kl_divergence(getattr(mod, _cls(a))(**qa, validate_args=False),
                               getattr(mod, _cls(b))(**qb, validate_args=False))
        finite = kl.detach().isfinite() if lib is tx else torch.isfinite(kl.detach())
        leaves = list(qa.values()) + list(qb.values())
        if bool(finite.any()):
            total = kl[finite].sum()
            g = (torch.autograd.grad if lib is torch else tx.autograd.grad)(
                total, leaves, allow_unused=True)
        else:
            g = [None] * len(leaves)
        out[lib.__name__] = (kl, g)
    assert_close(out["tensorix"][0].detach(), out["torch"][0], what=f"KL({a} || {b})")
    for gx, gt in zip(out["tensorix"][1], out["torch"][1]):
        if gt is not None and gx is not None:
            assert_close(gx, gt, rtol=1e-6, atol=1e-8, what=f"grad KL({a} || {b})")
        else:
            assert (gx is None or float(gx.abs().max()) == 0) and (
                gt is None or float(gt.abs().max()) == 0)


def test_kl_independent_and_errors():
    rng = np.random.default_rng(0)
    p = D.Independent(D.Normal(tx.tensor(rng.standard_normal((2, 3))), tx.ones(2, 3)), 1)
    q = D.Independent(D.Normal(tx.zeros(2, 3), tx.full((2, 3), 2.0)), 1)
    want = TD.kl_divergence(TD.Independent(TD.Normal(torch.tensor(p.base_dist.loc.numpy()),
                                                     torch.ones(2, 3)), 1),
                            TD.Independent(TD.Normal(torch.zeros(2, 3), torch.full((2, 3), 2.0)),
                                           1))
    assert_close(D.kl_divergence(p, q), want, dtype=tx.float32)
    with pytest.raises(NotImplementedError, match="No KL.*Categorical and q type Normal"):
        D.kl_divergence(D.Categorical(logits=tx.zeros(3)), D.Normal(0.0, 1.0))
    with pytest.raises(ValueError, match="different event shapes"):
        D.kl_divergence(D.MultivariateNormal(tx.zeros(2), tx.eye(2)),
                        D.MultivariateNormal(tx.zeros(3), tx.eye(3)))


def test_register_kl_dispatches_to_the_most_specific_pair():
    class MyNormal(D.Normal):
        pass

    @D.register_kl(MyNormal, D.Normal)
    def _mine(p, q):
        return p.loc * 0 + 42.0

    p, q = MyNormal(tx.zeros(2), tx.ones(2)), D.Normal(tx.ones(2), tx.ones(2))
    assert D.kl_divergence(p, q).tolist() == [42.0, 42.0]
    assert D.kl_divergence(q, p).tolist() == [0.5, 0.5]  # Normal/Normal for the reverse
    with pytest.raises(TypeError, match="register_kl"):
        D.register_kl(int, D.Normal)


# -- numerical gradient checks --------------------------------------------------------------------
@pytest.mark.parametrize("name", [n for n in NAMES if "Categorical" not in n or "logits" in n])
def test_numerical_gradcheck_of_log_prob_and_entropy(name):
    rng = np.random.default_rng(11)
    params, _, gen = _cases(rng)[name]
    value = _value(tx, gen(), name)
    keys = list(params)
    ps = [tx.tensor(params[k], requires_grad=True) for k in keys]
    cls = getattr(D, name.split("[")[0])

    def fn(*xs):  # matrices symmetrized: the functions read one triangle of them
        xs = [(x + x.mT) / 2 if k in ("covariance_matrix", "precision_matrix") else x
              for k, x in zip(keys, xs)]
        d = cls(**dict(zip(keys, xs)), validate_args=False)
        return d.log_prob(value), d.entropy()
    gradcheck(fn, ps, name=name, eps=1e-7)


# -- sampling -------------------------------------------------------------------------------------
SAMPLED = {
    "Normal": lambda: D.Normal(tx.tensor([0.5, -2.0]), tx.tensor([1.0, 3.0])),
    "Uniform": lambda: D.Uniform(tx.tensor([0.0, -2.0]), tx.tensor([1.0, 5.0])),
    "Bernoulli": lambda: D.Bernoulli(probs=tx.tensor([0.2, 0.7])),
    "Gamma": lambda: D.Gamma(tx.tensor([0.3, 4.0]), tx.tensor([1.0, 2.0])),
    "Beta": lambda: D.Beta(tx.tensor([0.5, 3.0]), tx.tensor([2.0, 1.5])),
    "Dirichlet": lambda: D.Dirichlet(tx.tensor([[0.5, 1.0, 3.0]])),
    "MultivariateNormal": lambda: D.MultivariateNormal(
        tx.tensor([1.0, -1.0]), covariance_matrix=tx.tensor([[2.0, 0.6], [0.6, 1.0]])),
}


@pytest.mark.parametrize("name", list(SAMPLED))
def test_sample_moments_within_standard_errors(name):
    tx.manual_seed(0)
    d, n = SAMPLED[name](), 40000
    for draw in (d.sample, d.rsample) if d.has_rsample else (d.sample,):
        x = draw((n,)).double().numpy()
        assert x.shape == (n,) + tuple(d.batch_shape) + tuple(d.event_shape)
        assert bool(d.support.check(tx.tensor(x).to(d.mean.dtype)).all())
        mean, var = d.mean.double().numpy(), d.variance.double().numpy()
        se_mean = np.sqrt(var / n)
        assert np.all(np.abs(x.mean(0) - mean) < 5 * se_mean), (name, x.mean(0), mean)
        fourth = ((x - mean) ** 4).mean(0)
        se_var = np.sqrt(np.maximum(fourth - var ** 2, 1e-12) / n)
        assert np.all(np.abs(x.var(0) - var) < 5 * se_var + 1e-6), (name, x.var(0), var)
    if name == "MultivariateNormal":
        cov = np.cov(d.sample((n,)).double().numpy().T)
        assert_close(cov, d.covariance_matrix.double(), rtol=0.05, atol=0.05)


def test_categorical_sample_frequencies():
    tx.manual_seed(0)
    probs = np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]])
    x = D.Categorical(probs=tx.tensor(probs)).sample((30000,)).numpy()
    assert x.dtype == np.int64 and x.shape == (30000, 2)
    for b in range(2):
        freq = np.bincount(x[:, b], minlength=3) / 30000
        assert np.all(np.abs(freq - probs[b]) < 5 * np.sqrt(probs[b] * (1 - probs[b]) / 30000))


def test_location_scale_rsample_gradients_are_exact():
    tx.manual_seed(1)
    loc, scale = tx.tensor([0.5, -1.0], requires_grad=True), tx.tensor([2.0, 0.5],
                                                                       requires_grad=True)
    x = D.Normal(loc, scale).rsample((5,))
    w = tx.randn(5, 2)
    (x * w).sum().backward()
    eps = ((x - loc) / scale).detach()
    assert_close(loc.grad, w.sum(0))
    assert_close(scale.grad, (w * eps).sum(0))
    low, high = tx.tensor([0.0], requires_grad=True), tx.tensor([3.0], requires_grad=True)
    y = D.Uniform(low, high).rsample((6,))
    y.sum().backward()
    u = ((y - low) / (high - low)).detach()
    assert_close(high.grad, u.sum(0))
    assert_close(low.grad, (1 - u).sum(0))
    L = tx.tensor([[1.0, 0.0], [0.5, 2.0]], dtype=tx.float64, requires_grad=True)
    mu = tx.zeros(2, dtype=tx.float64, requires_grad=True)
    z = D.MultivariateNormal(mu, scale_tril=L).rsample((7,))
    v = tx.randn(7, 2, dtype=tx.float64)
    (z * v).sum().backward()
    e = tx.linalg.solve_triangular(L.detach(), (z - mu).detach().mT, upper=False).mT
    assert_close(L.grad, v.mT @ e)
    assert_close(mu.grad, v.sum(0))


def test_gamma_rsample_gradient_is_the_implicit_gradient():
    """Per sample, d x / d alpha = -(dP/dalpha) / (dP/dx) at the sample (P the regularized
    incomplete gamma): against mpmath to 1e-6, and against torch's _standard_gamma_grad to its
    own accuracy (an approximation good to about 1e-4)."""
    mpmath = pytest.importorskip("mpmath")
    tx.manual_seed(2)
    alpha = tx.tensor(np.array([0.2, 0.7, 1.0, 2.5, 9.0, 40.0]).repeat(40),
                      dtype=tx.float64, requires_grad=True)
    x = D.Gamma(alpha, 1.0).rsample()
    x.sum().backward()
    want = torch._standard_gamma_grad(torch.tensor(alpha.detach().numpy()),
                                      torch.tensor(x.detach().numpy()))
    assert_close(alpha.grad, want, rtol=1e-3, atol=1e-9)
    mpmath.mp.dps = 30
    for i in range(0, 240, 17):
        a, v = mpmath.mpf(float(alpha[i])), mpmath.mpf(float(x[i]))
        dp = mpmath.diff(lambda s: mpmath.gammainc(s, 0, v, regularized=True), a)
        density = v ** (a - 1) * mpmath.e ** (-v) / mpmath.gamma(a)
        assert abs(float(alpha.grad[i]) / float(-dp / density) - 1) < 1e-6


@pytest.mark.parametrize("name", ["Gamma", "Beta", "Dirichlet"])
def test_rsample_gradients_match_torch_in_expectation(name):
    """The gradient of E[f(x)] through rsample, f(x) = sum(x**2) (Monte Carlo, 40000 draws),
    against torch's gradient of the same expectation."""
    tx.manual_seed(3)
    torch.manual_seed(3)
    params = {"Gamma": dict(concentration=[0.8, 3.0], rate=[1.5, 0.5]),
              "Beta": dict(concentration1=[0.8, 3.0], concentration0=[1.5, 2.0]),
              "Dirichlet": dict(concentration=[[0.8, 3.0, 1.5]])}[name]
    grads = {}
    for lib, mod in ((tx, D), (torch, TD)):
        ps = {k: lib.tensor(v, dtype=lib.float64, requires_grad=True) for k, v in params.items()}
        x = getattr(mod, name)(**ps).rsample((40000,))
        (x ** 2).sum(-1).mean().backward() if name == "Dirichlet" else (
            (x ** 2).mean(0).sum().backward())
        grads[lib.__name__] = [np.asarray(p.grad.detach().numpy()) for p in ps.values()]
    for gx, gt in zip(grads["tensorix"], grads["torch"]):
        np.testing.assert_allclose(gx, gt, rtol=0.1, atol=0.02)


# -- shapes, expand, validation -------------------------------------------------------------------
def test_shapes_and_expand():
    d = D.Normal(tx.zeros(3), 1.0)
    assert tuple(d.sample((4, 2)).shape) == (4, 2, 3) and tuple(d.sample().shape) == (3,)
    e = d.expand((5, 3))
    assert tuple(e.batch_shape) == (5, 3) and tuple(e.log_prob(tx.zeros(5, 3)).shape) == (5, 3)
    c = D.Categorical(logits=tx.zeros(2, 4)).expand((3, 2))
    assert tuple(c.sample((6,)).shape) == (6, 3, 2)
    m = D.MultivariateNormal(tx.zeros(2), tx.eye(2)).expand((4,))
    assert tuple(m.rsample((3,)).shape) == (3, 4, 2) and tuple(m.covariance_matrix.shape) == (
        4, 2, 2)
    b = D.Beta(1.0, 2.0).expand((3,))
    assert tuple(b.sample((2,)).shape) == (2, 3)
    dd = D.Dirichlet(tx.ones(3)).expand((2,))
    assert tuple(dd.sample().shape) == (2, 3) and tuple(dd.event_shape) == (3,)
    i = D.Independent(D.Normal(tx.zeros(3, 2), 1.0), 1).expand((4, 3))
    assert tuple(i.batch_shape) == (4, 3) and tuple(i.event_shape) == (2,)
    be = D.Bernoulli(logits=tx.zeros(2))
    assert tuple(be.enumerate_support().shape) == (2, 2)
    assert D.Categorical(logits=tx.zeros(2, 3)).enumerate_support().tolist() == [[0, 0], [1, 1],
                                                                                 [2, 2]]


def test_validation_errors():
    with pytest.raises(ValueError, match="parameter scale .* constraint GreaterThan"):
        D.Normal(0.0, -1.0)
    D.Normal(0.0, -1.0, validate_args=False)  # no check when asked
    with pytest.raises(ValueError, match="within the support"):
        D.Gamma(1.0, 1.0).log_prob(tx.tensor(-1.0))
    with pytest.raises(ValueError, match="either `probs` or `logits`"):
        D.Bernoulli(probs=tx.tensor(0.5), logits=tx.tensor(0.0))
    with pytest.raises(ValueError, match="constraint Simplex"):
        D.Categorical(probs=tx.tensor([0.5, -0.5, 1.0]))
    with pytest.raises(ValueError, match="Exactly one of covariance_matrix"):
        D.MultivariateNormal(tx.zeros(2))
    with pytest.raises(ValueError, match="PositiveDefinite"):
        D.MultivariateNormal(tx.zeros(2), tx.tensor([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(ValueError, match="LessThan"):
        D.Uniform(1.0, 0.0)
    with pytest.raises(ValueError, match="broadcastable"):
        D.Normal(tx.zeros(3), 1.0).log_prob(tx.zeros(4))
    assert not constraints.simplex.check(tx.tensor([0.5, 0.6])).item()
    assert constraints.lower_cholesky.check(tx.tensor([[1.0, 0.0], [3.0, 2.0]])).item()
    assert constraints.is_dependent(D.Uniform.arg_constraints["low"])


def test_default_validation_can_be_switched_off():
    D.Distribution.set_default_validate_args(False)
    try:
        D.Normal(0.0, -1.0)
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        D.Normal(0.0, -1.0)


def test_on_device(device):
    loc = tx.zeros(3, device=device, requires_grad=True)
    d = D.Normal(loc, tx.ones(3, device=device))
    x = d.rsample((4,))
    assert x.device.type == device
    (d.log_prob(x).sum() + D.kl_divergence(d, D.Normal(tx.ones(3, device=device),
                                                       tx.ones(3, device=device))).sum()
     ).backward()
    assert loc.grad.device.type == device
    g = D.Gamma(tx.full((3,), 2.0, device=device, requires_grad=True), 1.0).rsample((5,))
    assert g.device.type == device and math.isfinite(float(g.sum()))


def test_assert_close_reports_a_mismatch_next_to_an_infinity():
    """KLs are often inf in places: a mismatch elsewhere must raise the comparison's own
    AssertionError, not a RuntimeWarning from inf - inf (pytest runs warnings as errors)."""
    with pytest.raises(AssertionError, match="1 of 2 elements differ"):
        assert_close(np.array([math.inf, 1.0]), np.array([math.inf, 2.0]))
