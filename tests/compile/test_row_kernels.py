"""Row kernels: layer norm, the attention chain (scale, causal mask, softmax) and log-softmax,
decomposed by the compiler (tensorix._compile.decompose) and fused as "reduction, then
broadcast" groups (fusion.py, codegen.py's phases), forward and backward, against eager
tensorix (float64 to 1e-12, float32 to 2e-6 relative) and torch; in both kernel forms (numba
where installed, the NumPy blocks always)."""

import importlib.util

import numpy as np
import pytest

import tensorix as tx
import tensorix.nn.functional as F
from tensorix._compile.codegen import KernelPlan, cuda_source, numba_source
from tensorix._compile.decompose import decompose
from tensorix._compile.fusion import partition
from tensorix.fx import symbolic_trace
from tensorix.fx.passes import optimize

FORMS = ["numpy"] + (["numba"] if importlib.util.find_spec("numba") else [])
TOL = {tx.float64: dict(rtol=1e-12, atol=1e-12), tx.float32: dict(rtol=2e-6, atol=2e-6)}


def _entry(cf):
    (entry,) = cf.entries.values()
    return entry


def _compare(fn, args, kernels, dtype):
    """Values and gradients of ``tx.compile(fn)`` against eager, on two calls (the second
    runs the cached entry); returns the compiled entry."""
    cf = tx.compile(fn, options={"kernels": kernels, "tier_up": 0})
    for _ in range(2):
        want = fn(*args)
        gwant = tx.autograd.grad(want.sum(), args)
        got = cf(*args)
        ggot = tx.autograd.grad(got.sum(), args)
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), **TOL[dtype])
        for a, b in zip(ggot, gwant):
            scale = float(b.abs().max()) or 1.0
            np.testing.assert_allclose(a.numpy() / scale, b.numpy() / scale, **TOL[dtype])
    return _entry(cf)


def _ops(group):
    return [n.op.__name__ for n in group.nodes]


@pytest.mark.parametrize("kernels", FORMS)
@pytest.mark.parametrize("dtype", [tx.float64, tx.float32])
def test_layer_norm_forward_and_backward_are_one_kernel_each(kernels, dtype):
    tx.manual_seed(0)
    x = tx.randn(4, 6, 32, dtype=dtype, requires_grad=True) * 3 + 1
    x = x.detach().requires_grad_(True)
    w = tx.randn(32, dtype=dtype, requires_grad=True)
    b = tx.randn(32, dtype=dtype, requires_grad=True)
    g = tx.randn(4, 6, 32, dtype=dtype)

    def fn(x, w, b):
        return F.layer_norm(x, (32,), w, b) * g

    entry = _compare(fn, (x, w, b), kernels, dtype)
    (fwd,) = [gr for gr in entry.fwd.groups if "Rsqrt" in _ops(gr)]
    # the statistics once: CSE merged the decomposed forward with the backward's recompute
    assert _ops(fwd).count("Sum") == 2 and "LayerNorm" not in str(entry.fwd.graph.code)
    (bwd,) = [gr for gr in entry.bwd.groups if "Sum" in _ops(gr)]
    reductions = [bwd.reduce_info[n] for n in bwd.reductions]
    # dx's two per-row sums (read back by the row) and dw, db's two column sums, one kernel
    assert sorted((side, readable) for _, side, readable in reductions) == \
        [("inner", True), ("inner", True), ("outer", False), ("outer", False)]


@pytest.mark.parametrize("kernels", FORMS)
@pytest.mark.parametrize("dtype", [tx.float64, tx.float32])
def test_causal_attention_scores_mask_and_softmax_fuse(kernels, dtype):
    tx.manual_seed(1)
    q = tx.randn(2, 3, 16, 8, dtype=dtype, requires_grad=True)
    k = tx.randn(2, 3, 16, 8, dtype=dtype, requires_grad=True)
    v = tx.randn(2, 3, 16, 8, dtype=dtype, requires_grad=True)

    def fn(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    entry = _compare(fn, (q, k, v), kernels, dtype)
    (sm,) = [g for g in entry.fwd.groups if "EvenSelect" in _ops(g)]
    assert {"Where", "Exp", "Sum", "Div"} <= set(_ops(sm))
    (back,) = [g for g in entry.bwd.groups if "Sum" in _ops(g)]
    assert {"Mul", "Sub", "Where"} <= set(_ops(back))  # y * (g - sum(g * y)), masked


@pytest.mark.parametrize("kernels", FORMS)
@pytest.mark.parametrize("dtype", [tx.float64, tx.float32])
def test_cross_entropy_log_softmax_chain(kernels, dtype):
    tx.manual_seed(2)
    logits = tx.randn(24, 11, dtype=dtype, requires_grad=True) * 4
    logits = logits.detach().requires_grad_(True)
    target = tx.randint(0, 11, (24,))

    def fn(z):
        return F.cross_entropy(z, target).reshape(1)

    entry = _compare(fn, (logits,), kernels, dtype)
    assert any("Log" in _ops(g) and "EvenSelect" in _ops(g) for g in entry.fwd.groups)


@pytest.mark.parametrize("kernels", FORMS)
@pytest.mark.parametrize("dtype", [tx.float32, tx.float64])
def test_softmax_edge_rows_match_eager(kernels, dtype):
    """A row with NaN (NaN wins the max), a fully masked row (-inf everywhere: NaN, as
    eager), +inf, huge and tiny logits (the float32 exp's clamps)."""
    rows = np.array([[1.0, np.nan, 2.0, 0.0, -1.0],
                     [-np.inf] * 5,
                     [0.0, np.inf, 1.0, 2.0, 3.0],
                     [88.0, 87.5, -104.5, -87.5, 0.0],
                     [-1e4, 3.0, -np.inf, 2.5, 1e-3]])
    x = tx.tensor(np.tile(rows, (3, 1)), dtype=dtype)

    def fn(x):
        return tx.cat([x.softmax(-1), x.log_softmax(-1), x - x.amin(-1, keepdim=True)])

    cf = tx.compile(fn, options={"kernels": kernels, "tier_up": 0})
    with np.errstate(all="ignore"):
        want = fn(x).numpy()
    got = cf(x).numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=TOL[dtype]["rtol"], atol=1e-30)


@pytest.mark.parametrize("dtype", [tx.float64, tx.float32])
def test_against_torch(dtype):
    torch = pytest.importorskip("torch")
    tx.manual_seed(3)
    xs = [tx.randn(3, 10, 16, dtype=dtype) for _ in range(2)]
    w, b = tx.randn(16, dtype=dtype), tx.randn(16, dtype=dtype)

    def ours(x, y):
        h = F.layer_norm(x, (16,), w, b)
        s = (h @ y.transpose(1, 2)) * 0.25
        return F.scaled_dot_product_attention(h, y, y, is_causal=True) + s.softmax(-1).sum(-1,
                                                                                          keepdim=True)

    def theirs(x, y):
        tw, tb = (torch.from_numpy(t.numpy()) for t in (w, b))
        h = torch.nn.functional.layer_norm(x, (16,), tw, tb)
        s = (h @ y.transpose(1, 2)) * 0.25
        return torch.nn.functional.scaled_dot_product_attention(h, y, y, is_causal=True) + \
            s.softmax(-1).sum(-1, keepdim=True)

    args = [x.detach().requires_grad_(True) for x in xs]
    targs = [torch.from_numpy(x.numpy()).requires_grad_(True) for x in xs]
    cf = tx.compile(ours, options={"tier_up": 0})
    out, ref = cf(*args), theirs(*targs)
    grads = tx.autograd.grad(out.sum(), args)
    tgrads = torch.autograd.grad(ref.sum(), targs)
    tol = dict(rtol=1e-10, atol=1e-10) if dtype is tx.float64 else dict(rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), **tol)
    for a, t in zip(grads, tgrads):
        np.testing.assert_allclose(a.numpy(), t.numpy(), **tol)


def test_compiled_row_kernels_pass_a_numerical_gradient_check():
    from tensorix.testing.gradcheck import gradcheck

    tx.manual_seed(4)
    w, b = tx.randn(12, dtype=tx.float64), tx.randn(12, dtype=tx.float64)

    def fn(x):
        h = F.layer_norm(x, (12,), w, b)
        return (h.softmax(-1) * h).sum(-1)

    cf = tx.compile(fn)
    x = tx.randn(5, 12, dtype=tx.float64, requires_grad=True)
    gradcheck(cf, (x,), name="compiled layer_norm + softmax")  # raises on a mismatch
    assert _entry(cf).fwd.groups  # it ran the fused kernels


def _plan(fn, *xs):
    gm = symbolic_trace(fn, *xs)
    decompose(gm.graph)
    optimize(gm.graph)
    (group,) = [g for g in partition(gm.graph) if g.reductions]
    return KernelPlan(group)


def test_the_row_kernel_plan_has_a_pass_per_reduction_level():
    plan = _plan(lambda x: F.layer_norm(x, (8,)), tx.randn(4, 8))
    phases, stashed = plan.phases()
    # mean; variance of x - mean; the normalised row: three passes over each row, and only
    # the last writes the full output
    assert len(phases) == 3 and plan.phased
    assert [bool(outs) for _, _, outs, _, _ in phases] == [False, False, True]
    src = numba_source(plan)
    assert src.count("for b in range(inner):") == 3
    with pytest.raises(NotImplementedError, match="row kernel"):
        cuda_source(plan)  # not an ElementwiseKernel: a RawKernel (test_cuda_rows.py)
    (sub,) = [n for n in plan.group.nodes if n.op.__name__ == "Sub"]
    assert stashed == [plan.names[sub]]  # x - mean: kept from pass 2 for pass 3


def test_float32_exp_is_within_one_ulp_and_keeps_special_values():
    pytest.importorskip("numba")
    # exp(x / 2) * 2: both scalings exact, so the kernel's exp is what is measured
    x = np.concatenate([np.linspace(-174, 177.4, 100_003, dtype=np.float32),
                        np.array([-np.inf, np.inf, np.nan, 0.0, -210.0, 178.0], np.float32)])
    t = tx.tensor(x)
    cf = tx.compile(lambda t: (t * 0.5).exp() * 2.0, options={"kernels": "numba",
                                                              "tier_up": 0})
    got = cf(t).numpy()
    assert _entry(cf).graph.kernel_kinds() == ["numba"]
    ref = np.exp(x.astype(np.float64) * 0.5) * 2
    finite = np.isfinite(ref) & (ref > np.finfo(np.float32).tiny) & \
        (ref < np.finfo(np.float32).max)
    ulp = np.abs(got[finite] - ref[finite]) / np.spacing(ref[finite].astype(np.float32))
    assert ulp.max() <= 1.0
    np.testing.assert_array_equal(got[-6:], np.array([0.0, np.inf, np.nan, 2.0, 0.0, np.inf],
                                                     np.float32))


def test_a_row_group_runs_on_every_device(device):
    """A phased group (its members read a row's reduction) on the GPU stand-in runs its NumPy
    form through the device's array module (it has no ElementwiseKernel form)."""
    x = tx.randn(6, 10, dtype=tx.float64)

    def fn(x):
        c = x - x.mean(-1, keepdim=True)
        return c * ((c * c).mean(-1, keepdim=True) + 1e-5).rsqrt()

    cf = tx.compile(fn, options={"kernels": "numpy"})
    out = cf(x.to(device))
    assert out.device.type == device
    np.testing.assert_allclose(out.to("cpu").numpy(), fn(x).numpy(), rtol=1e-12, atol=1e-12)
    (group,) = _entry(cf).graph.plans
    assert group.phased


@pytest.mark.parametrize("kernels", FORMS)
def test_a_linear_bias_add_joins_its_readers_kernel(kernels):
    tx.manual_seed(5)
    w1, b1 = tx.randn(32, 16, dtype=tx.float64), tx.randn(32, dtype=tx.float64)
    w2 = tx.randn(16, 32, dtype=tx.float64)
    x = tx.randn(4, 8, 16, dtype=tx.float64, requires_grad=True)

    def fn(x):
        h = F.linear(x, w1, b1)
        return F.linear(h.tanh() * 2.0, w2)  # the bias add reads into tanh's kernel

    entry = _compare(fn, (x,), kernels, tx.float64)
    assert any(_ops(g)[:2] == ["Add", "Tanh"] for g in entry.fwd.groups)
    assert [n.args[2] for n in entry.fwd.graph.call_nodes() if n.op.__name__ == "Linear"] == \
        [None, None]


def test_a_decomposition_that_would_change_the_dtype_is_not_applied():
    """Eager layer norm writes a float64 weight's product into the float32 output; the ops
    would promote to float64: that node stays whole."""
    x = tx.randn(4, 8, requires_grad=True)
    w, b = tx.randn(8, dtype=tx.float64), tx.randn(8)

    def fn(x):
        return F.layer_norm(x, (8,), w, b) * 2.0

    cf = tx.compile(fn, options={"kernels": "numpy"})
    out, ref = cf(x), fn(x)
    assert out.dtype is ref.dtype is tx.float32
    np.testing.assert_array_equal(out.detach().numpy(), ref.detach().numpy())
    assert _entry(cf).fwd.report["decomposed"] == 0
