"""benchmarks/bench_decomp_layers.py runs end to end in its quick form and prints the table of
compression ratio against accuracy (the full table is in docs/decomp.md)."""

import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_bench_decomp_layers_quick_table():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_decomp_layers.py"),
                           "--quick"], capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    table = [[c.strip() for c in line.split("|")[1:-1]] for line in proc.stdout.splitlines()
             if line.startswith("| ") and not line.startswith(("| layer", "| float32"))]
    rows, compensation = table[:8], table[8:]
    assert len(rows) == 8 and len(compensation) == 4, proc.stdout
    for layer, kind, _rank, weights, ratio, acc, _tuned in rows:
        dense = 65536 if layer.startswith("MLP") else 4608
        assert abs(float(ratio[:-1]) - dense / int(weights)) < 0.06, (kind, ratio, weights)
        assert 0.0 <= float(acc[:-1]) <= 100.0
    by_kind = {(r[1].split(" (")[0], r[2]): r for r in rows}
    # trained from scratch at 14x fewer weights, the TT layer learns (10 classes: 10% is chance)
    assert float(by_kind[("TTLinear from scratch", "8")][5][:-1]) > 50
    # a factorized conv chosen at a budget, fine-tuned one epoch, still classifies
    conv = [r for r in rows if r[0].startswith("CNN") and not r[1].startswith("dense")]
    assert all(float(r[6][:-1]) > 50 for r in conv), conv
    # rank compensation: equal bytes (within one row of factors), four formats, ranks growing
    budget = int(compensation[0][3])
    assert [r[1] for r in compensation] == ["fp32", "bf16", "mx_fp8_e4m3", "mx_fp4_e2m1"]
    assert all(int(r[3]) <= budget for r in compensation)
    assert [int(r[2]) for r in compensation] == sorted(int(r[2]) for r in compensation)


def test_bench_decomp_layers_cp_stability_quick_table():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_decomp_layers.py"),
                           "--cp-stability", "--quick"], capture_output=True, text=True,
                          timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [[c.strip() for c in line.split("|")[1:-1]] for line in proc.stdout.splitlines()
            if line.startswith("| 20 ")]
    assert [r[1] for r in rows] == ["CP", "CP + EPC"], proc.stdout
    plain, stable = rows
    # the correction keeps the kernel error and bounds the terms (largest, total energy)
    assert abs(float(plain[2]) - float(stable[2])) < 1e-3
    assert float(stable[3]) <= float(plain[3]) and float(stable[4]) < float(plain[4])
