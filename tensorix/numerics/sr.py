"""Stochastic rounding with explicit random bits (R5), and the counter-based generator for them.

Random bits never come from a backend's default RNG: :func:`random_bits` draws them from
Philox4x32-10 (Salmon et al., SC'11, the generator of cuRAND and JAX) keyed by ``seed`` at
stream position ``offset``. It is written once with ``xp`` integer ops, so the CPU and the GPU
produce the same bits, and slicing is consistent: ``random_bits(s, o, n)[i] ==
random_bits(s, 0, o + n)[o + i]``.

Stochastic rounding itself is ``encode(..., rounding="sr", rbits=...)``: for x between adjacent
representable a < x < b it returns b with probability (x - a)/(b - a) (exactly so when that
fraction has at most ``sr_bits`` bits; spec 3). :func:`sr_cast` is the convenience form.

Example::

    >>> bits = random_bits(seed=0, offset=0, shape=(4,))
    >>> sr_cast(np.full(4, 1 + 2.0**-10, np.float32), "bf16", bits)   # 0x3F80 or 0x3F81
"""

from __future__ import annotations

import numpy as np

from ..tensor import Tensor
from . import _jit
from ._xp import raw, xp_of
from .casting import cast, encode

__all__ = ["philox4x32", "random_bits", "sr_cast"]

_M0, _M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_W0, _W1 = 0x9E3779B9, 0xBB67AE85
_MASK = np.uint64(0xFFFFFFFF)


def philox4x32(counter, key, rounds: int = 10):
    """Philox4x32 on a ``(..., 4)`` uint32 counter array with a 2-word key; returns ``(..., 4)``
    uint32. Matches the Random123 known-answer vectors (see the tests)."""
    c = raw(counter).astype(np.uint64)
    c0, c1, c2, c3 = c[..., 0], c[..., 1], c[..., 2], c[..., 3]
    k0, k1 = int(key[0]) & 0xFFFFFFFF, int(key[1]) & 0xFFFFFFFF
    for r in range(rounds):
        if r:
            k0, k1 = (k0 + _W0) & 0xFFFFFFFF, (k1 + _W1) & 0xFFFFFFFF
        p0, p1 = _M0 * c0, _M1 * c2  # 32 x 32 -> 64-bit products, exact in uint64
        c0, c1, c2, c3 = ((p1 >> np.uint64(32)) ^ c1 ^ np.uint64(k0), p1 & _MASK,
                          (p0 >> np.uint64(32)) ^ c3 ^ np.uint64(k1), p0 & _MASK)
    xp = xp_of(c)
    return xp.stack([c0, c1, c2, c3], axis=-1).astype(np.uint32)


def random_bits(seed: int, offset: int = 0, shape=(), device=None):
    """``prod(shape)`` uint32 words of the Philox stream ``seed``, starting at word ``offset``,
    shaped ``shape``, on ``device`` (default CPU). Word ``p`` of the stream is word ``p % 4`` of
    the Philox block with counter ``p // 4`` (64-bit, in counter words 0-1) and key ``seed``
    (64-bit)."""
    from ..backend import Device

    xp = Device(device or "cpu").xp
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    n = int(np.prod(shape, dtype=np.int64))
    if offset < 0 or seed < 0:
        raise ValueError(f"random_bits(): seed and offset must be non-negative, got seed={seed}, "
                         f"offset={offset}")
    first, skip = divmod(int(offset), 4)
    nblocks = (skip + n + 3) // 4
    words = _jit.philox_words(seed, first, nblocks) if xp is np and _jit.usable(n) else None
    if words is not None:  # the same words, compiled (numba)
        return words[skip:skip + n].reshape(shape)
    j = xp.arange(first, first + nblocks, dtype=np.uint64)
    zero = xp.zeros_like(j)
    ctr = xp.stack([j & _MASK, j >> np.uint64(32), zero, zero], axis=-1)
    words = philox4x32(ctr, (seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF)).reshape(-1)
    return words[skip:skip + n].reshape(shape)


def sr_cast(x, fmt, rbits=None, *, seed=None, offset=0, saturate=False, sr_bits=32,
            nan_policy="raise"):
    """Stochastically round ``x`` to ``fmt``: codes for an array, a Tensor of the format's dtype
    for a Tensor (as :func:`encode` / :func:`cast` with ``rounding="sr"``). Give ``rbits``
    (uint32, broadcastable to ``x``) or a ``seed`` (and stream ``offset``) to draw them with
    :func:`random_bits`."""
    if rbits is None:
        if seed is None:
            raise ValueError("sr_cast(): pass random bits 'rbits' or a 'seed' (R5: random bits "
                             "are explicit)")
        dev = x.device if isinstance(x, Tensor) else None
        rbits = random_bits(seed, offset, tuple(raw(x).shape), dev)
    # a Tensor of bits stays one: cast gives it to its primitive as an argument (a graph input)
    kw = dict(rounding="sr", saturate=saturate, rbits=rbits, sr_bits=sr_bits,
              nan_policy=nan_policy)
    if isinstance(x, Tensor):
        return cast(x, fmt, **kw)
    return encode(x, fmt, **kw)
