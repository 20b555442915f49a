"""tensorix.compile against eager tensorix, torch eager and torch.compile, in one process
(ratios in the same run are what to read on a busy machine), plus the compiler fuzzer at scale.

    python benchmarks/bench_compile.py                 # gelu + GPT step + compile times
    python benchmarks/bench_compile.py --inductor      # also torch.compile (Inductor, CPU)
    python benchmarks/bench_compile.py --fuzz 500      # 500 random programs, numba kernels
    python benchmarks/bench_compile.py --quick         # small sizes (a smoke run)

Cases (the workloads of benchmarks/workloads.py, so torch and tensorix run the same program):
``gelu_fwd_bwd`` is gelu_tanh(x * 1.5 + 0.3) on 4M floats, forward and backward of the sum;
``gpt_step`` the 2-layer GPT (d=128, T=64, batch 16) AdamW step: tensorix compiles the whole
step (zero_grad, loss, backward, the optimizer's update: backward runs the compiled backward,
the update is one fused kernel, tensorix._compile.optim_kernels; ``--loss-only``: the loss
alone, the update eager), torch.compile the loss (torch's update eager, as before).
"""

from __future__ import annotations

import argparse
import os
import pathlib
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))


def interleaved(steps: dict, rounds: int, warmup: int = 2, cpu: dict | None = None) -> dict:
    """Best wall time per step, sampled round-robin (one of each per round), so a change in
    the machine's load hits every variant alike; ``cpu`` (if given) receives the best CPU
    time of this process per step (all its threads: what the step cost the machine)."""
    for fn in steps.values():
        for _ in range(warmup):
            fn()
    best = dict.fromkeys(steps, float("inf"))
    if cpu is not None:
        cpu.update(dict.fromkeys(steps, float("inf")))
    for _ in range(rounds):
        for name, fn in steps.items():
            c = time.process_time()
            t = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t)
            if cpu is not None:
                cpu[name] = min(cpu[name], time.process_time() - c)
    return best


def settle(step):
    """Run a compiled step past its kernels' tier-up and wait for their background numba
    compile (tensorix._compile.tune), so the timed rounds see the kernels it settles on."""
    from tensorix._compile import tune

    for _ in range(4):
        step()
    tune.wait()
    step()  # measures the numba form against NumPy and switches


def gelu_case(m, compiled, n, compile_fn=None):
    F = m.nn.functional
    import numpy as np

    x = m.from_numpy(np.random.default_rng(0).standard_normal(n, dtype=np.float32))
    x.requires_grad_(True)

    def loss(x):
        return F.gelu(x * 1.5 + 0.3, approximate="tanh").sum()

    fn = compile_fn(loss) if compiled else loss

    def step():
        fn(x).backward()
        x.grad = None

    return step


def gpt_case(m, compiled, weights=None, compile_fn=None, quick=False, whole=False):
    """The GPT train step of workloads.py, with the loss function compiled when asked (with
    ``whole``: the whole step, zero_grad, loss, backward and the optimizer's update)."""
    import workloads

    F = m.nn.functional
    model = workloads._models(m)["gpt_step"]()
    if weights is None and m.__name__ == "torch":
        m.manual_seed(workloads.SEED)
        workloads.torch_init(model)
    elif weights is None:  # tensorix alone (the compile-time runs): any weights will do
        m.manual_seed(workloads.SEED)
        with m.no_grad():
            for p in model.parameters():
                p.normal_(0.0, 0.02)
    else:
        model.load_state_dict({k: m.from_numpy(v.copy()) for k, v in weights.items()})
    opt = workloads._optimizer(m, "gpt_step", list(model.parameters()))
    batches = [(m.from_numpy(x), m.from_numpy(y)) for x, y in workloads._batches("gpt_step")]

    def loss_fn(x, y):
        logits = model(x)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))

    fn = compile_fn(loss_fn) if compiled and not whole else loss_fn

    def train(x, y):
        opt.zero_grad()
        loss = fn(x, y)
        loss.backward()
        opt.step()
        return loss

    if compiled and whole:  # the whole step: its optimizer update one fused kernel
        train = compile_fn(train)

    def step(batch=batches[0]):
        return train(*batch)

    init = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    return step, init, batches


def compile_time_in_fresh_process(cache_dir) -> list:
    """Seconds of each of the first three calls of the compiled GPT step, in a new process (so
    the in-memory cache is empty; numba's disk cache and the kernel cost model under
    ``cache_dir`` are what a warm run reuses), then the wait for the background compile still
    running after them, then the 4th call (which measures and switches the kernels). The first
    call traces, optimizes and fuses; with nothing measured yet its kernels run as NumPy and
    numba's compile starts in the background at the third (tensorix._compile.tune)."""
    code = (f"import sys, time; sys.path[:0] = [{str(HERE)!r}, {str(HERE.parent)!r}]; "
            "import tensorix as tx; import bench_compile as b; "
            "from tensorix._compile import tune; "
            "step, _, batches = b.gpt_case(tx, True, compile_fn=tx.compile); ts = []\n"
            "for _ in range(3):\n t = time.perf_counter(); step(); "
            "ts.append(time.perf_counter() - t)\n"
            "t = time.perf_counter(); tune.wait(); ts.append(time.perf_counter() - t)\n"
            "t = time.perf_counter(); step(); ts.append(time.perf_counter() - t)\n"
            "print(' '.join(map(str, ts)))")
    env = dict(os.environ, TENSORIX_CACHE_DIR=str(cache_dir))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=900)
    if out.returncode:
        raise RuntimeError(out.stderr[-2000:])
    return [float(v) for v in out.stdout.strip().splitlines()[-1].split()]


def _print_cpu(cpu_rows, cols):
    print("\nCPU time of this process per step (best of the same rounds):")
    for name, t in cpu_rows:
        cells = ", ".join(f"{c} {t[c] * 1e3:.1f} ms" for c in cols if c in t)
        mine = t["tensorix compiled"]
        ratios = f"compiled / eager {mine / t['tensorix eager']:.2f}"
        if "torch.compile" in t:
            ratios += f", compiled / torch.compile {mine / t['torch.compile']:.2f}"
        print(f"  {name}: {cells}; {ratios}")
    print(f"load average: {pathlib.Path('/proc/loadavg').read_text().split()[:3]}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--inductor", action="store_true", help="also time torch.compile")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--fuzz", type=int, default=0, help="random programs to check")
    ap.add_argument("--kernels", default="auto", help="auto | numba | numpy")
    ap.add_argument("--cache-dir", default=None, help="for the compile-time runs")
    ap.add_argument("--threads", type=int, default=2, help="per framework")
    ap.add_argument("--loss-only", action="store_true",
                    help="compile only the GPT loss (the update eager), not the whole step")
    args = ap.parse_args(argv)

    import tensorix as tx

    opts = {"kernels": args.kernels}

    def tx_compile(fn):
        return tx.compile(fn, options=opts)

    tx.set_num_threads(args.threads)
    try:
        import torch

        torch.set_num_threads(args.threads)
    except ImportError:
        torch = None
    rows = []
    n = (1 << 16) if args.quick else (1 << 22)
    rep = 2 if args.quick else args.repeat
    steps = {"tensorix eager": gelu_case(tx, False, n),
             "tensorix compiled": gelu_case(tx, True, n, tx_compile)}
    if torch is not None:
        steps["torch eager"] = gelu_case(torch, False, n)
        if args.inductor:
            steps["torch.compile"] = gelu_case(torch, True, n, torch.compile)
    settle(steps["tensorix compiled"])
    cpu_rows = []
    cpu_rows.append(("gelu_fwd_bwd", {}))
    rows.append(("gelu_fwd_bwd", interleaved(steps, rep, cpu=cpu_rows[-1][1])))

    steps, weights = {}, None
    if torch is not None:
        steps["torch eager"], weights, _ = gpt_case(torch, False)
        if args.inductor:
            steps["torch.compile"], _, _ = gpt_case(torch, True, compile_fn=torch.compile)
    steps["tensorix eager"], _, _ = gpt_case(tx, False, weights)
    steps["tensorix compiled"], _, _ = gpt_case(tx, True, weights, compile_fn=tx_compile,
                                                whole=not args.loss_only)
    start = time.perf_counter()
    steps["tensorix compiled"]()
    first = time.perf_counter() - start
    settle(steps["tensorix compiled"])
    cpu_rows.append(("gpt_step", {}))
    rows.append(("gpt_step", interleaved(steps, rep, cpu=cpu_rows[-1][1])))

    cols = ["tensorix eager", "tensorix compiled", "torch eager", "torch.compile"]
    print("| case | " + " | ".join(cols) + " | compiled / eager tensorix | "
          "compiled / torch eager |\n|---" * 1 + "|---" * (len(cols) + 2) + "|")
    for name, t in rows:
        cells = " | ".join(f"{t[c] * 1e3:.1f} ms" if c in t else "-" for c in cols)
        ratio_e = t["tensorix compiled"] / t["tensorix eager"]
        ratio_t = t["tensorix compiled"] / t["torch eager"] if "torch eager" in t else float("nan")
        print(f"| {name} | {cells} | {ratio_e:.2f} | {ratio_t:.2f} |")
        if "torch.compile" in t:
            print(f"|   {name}: compiled tensorix / torch.compile = "
                  f"{t['tensorix compiled'] / t['torch.compile']:.2f} |")
    _print_cpu(cpu_rows, cols)
    print(f"\nGPT step, first compiled call in this process (trace + passes + kernels): "
          f"{first:.2f} s")
    if args.cache_dir:
        cold = compile_time_in_fresh_process(args.cache_dir)
        warm = compile_time_in_fresh_process(args.cache_dir)
        for name, ts in (("cold", cold), ("warm", warm)):
            print(f"GPT step in a fresh process, {name} cache: calls 1-3 take "
                  f"{', '.join(f'{t:.2f} s' for t in ts[:3])}; the background compile ends "
                  f"{ts[3]:.2f} s after call 3; call 4 (measures, switches) {ts[4]:.2f} s")
    if args.fuzz:
        from tensorix._compile.fuzz import fuzz

        start = time.perf_counter()
        report = fuzz(seed=int(time.time()), programs=args.fuzz, options=opts)
        print(f"\nfuzz: {report['programs']} programs over {report['pool']} pool ops, "
              f"{len(report['failures'])} failures, {time.perf_counter() - start:.0f} s")
        for listing, why in report["failures"][:10]:
            print("  ", why, listing)


if __name__ == "__main__":
    main()
