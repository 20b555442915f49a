"""A block-floating-point key/value cache for autoregressive attention.

During generation the cache of past keys and values grows with the context and dominates
memory. Block floating point stores each run of ``block`` values along the head dimension as
small mantissas sharing one power-of-two exponent: MXINT8 (OCP MX, 8-bit two's-complement
mantissas with an E8M0 shared scale, 8.25 bits a value) is exactly that, and the MX float
element formats (fp8, fp6, fp4) give the same layout with smaller elements. The encoding is
tensorix.numerics' MX codec; this module only keeps the blocks and hands back float views.

:class:`IntKVCache` is the integer store of COMET's W4A4KV4: b-bit asymmetric codes per token
and head (two per byte at b <= 4), with one float32 scale and an int8 zero point per group;
its decode is exactly ``fake_quantize``'s value (same codes, same float32 formula), so a
model evaluated through the store has the fake-quant model's output to the bit.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ...ops.shape import cat
from ...tensor import Tensor, _make
from ..kernels import pack_int4_raw, unpack_int4_raw
from ..quantizer import QScheme, compute_qparams, dequantize, quantize

__all__ = ["BFPKVCache", "IntKVCache", "IntKVBlock", "int_kv_encode"]


@dataclasses.dataclass
class IntKVBlock:
    """Keys or values of shape ``shape`` as ``scheme.bits``-bit affine codes per group of
    ``scheme.group_size`` values along the last dim: ``codes`` uint8 two per byte (bits <= 4
    and an even last dim) or int8, ``scale`` float32 and ``zero_point`` int8 of shape
    ``(..., groups, 1)``. Example: ``int_kv_encode(k, 4, 64).dequantize()``."""

    codes: object
    scale: object
    zero_point: object
    shape: tuple
    scheme: QScheme

    @property
    def packed(self) -> bool:
        return self.codes.dtype == np.uint8

    @property
    def nbytes(self) -> int:
        """Bytes stored: codes, scales and zero points."""
        return self.codes.nbytes + self.scale.nbytes + self.zero_point.nbytes

    def dequantize(self) -> Tensor:
        """The float32 values, ``(q - zero_point) * scale`` (``fake_quantize``'s bits)."""
        q = unpack_int4_raw(self.codes, self.shape[-1]) if self.packed else self.codes
        return dequantize(_make(q), _make(self.scale), _make(self.zero_point.astype(np.int32)),
                          self.scheme)


def int_kv_encode(x: Tensor, bits: int = 4, group: int = 64) -> IntKVBlock:
    """``x`` (..., D) as an :class:`IntKVBlock`: ``bits``-bit asymmetric codes (2-8 bits),
    one scale and zero point per ``group`` values along D (a head's keys or values at one
    token when ``group`` is the head dim). Example: ``int_kv_encode(tensorix.randn(2, 4, 8,
    64), 4, 64).nbytes`` is 2 * 4 * 8 * (32 + 5)."""
    if not isinstance(x, Tensor) or not x.dtype.is_floating_point or x.ndim == 0:
        raise TypeError("int_kv_encode(): argument 'x' must be a float Tensor of keys or "
                        "values (..., D)")
    if not 2 <= bits <= 8:
        raise ValueError(f"int_kv_encode(): argument 'bits' must be in [2, 8], got {bits}")
    if x.shape[-1] % group:
        raise ValueError(f"int_kv_encode(): the last dimension {x.shape[-1]} must be a multiple "
                         f"of group {group}")
    scheme = QScheme(bits, False, "per_group", group_size=group)
    scale, zp = compute_qparams(x.detach(), scheme)
    q = quantize(x.detach(), scale, zp, scheme)._data
    codes = pack_int4_raw(q) if bits <= 4 and x.shape[-1] % 2 == 0 else q
    return IntKVBlock(codes, scale._data.astype(np.float32, copy=False),
                      zp._data.astype(np.int8), tuple(x.shape), scheme)


class _KVCache:
    """The list keeping of a KV cache: one encoded block per :meth:`append`, decoded on read.
    Subclasses give ``_encode(x)`` (a block with ``shape``, ``dequantize()``) and
    ``_nbytes(block)``."""

    def __init__(self):
        self._k, self._v = [], []  # encoded blocks, one per append; nothing is kept in float

    def _check(self, x, name):
        kind = type(self).__name__
        if not isinstance(x, Tensor) or x.ndim != 4:
            raise ValueError(f"{kind}.append(): argument '{name}' must be a (B, H, T, D) "
                             f"Tensor, got {getattr(x, 'shape', type(x).__name__)}")
        if x.shape[-1] % self.block:
            raise ValueError(f"{kind}.append(): the head dimension {x.shape[-1]} of "
                             f"'{name}' must be a multiple of block {self.block}")

    def append(self, k: Tensor, v: Tensor) -> None:
        """Add ``k``, ``v`` (B, H, T_new, D) at the end of the time axis."""
        if self._k and tuple(k.shape[:2]) + (k.shape[3],) != \
                tuple(self._k[0].shape[:2]) + (self._k[0].shape[3],):
            raise ValueError(f"{type(self).__name__}.append(): 'k' of shape {tuple(k.shape)} "
                             f"does not continue the cache of shape {tuple(self._k[0].shape)}")
        for x, name in ((k, "k"), (v, "v")):
            self._check(x, name)
        self._k.append(self._encode(k.detach()))
        self._v.append(self._encode(v.detach()))

    def _decode(self, chunks):
        if not chunks:
            raise ValueError(f"{type(self).__name__}: the cache is empty; append() first")
        parts = [a.dequantize() for a in chunks]
        return parts[0] if len(parts) == 1 else cat(parts, 2)

    def keys(self) -> Tensor:
        """All cached keys (B, H, T, D), decoded to float32 on each call."""
        return self._decode(self._k)

    def values(self) -> Tensor:
        """All cached values (B, H, T, D), decoded to float32 on each call."""
        return self._decode(self._v)

    def __len__(self) -> int:
        return sum(a.shape[2] for a in self._k)

    @property
    def nbytes(self) -> int:
        """Bytes of everything stored (keys and values)."""
        return sum(self._nbytes(a) for a in self._k + self._v)


class IntKVCache(_KVCache):
    """Keys and values of shape (B, H, T, D) stored as ``bits``-bit affine integer codes with
    a scale and zero point per token and head (per ``block`` values; default the head dim):
    COMET's 4-bit KV cache, two codes per byte, 0.5 + 5 / D bytes a value (6.9x smaller than
    float32 at D = 64). Same methods as :class:`BFPKVCache`.

    Example::

        cache = IntKVCache(4)
        cache.append(k, v)                              # each (B, H, T, D)
        out = F.scaled_dot_product_attention(q, cache.keys(), cache.values())
    """

    def __init__(self, bits: int = 4, block: int | None = None):
        super().__init__()
        if not isinstance(bits, int) or not 2 <= bits <= 8:
            raise ValueError(f"IntKVCache(): argument 'bits' must be an int in [2, 8], got "
                             f"{bits!r}")
        self.bits, self._block = bits, block

    @property
    def block(self) -> int:
        if self._block is None:  # the head dim, fixed by the first append
            return self._k[0].shape[-1] if self._k else 1
        return self._block

    def _encode(self, x):
        return int_kv_encode(x, self.bits, self._block or x.shape[-1])

    @staticmethod
    def _nbytes(block):
        return block.nbytes

    def __repr__(self):
        return f"IntKVCache(bits={self.bits}, block={self.block}, length={len(self)})"


class BFPKVCache(_KVCache):
    """Keys and values of shape (B, H, T, D) stored in block floating point along D.

    ``elem``: ``"int8"`` (MXINT8, the default), or an MX float element (``"fp8_e4m3"``,
    ``"fp6_e3m2"``, ``"fp4_e2m1"``, ...); ``block``: values sharing an exponent (D must be a
    multiple). :meth:`append` adds new time steps; :meth:`keys`/:meth:`values` return the float
    (B, H, T, D) tensors for attention; :attr:`nbytes` is what the cache stores.

    Example::

        cache = BFPKVCache()
        for t in range(steps):
            cache.append(k_t, v_t)                      # each (B, H, 1, D)
            out = F.scaled_dot_product_attention(q_t, cache.keys(), cache.values())
    """

    def __init__(self, elem: str = "int8", block: int = 32):
        from ...numerics.mx import MX_ELEMENTS

        if elem not in MX_ELEMENTS:
            raise ValueError(f"BFPKVCache(): argument 'elem' must be one of "
                             f"{sorted(MX_ELEMENTS)}, got {elem!r}")
        super().__init__()
        self.elem, self.block = elem, block

    def _encode(self, x):
        from ...numerics.mx import mx_quantize

        return mx_quantize(x, self.elem, block=self.block, axis=-1)

    @staticmethod
    def _nbytes(a):
        return a.codes._data.nbytes + a.scale_codes._data.nbytes

    def __repr__(self):
        return f"BFPKVCache(elem={self.elem}, block={self.block}, length={len(self)})"
