"""nn.functional normalisation vs torch: values, gradients (input, weight, bias), running
statistics, second order, errors."""

from __future__ import annotations

import numpy as np
import pytest

import tensorix as tx
import tensorix.nn.functional as F
from tensorix.testing import gradcheck, gradgradcheck

from ._util import assert_close, compare, torch

TF = torch.nn.functional


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def _r(rng, *shape, dtype=np.float64):
    return rng.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 5), (2, 3, 4, 4)])
def test_batch_norm_train_matches_torch_with_running_stats(rng, shape):
    c = shape[1]
    x, w, b = _r(rng, *shape), _r(rng, c), _r(rng, c)
    rm_x, rv_x = tx.zeros(c, dtype=tx.float64), tx.ones(c, dtype=tx.float64)
    rm_t, rv_t = torch.zeros(c, dtype=torch.float64), torch.ones(c, dtype=torch.float64)
    compare(lambda x, w, b: F.batch_norm(x, rm_x, rv_x, w, b, True, 0.3),
            lambda x, w, b: TF.batch_norm(x, rm_t, rv_t, w, b, True, 0.3), [x, w, b])
    assert_close(rm_x, rm_t, msg="running_mean")
    assert_close(rv_x, rv_t, msg="running_var")


def test_batch_norm_eval_uses_running_stats(rng):
    x, w, b = _r(rng, 5, 3, 2), _r(rng, 3), _r(rng, 3)
    rm, rv = _r(rng, 3), np.abs(_r(rng, 3)) + 0.5
    compare(lambda x, w, b: F.batch_norm(x, tx.tensor(rm), tx.tensor(rv), w, b, False),
            lambda x, w, b: TF.batch_norm(x, torch.tensor(rm), torch.tensor(rv), w, b, False),
            [x, w, b])


def test_batch_norm_no_affine_no_stats(rng):
    x = _r(rng, 6, 4)
    compare(lambda x: F.batch_norm(x, None, None, training=True),
            lambda x: TF.batch_norm(x, None, None, training=True), [x])


def test_batch_norm_float32(rng):
    x = _r(rng, 8, 3, 4, 4, dtype=np.float32)
    compare(lambda x: F.batch_norm(x, None, None, training=True, eps=1e-3),
            lambda x: TF.batch_norm(x, None, None, training=True, eps=1e-3), [x], atol=1e-5)


def test_batch_norm_errors(rng):
    with pytest.raises(ValueError, match="Expected more than 1 value per channel"):
        F.batch_norm(tx.randn(1, 3), None, None, training=True)
    with pytest.raises(RuntimeError, match="running_mean and running_var must be defined"):
        F.batch_norm(tx.randn(2, 3), None, None, training=False)
    with pytest.raises(RuntimeError, match="expected weight of shape \\[3\\]"):
        F.batch_norm(tx.randn(2, 3), None, None, tx.ones(4), training=True)


@pytest.mark.parametrize("fn", ["layer", "batch", "group", "instance", "rms"])
def test_norms_second_order(rng, fn):
    x = tx.tensor(_r(rng, 3, 4, 5), requires_grad=True)
    w = tx.tensor(_r(rng, 4 if fn in ("batch", "group", "instance") else 5),
                  requires_grad=True)
    calls = {
        "layer": lambda x, w: F.layer_norm(x, (5,), w, w * 0.5),
        "batch": lambda x, w: F.batch_norm(x, None, None, w, w * 0.5, True),
        "group": lambda x, w: F.group_norm(x, 2, w, w * 0.5),
        "instance": lambda x, w: F.instance_norm(x, weight=w, bias=w * 0.5),
        "rms": lambda x, w: F.rms_norm(x, (5,), w),
    }
    assert gradcheck(calls[fn], [x, w])
    assert gradgradcheck(calls[fn], [x, w])


@pytest.mark.parametrize("shape,norm", [((3, 4), (4,)), ((2, 3, 4), (3, 4))])
def test_layer_norm(rng, shape, norm):
    x, w, b = _r(rng, *shape), _r(rng, *norm), _r(rng, *norm)
    compare(lambda x, w, b: F.layer_norm(x, norm, w, b),
            lambda x, w, b: TF.layer_norm(x, norm, w, b), [x, w, b])
    compare(lambda x: F.layer_norm(x, norm), lambda x: TF.layer_norm(x, norm), [x])


def test_layer_norm_errors():
    with pytest.raises(RuntimeError, match="given normalized_shape=\\[5\\]"):
        F.layer_norm(tx.randn(2, 4), (5,))
    with pytest.raises(RuntimeError, match="expected weight of shape \\[4\\]"):
        F.layer_norm(tx.randn(2, 4), (4,), tx.ones(3))


@pytest.mark.parametrize("groups", [1, 2, 6])
def test_group_norm(rng, groups):
    x, w, b = _r(rng, 2, 6, 3, 2), _r(rng, 6), _r(rng, 6)
    compare(lambda x, w, b: F.group_norm(x, groups, w, b, 1e-4),
            lambda x, w, b: TF.group_norm(x, groups, w, b, 1e-4), [x, w, b])


def test_group_norm_errors():
    with pytest.raises(RuntimeError, match="divisible by num_groups"):
        F.group_norm(tx.randn(2, 6, 3), 4)


def test_instance_norm_with_running_stats(rng):
    x, w, b = _r(rng, 3, 2, 5, 4), _r(rng, 2), _r(rng, 2)
    rm_x, rv_x = tx.zeros(2, dtype=tx.float64), tx.ones(2, dtype=tx.float64)
    rm_t, rv_t = torch.zeros(2, dtype=torch.float64), torch.ones(2, dtype=torch.float64)
    compare(lambda x, w, b: F.instance_norm(x, rm_x, rv_x, w, b, True, 0.2),
            lambda x, w, b: TF.instance_norm(x, rm_t, rv_t, w, b, True, 0.2), [x, w, b])
    assert_close(rm_x, rm_t)
    assert_close(rv_x, rv_t)
    compare(lambda x: F.instance_norm(x, rm_x, rv_x, use_input_stats=False),
            lambda x: TF.instance_norm(x, rm_t, rv_t, use_input_stats=False), [x])


def test_rms_norm(rng):
    x, w = _r(rng, 3, 4, 5), _r(rng, 4, 5)
    compare(lambda x, w: F.rms_norm(x, (4, 5), w), lambda x, w: TF.rms_norm(x, (4, 5), w), [x, w])
    x32 = _r(rng, 3, 8, dtype=np.float32)
    compare(lambda x: F.rms_norm(x, 8), lambda x: TF.rms_norm(x, [8]), [x32])
    compare(lambda x: F.rms_norm(x, 8, eps=0.1), lambda x: TF.rms_norm(x, [8], eps=0.1), [x32])
    with pytest.raises(RuntimeError, match="given normalized_shape"):
        F.rms_norm(tx.randn(2, 3), (4,))


@pytest.mark.parametrize("shape", [(2, 7, 3), (2, 6, 3, 2)])
def test_local_response_norm(rng, shape):
    x = _r(rng, *shape)
    compare(lambda x: F.local_response_norm(x, 3, 1e-2, 0.7, 2.0),
            lambda x: TF.local_response_norm(x, 3, 1e-2, 0.7, 2.0), [x])
    compare(lambda x: F.local_response_norm(x, 4), lambda x: TF.local_response_norm(x, 4), [x])


@pytest.mark.parametrize("p,dim", [(2, 1), (1, 0), (3.0, -1)])
def test_normalize(rng, p, dim):
    x = _r(rng, 3, 4)
    x[1] = 0.0
    compare(lambda x: F.normalize(x, p, dim), lambda x: TF.normalize(x, p, dim), [x])
