"""A block-floating-point key/value cache for autoregressive attention.

During generation the cache of past keys and values grows with the context and dominates
memory. Block floating point stores each run of ``block`` values along the head dimension as
small mantissas sharing one power-of-two exponent: MXINT8 (OCP MX, 8-bit two's-complement
mantissas with an E8M0 shared scale, 8.25 bits a value) is exactly that, and the MX float
element formats (fp8, fp6, fp4) give the same layout with smaller elements. The encoding is
tensorix.numerics' MX codec; this module only keeps the blocks and hands back float views.
"""

from __future__ import annotations

from ...ops.shape import cat
from ...tensor import Tensor

__all__ = ["BFPKVCache"]


class BFPKVCache:
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
        self.elem, self.block = elem, block
        self._k, self._v = [], []  # MXArrays, one per append; nothing is kept in float

    def _encode(self, x, name):
        from ...numerics.mx import mx_quantize

        if not isinstance(x, Tensor) or x.ndim != 4:
            raise ValueError(f"BFPKVCache.append(): argument '{name}' must be a (B, H, T, D) "
                             f"Tensor, got {getattr(x, 'shape', type(x).__name__)}")
        if x.shape[-1] % self.block:
            raise ValueError(f"BFPKVCache.append(): the head dimension {x.shape[-1]} of "
                             f"'{name}' must be a multiple of block {self.block}")
        return mx_quantize(x.detach(), self.elem, block=self.block, axis=-1)

    def append(self, k: Tensor, v: Tensor) -> None:
        """Add ``k``, ``v`` (B, H, T_new, D) at the end of the time axis."""
        if self._k and tuple(k.shape[:2]) + (k.shape[3],) != \
                tuple(self._k[0].shape[:2]) + (self._k[0].shape[3],):
            raise ValueError(f"BFPKVCache.append(): 'k' of shape {tuple(k.shape)} does not "
                             f"continue the cache of shape {tuple(self._k[0].shape)}")
        self._k.append(self._encode(k, "k"))
        self._v.append(self._encode(v, "v"))

    @staticmethod
    def _decode(chunks):
        if not chunks:
            raise ValueError("BFPKVCache: the cache is empty; append() first")
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
        """Bytes of the stored codes and shared exponents (keys and values)."""
        return sum(a.codes._data.nbytes + a.scale_codes._data.nbytes
                   for a in self._k + self._v)

    def __repr__(self):
        return f"BFPKVCache(elem={self.elem}, block={self.block}, length={len(self)})"
