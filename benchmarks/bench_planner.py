"""The layout planner against published runs: Megatron-LM's GPT runs from 1.7 B to 1 T
parameters on 32 to 3072 A100 GPUs (Narayanan et al., SC'21, Table 1).

Prints predicted against published TFLOP/s per GPU twice: with the a priori GEMM efficiency
(80% of peak), and with the GEMM efficiency calibrated on the 1-T run alone (the other nine
are then predictions), and the best layouts the planner finds for the 1-T model.
Run: ``python benchmarks/bench_planner.py``.
"""

from __future__ import annotations

import dataclasses

from tensorix.distributed.planner import estimate, plan, published_runs

__all__ = ["calibrate", "table", "published_runs"]


def calibrate(run):
    """The GEMM efficiency at which the model reproduces ``run``'s throughput (bisection)."""
    _, model, cluster, layout, published = run
    lo, hi = 0.05, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        got = estimate(model, dataclasses.replace(cluster, gemm_efficiency=mid), layout)
        lo, hi = (lo, mid) if got.tflops_per_gpu > published else (mid, hi)
    return (lo + hi) / 2


def table(runs, efficiency=None):
    rows = []
    for name, model, cluster, layout, published in runs:
        if efficiency is not None:
            cluster = dataclasses.replace(cluster, gemm_efficiency=efficiency)
        e = estimate(model, cluster, layout)
        rows.append((name, cluster.n_gpus, layout, e, published))
    return rows


def main():
    runs = published_runs()
    eff = calibrate(runs[-1])
    a_priori, calibrated = table(runs), table(runs, eff)
    print(f"GEMM efficiency: a priori 0.80; calibrated on the 1-T run: {eff:.3f}\n")
    print("| model | GPUs | dp x tp x pp | published TFLOP/s/GPU | predicted (0.80) | error | "
          f"predicted ({eff:.2f}) | error | memory GB |")
    print("|---|---|---|---|---|---|---|---|---|")
    for (name, gpus, lay, e0, pub), (_, _, _, e1, _) in zip(a_priori, calibrated):
        print(f"| {name} | {gpus} | {lay.dp} x {lay.tp} x {lay.pp} | {pub} | "
              f"{e0.tflops_per_gpu:.0f} | {e0.tflops_per_gpu / pub - 1:+.1%} | "
              f"{e1.tflops_per_gpu:.0f} | {e1.tflops_per_gpu / pub - 1:+.1%} | "
              f"{e1.memory_gb:.0f} |")
    name, model, cluster, layout, published = runs[-1]
    pub_agg = published * cluster.n_gpus / 1e3
    print(f"\n1-T aggregate: published {pub_agg:.0f} PFLOP/s; predicted (calibrated) "
          f"{calibrated[-1][3].tflops_per_gpu * cluster.n_gpus / 1e3:.0f} PFLOP/s")
    best = plan(model, dataclasses.replace(cluster, gemm_efficiency=eff))
    print(f"\nplanner, 1-T model on {cluster.n_gpus} GPUs: {len(best)} layouts fit; the best:")
    for e in best[:5]:
        lay = e.layout
        print(f"  dp {lay.dp} x tp {lay.tp} x pp {lay.pp}, micro-batch {lay.micro_batch}, "
              f"v {lay.virtual}, ZeRO-{lay.zero}, recompute {lay.recompute}: "
              f"{e.tflops_per_gpu:.0f} TFLOP/s/GPU, {e.memory_gb:.0f} GB")


if __name__ == "__main__":
    main()
