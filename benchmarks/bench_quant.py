"""Dynamic int8 Linear against torch.ao, and measured weight bytes.

Times, in the same run and in interleaved rounds (a load change on a shared machine hits all
cases alike): tensorix's ``quantize_dynamic`` Linear (int8 weights per channel, int8 activations
per tensor quantized per call, the exact integer GEMM of ``tensorix.quant.int_mm``), torch.ao's
``quantize_dynamic`` Linear (fbgemm), and float32 ``nn.Linear`` of both, at ``--size`` x
``--size`` for batches 1 to 64. Each row: the median ms over the rounds and the median of the
per-round ratios to torch.ao. Both libraries run at their default thread settings.

Then the two exact int8 GEMM routes alone on the layer's codes, in the same rounds: the
compiled kernel (on x86 with AVX2 the packed-weight ``vpmaddwd`` micro-kernel) and float32 BLAS
over K chunks of 1024 (exact; it converts the int8 weight to float32 on every call).

Then the weight bytes of a float32 Linear and of its int8 (per channel) and int4 (group 128,
packed two per byte) forms, codes alone and with scales and zero points.

Run: ``python benchmarks/bench_quant.py`` (``--quick`` for 256 x 256, ``--repeat N``).
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


def rounds(fns, repeat):
    out = [[] for _ in fns]
    for f in fns:
        f()
    for _ in range(repeat):
        for i, f in enumerate(fns):
            t0 = time.perf_counter()
            f()
            out[i].append((time.perf_counter() - t0) * 1e3)
    return out


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
    rows, routes = [], []
    w = q[0]._int_weight()
    for b in batches:
        x = np.random.default_rng(b).standard_normal((b, size)).astype(np.float32)
        xt, xx = torch.tensor(x), tx.tensor(x)
        with torch.no_grad(), tx.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            times = rounds([lambda: q(xx), lambda: tq(xt), lambda: lin(xx), lambda: tlin(xt)],
                           repeat)
            err = float(np.abs(q(xx).numpy() - tq(xt).numpy()).max())
        ratio = statistics.median(a / t for a, t in zip(times[0], times[1]))
        rows.append((b, *(statistics.median(t) for t in times), ratio, err))
        xq = np.random.default_rng(b).integers(-127, 128, (b, size)).astype(np.int8)
        rt = rounds([lambda: kernels._int_mm_raw(xq, w.codes.T, w.packed),
                     lambda: kernels._blas(xq, w.codes.T)], repeat)
        routes.append((b, *(statistics.median(t) for t in rt)))
    return rows, routes


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
    p.add_argument("--repeat", type=int, default=7)
    args = p.parse_args(argv)
    size, repeat = (256, 3) if args.quick else (args.size, args.repeat)
    batches = [1, 4, 16, 64]
    print(f"# bench_quant: {size} x {size} Linear; tensorix int_mm route: "
          f"{'compiled (numba)' if compiled_available() else 'float32 BLAS chunks'}; "
          f"tensorix threads {tx.get_num_threads()}")
    print("\n| batch | tx int8 dyn ms | torch.ao int8 dyn ms | tx fp32 ms | torch fp32 ms | "
          "tx / torch.ao | max abs diff |")
    print("|---|---|---|---|---|---|---|")
    rows, routes = speed(size, batches, repeat)
    for b, t_q, t_tq, t_f, t_tf, ratio, err in rows:
        print(f"| {b} | {t_q:.3f} | {t_tq:.3f} | {t_f:.3f} | {t_tf:.3f} | {ratio:.2f}x | "
              f"{err:.2e} |")
    print("\n| batch | int8 GEMM, compiled kernel ms | int8 GEMM, float32-chunk BLAS ms |")
    print("|---|---|---|")
    for b, t_k, t_b in routes:
        print(f"| {b} | {t_k:.3f} | {t_b:.3f} |")
    print("\n| weight | bytes (codes) | bytes (with qparams) | float32 / codes | "
          "float32 / total |")
    print("|---|---|---|---|---|")
    for name, codes, total in memory(size):
        fp32 = size * size * 4
        print(f"| {name} | {codes} | {total} | {fp32 / codes:.2f}x | {fp32 / total:.2f}x |")
    print("\n| layer | stored bytes | bytes at run time | float32 / stored | float32 / run time |")
    print("|---|---|---|---|---|")
    for name, stored, run in runtime_memory(size):
        fp32 = size * size * 4
        print(f"| {name} | {stored} | {run} | {fp32 / stored:.2f}x | {fp32 / run:.2f}x |")


if __name__ == "__main__":
    main()
