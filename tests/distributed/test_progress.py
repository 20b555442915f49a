"""The mpi backend's progress thread (tensorix/distributed/_progress.py) on 2 and 4 ranks."""

import sys
import time
from pathlib import Path

import numpy as np
import pytest

import tensorix as tx

sys.path.insert(0, str(Path(__file__).parent / "_scripts"))
import ddp as ddp_script  # noqa: E402


def _single_process_weights():
    model = ddp_script.build(0, tx.float64)
    ddp_script.train(model, tx.float64)
    return {k: v.numpy() for k, v in model.state_dict().items()}


@pytest.mark.parametrize("level", ["multiple", "serialized", "funneled"])
@pytest.mark.parametrize("n", [2, 4])
def test_progress_thread(mpirun, n, level):
    _, res = mpirun("progress.py", n, level, timeout=180)
    want = _single_process_weights()
    threaded = level != "funneled"  # FUNNELED: MPI from the main thread only, so no thread
    for rank, r in enumerate(res):
        assert r["level"] == ("main" if level == "funneled" else level)
        assert r["thread"] is threaded
        # with the thread, the requests completed while this rank only slept
        assert r["allreduce_by_thread"] is (True if threaded else None)
        assert r["p2p_by_thread"] is (True if threaded else None)
        assert r["allreduce_ok"] and r["p2p_ok"]
        if rank % 2:
            assert r["sender"] == rank - 1
        assert r["ddp_works"] > 0  # listed for the exit with no thread as well
        for k, v in want.items():
            np.testing.assert_allclose(r["weights"][k], v, rtol=1e-12, atol=1e-12, err_msg=k)


def test_progress_thread_idles_and_stops():
    """Without MPI: the thread tests a registered Work until it completes, then blocks (no
    rounds while nothing is pending), and stop() joins it."""
    from tensorix.distributed._progress import ProgressThread

    class FakeWork:
        def __init__(self, polls):
            self.polls, self._tested = polls, False

        def _test(self, blocking=True):
            self.polls -= 1
            self._tested = self.polls <= 0
            return self._tested

        def _progress_done(self):
            return self._tested

    thread = ProgressThread(interval=1e-4)
    work = FakeWork(polls=5)
    thread.add(work)
    assert thread.drain(10.0)
    assert work.polls == 0 and thread.pending() == 0
    rounds = thread.rounds
    time.sleep(0.05)
    assert thread.rounds == rounds  # idle: blocked on its condition, not polling
    thread.stop()
    assert not thread._thread.is_alive()
    thread.add(FakeWork(polls=1))  # after stop: ignored
    assert thread.pending() == 0
