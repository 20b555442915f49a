"""Quantized GEMMs as the dispatcher's GEMM hook: the integer product of the weight-and-
activation layers, and :func:`int_gemm` for any model.

A GEMM primitive declares a ``_gemm`` rule (``autograd/dispatch.py``): under a hook it is
written with the hook's ``matmul(a, b, bias)``. :class:`IntGemm` is such a hook. Its ``matmul``
quantizes ``a`` (M, K) with the activation scheme (per tensor, per token or per group along
K; symmetric int), takes ``b``'s codes (a layer's stored int weight, or ``b`` quantized per
output column on the fly), and computes

    ``y[m, n] = sum_c s_a[m, c] s_b[n, c] (A_q[:, c] @ B_q[c, :])``

over the K-chunks ``c`` the groups define (one chunk without groups), each product exact in
int32 (:func:`~tensorix.quant.int_mm`), then rescaled in float32 - the integer kernel of an
int8 tensor core, where fake quantization multiplies rounded floats.

Compared with fake quantization (``fake_quantize(a) @ fake_quantize(b)`` in float32) the
result differs only by float32 rounding: the integer path has the exact integer sums, rounded
once per chunk, the float path rounds every product and partial sum. With ``S = sum_c |A_q
B_q|_c s_a s_b`` (the sum of magnitudes), ``|y_int - y_exact| <= (C + 2) 2^-24 S`` for C
chunks and ``|y_fake - y_exact| <= (K + 2) 2^-24 S`` (tested, ``tests/quant/test_gemm.py``).

The hook is for inference: it refuses inputs that need gradients (use fake quantization or
QAT for training).

Example::

    >>> with int_gemm():                          # every GEMM of the block: W8A8 dynamic
    ...     y = model(x)                          # per-token int8 x per-channel int8
"""

from __future__ import annotations

import contextlib
import dataclasses

import numpy as np

from ..autograd.dispatch import gemm_hook
from ..autograd.grad_mode import is_grad_enabled
from ..backend import array_module
from ..tensor import Tensor, _make
from ._fused import int_linear_fused
from .kernels import _int_mm_groups, _int_mm_raw, _int_mm_scaled, _rescale, _vnni_whole, pack_weight
from .quantizer import QScheme, compute_qparams, quantize

__all__ = ["IntGemm", "IntWeight", "int_gemm", "int_linear", "int_path_supported"]

_TOKEN8 = QScheme(8, True, "per_channel", axis=0)  # per token: rows of the (M, K) input
_CHANNEL8 = QScheme(8, True, "per_channel", axis=0)  # per output channel: rows of (N, K)


def int_path_supported(scheme: QScheme | None) -> bool:
    """Whether the integer kernel takes ``scheme``: a symmetric int scheme of at most 8 bits,
    per tensor, per group, or per token / per output channel (``per_channel`` on axis 0).
    Example: ``int_path_supported(QScheme(4, True, "per_group", group_size=128))`` is True."""
    return scheme is not None and scheme.is_int and scheme.symmetric and scheme.bits <= 8 and (
        scheme.granularity in ("per_tensor", "per_group") or
        (scheme.granularity == "per_channel" and scheme.axis in (0, -2)))


def _scales_2d(scale, rows, groups):
    """A scale array from compute_qparams (per tensor (), per row (R, 1), per group (R, G, 1))
    as (R or 1, G or 1) columns per K-chunk."""
    s = scale.reshape(-1) if scale.ndim else scale.reshape(1)
    if s.size == 1:
        return s.reshape(1, 1)
    return s.reshape(rows, groups if s.size == rows * groups else 1)


@dataclasses.dataclass
class IntWeight:
    """A weight (N, K) as integer codes: ``codes`` int8 (N, K), ``scale`` its per-tensor,
    per-channel or per-group scales (compute_qparams shapes), ``scheme``; ``packed`` the
    CPU micro-kernel's :class:`~tensorix.quant.kernels.PackedWeight` of the codes (or None);
    ``row_sums`` the int32 sums of the codes' rows (what an affine input's zero point
    multiplies), made on first use; ``unpack``: where ``codes`` is None, a function that
    makes them (a packed int4 layer's, on the VNNI kernel: its panels are all a call reads,
    so no int8 copy is held; a route that needs the codes makes them once, :meth:`int8`).
    Example: ``IntWeight.from_float(w, QScheme(8, True, "per_channel", axis=0))``."""

    codes: object
    scale: object
    scheme: QScheme
    packed: object = None
    row_sums: object = None
    unpack: object = None

    @classmethod
    def from_codes(cls, codes, scale, scheme: QScheme, row_sums=None,
                   keep_codes: bool = True) -> IntWeight:
        """A layer's stored codes (N, K) int8 and scales, packed for the kernel. With
        ``keep_codes=False`` and ``codes`` a function making them, the codes are made to pack
        and then let go where the VNNI kernel takes the whole product from its panels
        (:meth:`int8` makes them again for another route), and int4 codes (a scheme of at
        most 4 bits) are packed two a byte; else kept."""
        make = codes if callable(codes) else None
        codes = make() if make is not None else codes
        packed = pack_weight(codes, int4=not keep_codes and scheme.is_int and scheme.bits <= 4)
        if not keep_codes and make is not None and _vnni_whole(packed):
            codes = None
        return cls(codes, scale.astype(np.float32, copy=False), scheme, packed, row_sums, make)

    @property
    def shape(self):
        """(N, K)."""
        return tuple(self.codes.shape) if self.codes is not None else \
            (self.packed.n, self.packed.k)

    def int8(self):
        """The int8 codes (N, K), made once from ``unpack`` where they were let go."""
        if self.codes is None:
            self.codes = self.unpack()
        return self.codes

    @classmethod
    def from_float(cls, w, scheme: QScheme = _CHANNEL8) -> IntWeight:
        """Quantize the float weight ``w`` (N, K) (Tensor or array) with ``scheme``."""
        t = w if isinstance(w, Tensor) else _make(w)
        scale, zp = compute_qparams(t, scheme)
        return cls.from_codes(quantize(t, scale, zp, scheme)._data, scale._data, scheme)


def _chunks(k, act: QScheme, ws: QScheme):
    """The K-chunk length both operands' scales are constant on (K without groups)."""
    g = {s.group_size for s in (act, ws) if s.granularity == "per_group"}
    if len(g) > 1:
        raise ValueError(f"int_gemm(): activation and weight groups differ ({sorted(g)}); the "
                         "integer kernel needs one group size")
    return g.pop() if g else k


def int_linear(a, weight: IntWeight, act: QScheme, act_qparams=None, bias=None):
    """``a @ W^T (+ bias)`` through the integer kernel: ``a`` (M, K) float array, ``weight``
    an :class:`IntWeight` (N, K), ``act`` the activation scheme; ``act_qparams``: static
    ``(scale, zero_point)`` arrays of the input (None: from ``a``, dynamic). An affine ``act``
    subtracts ``z_a`` times each weight row's sum from the int32 sums. Returns the float32
    (M, N) array.
    Example: ``int_linear(x, IntWeight.from_float(w), QScheme(8, True, "per_channel",
    axis=0))`` is close to ``x @ w.T``."""
    xp = array_module(a)
    m, k = a.shape
    chunk = _chunks(k, act, weight.scheme)
    # the VNNI route: the input quantized in one compiled pass, no NumPy pass in between (the
    # same bits as the passes below)
    out = int_linear_fused(a, weight, act, act_qparams, chunk, bias)
    if out is not None:
        return out
    if act_qparams is None:
        sa, za = compute_qparams(_make(a), act)
    else:
        sa, za = (_make(xp.asarray(v)) for v in act_qparams)
    aq = quantize(_make(a), sa, za, act)._data
    groups = k // chunk
    s_a = _scales_2d(xp.asarray(sa._data, dtype=np.float32), m, groups)
    z_a = None if act.symmetric else _scales_2d(xp.asarray(za._data), m, groups)
    s_b = _scales_2d(xp.asarray(weight.scale), weight.shape[0], groups).T  # (G, N)
    # on VNNI (symmetric activations, or one zero point): the integer product and the rescale
    # in one pass of the kernel over the weight packed once
    out = _int_mm_scaled(aq, weight.packed, chunk, s_a, s_b, z_a)
    if out is not None:
        if bias is not None:
            out += bias
        return out
    whole = groups == 1
    # every group's int32 sums in one pass of the kernel over the weight packed once (VNNI),
    # else group by group
    planes = _int_mm_groups(aq, weight.packed, chunk)
    if planes is None:
        codes = weight.int8()
        planes = [_int_mm_raw(aq if whole else
                              xp.ascontiguousarray(aq[:, c * chunk:(c + 1) * chunk]),
                              (codes if whole else codes[:, c * chunk:(c + 1) * chunk]).T,
                              weight.packed if whole else None) for c in range(groups)]
    sums = None
    if z_a is not None:  # the zero point's share: z_a times each weight row's sum
        if whole and weight.row_sums is None:
            weight.row_sums = weight.int8().sum(1, dtype=np.int32)
        sums = weight.row_sums[None] if whole else \
            weight.int8().reshape(weight.shape[0], groups, chunk).sum(2, dtype=np.int32).T
    # grouped: one compiled pass over all planes (no numba, or CuPy: the NumPy passes below)
    out = None if whole else _rescale(planes if not isinstance(planes, list) else
                                      xp.stack(planes), s_a, s_b, z_a, sums)
    for c in range(0 if out is not None else groups):
        acc = planes[c]
        if z_a is not None:
            xp.subtract(acc, z_a[:, c % z_a.shape[1], None] * sums[c][None, :], out=acc,
                        casting="unsafe")  # int32 sums stay int32 (static zero points: int64)
        # the rescale in place on one float32 array (the same operations in the same order as
        # out-of-place ones: the same bits, without four (M, N) temporaries)
        part = acc.astype(np.float32)
        part *= s_a[:, c % s_a.shape[1], None]
        part *= s_b[c % s_b.shape[0]][None, :]
        if out is None:
            out = part
        else:
            out += part
    if bias is not None:
        out += bias  # computed in bias's dtype, rounded once to float32, as out + bias was
    return out


class IntGemm:
    """The dispatcher GEMM hook of integer kernels: float GEMM primitives (matmul, linear,
    einsum's contractions, ...) run as :func:`int_linear` products, ``a`` quantized with
    ``act_scheme`` and ``b`` per output column with ``weight_scheme`` (or ``weight``'s codes
    when ``b`` is that weight, transposed: a layer's own product). Products of batched
    operands (attention's) stay in float. Install it with :func:`int_gemm` or
    ``autograd.dispatch.gemm_hook``.
    Example: ``with gemm_hook(IntGemm()): y = x @ w``."""

    __slots__ = ("act_scheme", "weight_scheme", "weight", "act_qparams")

    def __init__(self, act_scheme: QScheme = _TOKEN8, weight_scheme: QScheme = _CHANNEL8,
                 weight: IntWeight | None = None, act_qparams=None):
        for s, what in ((act_scheme, "act_scheme"), (weight_scheme, "weight_scheme")):
            if not int_path_supported(s):
                raise ValueError(f"int_gemm(): argument '{what}' must be a symmetric int "
                                 f"scheme of <= 8 bits per tensor, per group or per channel "
                                 f"(axis 0), got {s}")
        self.act_scheme, self.weight_scheme = act_scheme, weight_scheme
        self.weight, self.act_qparams = weight, act_qparams

    def __call__(self, cls, args):
        ts = [a for a in args if isinstance(a, Tensor)]
        if not ts or any(not t.dtype.is_floating_point for t in ts):
            return None  # integer and complex products run as usual
        if is_grad_enabled() and any(t.requires_grad for t in ts):
            raise RuntimeError(f"int_gemm(): {cls.__name__} has inputs that require grad; the "
                               "integer kernels are for inference (use tensorix.no_grad(), "
                               "or fake quantization / QAT for training)")
        return cls._gemm(self.matmul, *args)

    def matmul(self, a, b, bias=None):
        """``a @ b (+ bias)`` as an integer GEMM (2-d ``b``; batched ``b`` in float)."""
        if b.ndim != 2 or a.ndim < 1:
            out = a @ b
            return out if bias is None else out + bias
        a2 = a._data.reshape(-1, a.shape[-1])
        w = self.weight
        if w is None or w.shape != (b.shape[1], b.shape[0]):
            w = IntWeight.from_float(b._data.T, self.weight_scheme)
        y = int_linear(a2, w, self.act_scheme, self.act_qparams,
                       None if bias is None else bias._data)
        return _make(y.reshape(tuple(a.shape[:-1]) + (b.shape[1],)))


@contextlib.contextmanager
def int_gemm(act_scheme: QScheme = _TOKEN8, weight_scheme: QScheme = _CHANNEL8):
    """Every float GEMM of the block (this thread) as an integer GEMM: activations quantized
    with ``act_scheme`` (default int8 per token), weights with ``weight_scheme`` (default int8
    per output channel), both on the fly - torchao's int8 dynamic quantization for any model,
    with no layer swapped. Inference only (see :class:`IntGemm`).

    Example::

        with tensorix.no_grad(), int_gemm():
            logits = model(tokens)        # (B, T) -> (B, T, vocab), W8A8 integer GEMMs
    """
    with gemm_hook(IntGemm(act_scheme, weight_scheme)) as hook:
        yield hook
