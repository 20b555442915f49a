"""benchmarks/bench_quant_accuracy.py runs end to end on a tiny GPT (a few training steps,
cached in a temporary folder): every method's row is printed and the cache is reused."""

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
TINY = ["--layers", "1", "--d-model", "128", "--heads", "2", "--context", "32", "--steps", "2",
        "--batch", "4", "--val-windows", "8", "--calib-windows", "4"]


def _run(tmp_path, *extra):
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_quant_accuracy.py"),
                           *TINY, "--cache-dir", str(tmp_path), *extra],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_bench_quant_accuracy_tiny(tmp_path):
    out = _run(tmp_path, "--only", "RTN", "GPTQ g128 act", "AWQ g128 +", "rotation", "MXFP4 (")
    assert "trained" in out and len(list(tmp_path.glob("*.safetensors"))) == 1
    for row in ("| fp32 |", "| int4 RTN g128 |", "| int4 GPTQ g128 act-order |",
                "| int4 AWQ g128 + auto-clip |", "| W4A4 g128, Hadamard rotation |",
                "| MXFP4 (W and A) |"):
        assert row in out, out
    again = _run(tmp_path, "--only", "SmoothQuant", "COMET", "Odyssey", "FlexQ", "folded")
    assert "trained" not in again and "| W8A8 SmoothQuant alpha=0.5 |" in again  # cached
    for row in ("| COMET W4A4 g128 + KV4 | W4A4KV4 |", "| OdysseyLLM W4A8 (per-channel W4) |",
                "| FlexQ W6A6 g128 |", "| FlexQ W6A8 g128 |",
                "| int4 AWQ g128 folded, packed int4 (rest RTN) |",
                "| COMET W4A4 g128 + KV4, GPTQ weights |", "| OdysseyLLM W4A8, GPTQ weights |",
                "| FlexQ W6A8 g128, GPTQ weights |"):
        assert row in again, again
