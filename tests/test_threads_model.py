"""A whole training step with every split forced (the elementwise and blockwise kernels, the
optimizer's parameter list, a layer's backward GEMMs side by side, max pooling by samples, in
pieces claimed by both threads) against the same step on one thread: bit-identical. Splitting
one GEMM by rows or columns may change its last bits (the BLAS blocks a part differently), as
stated in tensorix/_threads.py: within float32 rounding then."""

import numpy as np
import pytest

import tensorix as tx
import tensorix.nn.functional as F
from tensorix import _threads


def _step(seed=0):
    rng = np.random.default_rng(seed)
    w1 = tx.tensor(rng.standard_normal((48, 40), dtype=np.float32) * 0.1, requires_grad=True)
    w2 = tx.tensor(rng.standard_normal((10, 48), dtype=np.float32) * 0.1, requires_grad=True)
    wc = tx.tensor(rng.standard_normal((4, 3, 3, 3), dtype=np.float32) * 0.1,
                   requires_grad=True)
    img = tx.tensor(rng.standard_normal((6, 3, 8, 8), dtype=np.float32))
    x = tx.tensor(rng.standard_normal((64, 40), dtype=np.float32))
    q = tx.tensor(rng.standard_normal((2, 3, 16, 8), dtype=np.float32), requires_grad=True)
    y = tx.tensor(rng.integers(0, 10, 64))
    opt = tx.optim.Adam([w1, w2, wc, q], lr=1e-2)
    h = F.gelu(F.linear(x, w1), approximate="tanh")
    loss = F.cross_entropy(F.linear(F.relu(h) * 1.5 + h.tanh(), w2), y)
    loss = loss + F.max_pool2d(F.relu(F.conv2d(img, wc, padding=1)), 2).mean()
    loss = loss + F.scaled_dot_product_attention(q, q, q, is_causal=True).square().mean()
    loss.backward()
    opt.step()
    return [t.detach().numpy().copy() for t in (loss, w1, w2, wc, q)] + [
        t.grad.numpy().copy() for t in (w1, w2, wc, q)]


@pytest.mark.parametrize("split_gemms", [False, True])
def test_training_step_split_everywhere_matches_one_thread(monkeypatch, counted_parts,
                                                           split_gemms):
    pytest.importorskip("threadpoolctl")
    old = tx.get_num_threads()
    tx.set_num_threads(1)
    try:
        want = _step()
    finally:
        tx.set_num_threads(old)
    assert counted_parts == []  # set_num_threads(1): nothing split
    for name in ("CHEAP", "COSTLY", "_GEMM_MIN_TASK") + ("_GEMM_MIN_PART",) * split_gemms:
        monkeypatch.setattr(_threads, name, 4)
    monkeypatch.setattr(_threads, "BLOCK", 16)
    monkeypatch.setattr(_threads, "BLOCKWISE_MIN_PART", 1)
    from tensorix.ops import elementwise as ew

    monkeypatch.setattr(ew, "_SPLIT_SIZE", 8)
    tx.set_num_threads(2)  # counted_parts' setting, made again after the 1-thread run
    got = _step()
    assert len(counted_parts) > 20 and max(counted_parts) > 2  # split, in pieces
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        if split_gemms:
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-7)
        else:
            assert np.array_equal(g.reshape(-1).view(np.uint8), w.reshape(-1).view(np.uint8))
