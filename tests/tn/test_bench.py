"""benchmarks/bench_tn.py runs end to end at small sizes and its tables say what the tests say:
DMRG at the exact energy, circuit amplitudes at the state vector's, contractions agreeing."""

import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_bench_tn_quick_tables():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_tn.py"), "--quick"],
                          capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [line.split("|")[1:-1] for line in proc.stdout.splitlines()
            if line.startswith("| ") and "---" not in line]
    dmrg = [r for r in rows if "tensorix dmrg2" in r[1]]
    assert dmrg and float(dmrg[0][3]) < 1e-9
    circuits = [r for r in rows if r[0].strip() in ("GHZ", "QFT of an entangled state",
                                                    "random brickwork, depth 8")]
    assert len(circuits) == 3 and all(float(r[3]) < 1e-12 for r in circuits)
    contractions = [r for r in rows if "same path" in r[1]]
    assert all(float(r[2]) < 1e-10 for r in contractions)
    accuracy = [r for r in rows if "MPS classifier" in r[0]]
    assert accuracy and float(accuracy[0][3].strip(" %")) > 50
    tree = [r for r in rows if "tree TN classifier" in r[0]]
    assert tree and float(tree[0][3].strip(" %")) > 50
    # the structure searches find a ring smaller than the TT at the same error
    greedy = [r for r in rows if "greedy_rank_search" in r[0]]
    tt = [r for r in rows if "TT-SVD + rounding" in r[0]]
    assert greedy and tt and int(greedy[0][2]) < int(tt[0][2])
