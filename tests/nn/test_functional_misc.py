"""nn.functional: interpolate, pixel shuffle, distances, one_hot, embedding(_bag), channel
dropouts, activations with F signatures; values and gradients vs torch, errors."""

from __future__ import annotations

import numpy as np
import pytest

import tensorix as tx
import tensorix.nn.functional as F
from tensorix.testing import gradgradcheck

from ._util import assert_close, compare, torch

TF = torch.nn.functional


@pytest.fixture
def rng():
    return np.random.default_rng(2)


def _r(rng, *shape):
    return rng.standard_normal(shape)


INTERP = [
    ((1, 2, 5), dict(size=8, mode="nearest")),
    ((1, 2, 5), dict(scale_factor=1.7, mode="nearest")),
    ((1, 2, 5), dict(size=3, mode="nearest-exact")),
    ((1, 2, 5), dict(size=9, mode="linear", align_corners=True)),
    ((1, 2, 5), dict(size=9, mode="linear", align_corners=False)),
    ((1, 2, 5), dict(scale_factor=0.6, mode="linear")),
    ((2, 2, 4, 5), dict(size=(7, 3), mode="bilinear", align_corners=False)),
    ((2, 2, 4, 5), dict(size=(7, 3), mode="bilinear", align_corners=True)),
    ((2, 2, 4, 5), dict(scale_factor=2, mode="bilinear")),
    ((2, 2, 4, 5), dict(scale_factor=(1.5, 2.5), mode="bilinear", recompute_scale_factor=True)),
    ((2, 2, 4, 5), dict(scale_factor=2, mode="nearest")),
    ((2, 2, 4, 5), dict(size=(3, 8), mode="nearest")),
    ((2, 2, 4, 5), dict(size=(6, 7), mode="bicubic", align_corners=False)),
    ((2, 2, 4, 5), dict(size=(6, 7), mode="bicubic", align_corners=True)),
    ((2, 2, 7, 5), dict(size=(3, 2), mode="area")),
    ((1, 1, 3, 4, 2), dict(size=(5, 3, 4), mode="trilinear")),
]


@pytest.mark.parametrize("shape,kw", INTERP)
def test_interpolate(rng, shape, kw):
    x = _r(rng, *shape)
    compare(lambda x: F.interpolate(x, **kw), lambda x: TF.interpolate(x, **kw), [x])


def test_upsample_aliases(rng):
    x = _r(rng, 1, 2, 3, 3)
    with pytest.warns(UserWarning, match="deprecated"):
        compare(lambda x: F.upsample_bilinear(x, scale_factor=2),
                lambda x: TF.upsample_bilinear(x, scale_factor=2), [x])
    with pytest.warns(UserWarning, match="deprecated"):
        compare(lambda x: F.upsample_nearest(x, size=5),
                lambda x: TF.upsample_nearest(x, size=5), [x])


def test_interpolate_errors():
    x = tx.randn(1, 2, 4, 4)
    with pytest.raises(ValueError, match="only one of size or scale_factor"):
        F.interpolate(x, size=3, scale_factor=2)
    with pytest.raises(ValueError, match="either size or scale_factor"):
        F.interpolate(x)
    with pytest.raises(ValueError, match="align_corners option can only be set"):
        F.interpolate(x, size=3, align_corners=True)
    with pytest.raises(NotImplementedError, match="linear mode needs 3D input"):
        F.interpolate(x, size=3, mode="linear")


@pytest.mark.parametrize("lead", [(), (2,), (2, 1)])
def test_pixel_shuffle_roundtrip(rng, lead):
    x = _r(rng, *lead, 8, 3, 2)
    compare(lambda x: F.pixel_shuffle(x, 2), lambda x: TF.pixel_shuffle(x, 2), [x])
    y = _r(rng, *lead, 2, 6, 4)
    compare(lambda y: F.pixel_unshuffle(y, 2), lambda y: TF.pixel_unshuffle(y, 2), [y])
    with pytest.raises(RuntimeError, match="divisible by the square of upscale_factor"):
        F.pixel_shuffle(tx.randn(1, 3, 2, 2), 2)


def test_channel_shuffle(rng):
    x = _r(rng, 2, 6, 3)
    compare(lambda x: F.channel_shuffle(x, 3), lambda x: TF.channel_shuffle(x, 3), [x], grad=[])


def test_distances(rng):
    a, b = _r(rng, 4, 5), _r(rng, 4, 5)
    b[0] = a[0]
    compare(lambda a, b: F.cosine_similarity(a, b), lambda a, b: TF.cosine_similarity(a, b),
            [a, b])
    compare(lambda a, b: F.cosine_similarity(a, b, dim=0, eps=0.5),
            lambda a, b: TF.cosine_similarity(a, b, dim=0, eps=0.5), [a, b[:1]])
    for p in (1.0, 2.0, 3.0):
        compare(lambda a, b: F.pairwise_distance(a, b, p),
                lambda a, b: TF.pairwise_distance(a, b, p), [a, b])
    compare(lambda a, b: F.pairwise_distance(a, b, keepdim=True),
            lambda a, b: TF.pairwise_distance(a, b, keepdim=True), [a[0], b[0]])
    compare(lambda a: F.pdist(a), lambda a: TF.pdist(a), [a])
    compare(lambda a: F.pdist(a, 1.0), lambda a: TF.pdist(a, 1.0), [a])


def test_one_hot():
    idx = np.array([[0, 3], [2, 1]])
    out = F.one_hot(tx.tensor(idx))
    assert out.dtype is tx.int64
    assert_close(out, TF.one_hot(torch.tensor(idx)))
    assert_close(F.one_hot(tx.tensor(idx), 6), TF.one_hot(torch.tensor(idx), 6))
    with pytest.raises(RuntimeError, match="Class values must be smaller than num_classes"):
        F.one_hot(tx.tensor(idx), 3)
    with pytest.raises(RuntimeError, match="LongTensor"):
        F.one_hot(tx.tensor([0.0]))


def test_embedding_and_padding_idx(rng):
    w = _r(rng, 6, 3)
    idx = np.array([[0, 2, 2], [5, 1, 0]])
    compare(lambda w: F.embedding(tx.tensor(idx), w, padding_idx=2),
            lambda w: TF.embedding(torch.tensor(idx), w, padding_idx=2), [w])
    with pytest.raises(IndexError, match="index out of range"):
        F.embedding(tx.tensor([6]), tx.tensor(w))
    a, b = tx.tensor(w * 3), torch.tensor(w * 3)  # max_norm renormalises looked-up rows
    oa = F.embedding(tx.tensor(idx), a, max_norm=1.5, norm_type=1.0)
    ob = TF.embedding(torch.tensor(idx), b, max_norm=1.5, norm_type=1.0)
    assert_close(oa, ob)
    assert_close(a, b)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag(rng, mode):
    w = _r(rng, 7, 3)
    inp = np.array([1, 2, 4, 5, 4, 3, 2, 0])
    offsets = np.array([0, 2, 2, 5])  # bag 1 is empty
    compare(lambda w: F.embedding_bag(tx.tensor(inp), w, tx.tensor(offsets), mode=mode),
            lambda w: TF.embedding_bag(torch.tensor(inp), w, torch.tensor(offsets), mode=mode),
            [w])
    compare(lambda w: F.embedding_bag(tx.tensor(inp), w, tx.tensor(offsets), mode=mode,
                                      include_last_offset=True, padding_idx=4),
            lambda w: TF.embedding_bag(torch.tensor(inp), w, torch.tensor(offsets), mode=mode,
                                       include_last_offset=True, padding_idx=4), [w])
    inp2 = np.array([[1, 2, 3], [6, 6, 0]])
    compare(lambda w: F.embedding_bag(tx.tensor(inp2), w, mode=mode),
            lambda w: TF.embedding_bag(torch.tensor(inp2), w, mode=mode), [w])


def test_embedding_bag_per_sample_weights(rng):
    w, psw = _r(rng, 5, 2), _r(rng, 6)
    inp, off = np.array([0, 1, 4, 4, 2, 3]), np.array([0, 3])
    compare(lambda w, s: F.embedding_bag(tx.tensor(inp), w, tx.tensor(off), mode="sum",
                                         per_sample_weights=s),
            lambda w, s: TF.embedding_bag(torch.tensor(inp), w, torch.tensor(off), mode="sum",
                                          per_sample_weights=s), [w, psw])
    with pytest.raises(NotImplementedError, match="only supported for mode='sum'"):
        F.embedding_bag(tx.tensor(inp), tx.tensor(w), tx.tensor(off), mode="mean",
                        per_sample_weights=tx.tensor(psw))
    with pytest.raises(ValueError, match="offsets has to be a 1D Tensor but got None"):
        F.embedding_bag(tx.tensor(inp), tx.tensor(w))
    with pytest.raises(RuntimeError, match="offsets\\[0\\] has to be 0"):
        F.embedding_bag(tx.tensor(inp), tx.tensor(w), tx.tensor([1, 3]))


@pytest.mark.parametrize("fn,shape,batched", [("dropout1d", (4, 5, 6), True),
                                              ("dropout1d", (5, 6), False),
                                              ("dropout2d", (3, 4, 5, 5), True),
                                              ("dropout3d", (2, 3, 2, 2, 2), True),
                                              ("dropout3d", (8, 2, 2, 2), False)])
def test_channel_dropout_zeroes_whole_channels(fn, shape, batched):
    x = tx.ones(*shape)
    out = getattr(F, fn)(x, 0.5, training=True, generator=tx.Generator().manual_seed(0)).numpy()
    lead = 2 if batched else 1
    planes = out.reshape(int(np.prod(shape[:lead])), -1)
    assert set(np.unique(planes)) <= {0.0, 2.0}
    assert all(len(set(row)) == 1 for row in planes)  # whole channels kept or dropped
    assert 0 < (planes[:, 0] == 0).mean() < 1
    assert getattr(F, fn)(x, 0.5, training=False) is x


def test_dropout2d_3d_input_warns():
    with pytest.warns(UserWarning, match="channel-wise 1D dropout"):
        F.dropout2d(tx.ones(2, 3, 4))


def test_dropout_statistics_and_scaling():
    x = tx.ones(200, 200)
    out = F.dropout(x, 0.3, generator=tx.Generator().manual_seed(1)).numpy()
    assert set(np.unique(out)) == {0.0, np.float32(1 / 0.7)}
    assert abs((out == 0).mean() - 0.3) < 0.01
    with pytest.raises(ValueError, match="between 0 and 1"):
        F.dropout(x, 1.5)
    assert float(F.dropout(x, 1.0).abs().sum()) == 0


def test_alpha_dropout_keeps_moments():
    x = tx.randn(400, 400, generator=tx.Generator().manual_seed(3))
    out = F.alpha_dropout(x, 0.2, training=True, generator=tx.Generator().manual_seed(4))
    assert abs(float(out.mean())) < 0.02 and abs(float(out.std()) - 1) < 0.02
    assert F.alpha_dropout(x, 0.2, training=False) is x
    fo = F.feature_alpha_dropout(tx.ones(50, 40, 3), 0.5, training=True).numpy()
    assert all(len(set(r)) == 1 for r in fo.reshape(-1, 3))


@pytest.mark.parametrize("name,kw", [("relu", {}), ("threshold", dict(threshold=0.1, value=-2.0)),
                                     ("hardshrink", dict(lambd=0.4)),
                                     ("softshrink", dict(lambd=0.4)), ("glu", dict(dim=1)),
                                     ("glu", {}), ("rrelu", {}), ("leaky_relu", {}),
                                     ("leaky_relu", dict(negative_slope=0.2)),
                                     ("elu", dict(alpha=0.7)), ("celu", dict(alpha=1.3)),
                                     ("selu", {}), ("gelu", {}), ("gelu", dict(approximate="tanh")),
                                     ("silu", {}), ("mish", {}), ("hardswish", {}),
                                     ("hardsigmoid", {}), ("hardtanh", dict(min_val=-0.5,
                                                                            max_val=0.7)),
                                     ("relu6", {}), ("softplus", dict(beta=2.0, threshold=1.5)),
                                     ("softsign", {}), ("tanhshrink", {}), ("logsigmoid", {}),
                                     ("sigmoid", {}), ("tanh", {})])
def test_activations(rng, name, kw):
    x = _r(rng, 4, 6) * 3
    compare(lambda x: getattr(F, name)(x, **kw), lambda x: getattr(TF, name)(x, **kw), [x])


def test_inplace_activations(rng):
    x = _r(rng, 3, 4)
    a, b = tx.tensor(x), torch.tensor(x)
    ra = F.relu(a, inplace=True)
    TF.relu(b, inplace=True)
    assert ra is a
    assert_close(a, b)
    a, b = tx.tensor(x), torch.tensor(x)
    F.threshold(a, 0.5, 9.0, inplace=True)
    TF.threshold(b, 0.5, 9.0, inplace=True)
    assert_close(a, b)
    for name, args in [("relu_", ()), ("elu_", (0.5,)), ("leaky_relu_", (0.2,)),
                       ("hardtanh_", (-0.3, 0.4)), ("threshold_", (0.1, 2.0)), ("rrelu_", ())]:
        a, b = tx.tensor(x), torch.tensor(x)
        assert getattr(F, name)(a, *args) is a
        getattr(TF, name)(b, *args)
        assert_close(a, b, msg=name)


@pytest.mark.parametrize("wshape", [(1,), (3,)])
def test_prelu(rng, wshape):
    x, w = _r(rng, 2, 3, 4), rng.uniform(0, 0.5, wshape)
    compare(F.prelu, TF.prelu, [x, w])
    with pytest.raises(RuntimeError, match="mismatch of parameter numbers"):
        F.prelu(tx.randn(2, 4), tx.ones(3))


def test_gumbel_softmax():
    logits = tx.randn(500, 4, generator=tx.Generator().manual_seed(0), requires_grad=True)
    g = tx.Generator().manual_seed(5)
    soft = F.gumbel_softmax(logits, tau=0.5, generator=g)
    assert np.allclose(soft.detach().numpy().sum(-1), 1)
    hard = F.gumbel_softmax(logits, hard=True, generator=g)
    h = hard.detach().numpy()
    assert set(np.unique(h)) == {0.0, 1.0} and (h.sum(-1) == 1).all()
    hard.sum().backward()  # straight-through: gradient of the soft sample (sums to 0 per row)
    assert np.allclose(logits.grad.numpy(), 0, atol=1e-5)


def test_functional_second_order(rng):
    x = tx.tensor(_r(rng, 1, 2, 3, 4), requires_grad=True)
    assert gradgradcheck(lambda x: F.interpolate(x, size=(5, 2), mode="bilinear"), [x])
    assert gradgradcheck(lambda x: F.glu(x, -1), [x])
    assert gradgradcheck(lambda x: F.pixel_shuffle(x.reshape(1, 4, 2, 3), 2), [x])
