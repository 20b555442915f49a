"""Dynamic int8 Linear against torch.ao, the exact int8 GEMM routes, grouped layers, and
measured weight bytes.

Times, in the same run and in interleaved rounds (a load change on a shared machine hits all
cases alike; each round starts at the next case, and each call follows 20 ms of sleep, so
every call starts from idle threads - torch's OpenMP threads spin on after each of its calls):
tensorix's ``quantize_dynamic`` Linear (int8 weights per channel, int8 activations per tensor
quantized per call, the exact integer GEMM of ``tensorix.quant.int_mm``), torch.ao's
``quantize_dynamic`` Linear (fbgemm), and float32 ``nn.Linear`` of both, and last the same
tensorix layer on ``int_linear``'s NumPy route (the input quantized by NumPy passes rather
than the fused compiled pass of ``quant/_fused.py``; the same bits), at ``--size`` x
``--size`` for batches 1 to 64. Each row: the median ms over the rounds, the median of the
per-round ratios to torch.ao, and the CPU ms per call of both (all threads; wall time above
CPU time / threads is time the machine gave to others).

Then the exact int8 GEMM routes alone on the layer's codes, in the same rounds: the compiled
kernel (AVX-512 VNNI where the CPU has it), the AVX2 ``vpmaddwd`` kernel, float32 BLAS over K
chunks of 1024 (converting the int8 weight every call, as the route does), and one float32
GEMM on a weight converted beforehand (the least the BLAS route could cost, at 4x the
weight's bytes).

Then grouped layers (int4 weights and int4 or int8 activations in groups of 128 along K, as
the COMET / FlexQ presets run them): every group in one pass of the VNNI kernel over the
weight packed once, against group by group on the kernels without VNNI.

Then the weight bytes of a float32 Linear and of its int8 (per channel) and int4 (group 128,
packed two per byte) forms, codes alone and with scales and zero points, and at run time.

Run: ``python benchmarks/bench_quant.py`` (``--quick`` for 256 x 256, ``--repeat N``;
``--only speed`` for the torch.ao table alone, about a minute).
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import numpy as np

import tensorix as tx
from tensorix import nn
from tensorix.quant import Int4WeightOnlyConfig, Int8WeightOnlyConfig, kernels, quantize_dynamic
from tensorix.quant.kernels import compiled_available
from tensorix.quant.layers import QuantizedLinear


def rounds(fns, repeat, gap=0.0):
    """Wall ms and CPU ms per call of each ``fns``: one warm-up each, then ``repeat`` rounds,
    round r starting at case r mod len(fns); ``gap`` seconds of sleep before each call."""
    wall, cpu = [[] for _ in fns], [[] for _ in fns]
    for f in fns:
        f()
    for r in range(repeat):
        for j in range(len(fns)):
            i = (r + j) % len(fns)
            if gap:
                time.sleep(gap)
            t0, c0 = time.perf_counter(), time.process_time()
            fns[i]()
            wall[i].append((time.perf_counter() - t0) * 1e3)
            cpu[i].append((time.process_time() - c0) * 1e3)
    return wall, cpu


def _ratio(a, b):
    return statistics.median(x / y for x, y in zip(a, b))


def speed(size, batches, repeat):
    import torch

    tx.manual_seed(0)
    lin = nn.Linear(size, size)
    tlin = torch.nn.Linear(size, size)
    with torch.no_grad():
        tlin.weight.copy_(torch.tensor(lin.weight.detach().numpy()))
        tlin.bias.copy_(torch.tensor(lin.bias.detach().numpy()))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.ao's deprecation notices
        tq = torch.ao.quantization.quantize_dynamic(torch.nn.Sequential(tlin), {torch.nn.Linear},
                                                    dtype=torch.qint8)
    q = quantize_dynamic(nn.Sequential(lin))
    from tensorix.quant import gemm

    fused = gemm.int_linear_fused

    def numpy_route(x):
        # the same layer on int_linear's NumPy route (the input quantized by NumPy passes,
        # then the same kernel): what the fused pass saves, in the same rounds
        gemm.int_linear_fused = lambda *a: None
        try:
            return q(x)
        finally:
            gemm.int_linear_fused = fused
    rows = []
    for b in batches:
        x = np.random.default_rng(b).standard_normal((b, size)).astype(np.float32)
        xt, xx = torch.tensor(x), tx.tensor(x)
        with torch.no_grad(), tx.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # 20 ms of sleep before each call: every call starts from idle threads (torch's
            # OpenMP threads spin on for a while after a call, on the cores the next case
            # needs: measured +5 ms CPU in tensorix's batch-64 call right after torch.ao's)
            times, cpu = rounds([lambda: q(xx), lambda: tq(xt), lambda: lin(xx),
                                 lambda: tlin(xt), lambda: numpy_route(xx)], repeat, gap=0.02)
            err = float(np.abs(q(xx).numpy() - tq(xt).numpy()).max())
            same = bool((q(xx).numpy() == numpy_route(xx).numpy()).all())
        rows.append((b, *(statistics.median(t) for t in times[:4]), _ratio(times[0], times[1]),
                     statistics.median(cpu[0]), statistics.median(cpu[1]), err,
                     statistics.median(times[4]), _ratio(times[4], times[1]), same))
    return rows


def _route(name):
    # the int8 GEMM route ``name`` on this machine, as a context (None: not here)
    import contextlib

    kern = kernels._compiled() if kernels.compiled_available() else None
    if name == "vnni" and (kern is None or kernels._vnni() is None):
        return None
    if name == "avx2" and (kern is None or not kern.avx2()):
        return None

    @contextlib.contextmanager
    def ctx():
        saved = dict(kernels._state)
        if name == "avx2":
            kernels._state["vnni"] = False
        try:
            yield
        finally:
            kernels._state.clear()
            kernels._state.update(saved)
    return ctx


def routes(size, batches, repeat):
    from tensorix.quant.gemm import IntWeight

    w = IntWeight.from_float(np.random.default_rng(0).standard_normal((size, size))
                             .astype(np.float32))
    w32 = w.codes.T.astype(np.float32)
    out = []
    for b in batches:
        xq = np.random.default_rng(b).integers(-127, 128, (b, size)).astype(np.int8)
        fns = []
        for name in ("vnni", "avx2"):
            ctx = _route(name)
            if ctx is not None:
                with ctx():
                    packed = kernels.pack_weight(w.codes)

                def run(ctx=ctx, packed=packed):
                    with ctx():
                        kernels._int_mm_raw(xq, w.codes.T, packed)
                fns.append(run)
            else:
                fns.append(None)
        fns += [lambda: kernels._blas(xq, w.codes.T), lambda: xq.astype(np.float32) @ w32]
        live = [f for f in fns if f is not None]
        t = iter(statistics.median(v) for v in rounds(live, repeat)[0])
        out.append((b, *(None if f is None else next(t) for f in fns)))
    return out


def grouped(size, batches, repeat):
    # int_linear on grouped int4 weights: the VNNI one-pass planes against group by group
    from tensorix.quant import QScheme
    from tensorix.quant.gemm import IntWeight, int_linear
    from tensorix.quant.methods import token_scheme

    g = min(128, size)
    ws = QScheme(4, True, "per_group", group_size=g)
    w = np.random.default_rng(0).standard_normal((size, size)).astype(np.float32)
    vnni, avx2 = _route("vnni"), _route("avx2")
    if vnni is None:
        return []
    with vnni():
        wv = IntWeight.from_float(w, ws)
    with avx2() if avx2 else contextlib_null():
        wa = IntWeight.from_float(w, ws)
    out = []
    for name, act in (("W4A8 (int8 per token)", token_scheme(8)), ("W4A4 (int4 g128)", ws)):
        for b in batches:
            x = np.random.default_rng(b).standard_normal((b, size)).astype(np.float32)

            def one(ctx, wt):
                def f():
                    with ctx():
                        return int_linear(x, wt, act)
                return f
            fns = [one(vnni, wv), one(avx2 or vnni, wa)]
            t = rounds(fns, repeat)[0]
            same = bool((fns[0]() == fns[1]()).all())
            out.append((name, b, statistics.median(t[0]), statistics.median(t[1]),
                        _ratio(t[0], t[1]), same))
    return out


def contextlib_null():
    import contextlib

    return contextlib.nullcontext()


def memory(size):
    lin = nn.Linear(size, size)
    fp32 = lin.weight.detach().numpy().nbytes
    out = [("float32", fp32, fp32)]
    for name, cfg in (("int8 per channel", Int8WeightOnlyConfig()),
                      ("int4 group 128, packed", Int4WeightOnlyConfig(min(128, size)))):
        ql = QuantizedLinear.from_float(lin, cfg.weight)
        out.append((name, ql.weight_nbytes(with_qparams=False), ql.weight_nbytes()))
    return out


def runtime_memory(size):
    # what a layer holds once it has run (buffers plus the kernel's copies), against float32
    from tensorix.quant import QScheme

    lin, x = nn.Linear(size, size), tx.randn(4, size)
    out = []
    for name, ws in (("int8 dynamic (int8 per channel)", QScheme(8, True, "per_channel", axis=0)),
                     ("int4 per channel, int8 dynamic", QScheme(4, True, "per_channel", axis=0))):
        ql = QuantizedLinear.from_float(lin, ws, QScheme(8, False))
        with tx.no_grad():
            ql(x)
        out.append((name, ql.weight_nbytes(), ql.runtime_nbytes()))
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="256 x 256, 3 rounds")
    p.add_argument("--size", type=int, default=4096)
    p.add_argument("--repeat", type=int, default=9)
    p.add_argument("--only", choices=["speed", "routes", "grouped", "memory"],
                   help="one table (speed: the torch.ao table, about a minute)")
    args = p.parse_args(argv)
    size, repeat = (256, 3) if args.quick else (args.size, args.repeat)
    batches = [1, 4, 16, 64]
    route = "float32 BLAS chunks"
    if compiled_available():
        route = "compiled (numba, " + ("AVX-512 VNNI" if kernels._vnni() is not None else
                                       "AVX2 or portable") + ")"
    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    print(f"# bench_quant: {size} x {size} Linear; tensorix int_mm route: {route}; tensorix "
          f"threads {tx.get_num_threads()}; load average at start {' '.join(load)}")

    def want(table):
        return args.only in (None, table)

    if want("speed"):
        print("\n| batch | tx int8 dyn ms | torch.ao int8 dyn ms | tx fp32 ms | torch fp32 ms | "
              "tx / torch.ao | tx CPU ms | torch.ao CPU ms | max abs diff | tx NumPy-route "
              "ms | NumPy route / torch.ao | same bits |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for b, t_q, t_tq, t_f, t_tf, ratio, c_q, c_tq, err, t_np, r_np, same in speed(
                size, batches, repeat):
            print(f"| {b} | {t_q:.3f} | {t_tq:.3f} | {t_f:.3f} | {t_tf:.3f} | {ratio:.2f}x | "
                  f"{c_q:.3f} | {c_tq:.3f} | {err:.2e} | {t_np:.3f} | {r_np:.2f}x | {same} |")
    if want("routes"):
        print("\n| batch | int8 GEMM, VNNI kernel ms | AVX2 kernel ms | float32-chunk BLAS ms | "
              "one float32 GEMM, weight converted before ms |")
        print("|---|---|---|---|---|")
        for b, *ts in routes(size, batches, repeat):
            print(f"| {b} | " + " | ".join("-" if t is None else f"{t:.3f}" for t in ts) + " |")
    if want("grouped"):
        print("\n| layer (int4 weight g128) | batch | VNNI, all groups in one pass ms | "
              "group by group (no VNNI) ms | ratio | same bits |")
        print("|---|---|---|---|---|---|")
        for name, b, t_v, t_g, ratio, same in grouped(size, batches, repeat):
            print(f"| {name} | {b} | {t_v:.3f} | {t_g:.3f} | {ratio:.2f}x | {same} |")
    if want("memory"):
        print("\n| weight | bytes (codes) | bytes (with qparams) | float32 / codes | "
              "float32 / total |")
        print("|---|---|---|---|---|")
        for name, codes, total in memory(size):
            fp32 = size * size * 4
            print(f"| {name} | {codes} | {total} | {fp32 / codes:.2f}x | {fp32 / total:.2f}x |")
        print("\n| layer | stored bytes | bytes at run time | float32 / stored | "
              "float32 / run time |")
        print("|---|---|---|---|---|")
        for name, stored, run in runtime_memory(size):
            fp32 = size * size * 4
            print(f"| {name} | {stored} | {run} | {fp32 / stored:.2f}x | {fp32 / run:.2f}x |")


if __name__ == "__main__":
    main()
