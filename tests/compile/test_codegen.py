"""Code generation and fusion choices of tensorix.compile that the GPT step's speed rests on:
each is checked for its structure (what became one kernel) and for values/gradients against
eager."""

import numpy as np
import pytest

import tensorix as tx
import tensorix.nn.functional as F


def _np(t):
    return t.detach().cpu().numpy()


def _entry(cf):
    return next(iter(cf.entries.values()))


def test_a_lone_gelu_between_gemms_is_one_kernel_forward_and_backward():
    """GPT's MLP: linear -> gelu -> linear. The gelu has no elementwise neighbour to fuse with,
    yet runs as a group (one pass, vectorized tanh) in the forward and its backward."""
    tx.manual_seed(0)
    w1, w2 = tx.randn(32, 16) * 0.3, tx.randn(16, 32) * 0.3
    for w in (w1, w2):
        w.requires_grad_(True)

    def mlp(x):
        return F.linear(F.gelu(F.linear(x, w1), approximate="tanh"), w2).sum()

    cf = tx.compile(mlp, options={"kernels": "numba" if _has_numba() else "numpy"})
    x = tx.randn(64, 16, requires_grad=True)
    got = cf(x)
    g_got = tx.autograd.grad(got, [x, w1, w2])
    ref = mlp(x)
    g_ref = tx.autograd.grad(ref, [x, w1, w2])
    np.testing.assert_allclose(_np(got), _np(ref), rtol=1e-5)
    for a, b in zip(g_got, g_ref):
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-4, atol=1e-5)
    entry = _entry(cf)
    fwd_ops = [[n.op.__name__ for n in g.nodes] for g in entry.fwd.groups]
    bwd_ops = [[n.op.__name__ for n in g.nodes] for g in entry.bwd.groups]
    assert ["Gelu"] in fwd_ops and ["GeluTanhBackward"] in bwd_ops


def _has_numba():
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.parametrize("approximate", ["tanh", "none"])
def test_gelu_kernel_forms_agree_with_eager_float32(approximate):
    """The lone-gelu group in both CPU forms (numba's vectorized tanh/erf, NumPy's blocks) is
    within float32 rounding of eager's gelu."""
    x = tx.tensor(np.linspace(-12, 12, 4001, dtype=np.float32))
    ref = _np(F.gelu(x, approximate=approximate))
    forms = ["numpy"] + (["numba"] if _has_numba() else [])
    for form in forms:
        cf = tx.compile(lambda t: F.gelu(t, approximate=approximate),
                        options={"kernels": form})
        # float32 rounding of the result, and of tanh (7 ulp) times |x| (GELU is x (1 + t) / 2)
        err = np.abs(_np(cf(x)) - ref)
        assert (err <= 3e-6 * np.abs(ref) + 5e-7 * np.abs(_np(x)) + 1e-30).all(), err.max()
        assert [[n.op.__name__ for n in g.nodes] for g in _entry(cf).graph.groups] == \
            [["Gelu"]]


def test_fused_tanh_saturates_exactly_and_keeps_nan():
    x = tx.tensor(np.array([-50.0, -10.0, -7.0, 0.0, 7.0, 10.0, 50.0, np.nan, np.inf, -np.inf],
                           dtype=np.float32))
    for form in ["numpy"] + (["numba"] if _has_numba() else []):
        cf = tx.compile(lambda t: (t * 1.0).tanh(), options={"kernels": form})
        got = _np(cf(x))
        np.testing.assert_allclose(got, np.tanh(_np(x)), rtol=1e-6, atol=0)
        assert got[[0, 1, 5, 6, 8, 9]].tolist() == [-1, -1, 1, 1, 1, -1]


def test_tier_up_compiles_in_the_background_without_stalling(monkeypatch, tmp_path):
    """The call that starts numba's compile returns at NumPy speed (the compile runs on the
    background, here held back until released); calls keep answering with the NumPy
    form, and the first call after the compile is done switches to the measured form."""
    pytest.importorskip("numba")
    import threading

    from tensorix._compile import tune

    monkeypatch.setattr(tune, "_model", [tune.CostModel(tmp_path / "tuning.json")])
    release = threading.Event()
    real = tune._compile_in_child

    def slow_compile(*args):
        release.wait(30)
        return real(*args)

    monkeypatch.setattr(tune, "_compile_in_child", slow_compile)
    fn = lambda x: (x * 2.5 - 0.5).sigmoid().sum(-1)  # noqa: E731
    x = tx.randn(16, 40)
    cf = tx.compile(fn, options={"tier_up": 1})
    graph = _entry(cf).graph if cf.entries else None
    for _ in range(3):  # the compile is blocked: every call is answered by NumPy
        np.testing.assert_allclose(_np(cf(x)), _np(fn(x)), rtol=1e-5, atol=1e-5)
        graph = _entry(cf).graph
        assert graph.kernel_kinds() == ["numpy"] and tune._model[0].runs == {}
    release.set()
    tune.wait()
    np.testing.assert_allclose(_np(cf(x)), _np(fn(x)), rtol=1e-5, atol=1e-5)
    (key,) = tune._model[0].runs
    assert "numba" in tune._model[0].runs[key]  # measured once compiled


def test_a_kernel_the_model_decided_loads_numba_in_the_background(monkeypatch, tmp_path):
    """Warm cache, new process: the cost model already says numba, but numba's import and
    load cost seconds, so NumPy answers the first calls and the kernel switches to numba (no
    new measurement) once loaded."""
    pytest.importorskip("numba")
    from tensorix._compile import kernels, tune

    model = tune.CostModel(tmp_path / "tuning.json")
    monkeypatch.setattr(tune, "_model", [model])
    fn = lambda x: (x * 1.5 + 2.0).exp().sum(-1)  # noqa: E731
    x = tx.randn(8, 24)
    cf = tx.compile(fn, options={"tier_up": 5})
    cf(x)
    (plan,) = _entry(cf).graph.plans
    n = plan.outer * plan.inner
    model.add(tune.cost_key(plan), "numba", n, 1e-6)  # as a previous process measured
    model.add(tune.cost_key(plan), f"numpy:{tune.DEFAULT_CHUNK}", n, 1e-3)
    monkeypatch.setattr(kernels, "_loaded", {})  # this process has not loaded it yet
    again = tx.compile(fn, options={"tier_up": 5})
    np.testing.assert_allclose(_np(again(x)), _np(fn(x)), rtol=1e-5)
    assert _entry(again).graph.kernel_kinds() == ["numpy"]
    tune.wait()
    np.testing.assert_allclose(_np(again(x)), _np(fn(x)), rtol=1e-5)
    assert _entry(again).graph.kernel_kinds() == ["numba"]
    assert len(model.runs[tune.cost_key(plan)]["numba"]) == 1  # by the model, not measured


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs os.fork")
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_background_compiler_works_in_a_forked_child():
    """A forked child (a data-loader worker) inherits the compiler object but not its thread:
    it starts its own, so wait() returns there."""
    import os

    from tensorix._compile import tune

    tune.wait()  # the parent's thread exists now
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through its exit code
        try:
            done = tune._compiler.submit(lambda: 7)
            os._exit(0 if done.result(timeout=20) == 7 else 1)
        except BaseException:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0


def _bwd_ops(cf):
    return [n.op.__name__ for n in _entry(cf).bwd.graph.nodes if n.is_call]


def test_the_backward_of_a_split_is_one_cat():
    """GPT's qkv split: the backward's zero-filled scatters and their sum become one Cat."""
    fn = lambda x: sum((p * (i + 1.0)).tanh().sum() for i, p in enumerate(  # noqa: E731
        x.split(3, dim=1)))
    cf = tx.compile(fn, options={"kernels": "numpy"})
    x = tx.randn(4, 9, 2, dtype=tx.float64, requires_grad=True)
    (g,) = tx.autograd.grad(cf(x), [x])
    (g_ref,) = tx.autograd.grad(fn(x), [x])
    np.testing.assert_allclose(_np(g), _np(g_ref), rtol=1e-12)
    ops = _bwd_ops(cf)
    assert "Cat" in ops and "IndexBackward" not in ops


@pytest.mark.parametrize("cut", [
    lambda x: (x[:, :4], x[:, 3:]),  # overlapping: the overlap adds up
    lambda x: (x[:, :3], x[:, 5:]),  # a gap: zeros there
    lambda x: (x[:, ::2], x[:, 1::2]),  # strided: not a concatenation
])
def test_slices_that_do_not_tile_keep_the_scatters(cut):
    fn = lambda x: sum((p * 2.0).sin().sum() for p in cut(x))  # noqa: E731
    cf = tx.compile(fn, options={"kernels": "numpy"})
    x = tx.randn(3, 8, dtype=tx.float64, requires_grad=True)
    (g,) = tx.autograd.grad(cf(x), [x])
    (g_ref,) = tx.autograd.grad(fn(x), [x])
    np.testing.assert_allclose(_np(g), _np(g_ref), rtol=1e-12)
    assert "Cat" not in _bwd_ops(cf)
