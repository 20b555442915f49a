"""Losses vs torch: values for every reduction, gradients w.r.t. input and target, options and
error messages."""

from __future__ import annotations

import numpy as np
import pytest

import tensorix as tx
import tensorix.nn.functional as F
from tensorix.testing import gradgradcheck

from ._util import compare, torch

TF = torch.nn.functional
REDUCTIONS = ["none", "mean", "sum"]


@pytest.fixture
def rng():
    return np.random.default_rng(1)


def _r(rng, *shape):
    return rng.standard_normal(shape)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
                                  "soft_margin_loss"])
def test_pointwise_regression_losses(rng, name, reduction):
    x, y = _r(rng, 4, 5), _r(rng, 4, 5)
    grad = [0, 1]
    if name == "soft_margin_loss":
        y, grad = np.sign(y), [0]
    compare(lambda x, y: getattr(F, name)(x, y, reduction=reduction),
            lambda x, y: getattr(TF, name)(x, y, reduction=reduction), [x, y], grad=grad)


@pytest.mark.parametrize("beta", [0.0, 0.5, 2.0])
def test_smooth_l1_beta_and_huber_delta(rng, beta):
    x, y = _r(rng, 6), _r(rng, 6)
    compare(lambda x, y: F.smooth_l1_loss(x, y, beta=beta),
            lambda x, y: TF.smooth_l1_loss(x, y, beta=beta), [x, y])
    if beta:
        compare(lambda x, y: F.huber_loss(x, y, delta=beta),
                lambda x, y: TF.huber_loss(x, y, delta=beta), [x, y])


def test_mse_broadcast_warns_and_legacy_flags(rng):
    with pytest.warns(UserWarning, match="different to the input size"):
        F.mse_loss(tx.randn(3, 2), tx.randn(2))
    x, y = _r(rng, 3, 2), _r(rng, 3, 2)
    compare(lambda x, y: F.mse_loss(x, y, size_average=False),
            lambda x, y: TF.mse_loss(x, y, reduction="sum"), [x, y])
    compare(lambda x, y: F.l1_loss(x, y, reduce=False),
            lambda x, y: TF.l1_loss(x, y, reduction="none"), [x, y])
    with pytest.raises(ValueError, match="is not a valid value for reduction"):
        F.mse_loss(tx.randn(2), tx.randn(2), reduction="avg")


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy(rng, reduction):
    x = rng.uniform(0.05, 0.95, (4, 3))
    y = rng.uniform(0, 1, (4, 3))
    w = rng.uniform(0.5, 2, (3,))
    compare(lambda x, y: F.binary_cross_entropy(x, y, reduction=reduction),
            lambda x, y: TF.binary_cross_entropy(x, y, reduction=reduction), [x, y])
    compare(lambda x, y, w: F.binary_cross_entropy(x, y, w, reduction=reduction),
            lambda x, y, w: TF.binary_cross_entropy(x, y, w, reduction=reduction), [x, y, w],
            grad=[0, 1])


def test_binary_cross_entropy_edges_and_errors():
    x = np.array([0.0, 1.0, 1e-50, 0.5])
    y = np.array([1.0, 0.0, 1.0, 0.0])
    compare(F.binary_cross_entropy, TF.binary_cross_entropy, [x, y])
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        F.binary_cross_entropy(tx.tensor([1.5]), tx.tensor([1.0]))
    with pytest.raises(ValueError, match="Please ensure they have the same size"):
        F.binary_cross_entropy(tx.tensor([0.5, 0.5]), tx.tensor([1.0]))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_bce_with_logits(rng, reduction):
    x, y = _r(rng, 4, 3) * 5, rng.uniform(0, 1, (4, 3))
    pw, w = rng.uniform(0.5, 3, (3,)), rng.uniform(0.5, 2, (4, 3))
    compare(lambda x, y: F.binary_cross_entropy_with_logits(x, y, reduction=reduction),
            lambda x, y: TF.binary_cross_entropy_with_logits(x, y, reduction=reduction), [x, y])
    compare(lambda x, y, w, pw: F.binary_cross_entropy_with_logits(
                x, y, w, reduction=reduction, pos_weight=pw),
            lambda x, y, w, pw: TF.binary_cross_entropy_with_logits(
                x, y, w, reduction=reduction, pos_weight=pw), [x, y, w, pw], grad=[0, 1])


def test_bce_with_logits_is_stable():
    x = np.array([-1000.0, 1000.0, 0.0], dtype=np.float32)
    y = np.array([1.0, 0.0, 1.0], dtype=np.float32)
    out, _ = compare(lambda x, y: F.binary_cross_entropy_with_logits(x, y, reduction="none"),
                     lambda x, y: TF.binary_cross_entropy_with_logits(x, y, reduction="none"),
                     [x, y])
    assert np.isfinite(out[0].detach().numpy()).all()
    with pytest.raises(ValueError, match="must be the same as input size"):
        F.binary_cross_entropy_with_logits(tx.randn(3), tx.randn(2))


@pytest.mark.parametrize("reduction", REDUCTIONS + ["batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div(rng, reduction, log_target):
    x = np.log(rng.dirichlet(np.ones(5), 3))
    t = rng.dirichlet(np.ones(5), 3)
    t[0, 1] = 0.0
    if log_target:
        t = np.log(t + 1e-3)
    kw = dict(reduction=reduction, log_target=log_target)
    if reduction == "mean":
        with pytest.warns(UserWarning, match="batchmean"):
            compare(lambda x, t: F.kl_div(x, t, **kw), lambda x, t: TF.kl_div(x, t, **kw),
                    [x, t])
    else:
        compare(lambda x, t: F.kl_div(x, t, **kw), lambda x, t: TF.kl_div(x, t, **kw), [x, t])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("margin", [0.0, 0.3])
def test_cosine_embedding_loss(rng, reduction, margin):
    a, b = _r(rng, 5, 4), _r(rng, 5, 4)
    y = np.array([1, -1, 1, -1, -1])
    compare(lambda a, b: F.cosine_embedding_loss(a, b, tx.tensor(y), margin,
                                                 reduction=reduction),
            lambda a, b: TF.cosine_embedding_loss(a, b, torch.tensor(y), margin,
                                                  reduction=reduction), [a, b])
    compare(lambda a, b: F.cosine_embedding_loss(a, b, tx.tensor(-1), margin),
            lambda a, b: TF.cosine_embedding_loss(a, b, torch.tensor(-1), margin),
            [a[0], b[0]])


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_margin_ranking_and_hinge(rng, reduction):
    a, b = _r(rng, 6), _r(rng, 6)
    y = np.array([1.0, -1, 1, -1, 1, 1])
    compare(lambda a, b, y: F.margin_ranking_loss(a, b, y, 0.2, reduction=reduction),
            lambda a, b, y: TF.margin_ranking_loss(a, b, y, 0.2, reduction=reduction),
            [a, b, y])
    compare(lambda a, y: F.hinge_embedding_loss(a, y, 0.5, reduction=reduction),
            lambda a, y: TF.hinge_embedding_loss(a, y, 0.5, reduction=reduction), [a, y],
            grad=[0])


@pytest.mark.parametrize("p,swap", [(2.0, False), (1.0, True), (3.0, False)])
def test_triplet_margin_loss(rng, p, swap):
    a, pos, neg = _r(rng, 4, 3), _r(rng, 4, 3), _r(rng, 4, 3)
    compare(lambda a, pos, neg: F.triplet_margin_loss(a, pos, neg, 0.7, p, swap=swap),
            lambda a, pos, neg: TF.triplet_margin_loss(a, pos, neg, 0.7, p, swap=swap),
            [a, pos, neg])
    with pytest.raises(ValueError, match="margin to be greater than 0"):
        F.triplet_margin_loss(tx.randn(2, 3), tx.randn(2, 3), tx.randn(2, 3), margin=0)


def test_triplet_margin_with_distance(rng):
    a, pos, neg = _r(rng, 4, 3), _r(rng, 4, 3), _r(rng, 4, 3)

    def dist_x(u, v):
        return 1 - F.cosine_similarity(u, v)

    def dist_t(u, v):
        return 1 - TF.cosine_similarity(u, v)

    compare(lambda a, p, n: F.triplet_margin_with_distance_loss(
                a, p, n, distance_function=dist_x, swap=True),
            lambda a, p, n: TF.triplet_margin_with_distance_loss(
                a, p, n, distance_function=dist_t, swap=True), [a, pos, neg])
    compare(F.triplet_margin_with_distance_loss, TF.triplet_margin_with_distance_loss,
            [a, pos, neg])


@pytest.mark.parametrize("log_input,full", [(True, False), (False, True), (True, True)])
def test_poisson_nll(rng, log_input, full):
    x = rng.uniform(0.1, 3, (4, 3))
    t = rng.poisson(2.0, (4, 3)).astype(np.float64)
    compare(lambda x, t: F.poisson_nll_loss(x, t, log_input, full),
            lambda x, t: TF.poisson_nll_loss(x, t, log_input, full), [x, t], grad=[0])


@pytest.mark.parametrize("var_shape", [(4, 3), (4,), (4, 1)])
@pytest.mark.parametrize("full", [False, True])
def test_gaussian_nll(rng, var_shape, full):
    x, t = _r(rng, 4, 3), _r(rng, 4, 3)
    var = rng.uniform(0.0, 2, var_shape)
    var.flat[0] = 1e-9  # clamped to eps, gradient passes through
    compare(lambda x, t, v: F.gaussian_nll_loss(x, t, v, full),
            lambda x, t, v: TF.gaussian_nll_loss(x, t, v, full), [x, t, var])


def test_gaussian_nll_errors():
    with pytest.raises(ValueError, match="var is of incorrect size"):
        F.gaussian_nll_loss(tx.randn(4, 3), tx.randn(4, 3), tx.ones(2))
    with pytest.raises(ValueError, match="var has negative entry"):
        F.gaussian_nll_loss(tx.randn(4, 3), tx.randn(4, 3), -tx.ones(4, 3))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_multilabel_losses(rng, reduction):
    x = _r(rng, 3, 5)
    y = (rng.uniform(size=(3, 5)) > 0.5).astype(np.float64)
    w = rng.uniform(0.5, 2, 5)
    compare(lambda x, y, w: F.multilabel_soft_margin_loss(x, y, w, reduction=reduction),
            lambda x, y, w: TF.multilabel_soft_margin_loss(x, y, w, reduction=reduction),
            [x, y, w], grad=[0])
    t = np.array([[3, 0, -1, 1, 1], [1, 2, 4, 0, -1], [-1, 0, 0, 0, 0]])
    compare(lambda x: F.multilabel_margin_loss(x, tx.tensor(t), reduction=reduction),
            lambda x: TF.multilabel_margin_loss(x, torch.tensor(t), reduction=reduction), [x])
    c = np.array([1, 4, 0])
    for p in (1, 2):
        compare(lambda x, w: F.multi_margin_loss(x, tx.tensor(c), p, 0.8, w,
                                                 reduction=reduction),
                lambda x, w: TF.multi_margin_loss(x, torch.tensor(c), p, 0.8, w,
                                                  reduction=reduction), [x, w], grad=[0])


@pytest.mark.parametrize("name", ["mse_loss", "smooth_l1_loss", "kl_div",
                                  "binary_cross_entropy_with_logits"])
def test_losses_second_order(rng, name):
    x = tx.tensor(rng.uniform(-1, 1, (3, 4)), requires_grad=True)
    y = tx.tensor(rng.uniform(0, 1, (3, 4)), requires_grad=True)
    kw = {"reduction": "sum"}
    assert gradgradcheck(lambda x, y: getattr(F, name)(x, y, **kw), [x, y])


def test_bce_second_order(rng):
    x = tx.tensor(rng.uniform(0.1, 0.9, (3, 4)), requires_grad=True)
    y = tx.tensor(rng.uniform(0, 1, (3, 4)), requires_grad=True)
    assert gradgradcheck(lambda x, y: F.binary_cross_entropy(x, y), [x, y])


def test_soft_margin_loss_broadcasts_without_the_regression_losses_warning():
    """torch warns of a broadcast target in mse/l1/smooth_l1/huber only: soft_margin_loss
    broadcasts silently (pytest turns a stray warning into an error) and raises RuntimeError
    for shapes that do not broadcast (found by the registry's mismatched-shape test)."""
    x, y = tx.ones(3, 4), tx.ones(4)
    compare(F.soft_margin_loss, torch.nn.functional.soft_margin_loss,
            [np.full((3, 4), 0.5), np.full((4,), -1.0)], grad=[0])
    F.soft_margin_loss(x, y)
    with pytest.raises(RuntimeError):
        F.soft_margin_loss(x, tx.ones(3, 5))
