"""Time the numerics kernels on 16M float32 values against a plain float32 -> bfloat16 astype.

The headline rows are MXFP8 (E4M3, rceil) quantize + dequantize, on one thread and on the
default thread count of the MX kernels (``numerics.set_num_threads``); the issue's target is 4x
the astype (which is single-threaded). They take the compiled path where numba is installed
(the ``jit`` extra); the "NumPy path" rows are the same calls without it. The cases take turns
in every round, so a load change on a shared machine hits them alike; each row gives the median
and the minimum over the rounds and the median of the per-round ratios to the astype. "general
path" is the whole-array code the fast paths replaced (still used for float64, SR, MXINT8 and
on GPU), for comparison.

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
from tensorix.numerics import _jit, _mxfast


def timings(fns, repeat):
    """Per-case lists of wall times (ms), the cases interleaved in every round."""
    out = [[] for _ in fns]
    for f in fns:
        f()  # warm tables and caches
    for _ in range(repeat):
        for i, f in enumerate(fns):
            t0 = time.perf_counter()
            r = f()
            if hasattr(r, "_data"):
                r = r._data
            if hasattr(r, "device") and not isinstance(r, np.ndarray):
                r.device.synchronize()
            out[i].append((time.perf_counter() - t0) * 1e3)
    return out


def threads(n, fn):
    def run():
        old = nx.get_num_threads()
        nx.set_num_threads(n)
        try:
            return fn()
        finally:
            nx.set_num_threads(old)
    return run


def without(module, fn):
    """``fn`` with ``module.ENABLED`` off: ``_mxfast`` gives the general path, ``_jit`` the
    code without numba."""
    def run():
        old, module.ENABLED = module.ENABLED, False
        try:
            return fn()
        finally:
            module.ENABLED = old
    return run


def numpy_path(fn):
    return without(_jit, fn)


def cases(x, x64, xp):
    rb = nx.random_bits(0, 0, x.shape, "cuda" if xp is not np else None)
    m = nx.mx_quantize(x, "fp8_e4m3")
    base = ("float32 -> bfloat16 astype (baseline)", lambda: x.astype(ml_dtypes.bfloat16))
    qdq = lambda: nx.mx_dequantize(nx.mx_quantize(x, "fp8_e4m3"))  # noqa: E731
    return [
        base,
        ("MXFP8 e4m3 quantize + dequantize (rceil), 1 thread", threads(1, qdq)),
        (f"MXFP8 e4m3 quantize + dequantize (rceil), {nx.get_num_threads()} threads", qdq),
        ("  quantize only, 1 thread", threads(1, lambda: nx.mx_quantize(x, "fp8_e4m3"))),
        ("  dequantize only, 1 thread", threads(1, lambda: nx.mx_dequantize(m))),
        ("  MXFP8 quantize + dequantize, NumPy path, 1 thread", numpy_path(threads(1, qdq))),
        (f"  MXFP8 quantize + dequantize, NumPy path, {nx.get_num_threads()} threads",
         numpy_path(qdq)),
        ("  MXFP8 quantize + dequantize, general path (before)", without(_mxfast, qdq)),
        ("MXFP4 quantize + dequantize (floor)",
         lambda: nx.mx_dequantize(nx.mx_quantize(x, "fp4_e2m1", scale_mode="floor"))),
        ("NVFP4 quantize + dequantize", lambda: nx.nvfp4_dequantize(nx.nvfp4_quantize(x))),
        ("  same, NumPy path (no numba)",
         numpy_path(lambda: nx.nvfp4_dequantize(nx.nvfp4_quantize(x)))),
        ("encode f32 -> e4m3 (RNE, table path)", lambda: nx.encode(x, "fp8_e4m3")),
        ("  same, NumPy path (no numba)", numpy_path(lambda: nx.encode(x, "fp8_e4m3"))),
        ("ml_dtypes astype f32 -> e4m3 (reference)",
         lambda: x.astype(ml_dtypes.float8_e4m3fn)),
        ("encode f32 -> e4m3 (RTZ, saturating)",
         lambda: nx.encode(x, "fp8_e4m3", rounding="rtz", saturate=True)),
        ("encode f64 -> bf16 (round-to-odd path)", lambda: nx.encode(x64, "bf16")),
        ("encode f32 -> bf16 stochastic (32 random bits)",
         lambda: nx.encode(x, "bf16", rounding="sr", rbits=rb)),
        ("  same, NumPy passes (no numba)",
         numpy_path(lambda: nx.encode(x, "bf16", rounding="sr", rbits=rb))),
        ("random_bits (Philox4x32-10)", lambda: nx.random_bits(1, 0, x.shape)),
        ("  random_bits, xp code (no numba)", numpy_path(lambda: nx.random_bits(1, 0, x.shape))),
        ("decode e4m3 -> f32", lambda: nx.decode(m.codes._data, "fp8_e4m3", check=False)),
    ]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1M values instead of 16M")
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args(argv)
    n = (1 << 20) if args.quick else (1 << 24)
    xp = tx.device(args.device).xp
    x = xp.asarray(np.random.default_rng(0).standard_normal(n).astype(np.float32))
    x64 = x.astype(np.float64)
    rows = cases(x, x64, xp)
    times = timings([f for _, f in rows], args.repeat)
    base = np.array(times[0])
    jit = "compiled MX path (numba)" if xp is np and _jit.usable(n) else "no compiled MX path"
    print(f"{n / 2**20:.0f}M float32 values on {args.device}, {args.repeat} interleaved rounds, "
          f"{nx.get_num_threads()} MX threads by default, {jit}\n")
    print("| case | median ms | min ms | x baseline (median of rounds) |\n|---|---|---|---|")
    ratios = []
    for (name, _), t in zip(rows, times):
        r = float(np.median(np.array(t) / base))
        ratios.append(r)
        print(f"| {name} | {np.median(t):.1f} | {min(t):.1f} | {r:.2f} |")
    for i in (1, 2):
        verdict = "within" if ratios[i] <= 4 else "NOT within"
        print(f"\n{rows[i][0]}: {ratios[i]:.2f}x the bf16 astype ({verdict} the 4x target)")
    return ratios[1], ratios[2]


if __name__ == "__main__":
    main()
