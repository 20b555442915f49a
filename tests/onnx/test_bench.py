"""benchmarks/bench_onnx.py runs end to end (--quick); timings are not checked here."""

import os
import pathlib
import subprocess
import sys

import pytest

pytest.importorskip("onnxruntime")
ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_bench_onnx_quick():
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_onnx.py"),
                           "--quick"], capture_output=True, text=True, timeout=300,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| demo")]
    assert len(rows) == 2
    for row in rows:  # the max |onnxruntime - eager| column, within the 1e-5 target
        assert float(row.split("|")[3]) <= 1e-5, row
