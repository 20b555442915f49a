"""Devices: CPU semantics of the CUDA surface, the kernel table, and a representative set of
ops, layers and optimizers run on every device (``device`` fixture: cpu, and cuda where CuPy
sees a GPU; scripts/gpu_check.sh runs them with TENSORIX_TEST_DEVICE=cuda).

On machines without a GPU the CUDA kernels are still checked: every source compiles with nvcc
for sm_90, the elementwise ones run on the host (C++) against the NumPy path, and each op's
use of the table is exercised through NumPy twins registered for the CPU.
"""

import ctypes
import shutil
import subprocess

import numpy as np
import pytest

import tensorix as tx
from tensorix import backend, kernels
from tensorix.kernels import _standalone
from tensorix.ops import random as txrandom
from tensorix.ops.unary import erf_kernel

F = tx.nn.functional
NO_GPU = not backend.cuda_available()
NO_CUDA_MSG = "CUDA was requested but CuPy with a visible GPU is not available"
MIXED = r"expected all tensors to be on the same device, but found at least two devices, " \
        r"cpu and cuda:0"


def _np(t):
    return t.detach().cpu().numpy()


def _close(a, b, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(_np(a) if isinstance(a, tx.Tensor) else a,
                               _np(b) if isinstance(b, tx.Tensor) else b, rtol=rtol, atol=atol)


# -- the CUDA surface on a machine without a GPU --------------------------------------------

@pytest.mark.skipif(not NO_GPU, reason="checks the no-GPU behaviour")
def test_no_gpu_runtime_answers():
    assert tx.cuda.is_available() is False and tx.cuda.device_count() == 0
    assert tx.cuda.memory_allocated() == 0 and tx.cuda.max_memory_allocated() == 0
    assert tx.cuda.memory_reserved() == 0 and tx.cuda.default_generators() == ()
    tx.cuda.manual_seed(3)  # silently ignored, as in PyTorch
    tx.cuda.manual_seed_all(3)
    tx.cuda.empty_cache()
    tx.cuda.reset_peak_memory_stats()
    for call in (tx.cuda.current_device, tx.cuda.synchronize, tx.cuda.Stream, tx.cuda.Event,
                 lambda: tx.cuda.set_device(0), tx.cuda.get_rng_state):
        with pytest.raises(RuntimeError, match=NO_CUDA_MSG):
            call()


@pytest.mark.skipif(not NO_GPU, reason="checks the no-GPU behaviour")
def test_moving_to_cuda_without_a_gpu_is_a_clear_error():
    x = tx.ones(2)
    for call in (lambda: x.to("cuda"), x.cuda, lambda: tx.zeros(2, device="cuda"),
                 lambda: tx.rand(2, device="cuda"), lambda: tx.nn.Linear(2, 2).cuda(),
                 lambda: tx.tensor([1.0], device="cuda:0")):
        with pytest.raises(RuntimeError, match=NO_CUDA_MSG):
            call()


def test_device_index_and_tf32_flag_errors(monkeypatch):
    monkeypatch.setattr(tx.cuda._device, "device_count", lambda: 1)
    monkeypatch.setattr(tx.cuda._device, "current_device", lambda: 0)
    assert tx.cuda._device.device_index("cuda:0") == 0
    with pytest.raises(ValueError, match=r"synchronize\(\): invalid device index 2 \(this "
                                         r"machine has 1 GPU\)"):
        tx.cuda._device.device_index(2, "synchronize")
    with pytest.raises(ValueError, match=r"set_device\(\): expected a CUDA device, got cpu"):
        tx.cuda._device.device_index("cpu", "set_device")
    with pytest.raises(TypeError, match="matmul.allow_tf32: expected a bool, got int"):
        tx.cuda.matmul.allow_tf32 = 1
    with pytest.raises(ValueError, match=r"set_rng_state_all\(\): expected 0 states"):
        tx.cuda.set_rng_state_all([tx.get_rng_state()])


def test_device_generators_are_per_device_and_seeded_together():
    txrandom._device_generators.pop(tx.device("cuda:0"), None)
    tx.manual_seed(5)
    gen = txrandom.device_generator("cuda:0")  # made without touching CuPy
    assert gen is not txrandom.default_generator and gen.device == tx.device("cuda:0")
    assert txrandom.device_generator("cpu") is txrandom.default_generator
    assert gen.initial_seed() == 5
    a = gen._rng.random(4)
    tx.manual_seed(7)  # seeds every device's generator, as torch.manual_seed
    assert gen.initial_seed() == 7
    tx.manual_seed(5)
    assert np.array_equal(gen._rng.random(4), a)
    # a CPU draw does not advance the GPU stream
    tx.manual_seed(5)
    tx.rand(3)
    assert np.array_equal(gen._rng.random(4), a)


# -- mixing devices: a fake CUDA array (a NumPy subclass the backend reports as cuda:0) -------

class _FakeCuda(np.ndarray):
    pass


@pytest.fixture
def on_fake_cuda(monkeypatch):
    real = backend.get_device
    monkeypatch.setattr(backend, "get_device", lambda a: tx.device("cuda:0")
                        if isinstance(a, _FakeCuda) else real(a))

    def make(t):
        t._data = t._data.view(_FakeCuda)
        return t
    return make


def test_mixing_devices_names_both(on_fake_cuda):
    c = tx.randn(4, 4)
    g = on_fake_cuda(tx.randn(4, 4))
    assert g.device == tx.device("cuda:0") and g.is_cuda
    idx = tx.tensor([[0, 1], [1, 0], [2, 2], [3, 3]])
    gidx = on_fake_cuda(tx.tensor([0, 1]))
    calls = {
        "add": lambda: c + g, "mul": lambda: g * c, "matmul": lambda: c @ g,
        "where": lambda: tx.where(c > 0, g, 0.0), "cat": lambda: tx.cat([c, g]),
        "stack": lambda: tx.stack([g, c]), "gather": lambda: tx.gather(g, 1, idx),
        "clamp": lambda: tx.clamp(c, g, None), "lerp": lambda: tx.lerp(c, g, 0.5),
        "einsum": lambda: tx.einsum("ij,jk->ik", c, g),
        "linear": lambda: F.linear(c, g), "embedding": lambda: F.embedding(gidx, c),
        "layer_norm": lambda: F.layer_norm(c, (4,), on_fake_cuda(tx.ones(4))),
        "nll_loss": lambda: F.nll_loss(c, on_fake_cuda(tx.tensor([0, 1, 2, 3]))),
        "conv2d": lambda: F.conv2d(c.reshape(1, 1, 4, 4), on_fake_cuda(tx.ones(1, 1, 2, 2))),
    }
    for call in calls.values():
        with pytest.raises(RuntimeError, match=MIXED):
            call()
    # where's condition on another device than its values
    with pytest.raises(RuntimeError, match=r"where\(\): " + MIXED):
        tx.where(on_fake_cuda(tx.ones(4, 4, dtype=tx.bool)), c, c)


# -- the kernels primitives declare -------------------------------------------------------------

def _declaring():
    """(class, role, kernel) for every CUDA kernel some primitive (or composite) declares."""
    from tensorix.nn.functional import _core, _norm
    from tensorix.ops.activation import Gelu
    from tensorix.ops.linalg import MatMul
    from tensorix.ops.softmax import _SoftmaxFamily
    from tensorix.optim import adam

    out = [(cls, role, k) for cls in (Gelu, _SoftmaxFamily, MatMul, _norm.LayerNorm,
                                      _core.NLLLoss)
           for role, ks in cls._kernels.items() for k in ks if k.device_type == "cuda"]
    return out + [(None, None, k) for k in _core._DROPOUT_KERNELS + adam._KERNELS]


def test_every_cuda_kernel_is_declared_by_a_primitive_and_none_serves_the_cpu(monkeypatch):
    from tensorix.autograd.dispatch import kernel
    from tensorix.ops.activation import Gelu
    from tensorix.ops.linalg import MatMul

    monkeypatch.setattr(backend, "cuda_kernels_available", lambda: True)  # as with a GPU
    cpu, cuda = tx.device("cpu"), tx.device("cuda")
    declared = {k for _, _, k in _declaring()}
    assert declared == {k for k in kernels.declared() if k.device_type == "cuda"}
    assert len(declared) == 10
    for cls, role, k in _declaring():
        assert kernels.select((k,), cpu, tx.float32) is None
        if cls is not None:
            assert kernel(cls, role, cpu, tx.float32) is None
    assert kernel(Gelu, "forward", cuda, tx.float32) is kernels.cuda.gelu.load()
    assert kernel(Gelu, "forward", cuda, tx.float16) is None  # upcast by the op instead
    assert kernel(MatMul, "forward", cuda, tx.bfloat16) is not None
    assert kernel(MatMul, "forward", cuda, tx.float32) is None  # plain cuBLAS via xp
    with pytest.raises(KeyError):
        kernel(MatMul, "backward", cuda, tx.float32)


def test_no_cuda_kernel_serves_without_cuda_c():
    """Without a GPU (and on the CuPy stand-in, which cannot run CUDA C) no CUDA kernel
    serves, so the ops run their generic xp paths there."""
    cuda = tx.device("cuda")
    if backend.cuda_kernels_available():
        pytest.skip("a real GPU serves the kernels")
    with backend.fake_cuda():
        assert backend.fake_cuda_active() and not backend.cuda_kernels_available()
        assert all(kernels.select((k,), cuda, tx.float32) is None for _, _, k in _declaring())
        assert kernels.select((kernels.cuda.matmul,), cuda, tx.bfloat16) is None
        with pytest.raises(NotImplementedError, match="cannot compile or run CUDA C"):
            kernels.cuda.gelu(tx.ones(3, device="cuda")._data, "none")


_NVCC = shutil.which("nvcc")


@pytest.mark.skipif(_NVCC is None, reason="needs nvcc")
@pytest.mark.parametrize("unit", ["cuda_elementwise_unit", "cuda_rows_unit"])
def test_cuda_sources_compile_for_sm90(tmp_path, unit):
    src = tmp_path / "k.cu"
    src.write_text(getattr(_standalone, unit)())
    out = subprocess.run([_NVCC, "-arch=sm_90", "-std=c++17", "--ptx", "-o",
                          str(tmp_path / "k.ptx"), str(src)], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    ptx = (tmp_path / "k.ptx").read_text()
    expected = 2 * (len(kernels._cuda_src.ELEMENTWISE) if "elementwise" in unit
                    else len(kernels._cuda_src.ROW_KERNELS))
    assert ptx.count(".entry") == expected


@pytest.fixture(scope="module")
def host_kernels(tmp_path_factory):
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        pytest.skip("needs a C++ compiler")
    d = tmp_path_factory.mktemp("hostk")
    (d / "k.cpp").write_text(_standalone.host_elementwise_unit())
    out = subprocess.run([cxx, "-O1", "-shared", "-fPIC", "-o", str(d / "k.so"),
                          str(d / "k.cpp")], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return ctypes.CDLL(str(d / "k.so"))


_CT = {"double": ctypes.c_double, "float": ctypes.c_float, "long long": ctypes.c_longlong,
       "unsigned long long": ctypes.c_ulonglong, "bool": ctypes.c_bool, "int": ctypes.c_int}


def _host(lib, name, dtype, n, **args):
    """Run kernel ``name`` on the host over ``n`` elements; arrays are passed by pointer."""
    in_p, out_p, _, scalars = kernels._cuda_src.ELEMENTWISE[name]
    fn = getattr(lib, f"{name}_{'f32' if dtype == np.float32 else 'f64'}")
    cargs = [ctypes.c_longlong(n)]
    for pname, ctype, _raw, scalar in (_standalone.params(in_p, scalars)
                                       + _standalone.params(out_p)):
        v = args[pname]
        if scalar:
            cargs.append(_CT["float" if ctype == "T" and dtype == np.float32 else
                             "double" if ctype == "T" else ctype](v))
        else:
            assert v.flags.c_contiguous
            cargs.append(ctypes.c_void_p(v.ctypes.data))
    fn(*cargs)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("approx", ["tanh", "none"])
def test_host_gelu_kernels_match_the_numpy_path(host_kernels, dtype, approx):
    x = (np.random.default_rng(0).standard_normal(5000) * 4).astype(dtype)
    g = np.random.default_rng(1).standard_normal(5000).astype(dtype)
    name = "tx_gelu_tanh" if approx == "tanh" else "tx_gelu_erf"
    y = np.empty_like(x)
    _host(host_kernels, name, dtype, x.size, x=x, y=y)
    t = tx.tensor(x, requires_grad=True)
    ref = F.gelu(t, approximate=approx)
    ref.backward(tx.tensor(g))
    tol = dict(rtol=2e-6, atol=2e-7) if dtype == np.float32 else dict(rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(y, _np(ref), **tol)
    dx = np.empty_like(x)
    _host(host_kernels, name + "_bwd", dtype, x.size, x=x, g=g, dx=dx)
    # 1 + tanh(u) cancels for u << 0: one ulp of tanh (NumPy's own vs the C library's) is
    # ~6e-8 (float32) / 1e-16 (float64) absolute, times up to |g| * 4
    tol["atol"] = 1e-5 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(dx, _np(t.grad), **tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["adamw", "adam_l2", "maximize"])
def test_host_adam_kernel_matches_adam_update(host_kernels, dtype, kind):
    from tensorix.optim.adam import adam_update

    rng = np.random.default_rng(2)
    p, g, m, v = (rng.standard_normal(3000).astype(dtype) for _ in range(4))
    v = np.abs(v)
    hp = dict(lr=1e-2, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.1,
              decoupled=kind == "adamw", maximize=kind == "maximize")
    ref = [a.copy() for a in (p, g, m, v)]
    adam_update(*ref[:4], None, 3, amsgrad=False, **hp)
    step, b1, b2 = 3, hp["beta1"], hp["beta2"]
    bc1, bc2 = 1 - b1 ** step, np.sqrt(1 - b2 ** step)
    wd, lr = hp["weight_decay"], hp["lr"]
    _host(host_kernels, "tx_adam", dtype, p.size, g=g, beta1=b1, omb1=1 - b1, beta2=b2,
          omb2=1 - b2, lr_bc1=lr / bc1, bc2_sqrt=bc2, eps=hp["eps"],
          l2=0.0 if hp["decoupled"] else wd, decay_mul=1 - lr * wd if hp["decoupled"] else 1.0,
          maximize=hp["maximize"], p=p, m=m, v=v)
    tol = dict(rtol=1e-6, atol=1e-7) if dtype == np.float32 else dict(rtol=1e-14, atol=1e-15)
    for got, want in zip((p, m, v), (ref[0], ref[2], ref[3])):
        np.testing.assert_allclose(got, want, **tol)


def test_host_dropout_mask_is_seeded_and_fair(host_kernels):
    n, p = 200_000, 0.3
    masks = []
    for seed in (11, 11, 12):
        mask = np.empty(n, np.float32)
        _host(host_kernels, "tx_dropout_mask", np.float32, n, seed=seed, p=p,
              scale=1 / (1 - p), mask=mask)
        masks.append(mask)
    assert np.array_equal(masks[0], masks[1]) and not np.array_equal(masks[0], masks[2])
    assert set(np.unique(masks[0]).tolist()) == {0.0, np.float32(1 / (1 - p))}
    kept = (masks[0] > 0).mean()
    assert abs(kept - (1 - p)) < 4 * np.sqrt(p * (1 - p) / n)
    # neighbours are not correlated (a counter hash, not a short-period generator)
    k = (masks[0] > 0).astype(np.float64)
    assert abs(np.corrcoef(k[:-1], k[1:])[0, 1]) < 0.01


def test_host_nll_backward_kernel(host_kernels):
    t = np.array([2, 0, 1], np.int64)
    scale = np.array([-0.5, -1.0, -2.0], np.float64)
    out = np.empty((3, 4), np.float64)
    _host(host_kernels, "tx_nll_bwd", np.float64, out.size, t=t, scale=scale, C=4, coeff=out)
    want = np.zeros((3, 4))
    want[np.arange(3), t] = scale
    assert np.array_equal(out, want)


# -- the ops' use of the table, through NumPy twins of the CUDA entries registered for the CPU

def _twin_softmax(x, log):
    s = x - x.max(-1, keepdims=True)
    lse = np.log(np.exp(s).sum(-1, keepdims=True))
    return s - lse if log else np.exp(s - lse)


def _twin_softmax_bwd(y, g, log):
    if log:
        return g - np.exp(y) * g.sum(-1, keepdims=True)
    return y * (g - (g * y).sum(-1, keepdims=True))


def _twin_layer_norm(x, w, b, cols, eps):
    r = x.reshape(-1, cols)
    mu = r.mean(1)
    rstd = 1 / np.sqrt(((r - mu[:, None]) ** 2).mean(1) + eps)
    y = (r - mu[:, None]) * rstd[:, None]
    y = y * (1 if w is None else w.reshape(-1)) + (0 if b is None else b.reshape(-1))
    return y.reshape(x.shape).astype(x.dtype), mu.astype(x.dtype), rstd.astype(x.dtype)


def _twin_layer_norm_bwd(g, x, w, mean, rstd, cols, need):
    gr, xr = g.reshape(-1, cols), x.reshape(-1, cols)
    xh = (xr - mean.reshape(-1, 1)) * rstd.reshape(-1, 1)
    gh = gr if w is None else gr * w.reshape(-1)
    dx = rstd.reshape(-1, 1) * (gh - gh.mean(1, keepdims=True)
                                - xh * (gh * xh).mean(1, keepdims=True))
    return dx.reshape(x.shape), (gr * xh).reshape(x.shape) if need else None


def _twin_adam(p, g, m, v, step, *, lr, beta1, beta2, eps, weight_decay, decoupled,
               maximize):
    g = -g if maximize else g
    if weight_decay and decoupled:
        p *= 1 - lr * weight_decay
    elif weight_decay:
        g = g + weight_decay * p
    m *= beta1
    m += (1 - beta1) * g
    v *= beta2
    v += (1 - beta2) * g * g
    p -= lr / (1 - beta1 ** step) * m / (np.sqrt(v) / np.sqrt(1 - beta2 ** step) + eps)


_K, _C = np.sqrt(2 / np.pi), 0.044715


def _twin_gelu(x, approx):
    if approx == "tanh":
        return 0.5 * x * (1 + np.tanh(_K * (x + _C * x ** 3)))
    return 0.5 * x * (1 + erf_kernel(x / np.sqrt(2)))


def _twin_gelu_bwd(x, g, approx):
    if approx == "tanh":
        t = np.tanh(_K * (x + _C * x ** 3))
        return g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * _K * (1 + 3 * _C * x * x))
    return g * (0.5 * (1 + erf_kernel(x / np.sqrt(2))) + x * np.exp(-x * x / 2)
                / np.sqrt(2 * np.pi))


_TWINS = {
    "gelu": _twin_gelu, "gelu_backward": _twin_gelu_bwd,
    "softmax": _twin_softmax, "softmax_backward": _twin_softmax_bwd,
    "layer_norm": _twin_layer_norm, "layer_norm_backward": _twin_layer_norm_bwd,
    "adam": _twin_adam,
    "dropout_mask": lambda shape, dtype, p, seed: (
        (np.random.default_rng(seed).random(shape) >= p) / (1 - p)).astype(dtype),
    "nll_backward": lambda t, s, c: np.where(np.arange(c) == t[:, None], s[:, None], 0),
    "matmul": lambda a, b: (a.astype(np.float32) @ b.astype(np.float32)).astype(a.dtype),
}


@pytest.fixture
def cpu_twins(monkeypatch):
    """Each declared CUDA kernel serves the CPU through its twin; returns the per-kernel call
    counts."""
    calls = dict.fromkeys(_TWINS, 0)

    def counted(op, fn):
        def run(*a, **k):
            calls[op] += 1
            return fn(*a, **k)
        return run

    for _, _, k in _declaring():
        monkeypatch.setattr(k, "device_type", "cpu")
        monkeypatch.setattr(k, "_fn", counted(k.name, _TWINS[k.name]))
    return calls


def _training_run(seed=0):
    """A tiny model with every wired op: layer_norm, gelu, softmax, log_softmax + nll,
    dropout; two AdamW steps. Returns losses, final parameters and gradients."""
    tx.manual_seed(seed)
    lin = tx.nn.Linear(6, 6).double()
    ln = tx.nn.LayerNorm(6).double()
    opt = tx.optim.AdamW(list(lin.parameters()) + list(ln.parameters()), lr=0.05)
    x = tx.tensor(np.random.default_rng(seed).standard_normal((4, 3, 6)))
    y = tx.tensor(np.arange(12) % 6)
    losses = []
    for _ in range(2):
        opt.zero_grad()
        h = F.gelu(ln(lin(x)), approximate="tanh") + F.gelu(lin(x))
        h = F.dropout(h, 0.25) * F.softmax(h, -1)
        loss = F.cross_entropy(h.reshape(12, 6), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    params = [_np(p) for p in list(lin.parameters()) + list(ln.parameters())]
    return losses, params


def test_ops_use_their_declared_kernels_and_their_results(cpu_twins):
    losses, params = _training_run()
    for op in ("gelu", "gelu_backward", "softmax", "softmax_backward", "layer_norm",
               "layer_norm_backward", "adam", "dropout_mask", "nll_backward"):
        assert cpu_twins[op] > 0, op
    # the same run without the kernels: the same function up to the dropout stream (the twin
    # draws its mask from one seed, as the CUDA kernel does), so compare a no-dropout run
    assert np.isfinite(losses).all() and all(np.isfinite(p).all() for p in params)


def test_wired_paths_equal_the_xp_paths(cpu_twins, monkeypatch):
    monkeypatch.setattr(F, "dropout", lambda h, p, *a, **k: h)  # the one stream that differs
    fused = _training_run(1)
    for _, _, k in _declaring():
        monkeypatch.setattr(k, "device_type", "cuda")  # the twins no longer serve the CPU
    plain = _training_run(1)
    np.testing.assert_allclose(fused[0], plain[0], rtol=1e-12)
    for a, b in zip(fused[1], plain[1]):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_wired_half_matmul_and_second_order_stay_on_ops(cpu_twins):
    a = tx.randn(3, 4).to(tx.bfloat16)
    b = tx.randn(4, 2).to(tx.bfloat16)
    assert (a @ b).dtype is tx.bfloat16 and cpu_twins["matmul"] == 1
    # create_graph: backward must stay differentiable, so the fused backward is not used
    x = tx.randn(5, dtype=tx.float64, requires_grad=True)
    (gx,) = tx.autograd.grad(F.gelu(x).sum(), x, create_graph=True)
    (ggx,) = tx.autograd.grad(gx.sum(), x)
    assert cpu_twins["gelu_backward"] == 0 and ggx.shape == (5,)


# -- the same tests on every device ---------------------------------------------------------

def test_creation_and_transfer(device):
    for x in (tx.zeros(2, 3, device=device), tx.ones(4, device=device),
              tx.arange(5, device=device), tx.full((2,), 1.5, device=device),
              tx.eye(3, device=device), tx.randn(3, device=device),
              tx.tensor([1.0, 2.0], device=device), tx.empty(2, device=device)):
        assert x.device.type == device
    x = tx.tensor(np.arange(6.0).reshape(2, 3))
    y = x.to(device)
    assert y.device.type == device and np.array_equal(_np(y), _np(x))
    assert y.cpu().device.type == "cpu" and np.array_equal(_np(y.to("cpu")), _np(x))
    z = y.to(tx.float32)
    assert z.device.type == device and z.dtype is tx.float32
    assert tx.asarray(y, copy=False) is y
    for kw in ({"dtype": tx.float32}, {"device": "cpu" if device != "cpu" else device}):
        if kw.get("device") == device:
            continue
        with pytest.raises(ValueError, match="copy=False but the conversion needs a copy"):
            tx.asarray(y, copy=False, **kw)


def test_elementwise_reduction_and_matmul(device, rng):
    a, b = rng.standard_normal((5, 7)), rng.standard_normal((7, 3))
    ta, tb = tx.tensor(a, device=device), tx.tensor(b, device=device)
    _close((ta * 2 + 1).exp().log1p(), np.log1p(np.exp(a * 2 + 1)), rtol=1e-12)
    _close(tx.where(ta > 0, ta, 0.0), np.where(a > 0, a, 0.0))
    _close(ta.sum(1), a.sum(1), rtol=1e-12)
    _close(ta.mean(), a.mean(), rtol=1e-12)
    _close(ta.var(0), a.var(0, ddof=1), rtol=1e-12)
    assert np.array_equal(_np(ta.argmax(1)), a.argmax(1))
    _close(ta @ tb, a @ b, rtol=1e-12)
    f32 = tx.tensor(a.astype(np.float32), device=device) @ tx.tensor(b.astype(np.float32),
                                                                     device=device)
    assert f32.dtype is tx.float32
    _close(f32, a @ b, rtol=1e-4, atol=1e-5)
    h = tx.tensor(a, device=device).to(tx.bfloat16) @ tx.tensor(b, device=device).to(tx.bfloat16)
    assert h.dtype is tx.bfloat16 and h.device.type == device
    _close(h.to(tx.float64), a @ b, rtol=5e-2, atol=5e-2)


def test_indexing(device, rng):
    a = rng.standard_normal((4, 5))
    t = tx.tensor(a, device=device)
    idx = tx.tensor([2, 0, 2], device=device)
    _close(t[1:3, ::2], a[1:3, ::2])
    v = t[1:, 2:]  # views keep their place in the storage (CuPy arrays have no
    assert v.storage_offset() == 7 and v.data_ptr() - t.data_ptr() == 7 * 8  # array interface)
    _close(t[idx], a[[2, 0, 2]])
    _close(t[t > 0], a[a > 0])
    _close(tx.gather(t, 1, tx.tensor([[0, 1]] * 4, device=device)), a[:, :2])
    u = t.clone()
    u[idx, 1] = 7.0
    want = a.copy()
    want[[2, 0], 1] = 7.0
    _close(u, want)
    acc = tx.zeros(4, 5, dtype=tx.float64, device=device).index_put_(
        (idx,), tx.ones(3, 5, dtype=tx.float64, device=device), accumulate=True)
    assert _np(acc)[2].tolist() == [2.0] * 5 and _np(acc)[0].tolist() == [1.0] * 5


def test_autograd_and_second_order(device, rng):
    a = rng.standard_normal((3, 4))
    out = {}
    for dev in ("cpu", device):
        x = tx.tensor(a, device=dev, requires_grad=True)
        y = (x.sin() * x).sum() + (x @ x.mT).logsumexp(1).sum()
        (g,) = tx.autograd.grad(y, x, create_graph=True)
        (gg,) = tx.autograd.grad(g.sum(), x)
        assert g.device.type == dev and gg.device.type == dev
        out[dev] = (_np(g), _np(gg))
    for u, v in zip(out["cpu"], out[device]):
        np.testing.assert_allclose(u, v, rtol=1e-10, atol=1e-12)


def _one_step(dev, opt_name):
    tx.manual_seed(0)
    net = tx.nn.Sequential(tx.nn.Conv2d(2, 4, 3, padding=1), tx.nn.GELU(), tx.nn.Flatten(),
                           tx.nn.LayerNorm(4 * 5 * 5), tx.nn.Linear(4 * 5 * 5, 3))
    net = net.to(dev)
    opt = {"sgd": lambda p: tx.optim.SGD(p, lr=0.1, momentum=0.9),
           "adam": lambda p: tx.optim.Adam(p, lr=0.01),
           "adamw": lambda p: tx.optim.AdamW(p, lr=0.01, weight_decay=0.1)}[opt_name](
        net.parameters())
    x = tx.tensor(np.random.default_rng(3).standard_normal((6, 2, 5, 5)).astype(np.float32),
                  device=dev)
    y = tx.tensor([0, 1, 2, 0, 1, 2], device=dev)
    losses = []
    for _ in range(2):
        opt.zero_grad()
        loss = F.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, [_np(p) for p in net.parameters()]


@pytest.mark.parametrize("opt_name", ["sgd", "adam", "adamw"])
def test_training_step_matches_cpu(device, opt_name):
    ref_losses, ref_params = _one_step("cpu", opt_name)
    losses, params = _one_step(device, opt_name)
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-4)
    for a, b in zip(params, ref_params):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-5)


@pytest.mark.parametrize("approx", ["none", "tanh"])
def test_fused_activations_and_norms_match_cpu(device, rng, approx):
    a = rng.standard_normal((6, 33)).astype(np.float32) * 3
    g = rng.standard_normal((6, 33)).astype(np.float32)
    w, b = rng.standard_normal(33).astype(np.float32), rng.standard_normal(33).astype(np.float32)
    fns = [lambda x, w, b: F.gelu(x, approximate=approx),
           lambda x, w, b: F.softmax(x, -1), lambda x, w, b: F.log_softmax(x, -1),
           lambda x, w, b: F.softmax(x, 0),
           lambda x, w, b: F.layer_norm(x, (33,), w, b),
           lambda x, w, b: F.layer_norm(x.reshape(6, 3, 11), (3, 11), w.reshape(3, 11),
                                        None).reshape(6, 33)]
    for fn in fns:
        res = {}
        for dev in ("cpu", device):
            x = tx.tensor(a, device=dev, requires_grad=True)
            wt = tx.tensor(w, device=dev, requires_grad=True)
            bt = tx.tensor(b, device=dev, requires_grad=True)
            y = fn(x, wt, bt)
            y.backward(tx.tensor(g, device=dev))
            res[dev] = [_np(y), _np(x.grad)] + [_np(t.grad) for t in (wt, bt)
                                                if t.grad is not None]
        for u, v in zip(res["cpu"], res[device]):
            np.testing.assert_allclose(v, u, rtol=2e-5, atol=2e-5)


def test_cross_entropy_matches_cpu(device, rng):
    logits = rng.standard_normal((7, 5))
    target = np.array([0, 4, 2, 2, 1, 3, 0])
    res = {}
    for dev in ("cpu", device):
        x = tx.tensor(logits, device=dev, requires_grad=True)
        for red in ("mean", "sum"):
            loss = F.cross_entropy(x, tx.tensor(target, device=dev), reduction=red)
            loss.backward()
        res[dev] = (loss.item(), _np(x.grad))
    assert res["cpu"][0] == pytest.approx(res[device][0], rel=1e-12)
    np.testing.assert_allclose(res[device][1], res["cpu"][1], rtol=1e-12, atol=1e-14)


_CLASS_LOSSES = {
    "multi_margin_loss": lambda x, t: F.multi_margin_loss(x, t, p=2),
    "multilabel_margin_loss": lambda x, t: F.multilabel_margin_loss(
        x, tx.stack([t, t.flip(0), -tx.ones_like(t)], 1).repeat(1, 2)[:, :5]),
    "cross_entropy_smoothed": lambda x, t: F.cross_entropy(x, t, label_smoothing=0.1,
                                                           weight=tx.linspace(0.5, 1, 5,
                                                                              device=x.device)),
    "nll_loss_ignore": lambda x, t: F.nll_loss(F.log_softmax(x, 1), t, ignore_index=3),
}


@pytest.mark.parametrize("loss", list(_CLASS_LOSSES))
def test_class_index_losses_match_cpu(device, loss, rng):
    """Losses over class indices build helper tensors (class ids, one-hots): on the input's
    device, or the op mixes devices."""
    logits, target = rng.standard_normal((4, 5)), np.array([0, 3, 4, 1])
    res = {}
    for dev in ("cpu", device):
        x = tx.tensor(logits, device=dev, requires_grad=True)
        out = _CLASS_LOSSES[loss](x, tx.tensor(target, device=dev))
        out.backward()
        assert out.device.type == dev
        res[dev] = (_np(out), _np(x.grad))
    for u, v in zip(res["cpu"], res[device]):
        np.testing.assert_allclose(v, u, rtol=1e-12, atol=1e-14)


def test_rng_reproducible_per_device(device):
    tx.manual_seed(123)
    a = (tx.rand(6, device=device), tx.randn(3, 2, device=device),
         tx.randint(0, 9, (5,), device=device))
    tx.manual_seed(123)
    b = (tx.rand(6, device=device), tx.randn(3, 2, device=device),
         tx.randint(0, 9, (5,), device=device))
    for u, v in zip(a, b):
        assert u.device.type == device and np.array_equal(_np(u), _np(v))
    gen = txrandom.device_generator(tx.device(device))
    state = gen.get_state()
    c = tx.rand(4, device=device)
    gen.set_state(state)
    assert np.array_equal(_np(tx.rand(4, device=device)), _np(c))
    x = tx.ones(2000, device=device)
    tx.manual_seed(9)
    d1 = F.dropout(x, 0.4)
    tx.manual_seed(9)
    d2 = F.dropout(x, 0.4)
    assert np.array_equal(_np(d1), _np(d2))
    kept = (_np(d1) > 0).mean()
    assert abs(kept - 0.6) < 0.05 and np.allclose(_np(d1)[_np(d1) > 0], 1 / 0.6)


def test_dlpack_with_torch(device):
    torch = pytest.importorskip("torch")
    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    x = tx.arange(6, dtype=tx.float32, device=device).reshape(2, 3)
    t = torch.from_dlpack(x)
    assert t.device.type == device and t.tolist() == [[0, 1, 2], [3, 4, 5]]
    t[0, 0] = 10.0  # shares memory
    assert x[0, 0].item() == 10.0
    back = tx.from_dlpack(torch.arange(4.0, device=device) * 2)
    assert back.device.type == device and _np(back).tolist() == [0, 2, 4, 6]


# -- the CUDA runtime (a GPU, else the CuPy stand-in) ------------------------------------------

@pytest.mark.cuda
def test_cuda_runtime_memory_streams_events(cuda):
    cu = tx.cuda
    assert cu.is_available() and cu.device_count() >= 1 and cu.current_device() == 0
    assert cu.get_device_capability()[0] >= 3 and isinstance(cu.get_device_name(), str)
    cu.synchronize()
    before = cu.memory_allocated()
    x = tx.zeros(1 << 20, dtype=tx.float32, device="cuda")  # 4 MiB
    assert cu.memory_allocated() >= before + (4 << 20)
    cu.reset_peak_memory_stats()
    y = tx.empty(1 << 21, dtype=tx.float32, device="cuda")
    peak = cu.max_memory_allocated()
    del y
    assert peak >= cu.memory_allocated() + (8 << 20) - (1 << 20)
    assert cu.max_memory_allocated() == peak
    reserved = cu.memory_reserved()
    cu.empty_cache()
    assert cu.memory_reserved() <= reserved and cu.memory_allocated() >= 4 << 20
    s = cu.Stream()
    start, end = cu.Event(enable_timing=True), cu.Event(enable_timing=True)
    with s:
        start.record(s)
        z = (x + 1).sum()
        end.record(s)
    end.synchronize()
    assert s.query() and start.elapsed_time(end) >= 0 and z.item() == pytest.approx(
        float(_np(x + 1).sum()), rel=1e-3)
    cu.current_stream().wait_stream(s)
    with pytest.raises(RuntimeError, match="enable_timing=True"):
        cu.Event().elapsed_time(end)
    cu.manual_seed(4)
    assert cu.initial_seed() == 4
    st = cu.get_rng_state()
    a = tx.rand(3, device="cuda")
    cu.set_rng_state(st)
    assert np.array_equal(_np(tx.rand(3, device="cuda")), _np(a))
    cu.matmul.allow_tf32 = True
    cu.matmul.allow_tf32 = False


@pytest.mark.cuda
def test_mixing_real_devices_names_both(cuda):
    g, c = tx.ones(2, device="cuda"), tx.ones(2)
    for call in (lambda: g + c, lambda: c * g, lambda: tx.cat([c, g]),
                 lambda: F.linear(c.reshape(1, 2), g.reshape(1, 2))):
        with pytest.raises(RuntimeError, match=MIXED):
            call()
