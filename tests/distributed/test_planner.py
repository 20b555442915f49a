"""The layout planner: its cost model's structure, its search, and its predictions against
Megatron-LM's published runs (benchmarks/bench_planner.py prints the table)."""

import dataclasses
import sys
from pathlib import Path

import pytest

from tensorix.distributed.planner import Cluster, Layout, ModelConfig, estimate, plan

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import bench_planner  # noqa: E402

GPT = ModelConfig(layers=24, hidden=2048, heads=16, seq_len=2048, vocab=51200,
                  global_batch=512)


def test_parameter_and_flop_counts():
    # GPT-3 175B (96 layers, width 12288): about 175e9 parameters
    gpt3 = ModelConfig(96, 12288, 96, 2048, 51200, 1536)
    assert abs(gpt3.params / 175e9 - 1) < 0.02
    # 6 N D for forward+backward without recomputation, to the attention term
    tokens = gpt3.global_batch * gpt3.seq_len
    assert abs(gpt3.flops(recompute=False) / (6 * gpt3.params * tokens) - 1) < 0.15
    assert gpt3.flops(recompute=True) == pytest.approx(gpt3.flops(False) * 4 / 3)


def test_cost_model_structure():
    c = Cluster(n_gpus=64)
    base = estimate(GPT, c, Layout(dp=64, tp=1, pp=1, zero=0))
    # ZeRO-3 divides what a GPU keeps by the data-parallel size
    z3 = estimate(GPT, c, Layout(dp=64, tp=1, pp=1, zero=3))
    assert z3.breakdown["states_gb"] == pytest.approx(base.breakdown["states_gb"] / 64)
    # the pipeline bubble is (p-1)/v micro-batch slots, interleaving divides it
    p4 = estimate(GPT, c, Layout(dp=16, tp=1, pp=4))
    p4v2 = estimate(GPT, c, Layout(dp=16, tp=1, pp=4, virtual=2))
    b = p4.breakdown
    busy = b["gemm"] + b["memory_bound"] + b["tp_comm"] + b["pp_comm"]
    assert b["bubble"] / busy == pytest.approx(3 / b["microbatches"])
    assert p4v2.breakdown["bubble"] < p4.breakdown["bubble"]
    # tensor parallelism across nodes is slower than inside one
    inside = estimate(GPT, c, Layout(dp=8, tp=8, pp=1))
    across = estimate(GPT, c, Layout(dp=4, tp=16, pp=1))
    assert across.breakdown["tp_comm"] > 2 * inside.breakdown["tp_comm"]
    # without recomputation the activations take more memory, the step less time
    no_rc = estimate(GPT, c, Layout(dp=64, tp=1, pp=1, recompute=False))
    assert no_rc.breakdown["activations_gb"] > base.breakdown["activations_gb"]
    assert no_rc.step_time < base.step_time
    with pytest.raises(ValueError, match="GPUs"):
        estimate(GPT, c, Layout(dp=3, tp=1, pp=1))


def test_plan_finds_feasible_layouts_fastest_first():
    small = dataclasses.replace(Cluster(n_gpus=64), memory=16e9)
    found = plan(GPT, small)
    assert found and all(e.fits and e.memory_gb <= 16 for e in found)
    assert [e.step_time for e in found] == sorted(e.step_time for e in found)
    assert all(GPT.heads % e.layout.tp == 0 and e.layout.tp <= 8 for e in found)


def test_predictions_against_megatron_runs():
    runs = bench_planner.published_runs()
    eff = bench_planner.calibrate(runs[-1])  # one run fixes the GEMM efficiency
    assert 0.5 < eff < 0.8
    for name, _, _, est, published in bench_planner.table(runs[:-1], eff):
        # the other nine: within 10% of the published throughput
        assert abs(est.tflops_per_gpu / published - 1) < 0.10, (name, est.tflops_per_gpu)
        assert est.fits, name
