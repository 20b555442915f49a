"""Uniform quantizers (spec numerics.md section 7.1): schemes, qparams, quantize / dequantize
and fake quantization with a straight-through gradient.

A :class:`QScheme` says how a tensor is quantized: the bit width, symmetric or affine, the
granularity (one scale per tensor, per channel along ``axis``, or per group of ``group_size``
consecutive elements along the last, input dimension) and the element type: ``"int"`` or a
float format of :mod:`tensorix.numerics` (``"fp8_e4m3"``, ``"fp6_e3m2"``, ``"fp4_e2m1"``, ...)
or an OCP MX block format (``"mxfp8"``, ``"mxfp6"``, ``"mxfp4"``; per-32 power-of-two scales),
or ``"nvfp4"`` (fake quantization only: its scale has two levels).

Integer codes are signed and stored as int8 whatever the width: an affine scheme uses
``[-2^(b-1), 2^(b-1) - 1]`` with an integer zero point in that range (the unsigned grid of the
spec shifted by ``2^(b-1)``: the same values, torch's ``qint8`` convention); a symmetric one uses
the restricted range ``[-(2^(b-1) - 1), 2^(b-1) - 1]`` (``full_range=True``: from ``-2^(b-1)``,
with ``scale = amax / 2^(b-1)``) and zero point 0.

Rounding is round-half-to-even, on ``x * (1 / scale)`` as torch computes it, so that values
match ``torch.fake_quantize_per_tensor_affine`` / ``_per_channel_affine`` bit for bit. The
gradient of fake quantization is the clipped straight-through estimator: 1 where the rounded
code lies in ``[qmin, qmax]``, 0 outside.

Example::

    >>> s = QScheme(bits=8, symmetric=False)
    >>> x = tensorix.tensor([-1., 0., 0.5, 2., 3.], dtype=tensorix.float64)
    >>> scale, zp = compute_qparams(x, s)          # scale 4/255, zero point -64
    >>> quantize(x, scale, zp, s).tolist()
    [-128, -64, -32, 64, 127]
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..autograd.function import Function
from ..backend import array_module
from ..tensor import Tensor, _make

__all__ = ["QScheme", "INT_DTYPES", "BLOCK_FORMATS", "compute_qparams", "qparams_from_range",
           "quantize", "dequantize", "fake_quantize", "grouped", "ungrouped", "reduce_dims"]

GRANULARITIES = ("per_tensor", "per_channel", "per_group")
INT_DTYPES = ("int",)
# block format name -> (element format, block size) for the OCP MX formats
BLOCK_FORMATS = {"mxfp8": ("fp8_e4m3", 32), "mxfp8_e5m2": ("fp8_e5m2", 32),
                 "mxfp6": ("fp6_e3m2", 32), "mxfp6_e2m3": ("fp6_e2m3", 32),
                 "mxfp4": ("fp4_e2m1", 32), "nvfp4": ("fp4_e2m1", 16)}
_EPS = float(np.finfo(np.float32).eps)  # torch's observers floor the scale at float32 eps


@dataclasses.dataclass(frozen=True)
class QScheme:
    """How a tensor is quantized (one config object for every quantizer and flow).

    ``bits``: 2..8 for ``dtype="int"`` (a float format fixes its own width).
    ``symmetric``: zero point 0 and ``scale = amax / qmax``; else affine (min/max range).
    ``granularity``: ``"per_tensor"``, ``"per_channel"`` (one scale per index of ``axis``) or
    ``"per_group"`` (``group_size`` consecutive elements of the last dimension share a scale).
    ``dtype``: ``"int"``, a float element format name, or a block format (``BLOCK_FORMATS``).
    ``full_range``: a symmetric int scheme uses ``-2^(b-1)`` too (torch's qint8 range).

    Example: ``QScheme(bits=4, granularity="per_group", group_size=128)`` is torchao's int4
    weight-only scheme (affine, groups of 128 along the input dimension).
    """

    bits: int = 8
    symmetric: bool = True
    granularity: str = "per_tensor"
    axis: int = 0
    group_size: int | None = None
    dtype: str = "int"
    full_range: bool = False

    def __post_init__(self):
        if self.dtype in BLOCK_FORMATS:
            elem, block = BLOCK_FORMATS[self.dtype]
            if self.granularity != "per_group" or self.group_size not in (None, block):
                object.__setattr__(self, "granularity", "per_group")
                if self.group_size not in (None, block):
                    raise ValueError(f"QScheme(): {self.dtype} has blocks of {block}, got "
                                     f"group_size={self.group_size}")
            object.__setattr__(self, "group_size", block)
            object.__setattr__(self, "symmetric", True)
        elif self.dtype != "int":
            from ..formats import get_format

            try:
                get_format(self.dtype)
            except ValueError:
                raise ValueError(f"QScheme(): argument 'dtype' must be 'int', a float format "
                                 f"name or one of {sorted(BLOCK_FORMATS)}, got "
                                 f"{self.dtype!r}") from None
            object.__setattr__(self, "symmetric", True)
        elif not (isinstance(self.bits, int) and 2 <= self.bits <= 8):
            raise ValueError(f"QScheme(): argument 'bits' must be an int in [2, 8], got "
                             f"{self.bits!r}")
        if self.granularity not in GRANULARITIES:
            raise ValueError(f"QScheme(): argument 'granularity' must be one of "
                             f"{GRANULARITIES}, got {self.granularity!r}")
        if self.granularity == "per_group" and not (
                isinstance(self.group_size, int) and self.group_size > 0):
            raise ValueError(f"QScheme(): per_group needs a positive int 'group_size', got "
                             f"{self.group_size!r}")

    @property
    def is_int(self) -> bool:
        return self.dtype == "int"

    @property
    def qmin(self) -> int:
        """Smallest integer code (int schemes)."""
        if self.symmetric and not self.full_range:
            return -(2 ** (self.bits - 1) - 1)
        return -(2 ** (self.bits - 1))

    @property
    def qmax(self) -> int:
        """Largest integer code (int schemes)."""
        return 2 ** (self.bits - 1) - 1

    @property
    def element_format(self):
        """The float element format (None for int schemes)."""
        if self.is_int:
            return None
        from ..formats import get_format

        return get_format(BLOCK_FORMATS.get(self.dtype, (self.dtype,))[0])

    @property
    def bits_per_value(self) -> int:
        return self.bits if self.is_int else self.element_format.bits


# -- layout: the grouped view every scale broadcasts against ---------------------------------
def _check_layout(a, scheme, op):
    if scheme.granularity == "per_channel":
        if a.ndim == 0 or not -a.ndim <= scheme.axis < a.ndim:
            raise ValueError(f"{op}(): per_channel axis {scheme.axis} is out of range for an "
                             f"input of shape {tuple(a.shape)}")
    elif scheme.granularity == "per_group" and (a.ndim == 0 or a.shape[-1] % scheme.group_size):
        last = a.shape[-1] if a.ndim else None
        raise ValueError(f"{op}(): group_size {scheme.group_size} does not divide the last "
                         f"dimension {last} of the input (shape {tuple(a.shape)})")


def grouped(a, scheme):
    """``a`` (an array) in the view its scales broadcast against: ``(..., K // g, g)`` for
    per_group, ``a`` itself otherwise."""
    if scheme.granularity != "per_group":
        return a
    return a.reshape(a.shape[:-1] + (a.shape[-1] // scheme.group_size, scheme.group_size))


def ungrouped(a, shape):
    return a.reshape(shape)


def reduce_dims(ndim, scheme):
    """The axes of the grouped view that one scale covers."""
    if scheme.granularity == "per_tensor":
        return tuple(range(ndim))
    if scheme.granularity == "per_group":
        return (ndim - 1,)
    axis = scheme.axis % ndim
    return tuple(d for d in range(ndim) if d != axis)


def _raw(x, op, name="x"):
    if isinstance(x, Tensor):
        return x._data
    if isinstance(x, np.ndarray) or hasattr(x, "__cuda_array_interface__"):
        return x
    if isinstance(x, (int, float, np.number)) and name != "x":
        return np.asarray(x)
    raise TypeError(f"{op}(): argument '{name}' must be a Tensor, not {type(x).__name__}")


def _float_dtype(a):
    return np.float64 if a.dtype == np.float64 else np.float32


# -- qparams --------------------------------------------------------------------------------
def qparams_from_range(xmin, xmax, scheme):
    """``(scale, zero_point)`` arrays from range arrays ``xmin``/``xmax`` (any broadcastable
    shape; observers keep them). Int affine: the range is widened to contain 0, ``scale =
    (xmax - xmin) / (qmax - qmin)``, ``zero_point = qmin - round(xmin / scale)`` clamped; int
    symmetric: ``scale = max|x| / qmax`` (``/ 2^(b-1)`` in full range); float formats: ``scale
    = amax / max_normal`` (MX: the E8M0 power of two of the rceil rule). Scales are floored at
    float32 eps, so an all-zero range is well defined. Zero points are int32.

    Example: ``qparams_from_range(np.float64(-1), np.float64(3), QScheme(symmetric=False))``
    is ``(4/255, -64)``.
    """
    xmin, xmax = _raw(xmin, "qparams_from_range", "xmin"), _raw(xmax, "qparams_from_range",
                                                                   "xmax")
    xp = array_module(xmin)
    dt = _float_dtype(xmin)
    xmin = xp.minimum(xmin.astype(dt), 0)
    xmax = xp.maximum(xmax.astype(dt), 0)
    amax = xp.maximum(-xmin, xmax)
    if scheme.dtype in BLOCK_FORMATS:
        if scheme.dtype == "nvfp4":
            raise ValueError("qparams_from_range(): nvfp4 has a two-level scale; use "
                             "fake_quantize or tensorix.numerics.nvfp4_quantize")
        from ..numerics.mx import e8m0_scale_exponents

        k = e8m0_scale_exponents(amax.astype(np.float32), scheme.element_format.name)
        scale = xp.ldexp(xp.ones(k.shape, dtype=dt), k.astype(np.int32))
        return scale, xp.zeros(scale.shape, dtype=np.int32)
    if not scheme.is_int:
        scale = xp.maximum(amax / dt(scheme.element_format.max), dt(_EPS))
        return scale.astype(dt), xp.zeros(scale.shape, dtype=np.int32)
    if scheme.symmetric:
        denom = 2 ** (scheme.bits - 1) if scheme.full_range else scheme.qmax
        scale = xp.maximum(amax / dt(denom), dt(_EPS)).astype(dt)
        return scale, xp.zeros(scale.shape, dtype=np.int32)
    scale = xp.maximum((xmax - xmin) / dt(scheme.qmax - scheme.qmin), dt(_EPS)).astype(dt)
    zp = xp.clip(scheme.qmin - xp.rint(xmin / scale), scheme.qmin, scheme.qmax)
    return scale, zp.astype(np.int32)


def compute_qparams(x, scheme):
    """``(scale, zero_point)`` Tensors for ``x`` under ``scheme``, from its min and max.

    Shapes broadcast to the grouped view of ``x``: ``()`` per tensor; ``x``'s shape with every
    dim but ``axis`` set to 1 per channel; ``(..., K // g, 1)`` per group for ``x`` of shape
    ``(..., K)``. ``scale`` is float32 (float64 for float64 ``x``); ``zero_point`` int32.

    Example: ``compute_qparams(tensorix.ones(4, 256), QScheme(4, False, "per_group",
    group_size=128))`` gives scales of shape ``(4, 2, 1)``.
    """
    a = _raw(x, "compute_qparams")
    _check_layout(a, scheme, "compute_qparams")
    if a.size == 0:
        raise ValueError("compute_qparams(): the input is empty; there is no range to "
                         "quantize")
    g = grouped(a, scheme)
    dims = reduce_dims(g.ndim, scheme)
    if scheme.granularity == "per_tensor":
        lo, hi = g.min(), g.max()
    else:
        lo, hi = g.min(axis=dims, keepdims=True), g.max(axis=dims, keepdims=True)
    xp = array_module(a)
    scale, zp = qparams_from_range(xp.asarray(lo), xp.asarray(hi), scheme)
    return _make(scale), _make(zp)


# -- quantize / dequantize ------------------------------------------------------------------
def _params(scale, zero_point, a, op, scheme):
    """Scale and zero point as arrays broadcasting to the grouped view (torch's 1-d
    per-channel vectors are laid along ``axis``)."""
    xp = array_module(a)
    s = xp.asarray(_raw(scale, op, "scale")).astype(_float_dtype(a))
    if zero_point is None:
        z = xp.zeros((), dtype=np.int32)
    else:
        z = xp.asarray(_raw(zero_point, op, "zero_point"))
    if scheme.granularity == "per_channel" and a.ndim > 1:
        shape = [1] * a.ndim
        shape[scheme.axis % a.ndim] = -1
        s = s.reshape(shape) if s.ndim == 1 else s
        z = z.reshape(shape) if z.ndim == 1 else z
    return s, z


def _codes_float(g, s, z, scheme):
    """(rounded codes before clamping as float, clamped codes) in the grouped view."""
    xp = array_module(g)
    inv = (1.0 / s).astype(s.dtype)  # torch multiplies by the float32 reciprocal
    r = xp.rint(g * inv) + z.astype(s.dtype)
    return r, xp.clip(r, scheme.qmin, scheme.qmax)


def _float_codes(g, s, scheme):
    from ..numerics.casting import encode

    return encode((g / s).astype(s.dtype), scheme.element_format.name, saturate=True,
                  nan_policy="zero")


def quantize(x, scale, zero_point, scheme):
    """Integer codes of ``x``: ``clamp(round(x / scale) + zero_point, qmin, qmax)`` as an
    int8 Tensor of ``x``'s shape (float formats: the format's uint8 codes of ``x / scale``).
    ``scale``/``zero_point`` as :func:`compute_qparams` returns them.

    Example: ``quantize(tensorix.tensor([0.3, -1.]), 0.1, 0, QScheme())`` is ``[3, -10]``.
    """
    a = _raw(x, "quantize")
    _check_layout(a, scheme, "quantize")
    if scheme.dtype == "nvfp4":
        raise ValueError("quantize(): nvfp4 has a two-level scale; use "
                         "tensorix.numerics.nvfp4_quantize")
    s, z = _params(scale, zero_point, a, "quantize", scheme)
    g = grouped(a, scheme)
    if not scheme.is_int:
        return _make(ungrouped(_float_codes(g, s, scheme), a.shape))
    _, q = _codes_float(g, s, z, scheme)
    return _make(ungrouped(q, a.shape).astype(np.int8))


def dequantize(q, scale, zero_point, scheme, dtype=np.float32):
    """Float values of codes ``q``: ``(q - zero_point) * scale`` (float formats: the code's
    value times ``scale``), as ``dtype`` (float32 default).

    Example: ``dequantize(tensorix.tensor([3, -10], dtype=tensorix.int8), 0.1, 0, QScheme())``
    is ``[0.3, -1.0]``.
    """
    c = _raw(q, "dequantize", "q")
    _check_layout(c, scheme, "dequantize")
    if scheme.dtype == "nvfp4":
        raise ValueError("dequantize(): nvfp4 has a two-level scale; use "
                         "tensorix.numerics.nvfp4_dequantize")
    dt = np.dtype(dtype)
    s, z = _params(scale, zero_point, c.astype(dt), "dequantize", scheme)
    g = grouped(c, scheme)
    if scheme.is_int:
        v = (g.astype(dt) - z.astype(dt)) * s
    else:
        from ..numerics.casting import decode

        v = decode(g, scheme.element_format.name, dt, check=False) * s
    return _make(ungrouped(v.astype(dt), c.shape))


class FakeQuantize(Function):
    """x -> dequantize(quantize(x)); gradient 1 where the code was not clamped (clipped STE)."""

    @staticmethod
    def forward(ctx, x, scale, zero_point, scheme):
        a = x._data
        xp = array_module(a)
        g = grouped(a, scheme)
        if scheme.is_int:
            r, q = _codes_float(g, scale, zero_point, scheme)
            out = (q - zero_point.astype(scale.dtype)) * scale
            keep = (r >= scheme.qmin) & (r <= scheme.qmax)
        else:
            from ..numerics.casting import decode

            codes = _float_codes(g, scale, scheme)
            out = decode(codes, scheme.element_format.name, scale.dtype, check=False) * scale
            keep = xp.abs(g) <= scheme.element_format.max * scale
        ctx.keep = _make(ungrouped(keep, a.shape))
        return ungrouped(out.astype(a.dtype), a.shape)

    @staticmethod
    def backward(ctx, g):
        return g * ctx.keep, None, None, None


class _NVFP4Fake(Function):
    @staticmethod
    def forward(ctx, x):
        from ..numerics.nvfp4 import nvfp4_dequantize, nvfp4_quantize

        return nvfp4_dequantize(nvfp4_quantize(x._data, axis=-1))._data.astype(x._data.dtype)

    @staticmethod
    def backward(ctx, g):
        return g  # straight-through (every element is within the scaled range)


def fake_quantize(x, scheme, scale=None, zero_point=None):
    """Quantize-dequantize ``x`` (a float Tensor) under ``scheme``, differentiable with the
    clipped straight-through gradient. ``scale``/``zero_point`` default to
    :func:`compute_qparams` of ``x`` (dynamic); pass them for static ranges. Same values and
    gradients as ``torch.fake_quantize_per_tensor_affine`` / ``_per_channel_affine`` with
    ``quant_min, quant_max = scheme.qmin, scheme.qmax``.

    Example::

        >>> x = tensorix.tensor([-2., -1., 0.3, 3., 5.], requires_grad=True)
        >>> y = fake_quantize(x, QScheme(symmetric=False), 4 / 255, -64)
        >>> y.sum().backward(); x.grad.tolist()
        [0.0, 1.0, 1.0, 1.0, 0.0]
    """
    if not isinstance(x, Tensor):
        raise TypeError(f"fake_quantize(): argument 'x' must be a Tensor, not "
                        f"{type(x).__name__}")
    if not x.dtype.is_floating_point:
        raise TypeError(f"fake_quantize(): argument 'x' must be a floating-point Tensor, got "
                        f"{x.dtype}")
    _check_layout(x._data, scheme, "fake_quantize")
    if scheme.dtype == "nvfp4":
        return _NVFP4Fake.apply(x)
    if scale is None:
        scale, zero_point = compute_qparams(x.detach(), scheme)
    s, z = _params(scale, zero_point, x._data, "fake_quantize", scheme)
    return FakeQuantize.apply(x, s, z, scheme)
