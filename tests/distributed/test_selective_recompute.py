"""Megatron's selective activation recomputation inside the tensor-parallel attention: on 2
and 4 ranks the outputs and input gradients equal the plain attention's with and without
recomputing the core; with dropout the recomputed core draws the same mask; and what forward
keeps for backward shrinks by at least the (B, H/N, T, T) attention activations."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent / "_scripts"))
import selective as script  # noqa: E402


@pytest.mark.parametrize("n", [2, 4])
def test_selective_recompute_in_parallel_attention(mpirun, n):
    _, res = mpirun("selective.py", n)
    x, w = script.inputs()
    y, gx = script.run(script.plain_attention(), x, w)
    bias_grad = w.sum((0, 1)).numpy()
    scores = script.B * (script.HEADS // n) * script.T * script.T * 8  # one float64 map
    for r in res:
        for rc in (False, True):
            np.testing.assert_allclose(r[f"y_{rc}"], y, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(r[f"gx_{rc}"], gx, rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(r[f"proj_bias_grad_{rc}"], bias_grad, rtol=1e-12)
        # dropout: recomputation replays the RNG, so the mask and everything else agree
        for a, b in zip(r["dropout_True"], r["dropout_False"]):
            np.testing.assert_array_equal(np.array(a), np.array(b))
        assert r["kept_False"] - r["kept_True"] >= scores  # the attention weights at least
