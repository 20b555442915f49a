"""The CUDA form of the row kernels (tensorix._compile.cuda_rows): one block per row, the
reductions across the block, the epilogue reading the row values.

Without a GPU the kernels run twice over: compiled for sm_90 with nvcc (the source is CUDA C a
GPU compiles: no warnings, one entry per kernel), and run on the host under a shim of CUDA's
names (tests/compile/_host_cuda.py) inside compiled training steps on the CuPy stand-in,
against the same step compiled for the CPU (its numba or NumPy kernels) and eager. On a
machine with a GPU the same steps run on it, through CuPy."""

import shutil
import subprocess

import numpy as np
import pytest

import tensorix as tx
import tensorix.nn.functional as F
from tensorix import backend
from tensorix._compile import cuda_rows, kernels

from ._host_cuda import HostCuda
from .test_row_kernels import _plan

TOL = {tx.float64: dict(rtol=1e-11, atol=1e-12), tx.float32: dict(rtol=3e-5, atol=3e-6)}


def _np(t):
    return t.detach().cpu().numpy()


def _entry(cf):
    (entry,) = cf.entries.values()
    return entry


def _case(name, dtype):
    """``(fn, args)``: a loss-like function of its differentiable ``args`` (CPU tensors)."""
    tx.manual_seed(7)
    if name == "layer_norm":  # 40 columns: two warps, the second partly idle
        x, w, b = tx.randn(4, 6, 40, dtype=dtype) * 3 + 1, tx.randn(40, dtype=dtype), \
            tx.randn(40, dtype=dtype)
        g = tx.randn(4, 6, 40, dtype=dtype)
        return (lambda x, w, b: F.layer_norm(x, (40,), w, b) * g.to(x.device)), (x, w, b)
    if name in ("softmax", "log_softmax"):  # 70 columns: three warps
        x, g = tx.randn(12, 70, dtype=dtype) * 4, tx.randn(12, 70, dtype=dtype)
        return (lambda x: getattr(x, name)(-1) * g.to(x.device)), (x,)
    if name == "softmax_long":  # 1100 columns: 512 threads, each over two or three
        x, g = tx.randn(3, 1100, dtype=dtype) * 4, tx.randn(3, 1100, dtype=dtype)
        return (lambda x: x.softmax(-1) * g.to(x.device)), (x,)
    assert name == "cross_entropy"
    z, t = tx.randn(24, 37, dtype=dtype) * 4, tx.randint(0, 37, (24,))
    return (lambda z: F.cross_entropy(z, t.to(z.device)).reshape(1)), (z,)


def _step(fn, args, device):
    """The compiled function's value and gradients on ``device``, and its entry."""
    cf = tx.compile(fn, options={"tier_up": 0})
    xs = [a.to(device).detach().requires_grad_(True) for a in args]
    out = cf(*xs)
    grads = tx.autograd.grad(out.sum(), xs)
    return [_np(out)] + [_np(g) for g in grads], _entry(cf)


@pytest.fixture
def host_cuda(monkeypatch):
    """The device "cuda" with the compiler's CUDA kernels running: on the GPU where there is
    one, else the stand-in with CUDA C run on the host."""
    if backend.cuda_available():
        yield None
        return
    if shutil.which("g++") is None and shutil.which("c++") is None:
        pytest.skip("needs a C++ compiler")
    host = HostCuda(backend)
    monkeypatch.setattr(kernels, "backend", host)
    with backend.fake_cuda():
        yield host


CASES = ["layer_norm", "softmax", "log_softmax", "softmax_long", "cross_entropy"]


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", [tx.float32, tx.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("case", CASES)
def test_compiled_step_on_cuda_runs_row_kernels_as_the_cpu_does(host_cuda, case, dtype):
    fn, args = _case(case, dtype)
    cpu, _ = _step(fn, args, "cpu")  # the CPU's kernels (numba, else the NumPy form)
    eager_out = fn(*[a.detach().requires_grad_(True) for a in args])
    got, entry = _step(fn, args, "cuda")
    for graph in (entry.fwd, entry.bwd):  # forward and backward each have a row kernel
        kinds = [k for k, p in zip(graph.kernel_kinds(), graph.plans) if p.phased]
        assert kinds and set(kinds) == {"cuda"}, graph.kernel_kinds()  # not the NumPy form
    if host_cuda is not None:
        assert host_cuda.raw and all(k.launches for k in host_cuda.raw)
    for a, b in zip(got, cpu):
        scale = float(np.abs(b).max()) or 1.0
        np.testing.assert_allclose(a / scale, b / scale, **TOL[dtype])
    np.testing.assert_allclose(got[0], _np(eager_out), rtol=TOL[dtype]["rtol"] * 10,
                               atol=TOL[dtype]["atol"] * 10)



def _row_plans(case, dtype):
    """The row kernels' plans of ``case``'s compiled forward and backward."""
    fn, args = _case(case, dtype)
    cf = tx.compile(fn, options={"kernels": "numpy", "tier_up": 0})
    xs = [a.detach().requires_grad_(True) for a in args]
    tx.autograd.grad(cf(*xs).sum(), xs)
    entry = _entry(cf)
    return [p for p in entry.fwd.plans + entry.bwd.plans if p.phased]


_NVCC = shutil.which("nvcc")


@pytest.mark.skipif(_NVCC is None, reason="needs nvcc")
def test_row_kernel_sources_compile_for_sm90_without_warnings(tmp_path):
    sources = {}
    for case in CASES:
        for dtype in (tx.float32, tx.float64):
            for plan in _row_plans(case, dtype):
                src = cuda_rows.cuda_row_source(plan)
                assert "#include" not in src["code"]  # NVRTC has no C library headers
                sources[src["name"]] = src["kernel"]
    assert len(sources) >= 10  # forward and backward of each case, in two dtypes
    unit = tmp_path / "rows.cu"
    unit.write_text(cuda_rows.ROW_PREAMBLE + "\n".join(sources.values()))
    out = subprocess.run([_NVCC, "-arch=sm_90", "-std=c++17", "--ptx", "-o",
                          str(tmp_path / "rows.ptx"), str(unit)], capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "warning" not in out.stderr, out.stderr[-3000:]
    assert (tmp_path / "rows.ptx").read_text().count(".entry") == len(sources)


def test_the_source_has_a_loop_and_a_block_reduction_per_pass():
    plan = _plan(lambda x: F.layer_norm(x, (8,)), tx.randn(4, 8, dtype=tx.float64))
    src = cuda_rows.cuda_row_source(plan)
    kernel = src["kernel"]
    assert src["name"] == plan.key + "_rows" and f"void {src['name']}(" in kernel
    # mean; variance of x - mean; the normalised row: three loops over the row, the two
    # sums combined across the block, each written per row by one thread
    assert kernel.count("for (long long b = threadIdx.x; b < inner; b += blockDim.x)") == 3
    assert kernel.count("tx_row_reduce(") == 2 and kernel.count("if (threadIdx.x == 0)") == 2
    assert "const double* __restrict__ x0" in kernel and "double* o0" in kernel
    assert "__shfl_xor_sync" in src["code"] and "__syncthreads" in src["code"]
    # x - mean is computed again in the last pass (registers, not a scratch row)
    (sub,) = [n for n in plan.group.nodes if n.op.__name__ == "Sub"]
    assert kernel.count(f"const double {plan.names[sub]} = ") == 2
    assert cuda_rows.launch_shape(plan) == (4, 32)


def test_column_sums_are_written_for_the_caller_and_extremes_start_at_infinity():
    # layer norm's backward: dx reads two row sums; dw and db are column sums
    plans = _row_plans("layer_norm", tx.float32)
    (bwd,) = [p for p in plans if any(side == "outer" for *_, side, _ in p.reductions)]
    kernel = cuda_rows.cuda_row_source(bwd)["kernel"]
    for j, (_, src, _, side, _) in enumerate(bwd.reductions):
        if side == "outer":
            assert f"r{j}[a * inner + b] = {src};" in kernel
            assert f"float* r{j}" in kernel
        else:
            assert f"double* r{j}" in kernel and f"r{j}[a] = acc{j};" in kernel
    plan = _plan(lambda x: x - x.amax(-1, keepdim=True), tx.randn(5, 9))
    kernel = cuda_rows.cuda_row_source(plan)["kernel"]
    assert "double acc0 = -tx_row_inf();" in kernel and "tx_row_reduce(acc0, 1, tx_sh)" in kernel
    assert cuda_rows.launch_shape(_plan(lambda x: x.softmax(-1), tx.randn(3, 1100))) == \
        (3, 512)


def test_layer_norm_is_decomposed_on_a_device_that_runs_row_kernels(monkeypatch):
    """Where CUDA C runs, layer norm becomes a row kernel (fused with its neighbours); on the
    stand-in, which would run it as NumPy through its xp, the eager primitive stays whole."""
    if backend.cuda_available():
        pytest.skip("a real GPU runs CUDA C")

    def fn(x):
        return F.layer_norm(x, (16,)) * 2.0

    x = tx.randn(4, 16)
    with backend.fake_cuda():
        assert kernels.row_kernels_on(tx.device("cpu"))
        assert not kernels.row_kernels_on(tx.device("cuda"))
        cf = tx.compile(fn, options={"tier_up": 0})
        cf(x.to("cuda"))
        assert "LayerNorm" in str(_entry(cf).graph.graph.code)
        monkeypatch.setattr(kernels, "backend", HostCuda(backend))
        assert kernels.row_kernels_on(tx.device("cuda"))
        cf = tx.compile(fn, options={"tier_up": 0})
        np.testing.assert_allclose(_np(cf(x.to("cuda"))), _np(fn(x)), rtol=2e-6, atol=2e-6)
        entry = _entry(cf)
        assert "LayerNorm" not in str(entry.graph.graph.code)
        assert entry.graph.kernel_kinds() == ["cuda"]


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", [tx.float32, tx.float64], ids=["f32", "f64"])
def test_edge_rows_on_cuda_match_eager(host_cuda, dtype):
    """NaN wins the max and the min, a fully masked row (-inf everywhere) is NaN, +inf and
    huge logits: as eager, through the block reductions."""
    rows = np.array([[1.0, np.nan, 2.0, 0.0, -1.0],
                     [-np.inf] * 5,
                     [0.0, np.inf, 1.0, 2.0, 3.0],
                     [88.0, 87.5, -104.5, -87.5, 0.0],
                     [-1e4, 3.0, -np.inf, 2.5, 1e-3]])
    x = tx.tensor(np.tile(rows, (3, 7)), dtype=dtype)  # 35 columns: two warps

    def fn(x):
        return tx.cat([x.softmax(-1), x.log_softmax(-1), x - x.amin(-1, keepdim=True)])

    cf = tx.compile(fn, options={"tier_up": 0})
    with np.errstate(all="ignore"):
        want = fn(x).numpy()
    got = _np(cf(x.to("cuda")))
    kinds = [k for k, p in zip(_entry(cf).graph.kernel_kinds(), _entry(cf).graph.plans)
             if p.phased]
    assert kinds and set(kinds) == {"cuda"}
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=TOL[dtype]["rtol"], atol=1e-30)
