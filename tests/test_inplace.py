"""In-place ops under autograd: version counters, saved-tensor checks, leaf rules, CopySlices
(writes through views) and re-derived views, checked against torch where it is installed."""

from __future__ import annotations

import numpy as np
import pytest

import tensorix as tx

try:
    import torch
except ImportError:  # the oracle tests skip cleanly without torch
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is the oracle")


def _np(t):
    return t.detach().numpy()


# -- version counters ---------------------------------------------------------------------------

def test_version_counter_shared_by_views():
    x = tx.zeros(4)
    v = x[1:3]
    w = x.reshape(2, 2)
    assert x._version_value == v._version_value == 0
    x.add_(1)
    assert x._version_value == v._version_value == w._version_value == 1
    v.mul_(2)
    assert x._version_value == 2 and w._version_value == 2
    np.testing.assert_allclose(x.numpy(), [1.0, 2.0, 2.0, 1.0])
    d = x.detach()
    d.zero_()
    assert x._version_value == 3
    c = x.clone()
    c.add_(1)
    assert x._version_value == 3  # a copy has its own counter


def test_modifying_saved_output_is_an_error():
    x = tx.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    y.add_(1)  # Exp saved its output
    with pytest.raises(RuntimeError, match=r"ExpBackward: one of the variables needed for "
                                           r"gradient computation has been modified by an "
                                           r"inplace operation: \[float32 tensor of shape "
                                           r"\[2\]\], which is output 0 of ExpBackward, is at "
                                           r"version 1; expected version 0 instead"):
        y.sum().backward()


def test_modifying_saved_input_through_a_view_is_an_error():
    x = tx.tensor([1.0, 2.0, 3.0], requires_grad=True)
    h = x * 1
    y = h.log()  # Log saved h
    h[0:1].mul_(2)
    with pytest.raises(RuntimeError, match="LogBackward: .* is at version 1; expected version 0"):
        y.sum().backward()


def test_in_place_on_leaf_requiring_grad():
    w = tx.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"add_\(\): a leaf Variable that requires grad is "
                                           r"being used in an in-place operation"):
        w.add_(1)
    with pytest.raises(RuntimeError, match=r"a view of a leaf Variable that requires grad"):
        w[0:2].mul_(2)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        w[0] = 3.0


def test_parameter_update_under_no_grad():
    w = tx.tensor([1.0, 2.0], requires_grad=True)
    (w * w).sum().backward()
    with tx.no_grad():
        w.sub_(0.25 * w.grad)
        w[0] = 5.0
    assert w.is_leaf and w.requires_grad and w.grad_fn is None
    assert w._version_value == 2
    np.testing.assert_allclose(w.detach().numpy(), [5.0, 1.0])
    w.grad = None
    (w * 3).sum().backward()  # still a working leaf
    np.testing.assert_allclose(w.grad.numpy(), [3.0, 3.0])


def test_in_place_dtype_and_shape_rules():
    i = tx.tensor([1, 2])
    with pytest.raises(RuntimeError, match=r"add_\(\): result type float32 can't be cast to "
                                           r"the desired output type int64"):
        i.add_(tx.tensor([0.5, 0.5]))
    x = tx.zeros(2)
    with pytest.raises(RuntimeError, match=r"output with shape \[2\] doesn't match the "
                                           r"broadcast shape \[3, 2\]"):
        x.add_(tx.ones(3, 2))
    x.add_(tx.ones(1))  # broadcasting into x is fine
    np.testing.assert_allclose(x.numpy(), [1.0, 1.0])


# -- gradients through in-place ops, against torch ----------------------------------------------

def _setitem_exp(x, m):
    b = x * 2
    b[1] = b[1].exp()
    return b * x


def _stale_view(x, m):
    b = x * 1
    v = b[0:2]  # made before the write to its base: re-derived when used
    b.mul_(2)
    return v * 1


def _sibling_views(x, m):
    b = x * 1.5
    col = b[:, 0]
    top = b[0:2]  # overlaps col
    col.mul_(x[:, 1])
    return (top * b[0:2]).sum() + b.sum()


def _write_into_buffer(x, m):
    b = m.zeros(4, 3, dtype=x.dtype)
    b[1:3] = x[1:3] ** 2
    return b


def _copy_from_leaf(x, m):
    b = m.zeros(4, 3, dtype=x.dtype)
    b.copy_(x)
    return b * b


def _transposed_view(x, m):
    b = x * 1
    b.transpose(0, 1)[0].add_(x[:, 0] * x[:, 1])
    return b * x


def _saved_operand(x, m):
    b = x + 0
    b.pow_(2)
    b.mul_(x)  # mul_ needs b's old value for x's gradient
    return b


def _operators(x, m):
    b = x * 1
    b += x
    b *= x
    b -= 1
    b /= 2
    return b


CASES = [_setitem_exp, _stale_view, _sibling_views, _write_into_buffer, _copy_from_leaf,
         _transposed_view, _saved_operand, _operators]


@needs_torch
@pytest.mark.parametrize("f", CASES, ids=[f.__name__.strip("_") for f in CASES])
def test_in_place_gradients_match_torch(f, rng):
    arr = rng.random((4, 3)) + 0.5
    x = tx.tensor(arr, requires_grad=True)
    tx_x = torch.tensor(arr, requires_grad=True)
    out, ref = f(x, tx), f(tx_x, torch)
    g = rng.random(tuple(out.shape))
    out.backward(tx.tensor(g))
    ref.backward(torch.tensor(g))
    np.testing.assert_allclose(_np(out), ref.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), tx_x.grad.numpy(), rtol=1e-12)


@needs_torch
def test_double_backward_through_copy_slices(rng):
    arr = rng.random(4) + 0.5
    grads = []
    for m, x in ((tx, tx.tensor(arr, requires_grad=True)),
                 (torch, torch.tensor(arr, requires_grad=True))):
        b = x * x
        b[1:3] = b[1:3].exp() * x[0:2] ** 2
        (g,) = m.autograd.grad((b ** 2).sum(), x, create_graph=True)
        (gg,) = m.autograd.grad((g * g).sum(), x)
        grads.append((g.detach().numpy(), gg.numpy()))
    np.testing.assert_allclose(grads[0][0], grads[1][0], rtol=1e-12)
    np.testing.assert_allclose(grads[0][1], grads[1][1], rtol=1e-12)


def test_writing_over_a_saved_view_is_an_error():
    x = tx.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = x * x
    b[1:3] = b[1:3] * x[0:2]  # Mul saved the view b[1:3]: PyTorch refuses this too
    with pytest.raises(RuntimeError, match="MulBackward: .*modified by an inplace operation"):
        (b ** 2).sum().backward()


def test_copy_slices_node():
    x = tx.ones(3, requires_grad=True)
    b = x * 2
    v = b[0:2]
    v.mul_(3)
    assert b.grad_fn.name() == "CopySlices"
    assert not b.is_leaf and v.grad_fn is not None
    b.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [6.0, 6.0, 2.0])


def test_in_place_makes_a_constant_tensor_require_grad():
    w = tx.tensor([2.0], requires_grad=True)
    b = tx.zeros(3)
    b.add_(w)
    assert b.requires_grad and not b.is_leaf and b.grad_fn is not None
    b.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), [3.0])


def test_in_place_keeps_tensor_identity():
    x = tx.ones(2, requires_grad=True)
    b = x * 1
    same = b.add_(1)
    assert same is b
    b2 = b
    b2 += 1
    assert b2 is b
    np.testing.assert_allclose(b.detach().numpy(), [3.0, 3.0])
