"""First look on a GPU machine: the environment, then each fused CUDA kernel on small inputs
against the CPU path, one line each (OK / FAIL with the error). Exit code 1 if any failed.

    python3 scripts/gpu_smoke.py

Runs in seconds (each kernel compiles once, through NVRTC); scripts/gpu_check.sh calls it
before the test suite so a broken kernel shows up first, plainly.
"""

from __future__ import annotations

import os
import sys
import traceback

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import tensorix as tx  # noqa: E402

F = tx.nn.functional


def _np(t):
    return t.detach().cpu().numpy()


def _both(fn, *arrays, grad=True):
    """fn's outputs (and input grads of sum(out * w)) on cpu and cuda, as NumPy arrays."""
    res = []
    for dev in ("cpu", "cuda"):
        ts = [tx.tensor(a, device=dev, requires_grad=grad and a.dtype.kind == "f")
              for a in arrays]
        out = fn(*ts)
        got = [_np(out)]
        if grad:
            w = tx.tensor(np.linspace(-1, 1, out.numel()).reshape(tuple(out.shape)),
                          dtype=out.dtype, device=dev)
            (out * w).sum().backward()
            got += [_np(t.grad) for t in ts if t.grad is not None]
        res.append(got)
    return res


def _check(res, rtol, atol):
    for a, b in zip(*res):
        np.testing.assert_allclose(b, a, rtol=rtol, atol=atol)


def main():
    import cupy  # only to report its version; tensorix itself reaches it through backend

    print(f"python {sys.version.split()[0]}, numpy {np.__version__}, cupy {cupy.__version__}")
    print(f"tensorix.cuda: available={tx.cuda.is_available()} count={tx.cuda.device_count()} "
          f"name={tx.cuda.get_device_name()} cc={tx.cuda.get_device_capability()}")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 129)).astype(np.float32) * 3
    w, b = rng.standard_normal(129).astype(np.float32), rng.standard_normal(129).astype(np.float32)
    t = rng.integers(0, 129, 64)
    checks = {
        "gelu tanh fwd+bwd": lambda: _check(_both(lambda a: F.gelu(a, approximate="tanh"), x),
                                            1e-5, 1e-5),
        "gelu erf fwd+bwd": lambda: _check(_both(F.gelu, x), 1e-5, 1e-5),
        "softmax fwd+bwd": lambda: _check(_both(lambda a: F.softmax(a, -1), x), 1e-5, 1e-6),
        "log_softmax fwd+bwd": lambda: _check(_both(lambda a: F.log_softmax(a, -1), x),
                                              1e-5, 1e-5),
        "cross_entropy (nll bwd)": lambda: _check(_both(
            lambda a, tt: F.cross_entropy(a, tt), x, t), 1e-5, 1e-6),
        "layer_norm fwd+bwd": lambda: _check(_both(
            lambda a, ww, bb: F.layer_norm(a, (129,), ww, bb), x, w, b), 1e-4, 1e-5),
        "matmul bf16": lambda: _check(_both(
            lambda a, c: (a.to(tx.bfloat16) @ c.to(tx.bfloat16)).to(tx.float32), x, x.T.copy(),
            grad=False), 2e-2, 2e-1),
        "adamw step": _adamw,
        "dropout mask": _dropout,
    }
    failed = 0
    for name, fn in checks.items():
        try:
            fn()
            print(f"OK    {name}", flush=True)
        except Exception as e:
            failed += 1
            print(f"FAIL  {name}: {type(e).__name__}: {str(e).splitlines()[0][:300]}",
                  flush=True)
            traceback.print_exc()
    print(f"smoke: {len(checks) - failed} ok, {failed} failed")
    return 1 if failed else 0


def _adamw():
    out = []
    for dev in ("cpu", "cuda"):
        p = tx.tensor(np.linspace(-1, 1, 1000, dtype=np.float32), device=dev,
                      requires_grad=True)
        opt = tx.optim.AdamW([p], lr=0.1)
        for _ in range(3):
            opt.zero_grad()
            (p * p * p).sum().backward()
            opt.step()
        out.append(_np(p))
    np.testing.assert_allclose(out[1], out[0], rtol=1e-5, atol=1e-6)


def _dropout():
    tx.manual_seed(0)
    y = _np(F.dropout(tx.ones(1 << 20, device="cuda"), 0.3))
    kept = (y > 0).mean()
    assert abs(kept - 0.7) < 0.005, kept
    assert np.allclose(y[y > 0], 1 / 0.7)


if __name__ == "__main__":
    sys.exit(main())
