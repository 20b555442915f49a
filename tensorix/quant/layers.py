"""Quantized layers that keep the nn Module API: ``QuantizedLinear``, ``QuantizedConv2d`` and
``QuantizedEmbedding``. Weights are buffers (saved in ``state_dict``): ``weight_codes`` (int8,
or uint8 two int4 codes per byte for schemes of at most 4 bits), ``weight_scale`` and
``weight_zero_point`` (:func:`~tensorix.quant.compute_qparams` shapes), and ``bias``.

Activations (``act_scheme``) are quantized per call from their own range (dynamic; the default
of ``quantize_dynamic`` and torchao's int8 dynamic config) or with calibrated
``act_scale``/``act_zero_point`` buffers (static, after ``prepare``/``convert``).

``QuantizedLinear`` with int8 activations runs the integer product of
:func:`~tensorix.quant.gemm.int_linear` (the exact int32 GEMM of
:func:`~tensorix.quant.int_mm`, then the rescale): ``y = s_x s_w (X_q W_q^T - z_x
rowsum(W_q)) + b`` (the weight is symmetric). Weight-only layers, ``QuantizedConv2d`` and
``QuantizedEmbedding`` dequantize the weight (the rows looked up, for an embedding) and compute
in float. Like torch.ao's quantized modules they are for inference: no gradients flow.

Example::

    >>> lin = QuantizedLinear.from_float(tensorix.nn.Linear(64, 32),
    ...                                  QScheme(8, granularity="per_channel"))
    >>> lin(tensorix.randn(4, 64)).shape
    tensorix.Size([4, 32])
"""

from __future__ import annotations

import numpy as np

from .. import nn
from ..nn import functional as F
from ..nn.module import Module
from ..tensor import Tensor, _make
from .gemm import IntWeight, int_linear
from .kernels import pack_int4_raw, unpack_int4_raw
from .quantizer import QScheme, compute_qparams, dequantize, quantize

__all__ = ["QuantizedLinear", "QuantizedConv2d", "QuantizedEmbedding", "QUANTIZED_FORMS"]


class _QuantizedWeight(Module):
    """Holds one quantized weight as buffers; subclasses add the layer."""

    weight_scheme: QScheme

    def _set_weight(self, w: Tensor, scheme: QScheme, qparams=None):
        # qparams: learned ones (QAT/LSQ) instead of the weight's own min/max
        w = w.detach()
        self.weight_scheme = scheme
        self.weight_shape = tuple(w.shape)
        scale, zp = compute_qparams(w, scheme) if qparams is None else \
            (qparams[0].detach(), qparams[1].detach())
        codes = quantize(w, scale, zp, scheme)
        if self._packed:
            codes = _make(pack_int4_raw(codes._data))
        self.register_buffer("weight_codes", codes)
        self.register_buffer("weight_scale", scale)
        self.register_buffer("weight_zero_point", zp)

    @property
    def _packed(self) -> bool:
        s = self.weight_scheme
        return s.is_int and s.bits <= 4 and self.weight_shape[-1] % 2 == 0

    def _codes(self):
        c = self.weight_codes._data
        return unpack_int4_raw(c) if self._packed else c

    def dequantized_weight(self, dtype=np.float32) -> Tensor:
        """The weight as float values, ``dequantize(codes, scale, zero_point)``."""
        return dequantize(_make(self._codes()), self.weight_scale, self.weight_zero_point,
                          self.weight_scheme, dtype)

    def weight_nbytes(self, with_qparams=True) -> int:
        """Bytes the stored weight takes (codes, and with ``with_qparams`` scales and zero
        points)."""
        n = self.weight_codes._data.nbytes
        if with_qparams:
            n += self.weight_scale._data.nbytes + self.weight_zero_point._data.nbytes
        return n

    def _scheme_repr(self):
        s = self.weight_scheme
        kind = f"int{s.bits}" if s.is_int else s.dtype
        g = s.granularity + (f"({s.group_size})" if s.granularity == "per_group" else "")
        return f"weight={kind} {'symmetric' if s.symmetric else 'affine'} {g}"


def _act_repr(act, static):
    if act is None:
        return ""
    return f", act=int{act.bits} {act.granularity} {'static' if static else 'dynamic'}"


class QuantizedLinear(_QuantizedWeight):
    """``y = x W^T + b`` with a quantized ``W``: ``(*, in_features) -> (*, out_features)``.

    ``weight_scheme``: any :class:`QScheme`. ``act_scheme``: None (weight-only) or an int8
    scheme, per tensor or per token (``per_channel`` along axis 0 of the flattened input), with
    a symmetric per-tensor or per-channel int weight of at most 8 bits.
    Build it with :meth:`from_float`.
    """

    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.act_scheme = None
        self.register_buffer("bias", None)

    @classmethod
    def from_float(cls, mod, weight_scheme, act_scheme=None, act_qparams=None,
                   weight_qparams=None):
        """A QuantizedLinear from a float ``nn.Linear`` (``act_qparams``: static ``(scale,
        zero_point)`` of the input)."""
        q = cls(mod.in_features, mod.out_features, mod.bias is not None)
        q._set_weight(mod.weight, weight_scheme, weight_qparams)
        if mod.bias is not None:
            q.bias = mod.bias.detach().clone()
        if act_scheme is not None:
            _check_int_path(weight_scheme, act_scheme)
            q.act_scheme = act_scheme
            w = q._codes()
            q.register_buffer("weight_row_sums", _make(w.astype(np.int32).sum(axis=1)))
            if act_qparams is not None:
                q.register_buffer("act_scale", act_qparams[0].detach())
                q.register_buffer("act_zero_point", act_qparams[1].detach())
        return q

    def forward(self, input):
        if self.act_scheme is None:
            return F.linear(input, self.dequantized_weight(), self.bias)
        return self._int8_forward(input)

    def _int8_forward(self, input):
        # the raw array, reshaped by NumPy: no autograd op (nothing flows back through here)
        x = input._data.reshape(-1, self.in_features)
        static = (self.act_scale._data, self.act_zero_point._data) \
            if "act_scale" in self._buffers else None
        out = int_linear(x, self._int_weight(), self.act_scheme, static,
                         None if self.bias is None else self.bias._data)
        return _make(out.reshape(tuple(input.shape[:-1]) + (self.out_features,)))

    def _int_weight(self) -> IntWeight:
        # the codes as the integer kernel takes them (packed: as many bytes again), made on
        # first use and again whenever weight_codes is replaced or written in place
        # (load_state_dict, .to)
        t = self.weight_codes
        key = (t._data, t._version[0])
        cached = self.__dict__.get("_int_cache")
        if cached is None or cached[0] is not key[0] or cached[1] != key[1]:
            # packed int4 codes: unpacked to pack the kernel's panels, then let go where
            # the kernel reads only those (8x fewer code bytes held than float32, not 2.7x)
            codes = (lambda c=t._data: unpack_int4_raw(c)) if self._packed else t._data
            w = IntWeight.from_codes(codes, self.weight_scale._data, self.weight_scheme,
                                     self.weight_row_sums._data, keep_codes=not self._packed)
            cached = self.__dict__["_int_cache"] = (*key, w)
        return cached[2]

    def runtime_nbytes(self) -> int:
        """Bytes this layer holds for its weight once it has run: the buffers (codes, scales,
        zero points, row sums; not the bias) plus the integer kernel's own copies, made on the
        first call of an int8-activation layer: the micro-kernel's packed panels of the codes
        (as many bytes as int8 codes, padded to its tile; a zero point's row sums, 4
        bytes a column) and, for packed int4 codes on a CPU without the VNNI kernel, their
        int8 unpacking (the VNNI kernel reads only its panels: the unpacking is let go).
        Example: after ``lin(x)``, an int8 dynamic 4096 x 4096 layer holds about 2 x 16 MiB."""
        bufs = [b._data for k, b in self._buffers.items() if b is not None and k != "bias"]
        n = sum(a.nbytes for a in bufs)
        cached = self.__dict__.get("_int_cache")
        if cached is not None:
            w = cached[2]
            n += sum(a.nbytes for a in (w.codes, w.packed)
                     if a is not None and not any(a is b for b in bufs))
        return n

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}, {self._scheme_repr()}"
                f"{_act_repr(self.act_scheme, 'act_scale' in self._buffers)}")


def _check_int_path(ws, act):
    if not (act.is_int and act.bits <= 8 and act.granularity in ("per_tensor", "per_channel")
            and act.axis == 0):
        raise ValueError("QuantizedLinear: activations must be an int scheme per tensor or per "
                         f"token (per_channel, axis 0), got {act}")
    if not (ws.is_int and ws.symmetric and ws.granularity in ("per_tensor", "per_channel")
            and ws.axis == 0):
        raise ValueError("QuantizedLinear: int8 activations need a symmetric int weight per "
                         f"tensor or per output channel (axis 0), got {ws}")


class QuantizedConv2d(_QuantizedWeight):
    """2-d convolution with a quantized weight: (N, C_in, H, W) -> (N, C_out, H_out, W_out).
    The input is fake-quantized with ``act_scheme`` (static qparams when given), the weight
    dequantized, and the convolution runs in float."""

    def __init__(self, conv):
        super().__init__()
        if conv.padding_mode != "zeros":
            raise ValueError(f"QuantizedConv2d: padding_mode {conv.padding_mode!r} has no "
                             "quantized form (only 'zeros')")
        for k in ("in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation",
                  "groups"):
            setattr(self, k, getattr(conv, k))
        self.act_scheme = None
        self.register_buffer("bias", None)

    @classmethod
    def from_float(cls, mod, weight_scheme, act_scheme=None, act_qparams=None,
                   weight_qparams=None):
        """A QuantizedConv2d from a float ``nn.Conv2d``."""
        q = cls(mod)
        q._set_weight(mod.weight, weight_scheme, weight_qparams)
        if mod.bias is not None:
            q.bias = mod.bias.detach().clone()
        q.act_scheme = act_scheme
        if act_qparams is not None:
            q.register_buffer("act_scale", act_qparams[0].detach())
            q.register_buffer("act_zero_point", act_qparams[1].detach())
        return q

    def forward(self, input):
        from .quantizer import fake_quantize

        x = input.detach()
        if self.act_scheme is not None:
            if "act_scale" in self._buffers:
                x = fake_quantize(x, self.act_scheme, self.act_scale, self.act_zero_point)
            else:
                x = fake_quantize(x, self.act_scheme)
        return F.conv2d(x, self.dequantized_weight(), self.bias, self.stride, self.padding,
                        self.dilation, self.groups)

    def extra_repr(self):
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, {self._scheme_repr()}"
                f"{_act_repr(self.act_scheme, 'act_scale' in self._buffers)}")


class QuantizedEmbedding(_QuantizedWeight):
    """An embedding table with quantized rows: (*) int indices -> (*, embedding_dim). Only the
    rows looked up are dequantized. Use a per-row (``per_channel``, axis 0) or per-group
    scheme."""

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None):
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.padding_idx = padding_idx

    @classmethod
    def from_float(cls, mod, weight_scheme, act_scheme=None, act_qparams=None,
                   weight_qparams=None):
        """A QuantizedEmbedding from a float ``nn.Embedding`` (weight-only)."""
        if weight_scheme.granularity == "per_channel" and weight_scheme.axis not in (0, -2):
            raise ValueError("QuantizedEmbedding: per_channel weights must be per row (axis "
                             f"0), got axis {weight_scheme.axis}")
        if act_scheme is not None:
            raise ValueError("QuantizedEmbedding: embeddings have no activation quantization "
                             "(its input is indices)")
        q = cls(mod.num_embeddings, mod.embedding_dim, mod.padding_idx)
        q._set_weight(mod.weight, weight_scheme, weight_qparams)
        return q

    def forward(self, input):
        if not isinstance(input, Tensor) or input.dtype.is_floating_point:
            raise TypeError("QuantizedEmbedding: expected an integer index Tensor")
        idx = input._data.reshape(-1)
        rows = self.weight_codes._data[idx]
        codes = unpack_int4_raw(rows) if self._packed else rows
        s, z = self.weight_scale._data, self.weight_zero_point._data
        if self.weight_scheme.granularity != "per_tensor":
            s, z = s[idx], z[idx]
        v = dequantize(_make(codes), _make(s), _make(z), self.weight_scheme)
        return v.reshape(tuple(input.shape) + (self.embedding_dim,))

    def extra_repr(self):
        return f"{self.num_embeddings}, {self.embedding_dim}, {self._scheme_repr()}"


# float layer type -> its quantized form (the flows look layers up here)
QUANTIZED_FORMS = {nn.Linear: QuantizedLinear, nn.Conv2d: QuantizedConv2d,
                   nn.Embedding: QuantizedEmbedding}
