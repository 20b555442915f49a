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
        for r in res:
            # FULL_SHARD frees the gathered parameters after forward and gathers them again
            # in backward: twice SHARD_GRAD_OP's all-gathers (4 units, 3 steps)
            assert r[f"gathers_SHARD_GRAD_OP_{name}"] == 12
            assert r[f"gathers_FULL_SHARD_{name}"] == 24
        # ZeRO-1: Adam's two moments per element, spread over the ranks
        states = [r[f"zero1_state_{name}"] for r in res]
        assert sum(states) == 2 * total and max(states) < 2 * total
    # SOAP under ZeRO-1 (distributed matrix optimizer state) equals one process's SOAP
    ref = script.build(0, tx.float64)
    script.train(ref, tx.optim.SOAP(ref.parameters(), lr=0.05, precondition_frequency=2))
    for r in res:
        for k, v in ref.state_dict().items():
            np.testing.assert_allclose(r["zero1_soap"][k], v.numpy(), rtol=1e-10, atol=1e-12,
                                       err_msg=f"SOAP {k}")
    # float32 parameters and reduction on a float64 model: close to the float64 run
    for r in res:
        for k, v in want.items():
            np.testing.assert_allclose(r["mixed"][k], v, rtol=1e-4, atol=1e-4, err_msg=k)


@pytest.mark.parametrize("save_n, load_n, mode", [(2, 4, "save"), (4, 2, "save"),
                                                  (4, 2, "async")])
def test_sharded_checkpoint_at_another_world_size(mpirun, tmp_path, save_n, load_n, mode):
    """Save on save_n ranks after two steps (async: while a third step trains), load on
    load_n ranks (another layout of shards and units), train the third step: the weights
    equal three single-process steps. The consolidated file loads into the plain model with
    the two-step weights."""
    from tensorix.distributed import checkpoint as dcp

    folder = tmp_path / "ckpt"
    mpirun("dcp.py", save_n, mode, folder)
    ref = script.build(0, tx.float64)
    opt = script.adam(ref.parameters())
    script.train(ref, opt, steps=range(2))
    dcp.consolidate(folder, tmp_path / "model.safetensors")
    plain = script.build(1, tx.float64)
    arrays = tx.io.read_safetensors(tmp_path / "model.safetensors")[0]
    plain.load_state_dict({k: tx.tensor(v) for k, v in arrays.items()})
    for k, v in ref.state_dict().items():
        # 1e-12: the ranks sum the gradient in another order than one process
        np.testing.assert_allclose(plain.state_dict()[k].numpy(), v.numpy(), rtol=1e-12,
                                   atol=1e-12, err_msg=k)
    _, res = mpirun("dcp.py", load_n, "load", folder)
    script.train(ref, opt, steps=range(2, 3))
    for r in res:
        for k, v in ref.state_dict().items():
            np.testing.assert_allclose(r[k], v.numpy(), rtol=1e-12, atol=1e-12, err_msg=k)


def test_sharded_checkpoint_errors(tmp_path):
    from tensorix.distributed import checkpoint as dcp
    from tensorix.io import CheckpointError

    with pytest.raises(CheckpointError, match="index.json"):
        dcp.consolidate(tmp_path, tmp_path / "x.safetensors")
    with pytest.raises(TypeError, match="FullyShardedDataParallel"):
        dcp.save(script.build(0, tx.float64), tmp_path)
    # an index naming a file that is not there (a writer still running, or dead)
    (tmp_path / "index.json").write_text('{"files": ["shard-00001-of-00002.safetensors"], '
                                         '"tensors": {}, "optimizer": {}}')
    with pytest.raises(CheckpointError, match="incomplete"):
        dcp.consolidate(tmp_path, tmp_path / "x.safetensors")
