"""The benchmark suite runs end to end (tiny settings): both worker processes start, the
training cases' first two losses agree with torch's from the same weights, and the table is
written. Timing is not checked here (see docs/benchmarks.md)."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

pytest.importorskip("torch")
ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_run_quick_table(tmp_path):
    out = tmp_path / "results.md"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--cases",
         "matmul_256,add_overhead,mlp_step,cnn_step", "--repeat", "2", "--min-time", "0.002",
         "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = out.read_text()
    assert "| matmul 256x256 @ 256x256 | ms |" in text
    assert "| tiny a + b, requires_grad (per op) | us/op |" in text
    for case in ("mlp_step", "cnn_step"):
        row = next(line for line in text.splitlines() if line.startswith(f"| {case} |"))
        assert row.endswith("| yes |"), row  # losses agree with torch's


def test_run_rejects_unknown_case():
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "run.py"), "--cases",
                           "nope"], capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "unknown case" in proc.stderr


def test_gpu_benchmark_dry_run_on_the_cupy_stand_in(tmp_path):
    # bench_gpu.py has never run on a GPU; this runs its tensorix CUDA paths (transfers, the
    # TF32 switch, synchronize, empty_cache, training steps of models moved to CUDA) on the
    # stand-in against torch on the CPU, so a GPU session does not spend its minutes on a typo
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_gpu.py"), "--quick", "--device", "fake",
         "--cases", "matmul_tf32,gelu_fwd_bwd,mlp_step,gpt_step", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    text = (tmp_path / "bench_gpu.md").read_text()
    assert "the CuPy stand-in (dry run)" in proc.stdout
    for case in ("matmul_tf32", "gelu_fwd_bwd", "mlp_step", "gpt_step"):
        row = next(line for line in text.splitlines() if line.startswith(f"| {case} |"))
        assert "Error" not in row, row
    assert "loss 4.38572 / 4.38572" in text  # the GPT's first losses agree with torch's


def test_background_load_starts_and_stops_its_processes():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import run
    finally:
        sys.path.pop(0)
    with run.BackgroundLoad(2) as load:
        assert len(load.procs) == 2 and all(p.poll() is None for p in load.procs)
    assert all(p.poll() is not None for p in load.procs)


def test_bench_elementwise_section_survives_run(tmp_path):
    out = tmp_path / "results.md"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_elementwise.py"), "--ops", "exp,sum",
         "--repeat", "1", "--min-time", "0.001", "--threads", "1", "--out", str(out)],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = out.read_text()
    assert "| exp |" in text and "| sum |" in text and "Worst ten: " in text
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--cases", "matmul_256",
         "--repeat", "1", "--min-time", "0.002", "--threads", "1", "--out", str(out)],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = out.read_text()
    assert "| matmul 256x256 @ 256x256 | ms |" in text and "| exp |" in text
    assert text.count("bench_elementwise: begin") == 1


def test_thread_split_tables_and_gemm_shapes_run():
    """bench_threads.py (the split tables behind _threads' thresholds) and profile_case.py
    --gemms (the model steps' GEMM shapes it times) run end to end at tiny settings."""
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_threads.py"),
                           "--rounds", "1", "--min-time", "0.0001", "--only", "handoff,gemm"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "| empty split (2 parts) |" in proc.stdout and "| GPT qkv fwd (1024x128x384) |" in \
        proc.stdout
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "profile_case.py"),
                           "mlp_step", "--gemms"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "128x784x512  2^25.6" in proc.stdout and "(matmuls)" in proc.stdout
