"""benchmarks/bench_pipeline_measured.py: the measured bubble's arithmetic, and the benchmark
end to end at a small size under mpiexec (sanity only: no timing is asserted)."""

import sys
from pathlib import Path

import pytest

from ._launch import mpiexec_path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import bench_pipeline_measured as bench  # noqa: E402


def test_bubble_from_rank_timings():
    # 2 ranks, one step: busy 3 s and 2 s, the step from t=10 (first start) to t=14 (last end)
    ranks = [{"pipeline": [{"schedule": "GPipe", "v": 1, "m": 4, "runs": [[3.0, 10.0, 13.0]]}]},
             {"pipeline": [{"schedule": "GPipe", "v": 1, "m": 4, "runs": [[2.0, 10.5, 14.0]]}]}]
    (row,) = bench.bubbles(ranks)
    assert row["measured"] == pytest.approx(1 - 5 / (2 * 4))
    assert row["theory"] == pytest.approx(1 / 5)  # (p-1)/(m+p-1)
    # the theory's makespan for 2.5 s of work per rank is 2.5 / (1 - 1/5); the rest is excess
    assert row["excess"] == pytest.approx(4 - 2.5 / 0.8)
    assert row["busy"] == 2.0


def test_benchmark_runs_end_to_end():
    pytest.importorskip("mpi4py")
    if mpiexec_path() is None:
        pytest.skip("mpiexec not found")
    t_f, micro = 0.005, (2,)
    rows, ddp = bench.run(2, t_f=t_f, micro=micro, repeat=1, layers=2, numel=1024,
                          timeout=120)
    assert [(r["schedule"], r["v"], r["m"]) for r in rows] == \
        [(name, v, m) for name, _, v in bench.SCHEDULES for m in micro]
    for r in rows:
        assert 0 < r["measured"] < 1 and r["min"] <= r["measured"] <= r["max"]
        assert r["theory"] == pytest.approx(1 / (r["v"] * r["m"] + 1))
        # every action of the real engine ran its wait: m forwards (t_f) and m backwards (2 t_f)
        assert r["busy"] >= 3 * r["m"] * t_f * 0.999
    kinds = {"alone", "ddp", "ddp_no_thread", "after", "comm", "comm_async"}
    assert set(ddp) == kinds | {f"cpu_{k}" for k in kinds - {"comm", "comm_async"}} | \
        {"cpu_thread"}
    # each of the 2 layers' backwards waited 2 t_f, with and without DDP
    assert min(ddp[k] for k in kinds) > 0 and ddp["alone"] >= 2 * 2 * t_f * 0.999
    assert ddp["cpu_thread"] >= 0
