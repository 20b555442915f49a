"""The "nccl" backend (cupy.cuda.nccl) on 2 and 4 ranks, through the CuPy stand-in's nccl
module (NCCL's calls over MPI on host memory): every collective on "cuda" tensors gives the
values the mpi backend's tests expect, without a device-to-host copy. The real GPU run
belongs to the GPU issue."""

import numpy as np
import pytest


@pytest.mark.parametrize("n", [2, 4])
def test_nccl_backend_collectives_on_the_stand_in(mpirun, n):
    _, res = mpirun("nccl.py", n)
    ranks = np.arange(n)
    base = np.arange(4.0)
    for r, got in enumerate(res):
        assert got["backend"] == "nccl" and got["available"] and got["device"] == "cuda:0"
        assert got["d2h"] == 0  # the data stayed on the device
        want = {"SUM": sum(base + k + 1 for k in ranks), "MAX": base + n,
                "MIN": base + 1, "PRODUCT": np.prod([base + k + 1 for k in ranks], axis=0)}
        want["AVG"] = want["SUM"] / n
        for op, v in want.items():
            np.testing.assert_allclose(got[f"all_reduce_{op}"], v, rtol=1e-15, err_msg=op)
        for name in ("bfloat16", "int64", "float32"):
            np.testing.assert_array_equal(got[f"sum_{name}"],
                                          sum(np.arange(3) + k for k in ranks))
        assert got["bool_or"] == [True, False]
        if r == 1:
            assert got["reduce"] == [n * (n + 1) / 2] * 3
        assert got["broadcast"] == [n - 1.0] * 2
        assert got["all_gather_into_tensor"] == [x for k in ranks for x in (k, 10.0 * k)]
        assert got["all_gather"] == [[k, -k] for k in ranks]
        full = sum(np.arange(2.0 * n) * (k + 1) for k in ranks)
        assert got["reduce_scatter_tensor"] == list(full[2 * r:2 * r + 2])
        assert got["reduce_scatter_max"] == [r, n - 1]
        assert got["all_to_all_single"] == [[k, k] for k in ranks for _ in range(k + 1)]
        assert got["all_to_all"] == [[100.0 * k + r] for k in ranks]
        assert got["gather"] == ([[k, k] for k in ranks] if r == 0 else None)
        assert got["scatter"] == [r, 2.0 * r]
        assert got["ring"] == [(r - 1) % n] * 3
        if r % 2 == 0:
            assert got["evens"] == [sum(1.0 + k for k in ranks if k % 2 == 0)]
        assert got["objects"] == [{"rank": k} for k in ranks]
        assert "ReduceOp.BAND is not supported by the nccl backend" in got["band_error"]


def test_nccl_unknown_without_a_group():
    import tensorix.distributed as dist

    with pytest.raises(ValueError, match="unknown backend 'ncl'.*nccl"):
        dist.init_process_group("ncl")


@pytest.mark.parametrize("n", [2, 4])
def test_ddp_and_fsdp_over_nccl_keep_gradients_on_the_device(mpirun, n):
    """DDP's buckets and FSDP's gathers and reduce-scatters of "cuda" parameters under the
    nccl backend run on the device: backward copies nothing more to the host than the same
    backward without them, and the weights equal one process (float64, 1e-12: the ranks sum
    in another order)."""
    import sys
    from pathlib import Path

    import tensorix as tx

    sys.path.insert(0, str(Path(__file__).parent / "_scripts"))
    import sharded

    _, res = mpirun("nccl_training.py", n)
    ref = sharded.build(0, tx.float64)
    sharded.train(ref, sharded.adam(ref.parameters()))
    want = {k: v.numpy() for k, v in ref.state_dict().items()}
    for r in res:
        for name in ("ddp", "fsdp"):
            assert r[f"{name}_copies"] == r["plain_copies"], name
            assert r[f"{name}_devices"] == ["cuda:0"]
            assert list(r[name]) == list(want)
            for k, v in want.items():
                np.testing.assert_allclose(r[name][k], v, rtol=1e-12, atol=1e-12,
                                           err_msg=f"{name} {k}")
