"""Convolutions, pooling and the core functions (linear, softmax, nll, cross_entropy) vs
torch: values and gradients, indices of max pooling, unpooling, errors."""

from __future__ import annotations

import numpy as np
import pytest

import tensorix as tx
import tensorix.nn.functional as F

from ._util import assert_close, compare, torch

TF = torch.nn.functional


@pytest.fixture
def rng():
    return np.random.default_rng(4)


def _r(rng, *shape):
    return rng.standard_normal(shape)


CONV = [
    ("conv1d", (2, 4, 9), (6, 2, 3), dict(stride=2, padding=1, groups=2)),
    ("conv1d", (2, 3, 9), (4, 3, 3), dict(padding="same", dilation=2)),
    ("conv1d", (3, 8), (4, 3, 2), dict(padding="same")),
    ("conv2d", (2, 3, 7, 6), (4, 3, 3, 2), dict(stride=(2, 1), padding=(1, 0))),
    ("conv2d", (1, 4, 6, 6), (4, 1, 3, 3), dict(groups=4, dilation=2, padding=2)),
    ("conv2d", (1, 2, 5, 5), (3, 2, 2, 2), dict(padding="same")),
    ("conv2d", (1, 2, 5, 5), (3, 2, 3, 3), dict(padding="valid")),
    ("conv3d", (1, 2, 4, 4, 3), (2, 2, 2, 3, 2), dict(padding=1)),
]


@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize("name,xs,ws,kw", CONV)
def test_conv(rng, name, xs, ws, kw):
    x, w, b = _r(rng, *xs), _r(rng, *ws), _r(rng, ws[0])
    compare(lambda x, w, b: getattr(F, name)(x, w, b, **kw),
            lambda x, w, b: getattr(TF, name)(x, w, b, **kw), [x, w, b])


CONVT = [
    ("conv_transpose1d", (2, 4, 5), (4, 3, 3), dict(stride=2, padding=1, output_padding=1)),
    ("conv_transpose1d", (2, 4, 5), (4, 1, 3), dict(groups=2, dilation=2)),
    ("conv_transpose2d", (1, 2, 3, 4), (2, 3, 3, 2), dict(stride=2)),
    ("conv_transpose2d", (2, 4, 3, 3), (4, 2, 2, 2), dict(stride=(2, 3), padding=(1, 0),
                                                          groups=2, output_padding=(1, 2))),
    ("conv_transpose3d", (1, 2, 2, 3, 2), (2, 2, 2, 2, 2), dict(stride=2)),
]


@pytest.mark.parametrize("name,xs,ws,kw", CONVT)
def test_conv_transpose(rng, name, xs, ws, kw):
    x, w = _r(rng, *xs), _r(rng, *ws)
    b = _r(rng, ws[1] * kw.get("groups", 1))
    compare(lambda x, w, b: getattr(F, name)(x, w, b, **kw),
            lambda x, w, b: getattr(TF, name)(x, w, b, **kw), [x, w, b])


def test_conv_errors():
    with pytest.raises(RuntimeError, match="expected input\\[2, 4, 5, 5\\] to have 3 channels"):
        F.conv2d(tx.randn(2, 4, 5, 5), tx.randn(2, 3, 3, 3))
    with pytest.raises(ValueError, match="padding='same' is not supported for strided"):
        F.conv2d(tx.randn(1, 3, 5, 5), tx.randn(2, 3, 3, 3), stride=2, padding="same")


def test_unfold_fold(rng):
    x = _r(rng, 2, 3, 5, 6)
    compare(lambda x: F.unfold(x, (2, 3), padding=1, stride=(2, 1)),
            lambda x: TF.unfold(x, (2, 3), padding=1, stride=(2, 1)), [x])
    cols = _r(rng, 2, 12, 12)
    compare(lambda c: F.fold(c, (5, 4), (2, 2)), lambda c: TF.fold(c, (5, 4), (2, 2)), [cols])


POOL = [
    ("max_pool1d", (2, 3, 9), dict(kernel_size=3, stride=2, padding=1)),
    ("max_pool2d", (2, 3, 7, 6), dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 1),
                                      dilation=(1, 2))),
    ("max_pool2d", (1, 2, 7, 7), dict(kernel_size=2, ceil_mode=True)),
    ("max_pool2d", (2, 6, 6), dict(kernel_size=2)),
    ("max_pool3d", (1, 2, 4, 5, 4), dict(kernel_size=2, stride=(1, 2, 2))),
    ("avg_pool1d", (2, 3, 9), dict(kernel_size=3, stride=2, padding=1)),
    ("avg_pool1d", (2, 3, 8), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True,
                                   count_include_pad=False)),
    ("avg_pool2d", (2, 3, 7, 6), dict(kernel_size=3, stride=2, padding=1,
                                      count_include_pad=False)),
    ("avg_pool2d", (1, 2, 7, 8), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    ("avg_pool2d", (1, 2, 7, 8), dict(kernel_size=2, ceil_mode=True, count_include_pad=False)),
    ("avg_pool2d", (1, 2, 6, 6), dict(kernel_size=3, divisor_override=4)),
    ("avg_pool3d", (1, 2, 4, 4, 4), dict(kernel_size=2, padding=1)),
    ("adaptive_avg_pool1d", (2, 3, 10), dict(output_size=4)),
    ("adaptive_avg_pool2d", (2, 3, 7, 5), dict(output_size=(3, 2))),
    ("adaptive_avg_pool2d", (2, 3, 7, 5), dict(output_size=(None, 1))),
    ("adaptive_max_pool1d", (2, 3, 10), dict(output_size=4)),
    ("adaptive_max_pool2d", (2, 3, 7, 5), dict(output_size=(3, 4))),
    ("lp_pool2d", (1, 2, 6, 6), dict(norm_type=2, kernel_size=2)),
    ("lp_pool1d", (1, 2, 6), dict(norm_type=3, kernel_size=3, stride=1)),
]


@pytest.mark.parametrize("name,shape,kw", POOL)
def test_pooling(rng, name, shape, kw):
    x = _r(rng, *shape)
    if name.startswith("lp"):
        x = np.abs(x) + 0.1
    compare(lambda x: getattr(F, name)(x, **kw), lambda x: getattr(TF, name)(x, **kw), [x])


@pytest.mark.parametrize("name,shape,kw", [
    ("max_pool1d", (2, 3, 9), dict(kernel_size=3, stride=2, padding=1)),
    ("max_pool2d", (2, 3, 7, 6), dict(kernel_size=(3, 2), stride=(2, 1), padding=1,
                                      dilation=(1, 2))),
    ("max_pool2d", (3, 5, 5), dict(kernel_size=2, ceil_mode=True)),
    ("max_pool3d", (1, 2, 4, 5, 4), dict(kernel_size=2, stride=(1, 2, 2), padding=1)),
    ("adaptive_max_pool1d", (2, 3, 10), dict(output_size=4)),
    ("adaptive_max_pool2d", (2, 3, 7, 5), dict(output_size=(3, 4))),
])
def test_max_pool_indices_match_torch(rng, name, shape, kw):
    x = _r(rng, *shape)
    (out, idx), (tout, tidx) = compare(
        lambda x: getattr(F, name)(x, return_indices=True, **kw),
        lambda x: getattr(TF, name)(x, return_indices=True, **kw), [x])
    assert idx.dtype is tx.int64
    assert not idx.requires_grad


@pytest.mark.parametrize("nd,shape,kw", [
    (1, (2, 3, 8), dict(kernel_size=2)),
    (2, (2, 3, 6, 7), dict(kernel_size=3, stride=2, padding=1)),
    (3, (1, 2, 4, 4, 4), dict(kernel_size=2)),
])
def test_max_unpool(rng, nd, shape, kw):
    x = _r(rng, *shape)
    pool, tpool = getattr(F, f"max_pool{nd}d"), getattr(TF, f"max_pool{nd}d")
    out, idx = pool(tx.tensor(x), return_indices=True, **kw)
    tout, tidx = tpool(torch.tensor(x), return_indices=True, **kw)
    size = shape[2:]
    compare(lambda o: getattr(F, f"max_unpool{nd}d")(o, idx, output_size=size, **kw),
            lambda o: getattr(TF, f"max_unpool{nd}d")(o, tidx, output_size=size, **kw),
            [tout.numpy()])
    with pytest.raises(RuntimeError, match="Found an invalid max index"):
        getattr(F, f"max_unpool{nd}d")(out, idx * 0 + 10 ** 6, **kw)


def test_pool_errors():
    with pytest.raises(RuntimeError, match="pad should be at most half"):
        F.max_pool2d(tx.randn(1, 1, 5, 5), 2, padding=2)
    with pytest.raises(RuntimeError, match="expected a 2D or 3D input"):
        F.max_pool1d(tx.randn(5), 2)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_family(rng, dim):
    x = _r(rng, 3, 4, 5)
    for name in ("softmax", "log_softmax", "softmin"):
        compare(lambda x: getattr(F, name)(x, dim), lambda x: getattr(TF, name)(x, dim), [x])


def test_linear(rng):
    x, w, b = _r(rng, 2, 3, 4), _r(rng, 5, 4), _r(rng, 5)
    compare(F.linear, TF.linear, [x, w, b])
    compare(F.linear, TF.linear, [x, w])
    with pytest.raises(RuntimeError, match="shapes cannot be multiplied"):
        F.linear(tx.randn(2, 3), tx.randn(4, 4))


def test_bilinear(rng):
    x1, x2, w, b = _r(rng, 4, 3), _r(rng, 4, 2), _r(rng, 5, 3, 2), _r(rng, 5)
    compare(F.bilinear, TF.bilinear, [x1, x2, w, b])
    compare(F.bilinear, TF.bilinear, [x1[None], x2[None], w])


@pytest.mark.parametrize("kw", [{}, dict(reduction="sum"), dict(reduction="none"),
                                dict(ignore_index=1), dict(label_smoothing=0.2),
                                dict(label_smoothing=0.1, ignore_index=2, reduction="sum")])
def test_cross_entropy_and_nll(rng, kw):
    x, y = _r(rng, 6, 4), np.array([0, 1, 3, 2, 1, 1])
    w = rng.uniform(0.5, 2, 4)
    compare(lambda x, w: F.cross_entropy(x, tx.tensor(y), w, **kw),
            lambda x, w: TF.cross_entropy(x, torch.tensor(y), w, **kw), [x, w], grad=[0])
    compare(lambda x: F.cross_entropy(x, tx.tensor(y), **kw),
            lambda x: TF.cross_entropy(x, torch.tensor(y), **kw), [x])
    if "label_smoothing" not in kw:
        compare(lambda x: F.nll_loss(x, tx.tensor(y), **kw),
                lambda x: TF.nll_loss(x, torch.tensor(y), **kw), [x])


def test_cross_entropy_nd_and_probabilities(rng):
    x, y = _r(rng, 2, 3, 4, 2), rng.integers(0, 3, (2, 4, 2))
    compare(lambda x: F.cross_entropy(x, tx.tensor(y)),
            lambda x: TF.cross_entropy(x, torch.tensor(y)), [x])
    p = rng.dirichlet(np.ones(3), (2, 4, 2)).transpose(0, 3, 1, 2).copy()
    compare(lambda x, p: F.cross_entropy(x, p, label_smoothing=0.3),
            lambda x, p: TF.cross_entropy(x, p, label_smoothing=0.3), [x, p])


def test_nll_errors():
    with pytest.raises(IndexError, match="out of bounds"):
        F.nll_loss(tx.randn(2, 3), tx.tensor([0, 3]))
    with pytest.raises(ValueError, match="expected target shape"):
        F.nll_loss(tx.randn(2, 3), tx.tensor([0, 1, 2]))
    with pytest.raises(RuntimeError, match="integer dtype"):
        F.nll_loss(tx.randn(2, 3), tx.tensor([0.0, 1.0]))
    assert_close(F.nll_loss(tx.tensor([[0.5, -1.0]]), tx.tensor([1])), torch.tensor(1.0))


GRADGRAD = [
    ("conv2d", lambda x, w: F.conv2d(x, w, stride=2, padding=1), [(1, 2, 5, 5), (3, 2, 3, 3)]),
    ("conv_transpose1d", lambda x, w: F.conv_transpose1d(x, w, stride=2), [(1, 2, 4),
                                                                            (2, 3, 3)]),
    ("max_pool2d", lambda x: F.max_pool2d(x, 2, 1, 1), [(1, 2, 4, 4)]),
    ("avg_pool2d_ceil", lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True,
                                               count_include_pad=False), [(1, 1, 6, 5)]),
    ("adaptive_avg", lambda x: F.adaptive_avg_pool2d(x, (2, 3)), [(1, 2, 5, 4)]),
    ("linear", lambda x, w: F.linear(x, w), [(2, 3, 4), (5, 4)]),
    ("log_softmax_nll", lambda x: F.cross_entropy(x, tx.tensor([1, 0, 2]),
                                                  label_smoothing=0.1), [(3, 4)]),
]


@pytest.mark.parametrize("name,fn,shapes", GRADGRAD, ids=[g[0] for g in GRADGRAD])
def test_second_order(rng, name, fn, shapes):
    from tensorix.testing import gradgradcheck

    args = [tx.tensor(_r(rng, *s), requires_grad=True) for s in shapes]
    assert gradgradcheck(fn, args)
