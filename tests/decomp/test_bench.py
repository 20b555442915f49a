"""benchmarks/bench_decomp.py runs end to end at tiny sizes and prints one row per case with
tensorix's error no worse than TensorLy's, to 1e-5 relative (timing is not checked here; see
docs/decomp.md)."""

import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_bench_decomp_quick_table():
    pytest.importorskip("tensorly")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_decomp.py"),
                           "--quick"], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| ") and
            not line.startswith("| case")]
    assert len(rows) == 7, proc.stdout
    for row in rows:
        ours, theirs = (float(c) for c in row.split("|")[2:4])
        assert ours <= theirs * (1 + 1e-5), row  # HALS iterates drift in the last digits
