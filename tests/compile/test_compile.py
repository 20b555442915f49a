"""tensorix.compile: compiled results equal eager (values and gradients, torch as the oracle
where it has the op), guards recompile on new shapes/dtypes/devices and hit the cache
otherwise, graph breaks fall back to eager, and the kernel forms (numba, NumPy fallback, the
GPU stand-in) agree."""

import numpy as np
import pytest

import tensorix as tx
import tensorix.nn.functional as F
from tensorix._compile import kernels
from tensorix.fx import GraphBreak

NUMPY = {"kernels": "numpy"}  # the fast-to-build form; numba has its own tests below


def _np(t):
    return t.detach().cpu().numpy()


def _mlp(seed=0):
    tx.manual_seed(seed)
    return tx.nn.Sequential(tx.nn.Linear(6, 16), tx.nn.GELU(), tx.nn.Linear(16, 3))


def _eager_and_compiled_grads(fn, compiled, *shapes, dtype=tx.float64):
    xs = [tx.randn(*s, dtype=dtype, requires_grad=True) for s in shapes]
    ref = fn(*xs)
    g_ref = tx.autograd.grad(ref.sum(), xs)
    out = compiled(*xs)
    g_out = tx.autograd.grad(out.sum(), xs)
    return ref, out, g_ref, g_out


def test_gelu_forward_backward_matches_torch():
    torch = pytest.importorskip("torch")
    cg = tx.compile(lambda x: F.gelu(x) * x.tanh(), options=NUMPY)
    x = np.random.default_rng(0).standard_normal((40, 30))
    t = tx.tensor(x, requires_grad=True)
    y = cg(t)
    y.backward(tx.ones_like(y))
    tt = torch.tensor(x, requires_grad=True)
    yt = torch.nn.functional.gelu(tt) * tt.tanh()
    yt.backward(torch.ones_like(yt))
    np.testing.assert_allclose(_np(y), yt.detach().numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(_np(t.grad), tt.grad.numpy(), rtol=1e-10, atol=1e-12)
    entry = next(iter(cg.entries.values()))
    assert entry.bwd.report["groups"] >= 1  # the backward's elementwise chain is fused


@pytest.mark.parametrize("fn", [
    lambda x, y: (x * y + 1.0).exp().sum(-1),
    lambda x, y: ((x - y) ** 2.0).mean(0),
    lambda x, y: (x.sigmoid() * y.relu() - (x / (y.abs() + 1.0))).sum(),
    lambda x, y: tx.where(x > y, x.sin(), y.cos()) * 2.0,
    lambda x, y: (x @ y.T).softmax(-1),
])
def test_compiled_values_and_grads_equal_eager(fn):
    cf = tx.compile(fn, options=NUMPY)
    ref, out, g_ref, g_out = _eager_and_compiled_grads(fn, cf, (5, 7), (5, 7))
    np.testing.assert_allclose(_np(out), _np(ref), rtol=1e-12, atol=1e-12)
    for a, b in zip(g_out, g_ref):
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-10, atol=1e-12)


def test_module_training_step_equals_eager():
    m_ref, m_c = _mlp(), _mlp()
    cm = tx.compile(m_c, options=NUMPY)
    opt_ref = tx.optim.SGD(m_ref.parameters(), lr=0.1)
    opt_c = tx.optim.SGD(m_c.parameters(), lr=0.1)
    x, target = tx.randn(8, 6), tx.randn(8, 3)
    for _ in range(3):
        for model, opt in ((m_ref, opt_ref), (cm, opt_c)):
            opt.zero_grad()
            loss = F.mse_loss(model(x), target)
            loss.backward()
            opt.step()
    for p, q in zip(m_ref.parameters(), m_c.parameters()):
        np.testing.assert_allclose(_np(q), _np(p), rtol=1e-5, atol=1e-6)
    assert cm._compiled.stats == {**cm._compiled.stats, "compiles": 1, "hits": 2}


def test_gpt_loss_gradients_equal_eager():
    from tensorix import demo

    tx.manual_seed(0)
    model = demo.CharGPT(17, 8, d_model=16, n_heads=2, n_layers=1)
    ids = tx.randint(0, 17, (2, 8), generator=tx.Generator().manual_seed(1))
    tgt = tx.randint(0, 17, (2, 8), generator=tx.Generator().manual_seed(2))
    loss_ref = demo._lm_loss(model, ids, tgt)
    g_ref = tx.autograd.grad(loss_ref, list(model.parameters()))
    step = tx.compile(lambda a, b: demo._lm_loss(model, a, b), options=NUMPY)
    loss = step(ids, tgt)
    g = tx.autograd.grad(loss, list(model.parameters()))
    assert loss.item() == pytest.approx(loss_ref.item(), rel=1e-6)
    for a, b in zip(g, g_ref):
        np.testing.assert_allclose(_np(a), _np(b), rtol=2e-4, atol=2e-6)


def test_guards_recompile_on_shape_dtype_and_grad_mode_and_hit_otherwise():
    cf = tx.compile(lambda x: (x * 2.0).exp(), options=NUMPY)
    cf(tx.randn(3))
    cf(tx.randn(3))
    assert cf.stats["compiles"] == 1 and cf.stats["hits"] == 1
    y = cf(tx.randn(4))  # a new shape
    assert tuple(y.shape) == (4,) and cf.stats["compiles"] == 2
    cf(tx.randn(3, dtype=tx.float64))  # a new dtype
    cf(tx.randn(3, requires_grad=True))  # now a gradient is needed
    assert cf.stats["compiles"] == 4
    cf.reset()
    cf(tx.randn(3))
    assert cf.stats["compiles"] == 5


def test_guards_on_device(device):
    cf = tx.compile(lambda x: (x * 3.0 + 1.0).tanh(), options=NUMPY)
    x = tx.randn(4, 5, dtype=tx.float64)
    ref = (x * 3.0 + 1.0).tanh()
    out = cf(x.to(device))
    assert out.device.type == device
    np.testing.assert_allclose(_np(out), _np(ref), rtol=1e-12)
    cf(x)
    assert cf.stats["compiles"] == (2 if device == "cuda" else 1)


def test_data_dependent_python_runs_the_branch_it_reads_and_fullgraph_raises():
    def f(x):
        if x.sum() > 0:  # Python branches on data: pieces around the break (test_training)
            return x * 2.0
        return x - 1.0

    cf = tx.compile(f, options=NUMPY)
    pos, neg = tx.ones(3), -tx.ones(3)
    np.testing.assert_array_equal(_np(cf(pos)), [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(_np(cf(neg)), [-2.0, -2.0, -2.0])  # not the traced branch
    assert "item()/bool()" in cf.explain().break_reasons[0]
    with pytest.raises(GraphBreak, match="fullgraph"):
        tx.compile(f, fullgraph=True)(pos)


def test_traced_values_that_were_computed_outside_ops_follow_new_inputs():
    # were frozen at their traced values: max's result (an argument computed outside its
    # primitive) and nll_loss's gradient coefficient (an array made from the target in backward)
    w = tx.randn(4, 5, dtype=tx.float64, requires_grad=True)
    f = lambda x, y: F.cross_entropy(x @ w.T, y) + x.abs().max()  # noqa: E731
    cf = tx.compile(f, options=NUMPY)
    g = tx.Generator().manual_seed(3)
    for _ in range(3):
        x, y = tx.randn(6, 5, dtype=tx.float64, generator=g), tx.randint(0, 4, (6,), generator=g)
        ref, out = f(x, y), cf(x, y)
        np.testing.assert_allclose(_np(out), _np(ref), rtol=1e-12)
        (g_ref,), (g_out,) = tx.autograd.grad(ref, [w]), tx.autograd.grad(out, [w])
        np.testing.assert_allclose(_np(g_out), _np(g_ref), rtol=1e-12, atol=1e-15)


def test_backend_and_mode_arguments():
    f = lambda x: x * 2.0  # noqa: E731
    x = tx.randn(3)
    for backend in ("inductor", "aot_eager", "eager"):
        np.testing.assert_array_equal(_np(tx.compile(f, backend=backend)(x)), _np(x * 2.0))
    assert tx.compile(f, mode="max-autotune", options=NUMPY)(x).shape == (3,)
    with pytest.raises(ValueError, match="compile\\(\\): unknown backend 'tvm'"):
        tx.compile(f, backend="tvm")
    with pytest.raises(RuntimeError, match="unrecognized mode"):
        tx.compile(f, mode="fastest")
    with pytest.raises(TypeError, match="expected a module or a function"):
        tx.compile(3)
    deco = tx.compile(options=NUMPY)(f)
    np.testing.assert_array_equal(_np(deco(x)), _np(x * 2.0))


def test_optimized_module_forwards_attributes():
    m = _mlp()
    cm = tx.compile(m)
    assert cm._orig_mod is m and len(list(cm.parameters())) == 4
    cm.eval()
    assert not m.training


def test_numba_kernels_equal_the_numpy_fallback(monkeypatch):
    pytest.importorskip("numba")
    fn = lambda x, y: (F.gelu(x) * y + x.exp()).sum(-1)  # noqa: E731
    x, y = tx.randn(6, 33), tx.randn(6, 33)
    c_numba = tx.compile(fn, options={"kernels": "numba"})
    out = c_numba(x, y)
    entry = next(iter(c_numba.entries.values()))
    assert entry.graph.kernel_kinds() == ["numba"]
    monkeypatch.setattr(kernels, "numba_available", lambda: False)  # the jit extra absent
    c_auto = tx.compile(fn)
    out_np = c_auto(x, y)
    assert next(iter(c_auto.entries.values())).graph.kernel_kinds() == ["numpy"]
    np.testing.assert_allclose(_np(out), _np(fn(x, y)), rtol=2e-5, atol=1e-5)
    np.testing.assert_allclose(_np(out_np), _np(fn(x, y)), rtol=2e-5, atol=1e-5)


def test_nested_outputs_and_kwargs_and_non_tensor_results():
    def f(x, *, scale):
        return {"a": x * scale, "pair": (x + 1.0, 7)}

    cf = tx.compile(f, options=NUMPY)
    x = tx.randn(3)
    out = cf(x, scale=2.0)
    assert out["pair"][1] == 7
    np.testing.assert_allclose(_np(out["a"]), _np(x * 2.0))
    cf(x, scale=3.0)
    assert cf.stats["compiles"] == 2  # a Python value is part of the guard


def test_cost_model_fits_measured_runs_and_predicts(tmp_path):
    from tensorix._compile.tune import CostModel

    model = CostModel(tmp_path / "tuning.json")
    assert model.predict("k", "numba", 1000) is None  # nothing measured yet
    model.add("k", "numba", 1000, 2e-3 + 1e-6 * 1000)
    assert model.predict("k", "numba", 5000) is None  # one size: no slope yet
    assert model.predict("k", "numba", 1000) == pytest.approx(3e-3)  # measured there
    model.add("k", "numba", 4000, 2e-3 + 1e-6 * 4000)
    assert model.predict("k", "numba", 10_000) == pytest.approx(2e-3 + 1e-2, rel=1e-9)
    model.save()
    assert CostModel(tmp_path / "tuning.json").predict("k", "numba", 10_000) == \
        pytest.approx(0.012, rel=1e-9)


def test_autotune_measures_then_picks_a_form(monkeypatch, tmp_path):
    pytest.importorskip("numba")
    from tensorix._compile import tune

    monkeypatch.setattr(tune, "_model", [tune.CostModel(tmp_path / "tuning.json")])
    fn = lambda x: (x * 2.0 + 1.0).tanh().sum(-1)  # noqa: E731
    x = tx.randn(64, 128)
    cf = tx.compile(fn, mode="max-autotune")
    np.testing.assert_allclose(_np(cf(x)), _np(fn(x)), rtol=1e-5, atol=1e-5)
    runs = tune._model[0].runs
    (key,) = runs
    assert set(runs[key]) == {"numba"} | {f"numpy:{c}" for c in tune.CHUNKS}
    kind = next(iter(cf.entries.values())).graph.kernel_kinds()[0]
    assert kind in ("numba", "numpy")


def test_saved_outputs_are_graph_values_not_trace_constants():
    """Regression: autograd re-wraps a saved output (exp, tanh, sigmoid) in a new handle for
    backward; the trace must map it to the output's node, or the compiled backward would use
    the values of the traced call forever."""
    fn = lambda x: (x.exp() * x.tanh() + x.sigmoid()).sum()  # noqa: E731
    cf = tx.compile(fn, options=NUMPY)
    cf(tx.randn(4, 3, dtype=tx.float64, requires_grad=True))  # the trace, on other values
    x = tx.randn(4, 3, dtype=tx.float64, requires_grad=True)
    (g,) = tx.autograd.grad(cf(x), [x])
    (g_ref,) = tx.autograd.grad(fn(x), [x])
    np.testing.assert_allclose(_np(g), _np(g_ref), rtol=1e-12)


def test_an_op_given_an_array_computed_outside_the_dispatcher_is_a_break():
    # nvfp4's tensor scale is a Python float of the data, its blocks raw arrays: a break
    f = lambda x: tx.numerics.nvfp4_dequantize(  # noqa: E731
        tx.numerics.nvfp4_quantize(x.reshape(-1).repeat(4)[:16])) * 2.0
    cf = tx.compile(f, options=NUMPY)
    a = tx.tensor([[3.0, 1.0], [2.0, 4.0]])
    b = tx.tensor([[1.0, 3.0], [4.0, 2.0]])
    cf(a)
    np.testing.assert_array_equal(_np(cf(b)), _np(f(b)))
    assert "raw array" in cf.stats["breaks"][0]
    # the max-plus einsum's argmax was such a raw array (and sort's indices, until the order
    # ops became primitives): both now compile as one graph and recompute the winners
    for g in (lambda x: tx.einsum("ij,jk->ik", x, x, semiring="max-plus") * 2.0,
              lambda x: tx.msort(x) * 2.0):
        cg = tx.compile(g, options=NUMPY)
        cg(a)
        np.testing.assert_array_equal(_np(cg(b)), _np(g(b)))
        assert cg.stats["breaks"] == [] and cg.stats["hits"] == 1


def test_ops_that_keep_an_input_array_for_backward_compile():
    """Embedding keeps its indices' array for backward: the trace makes it a "data" node of
    the indices' placeholder (not a frozen constant), so new indices get their gradient."""
    tx.manual_seed(0)
    emb = tx.nn.Embedding(10, 4)
    cf = tx.compile(lambda i: emb(i).tanh().sum(), options=NUMPY)
    cf(tx.tensor([1, 2, 3]))
    ids = tx.tensor([7, 7, 0])
    cf(ids).backward()
    got = emb.weight.grad.clone()
    emb.weight.grad = None
    emb(ids).tanh().sum().backward()
    np.testing.assert_allclose(_np(got), _np(emb.weight.grad), rtol=1e-6)
    assert cf.stats["breaks"] == []


def test_kernels_tier_up_to_numba_after_a_few_calls(monkeypatch, tmp_path):
    """Cold (nothing measured): the NumPy form runs first, with no numba compile before the
    first result; the ``tier_up``-th call starts numba's compile in the background (the NumPy
    form still answers), the first call after it is done measures both forms and keeps the
    faster; a new compile then picks that form at once from the cost model."""
    pytest.importorskip("numba")
    from tensorix._compile import tune

    monkeypatch.setattr(tune, "_model", [tune.CostModel(tmp_path / "tuning.json")])
    fn = lambda x: (x * 3.0 - 1.0).sigmoid().sum(-1)  # noqa: E731
    x = tx.randn(32, 48)
    cf = tx.compile(fn, options={"tier_up": 2})
    graph = lambda c: next(iter(c.entries.values())).graph  # noqa: E731
    np.testing.assert_allclose(_np(cf(x)), _np(fn(x)), rtol=1e-5, atol=1e-5)
    assert graph(cf).kernel_kinds() == ["numpy"] and tune._model[0].runs == {}
    np.testing.assert_allclose(_np(cf(x)), _np(fn(x)), rtol=1e-5, atol=1e-5)
    tune.wait()  # the background compile
    np.testing.assert_allclose(_np(cf(x)), _np(fn(x)), rtol=1e-5, atol=1e-5)
    (key,) = tune._model[0].runs
    assert set(tune._model[0].runs[key]) == {"numba", f"numpy:{tune.DEFAULT_CHUNK}"}
    best = graph(cf).kernel_kinds()[0]
    again = tx.compile(fn, options={"tier_up": 2})
    again(x)
    assert graph(again).kernel_kinds() == [best]  # decided by the model, no NumPy tier
