"""tensorix on CUDA against torch CUDA eager, in one process, with issue 6's workloads.

    python3 benchmarks/bench_gpu.py [--out DIR] [--budget SECONDS] [--quick]

Cases (sizes for an H200): matmul 8192^3 in fp32, TF32 and bf16; gelu_tanh(x*1.5+0.3) on 256M
floats, forward and forward+backward of the sum; the MLP, CNN and GPT training steps of
benchmarks/workloads.py at 8x the CPU batch sizes (1024, 256, 128). Each case runs on both
frameworks with the same data (the training cases with the same initial weights, so their
first losses must agree), warmed up, then timed as the median of repeated blocks of calls
between device synchronisations. The ceilings are measured in the same run through torch: a
device-to-device copy (bytes read + written) and each matmul mode's rate.

Prints a markdown table (median ms, ratio tensorix/torch, achieved TFLOP/s or GB/s and its
share of the ceiling) and writes bench_gpu.md and bench_gpu.json under --out. A case that
fails is reported in the table with its error and the run goes on; --budget stops timing new
cases when the time is spent. Written without a GPU at hand: never run yet (docs/gpu.md).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
import traceback

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import workloads  # noqa: E402

import tensorix as tx  # noqa: E402

DEV = "cuda"  # tensorix's device; --device cpu runs the same code on the CPU (a dry run)
TDEV = "cuda"  # torch's: "cpu" for --device cpu and --device fake (tensorix on the CuPy
# stand-in, torch on the CPU: a dry run of the script's tensorix CUDA paths without a GPU)
N_MM = 8192
N_GELU = 256 * 1024 * 1024
BATCH = {"mlp_step": 1024, "cnn_step": 256, "gpt_step": 128}  # 8x benchmarks/workloads.py
# issue 6's torch 2.11 eager medians on the H200 (ms), for reference beside this run's
TORCH_ISSUE_MS = {"matmul_fp32": 21.6, "matmul_tf32": 3.08, "matmul_bf16": 1.65,
                  "gelu_fwd": 1.53, "gelu_fwd_bwd": 3.12, "mlp_step": 1.25, "cnn_step": 1.76,
                  "gpt_step": 5.78}
TARGET = {"matmul_fp32": 1.05, "matmul_tf32": 1.05, "matmul_bf16": 1.05, "gelu_fwd": 1.2,
          "gelu_fwd_bwd": 1.2, "mlp_step": 1.5, "gpt_step": 1.5}


def _sync(fw):
    if fw == "torch" and TDEV == "cuda":
        import torch

        torch.cuda.synchronize()
    elif fw == "tensorix" and DEV == "cuda":
        tx.cuda.synchronize()


def timeit(fw, fn, min_time=0.2, reps=7, max_per_block=50):
    """Median seconds per call: warm-up, then ``reps`` blocks of k calls between syncs."""
    for _ in range(2):
        fn()
    _sync(fw)
    t0 = time.perf_counter()
    fn()
    _sync(fw)
    one = max(time.perf_counter() - t0, 1e-6)
    k = max(1, min(max_per_block, int(min_time / reps / one)))
    times = []
    for _ in range(reps):
        _sync(fw)
        t0 = time.perf_counter()
        for _ in range(k):
            fn()
        _sync(fw)
        times.append((time.perf_counter() - t0) / k)
    return statistics.median(times)


# -- cases: each returns {"torch": fn, "tensorix": fn, ...extras} ----------------------------

def _matmul(mode):
    import torch

    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((N_MM, N_MM), dtype=np.float32) for _ in range(2))
    ta, tb = torch.from_numpy(a).to(TDEV), torch.from_numpy(b).to(TDEV)
    xa, xb = tx.tensor(a, device=DEV), tx.tensor(b, device=DEV)
    if mode == "bf16":
        ta, tb = ta.bfloat16(), tb.bfloat16()
        xa, xb = xa.to(tx.bfloat16), xb.to(tx.bfloat16)
    torch.backends.cuda.matmul.allow_tf32 = mode == "tf32"
    tx.cuda.matmul.allow_tf32 = mode == "tf32"
    out = (xa @ xb).to(tx.float64).cpu().numpy()
    want = (ta.double() @ tb.double()).cpu().numpy()
    err = float(np.linalg.norm(out - want) / np.linalg.norm(want))  # vs float64 products
    return {"torch": lambda: ta @ tb, "tensorix": lambda: xa @ xb,
            "flop": 2 * N_MM ** 3, "check": f"rel err {err:.1e}"}


def _gelu(backward):
    import torch

    x = np.random.default_rng(1).standard_normal(N_GELU, dtype=np.float32)
    tt = torch.from_numpy(x).to(TDEV)
    xt = tx.tensor(x, device=DEV)
    del x
    if not backward:
        return {"torch": lambda: torch.nn.functional.gelu(tt * 1.5 + 0.3, approximate="tanh"),
                "tensorix": lambda: tx.nn.functional.gelu(xt * 1.5 + 0.3, approximate="tanh"),
                "bytes": 8 * N_GELU}
    tt.requires_grad_(True)
    xt.requires_grad_(True)

    def t_step():
        torch.nn.functional.gelu(tt * 1.5 + 0.3, approximate="tanh").sum().backward()
        tt.grad = None

    def x_step():
        tx.nn.functional.gelu(xt * 1.5 + 0.3, approximate="tanh").sum().backward()
        xt.grad = None

    return {"torch": t_step, "tensorix": x_step, "bytes": 16 * N_GELU}


class _OnCuda:
    """A framework module whose creation functions used by workloads.py make tensors on that
    framework's device."""

    def __init__(self, m):
        self._m, self.device = m, DEV if m is tx else TDEV

    def __getattr__(self, name):
        return getattr(self._m, name)

    def zeros(self, *shape):
        return self._m.zeros(*shape, device=self.device)

    def arange(self, n):
        return self._m.arange(n, device=self.device)


def _batch(name):
    rng = np.random.default_rng([workloads.SEED, len(name)])
    n = BATCH[name]
    if name == "mlp_step":
        return rng.standard_normal((n, 784), dtype=np.float32), rng.integers(0, 10, n)
    if name == "cnn_step":
        return rng.standard_normal((n, 1, 28, 28), dtype=np.float32), rng.integers(0, 10, n)
    tok = rng.integers(0, 65, (n, 65))
    return tok[:, :-1].copy(), tok[:, 1:].copy()


def _train(name):
    import torch

    steps, losses = {}, {}
    xb, yb = _batch(name)
    weights = None
    for fw, m in (("torch", torch), ("tensorix", tx)):
        mc = _OnCuda(m)
        model = workloads._models(mc)[name]()
        if weights is None:
            torch.manual_seed(workloads.SEED)
            workloads.torch_init(model)
            weights = {k: v.detach().cpu().numpy().copy() for k, v in
                       model.named_parameters()}
        else:
            with tx.no_grad():
                for k, p in model.named_parameters():
                    p.copy_(tx.tensor(weights[k], device=DEV))
        opt = workloads._optimizer(m, name, list(model.parameters()))
        x = m.from_numpy(xb).to(mc.device)
        y = m.from_numpy(yb).to(mc.device)
        F = m.nn.functional

        def step(model=model, opt=opt, x=x, y=y, F=F):
            opt.zero_grad()
            logits = model(x)
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
            loss.backward()
            opt.step()
            return loss

        losses[fw] = float(step().item())
        steps[fw] = step
    return {**steps, "check": f"loss {losses['torch']:.5f} / {losses['tensorix']:.5f}",
            "loss_ok": math.isclose(losses["torch"], losses["tensorix"], rel_tol=2e-3)}


CASES = {
    "matmul_fp32": lambda: _matmul("fp32"), "matmul_tf32": lambda: _matmul("tf32"),
    "matmul_bf16": lambda: _matmul("bf16"), "gelu_fwd": lambda: _gelu(False),
    "gelu_fwd_bwd": lambda: _gelu(True), "mlp_step": lambda: _train("mlp_step"),
    "cnn_step": lambda: _train("cnn_step"), "gpt_step": lambda: _train("gpt_step"),
}


def ceilings():
    """Device copy bandwidth (read + write) and torch's matmul rates, measured now."""
    import torch

    if TDEV == "cpu":
        return {"copy_GBps": float("nan")}
    a = torch.empty(1 << 28, dtype=torch.float32, device="cuda").normal_()
    b = torch.empty_like(a)
    t = timeit("torch", lambda: b.copy_(a))
    return {"copy_GBps": 2 * 4 * (1 << 28) / t / 1e9}


def _fmt_rate(case, sec, ceil):
    if "flop" in case:
        rate = case["flop"] / sec / 1e12
        return f"{rate:.0f} TFLOP/s", rate
    if "bytes" in case:
        rate = case["bytes"] / sec / 1e9
        return f"{rate:.0f} GB/s ({100 * rate / ceil['copy_GBps']:.0f}% of copy)", rate
    return "", None


def run(names, budget, out_dir):
    import torch

    where = torch.cuda.get_device_name() if TDEV == "cuda" else \
        "the CuPy stand-in (dry run)" if DEV == "cuda" else "the CPU (dry run)"
    print(f"# tensorix vs torch {torch.__version__} eager on {where}", flush=True)
    ceil = ceilings()
    print(f"device copy: {ceil['copy_GBps']:.0f} GB/s (read + write)", flush=True)
    t_start = time.perf_counter()
    rows, peaks = [], {}
    for name in names:
        if time.perf_counter() - t_start > budget:
            rows.append({"case": name, "error": "skipped: time budget spent"})
            continue
        row = {"case": name}
        try:
            case = CASES[name]()
            row["check"] = case.get("check", "")
            for fw in ("torch", "tensorix"):
                row[fw + "_ms"] = 1e3 * timeit(fw, case[fw])
            row["ratio"] = row["tensorix_ms"] / row["torch_ms"]
            row["tx_rate"], _ = _fmt_rate(case, row["tensorix_ms"] / 1e3, ceil)
            row["torch_rate"], rate = _fmt_rate(case, row["torch_ms"] / 1e3, ceil)
            if "flop" in case:
                peaks[name] = rate
            if "loss_ok" in case and not case["loss_ok"]:
                row["error"] = "first losses differ"
        except Exception as e:  # keep going: one broken case must not hide the others
            row["error"] = f"{type(e).__name__}: {e}".splitlines()[0][:200]
            traceback.print_exc()
        finally:
            case = None
            if DEV == "cuda":
                tx.cuda.empty_cache()
            if TDEV == "cuda":
                torch.cuda.empty_cache()
            torch.backends.cuda.matmul.allow_tf32 = False
            tx.cuda.matmul.allow_tf32 = False
        rows.append(row)
        print(json.dumps(row), flush=True)
    table = _table(rows, ceil, torch.__version__)
    print(table)
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
        with open(os.path.join(out_dir, "bench_gpu.md"), "w") as f:
            f.write(table)
        with open(os.path.join(out_dir, "bench_gpu.json"), "w") as f:
            json.dump({"rows": rows, "ceilings": ceil, "torch_peaks_TFLOPs": peaks}, f, indent=1)
    return rows


def _table(rows, ceil, torch_version):
    head = ("| case | torch ms | tensorix ms | ratio (target) | tensorix rate | torch rate | "
            "check | issue's torch ms |\n|---|---|---|---|---|---|---|---|\n")
    lines = []
    for r in rows:
        if "ratio" not in r:
            lines.append(f"| {r['case']} | | | | | | {r.get('error', '')} | "
                         f"{TORCH_ISSUE_MS.get(r['case'], '')} |")
            continue
        tgt = TARGET.get(r["case"])
        ok = "" if tgt is None else (" ok" if r["ratio"] <= tgt else " MISSED")
        lines.append(f"| {r['case']} | {r['torch_ms']:.3f} | {r['tensorix_ms']:.3f} | "
                     f"{r['ratio']:.2f} ({tgt or '-'}){ok} | {r['tx_rate']} | "
                     f"{r['torch_rate']} | {r['check']} {r.get('error', '')} | "
                     f"{TORCH_ISSUE_MS.get(r['case'], '')} |")
    note = (f"\nMedians per call; torch {torch_version} eager in the same process; device copy "
            f"ceiling {ceil['copy_GBps']:.0f} GB/s. gelu GB/s count the fewest bytes (forward: "
            "read x, write y = 8 B/element; forward+backward 16 B/element).\n")
    return head + "\n".join(lines) + "\n" + note


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=os.environ.get("OUT"))
    p.add_argument("--budget", type=float, default=240.0, help="seconds for timing cases")
    p.add_argument("--cases", default=",".join(CASES))
    p.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu", "fake"],
                   help="fake: tensorix on the CuPy stand-in, torch on the CPU (a dry run)")
    args = p.parse_args(argv)
    global DEV, TDEV, N_MM, N_GELU, BATCH
    DEV, TDEV = ("cuda", "cpu") if args.device == "fake" else (args.device, args.device)
    if args.device == "fake":
        with tx.backend.fake_cuda():
            return _main(args)
    if DEV == "cuda" and not tx.cuda.is_available():
        print("bench_gpu: no GPU (tensorix.cuda.is_available() is False); nothing to run")
        return 2
    return _main(args)


def _main(args):
    global N_MM, N_GELU, BATCH
    if args.quick:
        N_MM, N_GELU = 512, 1 << 20
        BATCH = {k: v // 8 for k, v in BATCH.items()}
    rows = run(args.cases.split(","), args.budget, args.out)
    return 0 if all("error" not in r for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
