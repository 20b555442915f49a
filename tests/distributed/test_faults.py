"""Failures end every rank with the error, never a hang; every collective has a timeout."""

import time

import pytest


@pytest.mark.parametrize("mode", ["raise", "raise_async"])
def test_a_rank_that_raises_ends_all_ranks(mpirun, mode):
    start = time.monotonic()
    proc, res = mpirun("faults.py", 2, mode, timeout=90, check=False)
    assert proc.returncode != 0
    assert "boom on rank 1" in proc.stderr + proc.stdout
    assert res == [None, None]
    assert time.monotonic() - start < 80  # rank 0 was aborted, not left in all_reduce


def test_collective_timeout(mpirun):
    _, res = mpirun("faults.py", 2, "timeout", timeout=90)
    assert "all_reduce(): timed out after 1 s" in res[0]["error"]
    assert 1.0 <= res[0]["seconds"] < 2.5


def test_shape_mismatch_names_collective_and_ranks(mpirun):
    _, res = mpirun("faults.py", 2, "mismatch", timeout=90)
    for r in res:
        assert r["error"].startswith("all_reduce(): ranks disagree")
        assert "global rank 0 differs from global ranks [1]" in r["error"]
    print({k: round(v, 1) for k, v in res[0].items() if k.startswith("us_")})


@pytest.mark.parametrize("bad", [0, -1.0, "30"])
def test_timeout_argument_is_checked(bad):
    from tensorix.distributed._c10d import _timeout_seconds

    with pytest.raises(TypeError, match="init_process_group\\(\\): expected timeout"):
        _timeout_seconds(bad)
