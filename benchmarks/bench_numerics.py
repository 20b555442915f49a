"""Time the numerics kernels on 16M float32 values against a plain float32 -> bfloat16 astype.

The headline row is MXFP8 (E4M3, rceil) quantize + dequantize; the issue's target is 4x the
astype. Every row is best-of-N wall time (the cases take turns in every round, so a load change
on a shared machine hits them alike) and its ratio to the astype baseline. Everything is
vectorised (no per-element Python); the casts are a handful of NumPy passes each, which is what
bounds the ratio on the CPU.

Run: ``python benchmarks/bench_numerics.py`` (``--quick`` for 1M values, ``--repeat N``,
``--device cuda`` on a GPU machine).
"""

from __future__ import annotations

import argparse
import time

import ml_dtypes
import numpy as np

import tensorix as tx
from tensorix import numerics as nx


def best_ms(fns, repeat):
    best = [float("inf")] * len(fns)
    for f in fns:
        f()  # warm tables and caches
    for _ in range(repeat):
        for i, f in enumerate(fns):
            t0 = time.perf_counter()
            out = f()
            if hasattr(out, "_data"):
                out = out._data
            if hasattr(out, "device") and not isinstance(out, np.ndarray):
                out.device.synchronize()
            best[i] = min(best[i], time.perf_counter() - t0)
    return [b * 1e3 for b in best]


def cases(x, x64, xp):
    rb = nx.random_bits(0, 0, x.shape, "cuda" if xp is not np else None)
    m = nx.mx_quantize(x, "fp8_e4m3")
    base = ("float32 -> bfloat16 astype (baseline)", lambda: x.astype(ml_dtypes.bfloat16))
    return [
        base,
        ("MXFP8 e4m3 quantize + dequantize (rceil)",
         lambda: nx.mx_dequantize(nx.mx_quantize(x, "fp8_e4m3"))),
        ("  MXFP8 e4m3 quantize only", lambda: nx.mx_quantize(x, "fp8_e4m3")),
        ("  MXFP8 e4m3 dequantize only", lambda: nx.mx_dequantize(m)),
        ("MXFP4 quantize + dequantize (floor)",
         lambda: nx.mx_dequantize(nx.mx_quantize(x, "fp4_e2m1", scale_mode="floor"))),
        ("NVFP4 quantize + dequantize", lambda: nx.nvfp4_dequantize(nx.nvfp4_quantize(x))),
        ("encode f32 -> e4m3 (RNE, table path)", lambda: nx.encode(x, "fp8_e4m3")),
        ("ml_dtypes astype f32 -> e4m3 (reference)",
         lambda: x.astype(ml_dtypes.float8_e4m3fn)),
        ("encode f32 -> e4m3 (RTZ, saturating)",
         lambda: nx.encode(x, "fp8_e4m3", rounding="rtz", saturate=True)),
        ("encode f64 -> bf16 (round-to-odd path)", lambda: nx.encode(x64, "bf16")),
        ("encode f32 -> bf16 stochastic (32 random bits)",
         lambda: nx.encode(x, "bf16", rounding="sr", rbits=rb)),
        ("random_bits (Philox4x32-10)", lambda: nx.random_bits(1, 0, x.shape)),
        ("decode e4m3 -> f32", lambda: nx.decode(m.codes._data, "fp8_e4m3", check=False)),
    ]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1M values instead of 16M")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args(argv)
    n = (1 << 20) if args.quick else (1 << 24)
    xp = tx.device(args.device).xp
    x = xp.asarray(np.random.default_rng(0).standard_normal(n).astype(np.float32))
    x64 = x.astype(np.float64)
    rows = cases(x, x64, xp)
    times = best_ms([f for _, f in rows], args.repeat)
    print(f"{n / 2**20:.0f}M float32 values on {args.device}, best of {args.repeat}\n")
    print("| case | ms | x baseline |\n|---|---|---|")
    for (name, _), t in zip(rows, times):
        print(f"| {name} | {t:.1f} | {t / times[0]:.1f} |")
    ratio = times[1] / times[0]
    verdict = "within" if ratio <= 4 else "NOT within"
    print(f"\nMXFP8 quantize+dequantize = {ratio:.1f}x the bf16 astype ({verdict} the 4x target)")
    return ratio


if __name__ == "__main__":
    main()
