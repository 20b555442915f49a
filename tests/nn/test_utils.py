"""nn.utils against torch: gradient clipping, parameter vectors, weight_norm, pad_sequence."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tensorix as tx
from tensorix import nn

from ._util import copy_module, torch

tnn = torch.nn


def _params_with_grads(seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    shapes = [(3, 4), (4,), (2, 2, 2)]
    ours, theirs = [], []
    for s in shapes:
        v, g = rng.standard_normal(s), rng.standard_normal(s) * scale
        a, b = tx.tensor(v, requires_grad=True), torch.tensor(v, requires_grad=True)
        a.grad, b.grad = tx.tensor(g), torch.tensor(g)
        ours.append(a)
        theirs.append(b)
    return ours, theirs


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, math.inf])
@pytest.mark.parametrize("max_norm", [0.5, 100.0])
def test_clip_grad_norm(norm_type, max_norm):
    ours, theirs = _params_with_grads()
    ta = nn.utils.clip_grad_norm_(ours, max_norm, norm_type)
    tb = tnn.utils.clip_grad_norm_(theirs, max_norm, norm_type)
    np.testing.assert_allclose(ta.numpy(), tb.numpy(), rtol=1e-12)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-12)


def test_clip_grad_norm_edge_cases():
    p = tx.tensor([1.0, 2.0], requires_grad=True)
    assert float(nn.utils.clip_grad_norm_([p], 1.0)) == 0.0  # no grads
    p.grad = tx.tensor([float("inf"), 1.0])
    with pytest.raises(RuntimeError, match="is non-finite, so it cannot be clipped"):
        nn.utils.clip_grad_norm_(p, 1.0, error_if_nonfinite=True)
    q = tx.tensor([3.0, 4.0], requires_grad=True)
    q.grad = tx.tensor([3.0, 4.0])
    total = nn.utils.clip_grad_norm_(q, 1.0)  # a single tensor is accepted
    assert float(total) == pytest.approx(5.0)
    np.testing.assert_allclose(q.grad.numpy(), [0.6, 0.8], rtol=1e-5)


def test_clip_grad_value():
    ours, theirs = _params_with_grads(scale=3)
    nn.utils.clip_grad_value_(ours, 1.5)
    tnn.utils.clip_grad_value_(theirs, 1.5)
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a.grad.numpy(), b.grad.numpy())


def test_parameters_vector_round_trip():
    torch.manual_seed(0)
    theirs = tnn.Sequential(tnn.Linear(3, 4), tnn.Linear(4, 2))
    ours = copy_module(nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2)), theirs)
    va = nn.utils.parameters_to_vector(ours.parameters())
    vb = tnn.utils.parameters_to_vector(theirs.parameters())
    np.testing.assert_array_equal(va.detach().numpy(), vb.detach().numpy())
    (va * va).sum().backward()  # differentiable
    assert ours[0].weight.grad is not None
    nn.utils.vector_to_parameters(va.detach() * 2, ours.parameters())
    np.testing.assert_allclose(ours[1].bias.detach().numpy(),
                               2 * theirs[1].bias.detach().numpy())
    with pytest.raises(TypeError, match="expected tensorix.Tensor"):
        nn.utils.vector_to_parameters([1.0], ours.parameters())
    with pytest.raises(RuntimeError, match="expected a 1-d vector of 26 elements"):
        nn.utils.vector_to_parameters(tx.zeros(3), ours.parameters())


@pytest.mark.filterwarnings("ignore:.*weight_norm. is deprecated:FutureWarning")
@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm(dim):
    torch.manual_seed(0)
    theirs = tnn.utils.weight_norm(tnn.Linear(3, 4).double(), dim=dim)
    ours = nn.utils.weight_norm(nn.Linear(3, 4).double(), dim=dim)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    copy_module(ours, theirs)
    x = np.random.default_rng(0).standard_normal((5, 3))
    a, b = ours(tx.tensor(x)), theirs(torch.tensor(x))
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-10)
    a.sum().backward()
    b.sum().backward()
    for name, p in theirs.named_parameters():
        np.testing.assert_allclose(dict(ours.named_parameters())[name].grad.numpy(),
                                   p.grad.numpy(), rtol=1e-9, atol=1e-12)
    nn.utils.remove_weight_norm(ours)
    assert [n for n, _ in ours.named_parameters()] == ["bias", "weight"]
    np.testing.assert_allclose(ours(tx.tensor(x)).detach().numpy(), b.detach().numpy(),
                               rtol=1e-10)
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found"):
        nn.utils.remove_weight_norm(ours)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("side", ["right", "left"])
def test_pad_sequence(batch_first, side):
    rng = np.random.default_rng(1)
    seqs = [rng.standard_normal((n, 2)) for n in (3, 1, 4)]
    a = nn.utils.pad_sequence([tx.tensor(s) for s in seqs], batch_first, -1.0, side)
    b = tnn.utils.rnn.pad_sequence([torch.tensor(s) for s in seqs], batch_first, -1.0, side)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
