"""Ring attention (contiguous and causal load-balanced splits, storing or recomputing the
blocks) and Ulysses attention on 2 and 4 ranks: each rank's outputs and q/k/v gradients equal
full attention's rows for its tokens."""

import sys
from pathlib import Path

import numpy as np
import pytest

import tensorix as tx
from tensorix.nn import functional as F

sys.path.insert(0, str(Path(__file__).parent / "_scripts"))
import context as script  # noqa: E402


def _full(causal):
    q, k, v, w = script.inputs()
    ts = [tx.tensor(a, requires_grad=True) for a in (q, k, v)]
    o = F.scaled_dot_product_attention(*ts, is_causal=causal)
    (o * tx.tensor(w)).sum().backward()
    return o.detach().numpy(), [t.grad.numpy() for t in ts]


@pytest.mark.parametrize("n", [2, 4])
def test_context_parallel_attention_is_exact(mpirun, n):
    _, res = mpirun("context.py", n)
    for name in ("ring", "ring_causal", "ulysses", "ulysses_causal", "ring_recompute",
                 "ring_causal_recompute"):
        out, grads = _full("causal" in name)
        for r in res:
            got = r[name]
            pos = np.array(got["pos"])
            np.testing.assert_allclose(got["out"], out[:, :, pos], rtol=1e-12, atol=1e-12,
                                       err_msg=name)
            for g, want in zip(got["grads"], grads):
                np.testing.assert_allclose(g, want[:, :, pos], rtol=1e-10, atol=1e-12,
                                           err_msg=name)
    # recompute keeps the output (returned, and kept for backward) and its log-sum-exp:
    # (B, H, T/N, 2 D + 1) float64 values, and the positions (16 T bytes), plus Python
    # objects (tracemalloc counts them: the tensors' headers, the Works of sends still in
    # flight and the MPI progress thread's list of them; 2 KiB allowed); storing keeps every
    # block's probabilities
    B, H, T, D = script.B, script.H, script.T, script.D
    for r in res:
        for name in ("ring", "ring_causal"):
            stored, recomputed = r[name]["kept"], r[f"{name}_recompute"]["kept"]
            bound = 8 * B * H * (T // n) * (2 * D + 1) + 16 * T + 2048
            assert recomputed <= bound < stored, name


def test_ring_recompute_is_once_differentiable(mpirun):
    _, res = mpirun("context.py", 2, "double")
    assert all("differentiate twice" in r["double"] for r in res)


def test_load_balanced_positions():
    from tensorix.distributed.context_parallel import load_balanced_positions

    assert load_balanced_positions(8, 0, 2).tolist() == [0, 1, 6, 7]
    assert load_balanced_positions(8, 1, 2).tolist() == [2, 3, 4, 5]
    with pytest.raises(ValueError, match="multiple"):
        load_balanced_positions(6, 0, 2)
