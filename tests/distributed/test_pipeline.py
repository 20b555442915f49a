"""Pipeline parallelism: the schedules' shapes and bubbles, and GPipe / 1F1B / interleaved
1F1B training on 2 and 4 ranks equal to one process."""

import sys
from pathlib import Path

import numpy as np
import pytest

import tensorix as tx
from tensorix.distributed import pipeline as pp

sys.path.insert(0, str(Path(__file__).parent / "_scripts"))
import pipeline as script  # noqa: E402


@pytest.mark.parametrize("p, m", [(2, 4), (4, 4), (4, 8), (3, 6), (8, 16)])
def test_bubble_fraction_matches_theory(p, m):
    for actions in (pp.gpipe_actions(p, m), pp.one_f_one_b_actions(p, m)):
        _, bubble, _ = pp.simulate(actions, p)
        assert abs(bubble - (p - 1) / (m + p - 1)) < 1e-12
    for v in (2, 4):
        _, bubble, _ = pp.simulate(pp.interleaved_actions(p, m, v), p * v)
        # interleaving: each stage's work is 1/v of a rank's, the bubble (p-1)/(vm+p-1)
        assert abs(bubble - (p - 1) / (v * m + p - 1)) < 1e-12


def test_every_action_once_and_in_flight_bound():
    p, m = 4, 8
    for actions, stages in ((pp.gpipe_actions(p, m), p), (pp.one_f_one_b_actions(p, m), p),
                            (pp.interleaved_actions(p, m, 2), 2 * p)):
        seen = sorted(a for acts in actions for a in acts)
        assert seen == sorted((k, i, s) for k in "FB" for i in range(m) for s in range(stages))
    # 1F1B keeps at most p - r micro-batches in flight on rank r; GPipe keeps m
    for r, acts in enumerate(pp.one_f_one_b_actions(p, m)):
        live = peak = 0
        for kind, _, _ in acts:
            live += 1 if kind == "F" else -1
            peak = max(peak, live)
        assert peak == min(p - r, m)
    text = pp.format_schedule(pp.one_f_one_b_actions(2, 4), 2)
    assert text.splitlines()[0].startswith("rank 0:") and "bubble fraction 0.200" in text
    with pytest.raises(ValueError, match="multiple"):
        pp.interleaved_actions(4, 6, 2)


def _reference():
    model = script.build()
    opt = tx.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for step in range(script.STEPS):
        x, y = script.batch(step)
        opt.zero_grad()
        loss = tx.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return {f"{i}.{k}": v.numpy() for i, m in enumerate(model) for k, v in
            m.state_dict().items()}, losses


@pytest.mark.parametrize("n", [2, 4])
def test_pipeline_training_matches_one_process(mpirun, n):
    _, res = mpirun("pipeline.py", n)
    want, losses = _reference()
    for name in ("gpipe", "1f1b", "interleaved"):
        got = {}
        for r in res:
            got.update(r[name]["weights"])
        assert sorted(got) == sorted(want), name
        for k, v in want.items():
            np.testing.assert_allclose(got[k], v, rtol=1e-12, atol=1e-12, err_msg=f"{name} {k}")
        last = [r[name]["losses"] for r in res if r[name]["losses"]]
        per_step = np.array(last[0]).reshape(script.STEPS, script.MICRO).mean(1)
        np.testing.assert_allclose(per_step, losses, rtol=1e-12)
