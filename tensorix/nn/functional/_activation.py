"""Activations with PyTorch's ``F.*`` signatures that are not plain tensor ops: relu and
threshold with ``inplace``, prelu, rrelu, glu, hard/soft shrink and gumbel_softmax. The rest
(gelu, silu, elu, softplus, ...) are the ops of ``tensorix.ops`` re-exported by name.
"""

from __future__ import annotations

from ...ops import activation as _act
from ...ops import unary as _unary
from ...ops._common import check_tensor
from ...ops.creation import zeros_like
from ...ops.pointwise import where
from ...ops.random import rand
from ...tensor import Tensor

__all__ = ["relu", "relu_", "threshold", "threshold_", "prelu", "rrelu", "rrelu_", "glu",
           "hardshrink", "softshrink", "gumbel_softmax", "elu_", "leaky_relu_", "hardtanh_"]


def relu(input, inplace=False) -> Tensor:
    """``max(input, 0)``; ``inplace=True`` writes into ``input``.

    Example: ``F.relu(tensorix.tensor([-1., 2.]))`` is ``tensor([0., 2.])``.
    """
    return _act._maybe_inplace(_unary.relu, input, inplace, "relu")


def relu_(input) -> Tensor:
    """In-place :func:`relu`."""
    return relu(input, inplace=True)


def threshold(input, threshold, value, inplace=False) -> Tensor:
    """``input`` where ``input > threshold``, else ``value``."""
    th = _act._number(threshold, "threshold", "threshold")
    val = _act._number(value, "threshold", "value")
    return _act._maybe_inplace(lambda x: where(x > th, x, val), input, inplace, "threshold")


_threshold = threshold  # threshold_'s parameter shadows the function's name


def prelu(input, weight) -> Tensor:
    """``input`` where positive, ``weight * input`` elsewhere; ``weight`` holds one slope or
    one per channel (dim 1).

    Shapes: input (N, C, *) or (C,)..., weight (1,) or (C,).
    """
    check_tensor(input, "prelu")
    check_tensor(weight, "prelu", "weight")
    if weight.ndim > 1:
        raise RuntimeError(f"prelu(): weight must be a scalar or 1-D tensor, got shape "
                           f"{list(weight.shape)}")
    n = weight.numel()
    w = weight
    if n != 1:
        c = input.shape[1] if input.ndim >= 2 else (input.shape[0] if input.ndim else 1)
        if n != c:
            raise RuntimeError(f"prelu(): mismatch of parameter numbers and input channel size. "
                               f"Found parameter numbers = {n} and channel size = {c}.")
        if input.ndim >= 2:
            w = weight.reshape((1, n) + (1,) * (input.ndim - 2))
    elif weight.ndim:
        w = weight.reshape(())
    return where(input > 0, input, w * input)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False,
          generator=None) -> Tensor:
    """Randomised leaky ReLU: in training each negative element gets a slope drawn from
    U(lower, upper); in evaluation the slope is ``(lower + upper) / 2``."""
    if not training:
        return _act.leaky_relu(input, (lower + upper) / 2, inplace)
    def fn(x):
        slope = rand(*x.shape, generator=generator, dtype=x.dtype, device=x.device)
        slope = slope * (upper - lower) + lower
        return where(x >= 0, x, x * slope)

    return _act._maybe_inplace(fn, input, inplace, "rrelu")


def glu(input, dim=-1) -> Tensor:
    """Gated linear unit: split ``input`` in halves ``a, b`` along ``dim``; ``a * sigmoid(b)``.

    Shapes: (*, 2n, *) -> (*, n, *). Example: ``F.glu(tensorix.randn(4, 6))`` has shape (4, 3).
    """
    check_tensor(input, "glu")
    if input.ndim == 0:
        raise RuntimeError("glu(): glu does not support scalars because halving size must be "
                           "even")
    size = input.shape[dim]
    if size % 2:
        raise RuntimeError(f"glu(): halving dimension must be even, but dimension {dim} is size "
                           f"{size}")
    a, b = input.chunk(2, dim)
    return a * _act.sigmoid(b)


def hardshrink(input, lambd=0.5) -> Tensor:
    """``input`` where ``|input| > lambd``, else 0."""
    check_tensor(input, "hardshrink")
    return where((input > lambd).logical_or(input < -lambd), input, 0.0)


def softshrink(input, lambd=0.5) -> Tensor:
    """``input - lambd`` above ``lambd``, ``input + lambd`` below ``-lambd``, else 0."""
    check_tensor(input, "softshrink")
    if lambd < 0:
        raise RuntimeError(f"softshrink(): lambda must be greater or equal to 0, but found to "
                           f"be {lambd}.")
    return where(input > lambd, input - lambd, where(input < -lambd, input + lambd, 0.0))


def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1, generator=None) -> Tensor:
    """Sample from the Gumbel-softmax distribution; with ``hard`` the one-hot of the argmax,
    with the soft sample's gradient (straight-through)."""
    from ._core import softmax

    check_tensor(logits, "gumbel_softmax", "logits")
    u = rand(*logits.shape, generator=generator, dtype=logits.dtype, device=logits.device)
    gumbels = -(-(1 - u).log()).log()  # -log(Exp(1)) with Exp(1) = -log(1 - U)
    soft = softmax((logits + gumbels) / tau, dim)
    if not hard:
        return soft
    index = soft.argmax(dim, keepdim=True)
    one = zeros_like(logits).scatter(dim, index, 1.0)
    return one - soft.detach() + soft


def threshold_(input, threshold, value) -> Tensor:
    """In-place :func:`threshold`."""
    return _threshold(input, threshold, value, inplace=True)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None) -> Tensor:
    """In-place :func:`rrelu`."""
    return rrelu(input, lower, upper, training, True, generator)


def elu_(input, alpha=1.0) -> Tensor:
    """In-place ELU."""
    return _act.elu(input, alpha, inplace=True)


def leaky_relu_(input, negative_slope=0.01) -> Tensor:
    """In-place leaky ReLU."""
    return _act.leaky_relu(input, negative_slope, inplace=True)


def hardtanh_(input, min_val=-1.0, max_val=1.0) -> Tensor:
    """In-place hardtanh."""
    return _act.hardtanh(input, min_val, max_val, inplace=True)
