"""The methods' one door to the core quantizer (:mod:`tensorix.quant.quantizer`): the methods
work on backend arrays in float64, the quantizer on Tensors; these adapters convert, and turn
a weight scheme into the per-row scheme that GPTQ's column-by-column updates need."""

from __future__ import annotations

import dataclasses

from ...tensor import _make
from ..quantizer import QScheme, compute_qparams, dequantize, fake_quantize, quantize

__all__ = ["row_scheme", "block_qparams", "fake_quant_with", "fake_quant_array",
           "weight_scheme"]


def weight_scheme(bits: int = 4, group_size: int | None = 128, symmetric: bool = False):
    """The weight-only scheme of the papers: affine int ``bits``, groups of ``group_size``
    along the input dimension (None: one scale per output channel)."""
    if group_size is None:
        return QScheme(bits, symmetric, "per_channel", axis=0)
    return QScheme(bits, symmetric, "per_group", group_size=group_size)


def row_scheme(scheme: QScheme) -> QScheme:
    """``scheme`` with one scale per row (output channel) of whatever slice it is given:
    how a weight group's parameters apply to each of its columns."""
    if scheme.granularity == "per_tensor":
        return scheme
    return dataclasses.replace(scheme, granularity="per_channel", axis=0, group_size=None)


def block_qparams(block, scheme: QScheme):
    """(scale, zero_point) arrays of a (rows, cols) weight slice under ``row_scheme``."""
    scale, zp = compute_qparams(block, row_scheme(scheme))
    return scale._data, zp._data


def fake_quant_with(w, scale, zero_point, scheme: QScheme):
    """Quantize-dequantize the (rows, k) array ``w`` with given per-row (or per-tensor)
    parameters, in ``w``'s dtype."""
    rs = row_scheme(scheme)
    q = quantize(w, scale, zero_point, rs)
    return dequantize(q, scale, zero_point, rs, dtype=w.dtype)._data


def fake_quant_array(w, scheme: QScheme):
    """Quantize-dequantize the array ``w`` with its own (dynamic) parameters."""
    return fake_quantize(_make(w), scheme)._data
