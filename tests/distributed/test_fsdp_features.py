"""FSDP's prefetch, HYBRID_SHARD, CPU offload and state-dict types on 2 and 4 ranks: every
variant's weights after three Adam steps equal the single-process run's (float64, 1e-12),
and the counters show what each variant did."""

import sys
from pathlib import Path

import numpy as np
import pytest

import tensorix as tx

sys.path.insert(0, str(Path(__file__).parent / "_scripts"))
import sharded as script  # noqa: E402

VARIANTS = ("none", "forward", "pre", "post", "zero2_forward", "hybrid", "hybrid_zero2",
            "hybrid_default", "checkpointed", "cuda_offload_False", "cuda_offload_True",
            "reloaded_SHARDED_STATE_DICT", "reloaded_LOCAL_STATE_DICT")


@pytest.mark.parametrize("n", [2, 4])
def test_fsdp_prefetch_hybrid_offload_state_dicts(mpirun, n):
    _, res = mpirun("fsdp_features.py", n)
    ref = script.build(0, tx.float64)
    script.train(ref, script.adam(ref.parameters()))
    want = {k: v.numpy() for k, v in ref.state_dict().items()}
    total = sum(p.numel() for p in ref.parameters())
    for r in res:
        for kind in VARIANTS:
            got = r[kind]["weights"] if "weights" in r[kind] else r[kind]
            assert list(got) == list(want), kind
            for k, v in want.items():
                # the ranks sum the gradient in another order than one process
                np.testing.assert_allclose(got[k], v, rtol=1e-12, atol=1e-12,
                                           err_msg=f"{kind} {k}")
        # prefetch: from the second step on (the first records the order), the next unit's
        # gather was already issued: forward 3 of 4 units per step; BACKWARD_PRE 3 (the root
        # starts backward at the tied head and prefetches block 2, ...), BACKWARD_POST 2 (the
        # root's backward ends last); no gathers are added (3 steps x 4 units x 2 passes, +4
        # for the final state_dict)
        hits = {k: r[k]["hits"] for k in ("none", "forward", "pre", "post")}
        assert hits == {"none": 0, "forward": 2 * 3, "pre": 2 * 3, "post": 2 * 2}
        assert {r[k]["gathers"] for k in ("none", "forward", "pre", "post")} == {28}
        assert r["zero2_forward"] == r["zero2_forward"] | {"hits": 6, "gathers": 16}
        # HYBRID_SHARD: a rank holds 1/node of the parameters (pairs on 4 ranks, 1 on 2)
        node = 2 if n == 4 else 1
        assert total / node <= r["hybrid_held"] <= total / node + node
        # CPU offload: the shards (and so grads and Adam state) live on the host; the
        # forward ran on the device
        on, off = r["cuda_offload_True"], r["cuda_offload_False"]
        assert on["shard_devices"] == ["cpu"] and off["shard_devices"] == ["cuda:0"]
        assert on["device"] == off["device"] == "cuda:0"
        # what the device holds between steps (the stand-in's pool): without offload at
        # least the shard; with it, less than the shard
        assert off["device_bytes"] >= off["shard_bytes"]
        assert on["device_bytes"] < off["shard_bytes"]
        assert r["local_keys"] == ["_flat_param", "blocks.0._flat_param",
                                   "blocks.1._flat_param", "blocks.2._flat_param", "scale"]
    assert [r["rank0_only_keys"] for r in res] == [len(want)] + [0] * (n - 1)
    # blocks in CheckpointWrappers inside FSDP units: the plain module's names, as torch's
    # clean_tensor_name gives them (the flat shards under the units' paths)
    params, keys = res[0]["checkpointed_names"]
    assert keys == list(want)
    assert params == ["_flat_param", "blocks.0._flat_param", "blocks.1._flat_param",
                      "blocks.2._flat_param"]
    # HYBRID_SHARD: the model dict (parameters and buffer) and the optimizer dict ("state",
    # "param_groups") on global rank 0 only
    assert [r["hybrid_rank0_only"] for r in res] == [[len(want), 2]] + [[0, 0]] * (n - 1)
    errors = res[0]["errors"]
    assert errors["prefetch"].startswith("TypeError: FullyShardedDataParallel(): "
                                         "backward_prefetch must be a BackwardPrefetch")
    assert "needs HYBRID_SHARD" in errors["pair"]
    assert "cpu_offload must be a CPUOffload" in errors["offload"]
    assert "expected a StateDictType" in errors["sd_type"]
    assert "expects a ShardedTensor" in errors["sharded_value"]
    # SHARDED_STATE_DICT: the ranks' pieces tile every parameter exactly
    for k, v in want.items():
        if k == "scale":
            continue
        flat = np.full(v.size, np.nan)
        for r in res:
            offset, values, shape = r["sharded"][k]
            assert tuple(shape) == v.shape
            assert np.isnan(flat[offset:offset + len(values)]).all()  # no overlap
            flat[offset:offset + len(values)] = values
        np.testing.assert_allclose(flat.reshape(v.shape), v, rtol=1e-12, atol=1e-12)
