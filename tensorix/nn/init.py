"""``tensorix.nn.init``: in-place parameter initialisers with PyTorch's names, formulas and
error messages. Every function runs under ``no_grad``, writes into ``tensor`` and returns it;
the random ones take an optional ``generator=`` (a :class:`tensorix.Generator`).

Example::

    w = tensorix.empty(64, 32)
    nn.init.kaiming_uniform_(w, a=math.sqrt(5))   # Linear's default weight init
"""

from __future__ import annotations

import math
import warnings

from .. import backend
from ..autograd.grad_mode import no_grad
from ..ops.creation import eye
from ..ops.random import randn, randperm
from ..tensor import Tensor, _make

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_",
           "zeros_", "eye_", "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_",
           "kaiming_normal_", "orthogonal_", "sparse_"]

_LINEAR = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d")


def calculate_gain(nonlinearity, param=None) -> float:
    """The recommended gain for a nonlinearity: 1 for linear/conv/sigmoid, 5/3 for tanh,
    sqrt(2) for relu, sqrt(2 / (1 + slope**2)) for leaky_relu (slope ``param``, default 0.01),
    3/4 for selu.

    Example: ``nn.init.calculate_gain('relu')`` is ``1.4142...``.
    """
    if nonlinearity in _LINEAR or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _check(tensor, op):
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{op}(): argument 'tensor' must be a Tensor, not "
                        f"{type(tensor).__name__}")


def _fans(tensor):
    if tensor.ndim < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 "
                         "dimensions")
    receptive = 1
    for s in tensor.shape[2:]:
        receptive *= s
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def uniform_(tensor, a=0.0, b=1.0, generator=None) -> Tensor:
    """Fill with U(a, b)."""
    _check(tensor, "uniform_")
    with no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor, mean=0.0, std=1.0, generator=None) -> Tensor:
    """Fill with N(mean, std**2)."""
    _check(tensor, "normal_")
    with no_grad():
        return tensor.normal_(mean, std, generator=generator)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None) -> Tensor:
    """Fill with N(mean, std**2) truncated to [a, b], by inverse-CDF sampling (PyTorch's
    method)."""
    _check(tensor, "trunc_normal_")
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The "
                      "distribution of values may be incorrect.", stacklevel=2)

    def cdf(x):
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    lo, hi = cdf((a - mean) / std), cdf((b - mean) / std)
    with no_grad():
        tensor.uniform_(2 * lo - 1, 2 * hi - 1, generator=generator)
        tensor.erfinv_()
        tensor.mul_(std * math.sqrt(2.0))
        tensor.add_(mean)
        return tensor.clamp_(a, b)


def constant_(tensor, val) -> Tensor:
    """Fill with ``val``."""
    _check(tensor, "constant_")
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor) -> Tensor:
    """Fill with 1."""
    return constant_(tensor, 1.0)


def zeros_(tensor) -> Tensor:
    """Fill with 0."""
    return constant_(tensor, 0.0)


def eye_(tensor) -> Tensor:
    """Fill a 2-d tensor with the identity (ones on the diagonal)."""
    _check(tensor, "eye_")
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    with no_grad():
        return tensor.copy_(eye(*tensor.shape, dtype=tensor.dtype, device=tensor.device))


def dirac_(tensor, groups=1) -> Tensor:
    """Fill a 3-5 d conv weight with the Dirac delta (the identity convolution), per group."""
    _check(tensor, "dirac_")
    if tensor.ndim not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tensor.shape
    if sizes[0] % groups:
        raise ValueError("dim 0 must be divisible by groups")
    out_per_group = sizes[0] // groups
    min_dim = min(out_per_group, sizes[1])
    xp = tensor.xp
    data = xp.zeros(tuple(sizes), dtype=tensor.dtype.np)
    centre = tuple(s // 2 for s in sizes[2:])
    for g in range(groups):
        for d in range(min_dim):
            data[(g * out_per_group + d, d) + centre] = 1
    with no_grad():
        return tensor.copy_(_make(data))


def _fan(tensor, mode):
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _fans(tensor)
    return fan_in if mode == "fan_in" else fan_out


def xavier_uniform_(tensor, gain=1.0, generator=None) -> Tensor:
    """Glorot uniform: U(-a, a) with ``a = gain * sqrt(6 / (fan_in + fan_out))``."""
    _check(tensor, "xavier_uniform_")
    fan_in, fan_out = _fans(tensor)
    a = gain * math.sqrt(6.0 / float(fan_in + fan_out))
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor, gain=1.0, generator=None) -> Tensor:
    """Glorot normal: N(0, std**2) with ``std = gain * sqrt(2 / (fan_in + fan_out))``."""
    _check(tensor, "xavier_normal_")
    fan_in, fan_out = _fans(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator)


def _empty(tensor):
    if 0 in tuple(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=3)
        return True
    return False


def kaiming_uniform_(tensor, a=0.0, mode="fan_in", nonlinearity="leaky_relu",
                     generator=None) -> Tensor:
    """He uniform: U(-bound, bound) with ``bound = gain * sqrt(3 / fan)``, ``gain =
    calculate_gain(nonlinearity, a)``. ``kaiming_uniform_(w, a=math.sqrt(5))`` is the default
    init of Linear and Conv weights."""
    _check(tensor, "kaiming_uniform_")
    if _empty(tensor):
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0.0, mode="fan_in", nonlinearity="leaky_relu",
                    generator=None) -> Tensor:
    """He normal: N(0, std**2) with ``std = gain / sqrt(fan)``."""
    _check(tensor, "kaiming_normal_")
    if _empty(tensor):
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    return normal_(tensor, 0.0, std, generator)


def orthogonal_(tensor, gain=1.0, generator=None) -> Tensor:
    """Fill with a (semi-)orthogonal matrix (trailing dims flattened): the Q of a QR of a
    Gaussian matrix, sign-corrected so the distribution is uniform (Haar), times ``gain``."""
    _check(tensor, "orthogonal_")
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flat = randn(rows, cols, generator=generator, dtype=tensor.dtype, device=tensor.device)
    data = flat._data.T if rows < cols else flat._data
    xp = backend.array_module(data)
    q, r = xp.linalg.qr(data)
    q = q * xp.sign(xp.diagonal(r))
    if rows < cols:
        q = q.T
    with no_grad():
        return tensor.copy_(_make(xp.ascontiguousarray(q * gain).reshape(tuple(tensor.shape))
                                  .astype(tensor.dtype.np)))


def sparse_(tensor, sparsity, std=0.01, generator=None) -> Tensor:
    """A 2-d tensor with N(0, std**2) entries and a fraction ``sparsity`` of each column
    zeroed."""
    _check(tensor, "sparse_")
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    zeros = int(math.ceil(sparsity * rows))
    with no_grad():
        tensor.normal_(0, std, generator=generator)
        for c in range(cols):
            idx = randperm(rows, generator=generator)[:zeros]
            tensor[idx, c] = 0.0
    return tensor
