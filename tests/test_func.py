"""tensorix.func against torch.func: values of every transform, nesting, pytrees, argnums,
has_aux, vmap's in_dims/out_dims and randomness modes, functional_call."""

import numpy as np
import pytest

import tensorix as tx
from tensorix import func

torch = pytest.importorskip("torch")

# torch.func's forward mode scripts a helper on first use, and torch warns about its own call
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")


def _pair(shape, seed=0):
    a = np.random.default_rng(seed).normal(size=shape)
    return tx.tensor(a, dtype=tx.float64), torch.tensor(a, dtype=torch.float64)


def _close(ours, theirs, tol=1e-12):
    if isinstance(theirs, (tuple, list)):
        assert isinstance(ours, (tuple, list)) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            _close(a, b, tol)
    elif isinstance(theirs, dict):
        assert sorted(ours) == sorted(theirs)
        for k in theirs:
            _close(ours[k], theirs[k], tol)
    else:
        assert tuple(ours.shape) == tuple(theirs.shape)
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=tol,
                                   atol=tol)


def _f(lib):
    return lambda x, y: (lib.sin(x) * y ** 2).sum() + (x * x).sum() * y.sum()


def test_grad_argnums_and_has_aux_match_torch():
    (x, tx_), (y, ty) = _pair((3,)), _pair((3,), 1)
    for argnums in (0, 1, (0, 1), -1):
        _close(func.grad(_f(tx), argnums)(x, y), torch.func.grad(_f(torch), argnums)(tx_, ty))
    aux = lambda lib: lambda x, y: (_f(lib)(x, y), x * 2)  # noqa: E731
    g, a = func.grad(aux(tx), (0, 1), has_aux=True)(x, y)
    tg, ta = torch.func.grad(aux(torch), (0, 1), has_aux=True)(tx_, ty)
    _close((g, a), (tg, ta))
    (g, (v, a)) = func.grad_and_value(aux(tx), has_aux=True)(x, y)
    (tg, (tv, ta)) = torch.func.grad_and_value(aux(torch), has_aux=True)(tx_, ty)
    _close((g, v, a), (tg, tv, ta))
    assert not g.requires_grad and not v.requires_grad


def test_grad_of_grad_and_hessian_match_torch():
    x, tx_ = _pair((4,))
    f = lambda lib: lambda x: (lib.exp(x) * x ** 3).sum()  # noqa: E731
    gg = func.grad(lambda x: func.grad(f(tx))(x).sum())(x)
    tgg = torch.func.grad(lambda x: torch.func.grad(f(torch))(x).sum())(tx_)
    _close(gg, tgg)
    _close(func.hessian(f(tx))(x), torch.func.hessian(f(torch))(tx_))
    (x, tx_), (y, ty) = _pair((3,)), _pair((3,), 1)
    _close(func.hessian(_f(tx), argnums=(0, 1))(x, y),
           torch.func.hessian(_f(torch), argnums=(0, 1))(tx_, ty))


def test_grad_over_pytrees_and_functional_call():
    model = tx.nn.Sequential(tx.nn.Linear(3, 4), tx.nn.Tanh(), tx.nn.Linear(4, 2)).double()
    tmodel = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(),
                                 torch.nn.Linear(4, 2)).double()
    tmodel.load_state_dict({k: torch.tensor(v.detach().numpy())
                            for k, v in model.state_dict().items()})
    x, tx_ = _pair((5, 3))
    params = {k: v.detach() for k, v in model.named_parameters()}
    tparams = {k: v.detach() for k, v in tmodel.named_parameters()}

    def loss(lib, fc, m):
        return lambda p, x: (fc(m, p, (x,)) ** 2).mean()

    g = func.grad(loss(tx, func.functional_call, model))(params, x)
    tg = torch.func.grad(loss(torch, torch.func.functional_call, tmodel))(tparams, tx_)
    _close(g, tg)
    # the module's own parameters are untouched and restored
    assert all(model.get_parameter(k) is not params[k] for k in params)
    # per-sample gradients: vmap over grad
    per = func.vmap(func.grad(lambda p, x: (func.functional_call(model, p, (x,)) ** 2).sum()),
                    in_dims=(None, 0))(params, x)
    tper = torch.func.vmap(torch.func.grad(
        lambda p, x: (torch.func.functional_call(tmodel, p, (x,)) ** 2).sum()),
        in_dims=(None, 0))(tparams, tx_)
    _close(per, tper)


def test_functional_call_ties_strict_and_duplicates():
    lin = tx.nn.Linear(2, 2, bias=False)
    model = tx.nn.Sequential(lin, lin)  # one weight under "0.weight" and "1.weight"
    w = tx.eye(2) * 2
    y = func.functional_call(model, {"0.weight": w}, (tx.ones(1, 2),))
    np.testing.assert_allclose(y.detach().numpy(), [[4.0, 4.0]])
    with pytest.raises(RuntimeError, match="missing"):
        func.functional_call(tx.nn.Linear(2, 2), {"weight": w}, (tx.ones(1, 2),), strict=True)
    with pytest.raises(ValueError, match="multiple dictionaries"):
        func.functional_call(lin, ({"weight": w}, {"weight": w}), (tx.ones(1, 2),))


def test_vjp_jvp_jacrev_jacfwd_match_torch():
    (x, tx_), (v, tv) = _pair((3,)), _pair((3,), 1)
    g = lambda lib: lambda x: (lib.sin(x) * x, x.sum() * x)  # noqa: E731
    out, fn = func.vjp(g(tx), x)
    tout, tfn = torch.func.vjp(g(torch), tx_)
    _close(out, tout)
    _close(fn((v, v)), tfn((tv, tv)))
    _close(fn((v, v)), tfn((tv, tv)))  # vjp_fn can be called again
    _close(func.jvp(g(tx), (x,), (v,)), torch.func.jvp(g(torch), (tx_,), (tv,)))
    _close(func.jacrev(g(tx))(x), torch.func.jacrev(g(torch))(tx_))
    _close(func.jacfwd(g(tx))(x), torch.func.jacfwd(g(torch))(tx_))
    (y, ty) = _pair((2, 3), 2)
    h = lambda lib: lambda x, y: y @ lib.tanh(x)  # noqa: E731
    _close(func.jacrev(h(tx), argnums=(0, 1))(x, y),
           torch.func.jacrev(h(torch), argnums=(0, 1))(tx_, ty))
    _close(func.jacfwd(h(tx), argnums=1)(x, y), torch.func.jacfwd(h(torch), argnums=1)(tx_, ty))


def test_vmap_in_dims_out_dims_nested_match_torch():
    (a, ta), (b, tb) = _pair((4, 3)), _pair((3, 5), 1)
    _close(func.vmap(tx.mv, in_dims=(None, 1))(a, b),
           torch.func.vmap(torch.mv, in_dims=(None, 1))(ta, tb))
    _close(func.vmap(lambda r: (r * 2, r.sum()), out_dims=(1, 0))(b),
           torch.func.vmap(lambda r: (r * 2, r.sum()), out_dims=(1, 0))(tb))
    (c, tc) = _pair((2, 4, 3), 2)
    _close(func.vmap(func.vmap(tx.dot))(c, c), torch.func.vmap(torch.func.vmap(torch.dot))(tc, tc))
    _close(func.vmap(lambda d: d["x"] + d["y"], in_dims=({"x": 0, "y": None},))(
        {"x": a, "y": a[0]}),
        torch.func.vmap(lambda d: d["x"] + d["y"], in_dims=({"x": 0, "y": None},))(
            {"x": ta, "y": ta[0]}))


def test_vmap_is_differentiable():
    (a, ta) = _pair((4, 3))
    a.requires_grad_(True)
    ta.requires_grad_(True)
    func.vmap(lambda r: (r ** 3).sum())(a).sum().backward()
    torch.func.vmap(lambda r: (r ** 3).sum())(ta).sum().backward()
    _close(a.grad, ta.grad)


def test_vmap_randomness_modes():
    x = tx.zeros(3, 4)
    with pytest.raises(RuntimeError, match="randomness"):
        func.vmap(lambda r: r + tx.rand(4))(x)
    same = func.vmap(lambda r: r + tx.rand(4), randomness="same")(x)
    assert bool((same[0] == same[1]).all()) and bool((same[1] == same[2]).all())
    diff = func.vmap(lambda r: r + tx.rand(4), randomness="different")(x)
    assert not bool((diff[0] == diff[1]).all())
    with pytest.raises(RuntimeError, match="randomness"):
        func.vmap(lambda r: r, randomness="sometimes")


def test_bad_input_errors_name_the_problem():
    x = tx.ones(3)
    with pytest.raises(RuntimeError, match="scalar Tensor"):
        func.grad(lambda x: x * 2)(x)
    with pytest.raises(RuntimeError, match="argnums"):
        func.grad(lambda x: x.sum(), argnums=2)(x)
    with pytest.raises(ValueError, match="same size in the mapped"):
        func.vmap(lambda a, b: a + b)(tx.ones(3, 2), tx.ones(2, 2))
    with pytest.raises(ValueError, match="must only return Tensors"):
        func.vmap(lambda a: 3)(x)
    with pytest.raises(ValueError, match="non-Tensor"):
        func.vmap(lambda a, k: a * k, in_dims=(0, 0))(x, 2.0)
    with pytest.raises(RuntimeError, match="tuple"):
        func.grad(lambda x: x.sum(), has_aux=True)(x)


def test_results_stay_in_the_graph_of_inputs_that_require_grad():
    x, tx_ = _pair((3,))
    x.requires_grad_(True)
    tx_.requires_grad_(True)
    f = lambda lib: lambda x: (lib.sin(x) * x).sum()  # noqa: E731
    func.grad(f(tx))(x).sum().backward()
    torch.func.grad(f(torch))(tx_).sum().backward()
    _close(x.grad, tx_.grad)
