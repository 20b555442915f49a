"""Quantization-aware training: fake-quantize modules (observer ranges, or LSQ learnable
scales) and the QAT layers ``prepare_qat`` swaps in.

* :class:`FakeQuantize`: an observer (moving-average min/max by default) sets the qparams and
  :func:`~tensorix.quant.fake_quantize` rounds with the clipped straight-through gradient.
* :func:`lsq_fake_quantize` / :class:`LearnableFakeQuantize`: LSQ (Esser et al. 2020,
  arXiv 1902.08153) with LSQ+'s learnable zero point (Bhalgat et al. 2020). Forward as
  ``torch._fake_quantize_learnable_per_tensor_affine``: ``x_hat = (clamp(round(x / s) + z,
  qmin, qmax) - z) s`` with ``z = clamp(round(z_param), qmin, qmax)``. Gradients (paper eq. 3,
  scaled by ``grad_factor``, by default ``1 / sqrt(numel * qmax)``):
  ``d x_hat / d s = round(x/s) - x/s`` inside the range, ``qmin - z`` below, ``qmax - z``
  above; ``d x_hat / d z = 0`` inside, ``-s`` outside; ``d x_hat / d x`` the clipped STE.
* :class:`QATLinear`, :class:`QATConv2d`: float layers whose weight (per-channel symmetric by
  default) and input pass a fake-quantize module on each call.

Example::

    >>> fq = LearnableFakeQuantize(QScheme(4, symmetric=True))
    >>> y = fq(tensorix.randn(16, 8))           # scale initialised as 2 mean|x| / sqrt(qmax)
    >>> y.sum().backward(); fq.scale.grad is not None
    True
"""

from __future__ import annotations

import math

import numpy as np

from ..autograd.function import Function
from ..backend import array_module
from ..nn.module import Module
from ..nn.parameter import Parameter
from ..tensor import Tensor, _make
from .observers import MovingAverageMinMaxObserver
from .quantizer import QScheme, fake_quantize, reduce_dims

__all__ = ["FakeQuantize", "WeightFakeQuantize", "LearnableFakeQuantize", "lsq_fake_quantize",
           "QATLinear", "QATConv2d"]


class FakeQuantize(Module):
    """Observe, then fake-quantize: ``forward(x)`` updates the observer (in training mode,
    when ``observer_enabled``; eval leaves the ranges alone, as BatchNorm its statistics) and
    returns ``fake_quantize(x, scheme, *observer qparams)``."""

    def __init__(self, scheme: QScheme | None = None, observer=MovingAverageMinMaxObserver,
                 **observer_kwargs):
        super().__init__()
        self.scheme = scheme if scheme is not None else QScheme(8, symmetric=False)
        self.activation_post_process = observer(self.scheme, **observer_kwargs)
        self.observer_enabled = True
        self.fake_quant_enabled = True

    def forward(self, x):
        if self.observer_enabled and (self.training or
                                      self.activation_post_process.min_val is None):
            self.activation_post_process(x.detach())
        if not self.fake_quant_enabled:
            return x
        scale, zp = self.activation_post_process.calculate_qparams()
        return fake_quantize(x, self.scheme, scale, zp)

    def calculate_qparams(self):
        return self.activation_post_process.calculate_qparams()


class _LSQ(Function):
    @staticmethod
    def forward(ctx, x, scale, zero_point, qmin, qmax, grad_factor):
        a, s = x._data, scale._data.astype(x._data.dtype)
        xp = array_module(a)
        z = xp.clip(xp.rint(zero_point._data), qmin, qmax).astype(a.dtype)
        code = xp.rint(a * (1 / s).astype(a.dtype)) + z
        below, above = code < qmin, code > qmax
        q = xp.clip(code, qmin, qmax)
        out = (q - z) * s
        inside = ~(below | above)
        # d out / d s per element (LSQ eq. 3 with a zero point), constants for backward
        ds = xp.where(inside, (out - a) / s, xp.where(below, qmin - z, qmax - z))
        ctx.inside = _make(inside.astype(a.dtype))
        ctx.ds = _make((ds * grad_factor).astype(a.dtype))
        ctx.dz = _make((xp.where(inside, 0, -s) * grad_factor * xp.ones_like(a)).astype(a.dtype))
        return out.astype(a.dtype)

    @staticmethod
    def backward(ctx, g):
        # the engine sums each gradient down to the shape of scale / zero_point
        return g * ctx.inside, g * ctx.ds, g * ctx.dz, None, None, None


def lsq_fake_quantize(x, scale, zero_point, qmin, qmax, grad_factor=1.0):
    """LSQ fake quantization with gradients for ``x``, ``scale`` and ``zero_point`` (Tensors
    broadcasting to ``x``: one per tensor, or shaped for per-channel). Matches
    ``torch._fake_quantize_learnable_per_tensor_affine`` / ``_per_channel_affine``.
    Example: ``lsq_fake_quantize(x, s, z, -8, 7, 1 / math.sqrt(x.numel() * 7))``."""
    for name, t in (("x", x), ("scale", scale), ("zero_point", zero_point)):
        if not isinstance(t, Tensor) or not t.dtype.is_floating_point:
            raise TypeError(f"lsq_fake_quantize(): argument '{name}' must be a floating-point "
                            "Tensor")
    if not qmin < qmax:
        raise ValueError(f"lsq_fake_quantize(): need qmin < qmax, got {qmin}, {qmax}")
    return _LSQ.apply(x, scale, zero_point, int(qmin), int(qmax), float(grad_factor))


class LearnableFakeQuantize(Module):
    """LSQ / LSQ+ fake quantization with ``scale`` (and, for affine schemes, ``zero_point``)
    as Parameters, initialised from the first batch: ``s = 2 mean|x| / sqrt(qmax)`` (the
    paper's rule; per channel along ``scheme.axis``)."""

    def __init__(self, scheme: QScheme | None = None):
        super().__init__()
        self.scheme = scheme if scheme is not None else QScheme(8, symmetric=False)
        if not self.scheme.is_int or self.scheme.granularity == "per_group":
            raise ValueError("LearnableFakeQuantize(): needs an int scheme per tensor or per "
                             f"channel, got {self.scheme}")
        self.scale = None
        self.zero_point = None

    def _init(self, a):
        s = self.scheme
        g = np.abs(a.get() if hasattr(a, "get") else a).astype(np.float64)
        dims = reduce_dims(g.ndim, s)
        m = g.mean(axis=dims, keepdims=s.granularity != "per_tensor")
        scale = np.maximum(2 * m / math.sqrt(s.qmax), 1e-8).astype(a.dtype)
        xp = array_module(a)
        self.scale = Parameter(_make(xp.asarray(scale)))
        self.zero_point = Parameter(_make(xp.zeros(scale.shape, dtype=a.dtype)),
                                    requires_grad=not s.symmetric)

    def forward(self, x):
        if self.scale is None:
            self._init(x.detach()._data)
        gf = 1.0 / math.sqrt(x.numel() / max(1, self.scale.numel()) * self.scheme.qmax)
        return lsq_fake_quantize(x, self.scale, self.zero_point, self.scheme.qmin,
                                 self.scheme.qmax, gf)

    def calculate_qparams(self):
        if self.scale is None:
            raise ValueError("LearnableFakeQuantize.calculate_qparams(): no data was observed")
        xp = self.zero_point.xp
        z = xp.clip(xp.rint(self.zero_point._data), self.scheme.qmin, self.scheme.qmax)
        return self.scale.detach().abs(), _make(z.astype(np.int32))


class WeightFakeQuantize(Module):
    """Fake quantization of a weight with the qparams of its current value (so that
    ``convert`` quantizes the trained weight exactly as the last forward did)."""

    def __init__(self, scheme: QScheme):
        super().__init__()
        self.scheme = scheme

    def forward(self, w):
        return fake_quantize(w, self.scheme)


def _weight_fq(scheme, learnable):
    return LearnableFakeQuantize(scheme) if learnable else WeightFakeQuantize(scheme)


class _QATMixin:
    def _setup(self, weight_scheme, act_scheme, learnable):
        self.weight_fake_quant = _weight_fq(weight_scheme, learnable)
        self.activation_post_process = (
            None if act_scheme is None else
            LearnableFakeQuantize(act_scheme) if learnable else FakeQuantize(act_scheme))


class QATLinear(_QATMixin, Module):
    """``nn.Linear`` for QAT: ``F.linear(fq_act(x), fq_weight(W), b)``. Keeps the float
    ``weight``/``bias`` Parameters that the optimizer trains."""

    def __init__(self, mod, weight_scheme, act_scheme=None, learnable=False):
        super().__init__()
        self.in_features, self.out_features = mod.in_features, mod.out_features
        self.weight, self.bias = mod.weight, mod.bias
        self._setup(weight_scheme, act_scheme, learnable)

    def forward(self, input):
        from ..nn import functional as F

        x = input if self.activation_post_process is None else \
            self.activation_post_process(input)
        return F.linear(x, self.weight_fake_quant(self.weight), self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}"


class QATConv2d(_QATMixin, Module):
    """``nn.Conv2d`` for QAT: the convolution of ``fq_act(x)`` with ``fq_weight(W)``."""

    def __init__(self, mod, weight_scheme, act_scheme=None, learnable=False):
        super().__init__()
        for k in ("in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation",
                  "groups", "padding_mode"):
            setattr(self, k, getattr(mod, k))
        self._float = mod  # keeps weight and bias as its Parameters (one copy)
        self._setup(weight_scheme, act_scheme, learnable)

    @property
    def weight(self):
        return self._float.weight

    @property
    def bias(self):
        return self._float.bias

    def forward(self, input):
        x = input if self.activation_post_process is None else \
            self.activation_post_process(input)
        return self._float._conv_forward(x, self.weight_fake_quant(self.weight), self.bias)

    def extra_repr(self):
        return f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}"
