"""ZeRO-1, ZeRO-2 (SHARD_GRAD_OP), ZeRO-3 (FULL_SHARD) and NO_SHARD on 2 and 4 ranks: the
weights after training equal the single-process run on the whole batch, and each rank holds
about 1/N of the parameters and optimizer state."""

import sys
from pathlib import Path

import numpy as np
import pytest

import tensorix as tx

sys.path.insert(0, str(Path(__file__).parent / "_scripts"))
import sharded as script  # noqa: E402

KINDS = ("zero1", "FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD")


def _reference(dtype):
    model = script.build(0, dtype)
    opt = script.adam(model.parameters())
    script.train(model, opt)
    return model


@pytest.mark.parametrize("n", [2, 4])
def test_sharded_training_matches_single_process(mpirun, n):
    _, res = mpirun("sharded.py", n)
    for name, tol in (("float64", 1e-12), ("float32", 2e-5)):
        ref = _reference(getattr(tx, name))
        want = {k: v.detach().to(tx.float64).numpy() for k, v in ref.state_dict().items()}
        total = sum(p.numel() for p in ref.parameters())
        for r in res:
            for kind in KINDS:
                got = r[f"{kind}_{name}"]
                assert list(got) == list(want), (kind, list(got))
                for k, v in want.items():
                    # float32: the ranks sum the gradient in another order than one process
                    np.testing.assert_allclose(got[k], v, rtol=tol, atol=tol,
                                               err_msg=f"{kind} {name} {k}")
            # sharded: each rank's flat shards hold 1/n of the parameters (plus padding)
            for kind in ("FULL_SHARD", "SHARD_GRAD_OP"):
                assert total / n <= r[f"held_{kind}_{name}"] <= total / n + 4 * n
            assert r[f"held_NO_SHARD_{name}"] == total
        # ZeRO-1: Adam's two moments per element, spread over the ranks
        states = [r[f"zero1_state_{name}"] for r in res]
        assert sum(states) == 2 * total and max(states) < 2 * total
