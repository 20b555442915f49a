"""Tensor, sequence and 2-D (data x tensor) parallel training of the demo GPT: the loss curve
on 2 and 4 ranks equals one process on the whole batch (examples/train_gpt_parallel.py)."""

import pytest


@pytest.mark.parametrize("n, args", [
    (2, ["--tp", "2"]),
    (2, ["--tp", "2", "--sp"]),
    (4, ["--dp", "2", "--tp", "2", "--sp"]),
    (4, ["--tp", "4"]),
])
def test_parallel_gpt_matches_one_process(mpirun, n, args):
    _, res = mpirun("parallel_gpt.py", n, "--check", "--float64", "--steps", "4", *args)
    ref = res[0]["ref"]
    assert len(ref) == 4 and ref[-1] < ref[0]
    for r in res:
        # float64: the ranks add partial sums in another order than one process
        assert max(abs(a - b) for a, b in zip(r["curve"], ref)) < 1e-10, (r["curve"], ref)
