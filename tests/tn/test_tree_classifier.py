"""The tree tensor-network classifier: its logits against a NumPy contraction of the same tree,
a float64 gradient check, the Z-order of pixels, and learning the bundled digits."""

import numpy as np
import pytest

import tensorix as tx
from tensorix.testing import assert_close, gradcheck
from tensorix.tn import TTNClassifier, pixel_feature_map, zorder

from ._digits import train_on_digits


def _numpy_tree(model, x):
    """Contract the tree node by node, one sample at a time, from the model's tensors."""
    phi = pixel_feature_map(x).numpy()[:, model.order]
    layers = [w.detach().numpy() for w in model.layers]
    root = model.root.detach().numpy()
    out = []
    for b in range(phi.shape[0]):
        v = list(phi[b])
        for w in layers:
            v = [np.einsum("l,r,lro->o", v[2 * n], v[2 * n + 1], w[n]) for n in range(len(w))]
        out.append(np.einsum("l,r,lrc->c", v[0], v[1], root))
    return np.array(out)


def test_ttn_classifier_matches_a_dense_contraction(rng):
    model = TTNClassifier(16, 3, bond_dim=3, image_shape=(4, 4), dtype=tx.float64,
                          generator=tx.Generator().manual_seed(0))
    assert [tuple(w.shape) for w in model.layers] == [(8, 2, 2, 3), (4, 3, 3, 3), (2, 3, 3, 3)]
    x = tx.tensor(rng.random((5, 16)))
    logits, full = model(x).detach().numpy(), _numpy_tree(model, x)
    # the classifier rescales each level per sample: same direction, same argmax
    assert_close(logits / np.linalg.norm(logits, axis=1, keepdims=True),
                 full / np.linalg.norm(full, axis=1, keepdims=True))
    # nodes start as isometries: orthonormal columns
    w = model.layers[1].detach().numpy().reshape(4, 9, 3)
    assert_close(np.einsum("nio,nip->nop", w, w), np.broadcast_to(np.eye(3), (4, 3, 3)))


def test_ttn_classifier_gradcheck_and_device(device, rng):
    model = TTNClassifier(8, 2, bond_dim=3, dtype=tx.float64,
                          generator=tx.Generator().manual_seed(1)).to(device)
    x = tx.tensor(rng.random((3, 8)) * 0.8 + 0.1, device=device, requires_grad=True)
    out = model(x)
    assert out.shape == (3, 2) and out.device.type == device
    if device == "cpu":
        gradcheck(lambda inp: model(inp), [x], name="TTNClassifier")
    out.sum().backward()
    assert model.layers[0].grad is not None and model.root.grad.device.type == device


def test_zorder_groups_two_d_blocks():
    order = zorder(8, 8)
    assert sorted(order) == list(range(64))
    for block in range(0, 64, 4):    # every 4 consecutive pixels form a 2x2 block
        rows, cols = zip(*(divmod(p, 8) for p in order[block:block + 4]))
        assert max(rows) - min(rows) == 1 and max(cols) - min(cols) == 1
    assert zorder(2, 4) == [0, 1, 4, 5, 2, 3, 6, 7]
    with pytest.raises(ValueError, match="zorder: width must be a power of two"):
        zorder(4, 6)


def test_ttn_classifier_learns_the_digits_fast_variant():
    accuracy = train_on_digits(
        lambda gen: TTNClassifier(64, 10, bond_dim=8, image_shape=(8, 8), generator=gen),
        epochs=3, lr=0.01, batch=32)
    assert accuracy > 0.85  # 3 epochs; benchmarks/bench_tn.py and docs/tn.md: a longer run


def test_ttn_classifier_bad_input():
    with pytest.raises(ValueError, match="n_sites must be a power of two"):
        TTNClassifier(12, 2)
    with pytest.raises(ValueError, match="bond_dim must be a positive int"):
        TTNClassifier(8, 2, bond_dim=0)
    with pytest.raises(ValueError, match=r"image_shape \(4, 4\) does not have n_sites = 8"):
        TTNClassifier(8, 2, image_shape=(4, 4))
    with pytest.raises(ValueError, match=r"expected x of shape \(batch, 8\)"):
        TTNClassifier(8, 2)(tx.rand(3, 7))
