"""benchmarks/bench_quant.py runs end to end at 256 x 256 (every table, and the speed table
alone with --only); timings are not checked here."""

import pathlib
import subprocess
import sys

import pytest

pytest.importorskip("torch")
ROOT = pathlib.Path(__file__).resolve().parents[2]


def _run(*extra):
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_quant.py"),
                           "--quick", *extra], capture_output=True, text=True, timeout=600,
                          cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_bench_quant_quick():
    out = _run()
    for head in ("| batch | tx int8 dyn ms | torch.ao int8 dyn ms |",
                 "| batch | int8 GEMM, VNNI kernel ms |", "| weight | bytes (codes) |",
                 "| layer | stored bytes | bytes at run time |"):
        assert head in out, out
    rows = [line for line in out.splitlines() if line.startswith("| W4A8")]
    assert all(line.endswith("| True |") for line in rows)  # one pass: the same bits
    only = _run("--only", "speed")
    assert "| batch | tx int8 dyn ms |" in only and "bytes (codes)" not in only
    speed = [line for line in only.splitlines() if line[:4] in ("| 1 ", "| 4 ", "| 16", "| 64")]
    assert len(speed) == 4 and all(line.endswith("| True |") for line in speed), only
