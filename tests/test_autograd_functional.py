"""tensorix.autograd.functional against torch.autograd.functional: vjp, jvp, jacobian,
hessian, vhp, hvp (values, result structure, create_graph, strict)."""

from __future__ import annotations

import numpy as np
import pytest

import tensorix as tx
from tensorix.autograd import functional as F

torch = pytest.importorskip("torch")
TF = torch.autograd.functional


def _t(arr, m):
    return tx.tensor(arr) if m is tx else torch.tensor(arr, dtype=torch.float64)


def _same(mine, ref):
    """Compare nested tuples of tensors (and their structure)."""
    if isinstance(ref, tuple):
        assert isinstance(mine, tuple) and len(mine) == len(ref)
        for a, b in zip(mine, ref):
            _same(a, b)
        return
    assert isinstance(mine, tx.Tensor), type(mine)
    assert tuple(mine.shape) == tuple(ref.shape)
    np.testing.assert_allclose(mine.detach().numpy(), ref.detach().numpy(), rtol=1e-10,
                               atol=1e-12)


def f_single(x):
    return (x.exp() * x).tanh()


def f_scalar(x):
    return (x ** 3).sum() + (x * x).sum().log()


def f_two_in(x, y):
    return x * y.exp() + (x * x).sum()


def f_two_out(x, y):
    return x * y, (x + y).tanh().sum()


def f_scalar_two(x, y):
    return (x * x * y).sum() + (y ** 3).sum()


@pytest.fixture
def data(rng):
    return {"x": rng.random(3) + 0.2, "y": rng.random(3) + 0.2, "v": rng.random(3),
            "w": rng.random(3)}


def _run(fn, d, *names):
    """Call ``fn(module, *tensors)`` for tensorix and torch with the named arrays."""
    out = []
    for m in (tx, torch):
        out.append(fn(m, *[_t(d[n], m) for n in names]))
    return out


def _mod(m):
    return F if m is tx else TF


def test_vjp(data):
    _same(*_run(lambda m, x, v: _mod(m).vjp(f_single, x, v), data, "x", "v"))
    _same(*_run(lambda m, x, y, v: _mod(m).vjp(f_two_in, (x, y), v), data, "x", "y", "v"))
    _same(*_run(lambda m, x: _mod(m).vjp(f_scalar, x), data, "x"))


def test_vjp_two_outputs(data):
    def run(m, x, y, v):
        return _mod(m).vjp(f_two_out, (x, y), (v, _t(np.array(2.0), m)))

    _same(*_run(run, data, "x", "y", "v"))


def test_jvp(data):
    _same(*_run(lambda m, x, v: _mod(m).jvp(f_single, x, v), data, "x", "v"))
    _same(*_run(lambda m, x, y, v, w: _mod(m).jvp(f_two_in, (x, y), (v, w)),
                data, "x", "y", "v", "w"))
    _same(*_run(lambda m, x, y, v, w: _mod(m).jvp(f_two_out, (x, y), (v, w)),
                data, "x", "y", "v", "w"))


def test_jacobian(data):
    _same(*_run(lambda m, x: _mod(m).jacobian(f_single, x), data, "x"))
    _same(*_run(lambda m, x, y: _mod(m).jacobian(f_two_in, (x, y)), data, "x", "y"))
    _same(*_run(lambda m, x, y: _mod(m).jacobian(f_two_out, (x, y)), data, "x", "y"))
    _same(*_run(lambda m, x: _mod(m).jacobian(f_single, x, vectorize=True), data, "x"))


def test_hessian(data):
    _same(*_run(lambda m, x: _mod(m).hessian(f_scalar, x), data, "x"))
    _same(*_run(lambda m, x, y: _mod(m).hessian(f_scalar_two, (x, y)), data, "x", "y"))


def test_vhp_and_hvp(data):
    for name in ("vhp", "hvp"):
        _same(*_run(lambda m, x, v, name=name: getattr(_mod(m), name)(f_scalar, x, v),
                    data, "x", "v"))
        _same(*_run(lambda m, x, y, v, w, name=name: getattr(_mod(m), name)(
            f_scalar_two, (x, y), (v, w)), data, "x", "y", "v", "w"))


def test_create_graph_allows_differentiating_the_result(data):
    grads = []
    for m in (tx, torch):
        x = _t(data["x"], m).requires_grad_()
        v = _t(data["v"], m)
        _, hv = _mod(m).hvp(f_scalar, x, v, create_graph=True)
        (g,) = m.autograd.grad(hv.sum(), x)
        grads.append(g)
    _same(*grads)
    x = tx.tensor(data["x"], requires_grad=True)
    assert not F.jacobian(f_single, x).requires_grad  # detached without create_graph
    assert F.jacobian(f_single, x, create_graph=True).requires_grad


def test_independent_outputs_and_strict(data):
    def half_used(x, y):
        return x * 2

    _same(*_run(lambda m, x, y: _mod(m).jacobian(half_used, (x, y)), data, "x", "y"))
    _same(*_run(lambda m, x, y, v: _mod(m).vjp(half_used, (x, y), v), data, "x", "y", "v"))
    with pytest.raises(RuntimeError, match="the output 0 of the user-provided function is "
                                           "independent of input 1. This is not allowed in "
                                           "strict mode"):
        F.jacobian(half_used, (tx.tensor(data["x"]), tx.tensor(data["y"])), strict=True)
    with pytest.raises(RuntimeError, match="independent of input 1"):
        F.vjp(half_used, (tx.tensor(data["x"]), tx.tensor(data["y"])), tx.ones(3),
              strict=True)


def test_argument_errors():
    x = tx.ones(3)
    with pytest.raises(RuntimeError, match="v can only be None if the output of the "
                                           "user-provided function is a single Tensor with a "
                                           "single element"):
        F.vjp(lambda t: t * 2, x)
    with pytest.raises(RuntimeError, match=r"entry 0 of v has shape \[2\]"):
        F.vjp(lambda t: t * 2, x, tx.ones(2))
    with pytest.raises(TypeError, match="the inputs given to jacobian must be either a Tensor "
                                        "or a tuple of Tensors"):
        F.jacobian(lambda t: t, [1.0])
    with pytest.raises(TypeError, match="must return either a Tensor or a tuple of Tensors"):
        F.jacobian(lambda t: 3.0, x)
    with pytest.raises(RuntimeError, match="hessian should return a single Tensor with a "
                                           "single element"):
        F.hessian(lambda t: t * 2, x)
    with pytest.raises(NotImplementedError, match="forward-mode"):
        F.jacobian(lambda t: t, x, strategy="forward-mode")
