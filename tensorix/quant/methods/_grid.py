"""The methods' one door to the quantizer (tensorix.quant.quantizer): a weight's group
parameters, fake quantization with given parameters, and whole-tensor fake quantization.
TEMPORARY local formulas (spec 7.2) until the core quantizer lands; then these call it."""

from __future__ import annotations

from ...backend import array_module

__all__ = ["row_qparams", "fake_quant_with", "fake_quant_groups"]


def row_qparams(w, bits: int, symmetric: bool):
    """Per-row (scale, zero) of a (rows, g) block, shaped (rows, 1)."""
    xp = array_module(w)
    if symmetric:
        qmax = 2 ** (bits - 1) - 1
        scale = xp.maximum(xp.abs(w).max(1, keepdims=True), 1e-8) / qmax
        return scale, xp.zeros_like(scale)
    q = 2 ** bits - 1
    lo = xp.minimum(w.min(1, keepdims=True), 0)
    hi = xp.maximum(w.max(1, keepdims=True), 0)
    scale = xp.maximum(hi - lo, 1e-5) / q
    zero = xp.clip(-xp.round(lo / scale), 0, q)
    return scale, zero


def fake_quant_with(w, scale, zero, bits: int, symmetric: bool):
    xp = array_module(w)
    if symmetric:
        qmax = 2 ** (bits - 1) - 1
        return xp.clip(xp.round(w / scale), -qmax, qmax) * scale
    q = 2 ** bits - 1
    return (xp.clip(xp.round(w / scale) + zero, 0, q) - zero) * scale


def fake_quant_groups(w, bits: int, group_size: int | None, symmetric: bool):
    """Fake-quantize (rows, cols) per row in groups of ``group_size`` columns (None: whole
    rows, i.e. per channel)."""
    rows, cols = w.shape
    g = cols if group_size is None else group_size
    blocks = w.reshape(rows * (cols // g), g)
    scale, zero = row_qparams(blocks, bits, symmetric)
    return fake_quant_with(blocks, scale, zero, bits, symmetric).reshape(rows, cols)
