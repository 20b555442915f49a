"""Integer-only nonlinearities for integer-only inference (MobileQuant, Tan et al. 2024, on
I-BERT's kernels, Kim et al. 2021, arXiv 2101.01321): softmax, GELU and LayerNorm computed on
integer codes with integer arithmetic only (add, multiply, shift, integer division), so that a
whole transformer layer runs on an integer unit (a mobile NPU, a DSP) between its int8 GEMMs.

A value is a pair (``q``, ``S``): integer codes and a float scale, ``x = S q``. The scale is
bookkeeping known when the model is built (it folds into constants); every function here
computes the output codes with integer ops on ``q`` and integer constants derived from ``S``.

* ``int_poly``: ``a (x + b)^2 + c`` as ``(q + floor(b/S))^2 + floor(c / (a S^2))`` at scale
  ``a S^2``.
* ``int_exp`` (x <= 0): ``x = -z ln2 + p`` with ``p`` in (-ln2, 0], ``exp(p) ~ 0.3585 (p +
  1.353)^2 + 0.344``, then a right shift by ``z``.
* ``int_softmax``: ``int_exp`` of ``q - max(q)``, then ``floor(2^m e / sum e)``: codes at scale
  ``2^-m``.
* ``int_gelu``: ``x/2 (1 + erf(x/sqrt 2))`` with ``erf(x) ~ sign(x) [-0.2888 (min(|x|, 1.769)
  - 1.769)^2 + 1]``.
* ``int_sqrt``: ``floor(sqrt(n))`` by Newton's iteration on integers (exact).
* ``int_layer_norm``: integer mean and variance along the last axis, ``int_sqrt`` of the
  variance, and ``floor(2^m (q - mean) / std)``: the normalized codes at scale ``2^-m`` (the
  affine weight and bias fold into the next integer GEMM's rescale).

Errors against float (measured, and tested in ``tests/quant/test_intops.py``) for inputs at
an int32 accumulator's scale ``S <= 0.01`` (as I-BERT feeds them; a coarser S rounds ln 2 to
``floor(ln2 / S) S`` and the error grows with it): exp within 0.004 absolute, softmax within
``2^-m + 0.01 p + 0.0005`` of each probability p, GELU within 0.019 absolute (I-BERT's
erf polynomial is off by up to 0.018), LayerNorm of int8 codes within ``2^-m + 0.001`` of
the float normalized values.

Example::

    >>> q = tensorix.tensor([-2000, 0, 300], dtype=tensorix.int32)
    >>> codes, scale = int_softmax(q, 0.001)       # softmax(0.001 q) ~ codes * scale
"""

from __future__ import annotations

import math

import numpy as np

from ..backend import array_module
from ..tensor import Tensor, _make

__all__ = ["int_poly", "int_exp", "int_softmax", "int_gelu", "int_sqrt", "int_layer_norm"]

_EXP = (0.3585, 1.353, 0.344)  # I-BERT's fit of exp(p) on (-ln2, 0]
_ERF = (-0.2888, -1.769, 1.0)


def _codes(q, op):
    """The int64 array of an integer Tensor (or array), with a clear error otherwise."""
    a = q._data if isinstance(q, Tensor) else q
    if not hasattr(a, "dtype") or a.dtype.kind not in "iu":
        kind = q.dtype if isinstance(q, Tensor) else type(q).__name__
        raise TypeError(f"{op}(): argument 'q' must be an integer Tensor of codes, got {kind}")
    return a.astype(np.int64)


def _scale(s, op):
    s = float(s)
    if not (s > 0 and math.isfinite(s)):
        raise ValueError(f"{op}(): argument 'scale' must be a positive finite float, got {s}")
    return s


def _poly(q, s, a, b, c):
    # a (x + b)^2 + c on codes: integer constants floor(b/S) and floor(c/(a S^2))
    qb, qc = math.floor(b / s), math.floor(c / (a * s * s))
    return (q + qb) ** 2 + qc, a * s * s


def int_poly(q, scale, a: float, b: float, c: float):
    """``a (x + b)^2 + c`` of ``x = scale q`` on integers: returns (codes, scale_out).
    Example: ``int_poly(q, 0.01, 1.0, 0.5, 0.0)`` is ``(x + 0.5)^2`` to rounding."""
    q, s = _codes(q, "int_poly"), _scale(scale, "int_poly")
    out, so = _poly(q, s, a, b, c)
    return _make(out), so


def _exp(q, s):
    # q <= 0: z = floor(-x / ln2), p = x + z ln2 in (-ln2, 0]; exp(x) = exp(p) >> z
    xp = array_module(q)
    q_ln2 = max(1, math.floor(math.log(2) / s))
    z = (-q) // q_ln2
    out, so = _poly(q + z * q_ln2, s, *_EXP)
    return out >> xp.minimum(z, 62), so


def int_exp(q, scale):
    """``exp(x)`` of non-positive ``x = scale q`` on integers: (codes, scale_out).
    Example: ``codes, s = int_exp(tensorix.tensor([-100, 0]), 0.01)``; ``codes * s`` is about
    ``[0.368, 1]``."""
    q, s = _codes(q, "int_exp"), _scale(scale, "int_exp")
    if q.size and bool((q > 0).any()):
        raise ValueError("int_exp(): expects non-positive inputs (subtract the maximum first)")
    out, so = _exp(q, s)
    return _make(out), so


def int_softmax(q, scale, dim: int = -1, out_bits: int = 8):
    """``softmax(scale q)`` along ``dim`` on integers: codes in ``[0, 2^out_bits]`` at scale
    ``2^-out_bits``. Shapes: any, same out.
    Example: ``codes, s = int_softmax(q, 0.05)``; ``(codes * s).sum(-1)`` is about 1."""
    q, s = _codes(q, "int_softmax"), _scale(scale, "int_softmax")
    e, _ = _exp(q - q.max(axis=dim, keepdims=True), s)
    total = e.sum(axis=dim, keepdims=True)
    return _make((e << out_bits) // total), 2.0 ** -out_bits


def int_gelu(q, scale):
    """``GELU(x)`` of ``x = scale q`` on integers (I-BERT's erf polynomial): (codes,
    scale_out). Example: ``codes, s = int_gelu(q, 0.02)``; ``codes * s`` is about
    ``F.gelu(0.02 q)``."""
    q, s = _codes(q, "int_gelu"), _scale(scale, "int_gelu")
    xp = array_module(q)
    se = s / math.sqrt(2.0)  # erf's argument x / sqrt 2 keeps the codes, scales the scale
    a, b, c = _ERF
    clipped = xp.minimum(xp.abs(q), math.floor(-b / se))
    erf, s_erf = _poly(clipped, se, a, b, c)  # a < 0: a negative scale, negated below
    out = q * (xp.sign(q) * erf + math.floor(1.0 / s_erf))
    return _make(-out), -s * s_erf / 2.0


def _isqrt(n):
    xp = array_module(n)
    n = n.astype(np.int64)
    # start above the root (2^ceil(bits/2)) and step Newton down until it stops falling
    bits = xp.ceil(xp.log2(xp.maximum(n, 1).astype(np.float64) + 1.0)).astype(np.int64)
    x = xp.left_shift(xp.ones_like(n), (bits + 1) // 2)
    while True:
        y = (x + n // xp.maximum(x, 1)) // 2
        done = y >= x
        if bool(done.all()):
            return xp.where(n == 0, 0, x)
        x = xp.where(done, x, y)


def int_sqrt(n):
    """``floor(sqrt(n))`` of non-negative integers, exactly (Newton's iteration on
    integers). Example: ``int_sqrt(tensorix.tensor([15, 16]))`` is ``[3, 4]``."""
    a = _codes(n, "int_sqrt")
    if a.size and bool((a < 0).any()):
        raise ValueError("int_sqrt(): expects non-negative integers")
    return _make(_isqrt(a))


def int_layer_norm(q, out_bits: int = 8):
    """LayerNorm's normalization ``(x - mean) / std`` along the last axis on integers
    (the input scale cancels): codes at scale ``2^-out_bits``. Shapes: (*, D) -> (*, D).
    Codes of up to 16 bits keep every intermediate within int64 for D <= 2^16.
    Example: ``codes, s = int_layer_norm(q)``; ``codes * s`` has mean about 0 and std 1 per
    row."""
    q = _codes(q, "int_layer_norm")
    xp = array_module(q)
    d = q.shape[-1]
    # the mean as a fraction: y = d q - sum q keeps everything integral (scale d S)
    y = d * q - q.sum(axis=-1, keepdims=True)
    var = (y * y).sum(axis=-1, keepdims=True) // d  # (d S)^2 var(x) / S^2
    std = xp.maximum(_isqrt(var), 1)
    return _make((y << out_bits) // std), 2.0 ** -out_bits
