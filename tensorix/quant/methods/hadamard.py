"""Hadamard transforms for rotation-based quantization (QuaRot, SpinQuant, APEX4).

An orthogonal rotation R spreads an outlier channel's energy over all channels, so that
``Q(x R) @ Q(W R)^T`` loses much less than ``Q(x) @ Q(W)^T`` at 4 bits while
``(x R)(W R)^T = x W^T`` exactly. R here is a (block-diagonal) normalised Sylvester Hadamard
matrix, optionally with a random sign flip in front, applied by the fast Walsh-Hadamard
transform in O(n log n) per row; it works on Tensors (differentiable, any device) and on
backend arrays alike.
"""

from __future__ import annotations

import math

import numpy as np

from ...backend import array_module
from ...ops.shape import stack
from ...tensor import Tensor, _make

__all__ = ["fwht", "hadamard_matrix", "HadamardRotation"]


def _check_size(n: int, op: str, what: str) -> None:
    if n < 1 or n & (n - 1):
        raise ValueError(f"{op}: {what} must be a power of two, got {n}")


def fwht(x, block: int | None = None):
    """Normalised fast Walsh-Hadamard transform of the last axis: ``x @ H`` with ``H`` the
    Sylvester Hadamard matrix of size ``block`` (default: the whole last axis) divided by
    sqrt(block), applied to each consecutive block of the last axis.

    ``x``: (..., n) Tensor or array, ``n`` a multiple of ``block``, ``block`` a power of two.
    H is symmetric and orthogonal, so ``fwht(fwht(x)) == x`` (up to rounding).

    Example::

        >>> fwht(np.array([1.0, 0.0, 0.0, 0.0]))
        array([0.5, 0.5, 0.5, 0.5])
    """
    n = x.shape[-1]
    block = n if block is None else block
    _check_size(block, "fwht", "block")
    if n % block:
        raise ValueError(f"fwht: the last axis ({n}) must be a multiple of block ({block})")
    lead = tuple(x.shape[:-1])
    h = 1
    # butterfly on (..., n/(2h), 2, h): the pair (a, b) h apart becomes (a + b, a - b)
    while h < block:
        y = x.reshape(*lead, n // (2 * h), 2, h)
        a, b = y[..., 0, :], y[..., 1, :]
        y = _stack((a + b, a - b), -2)
        x = y.reshape(*lead, n)
        h *= 2
    return x * (1.0 / math.sqrt(block))


def _stack(pair, axis):
    if isinstance(pair[0], Tensor):
        return stack(pair, axis)
    return array_module(pair[0]).stack(pair, axis)


def hadamard_matrix(n: int, xp=np, dtype="float64"):
    """The normalised Sylvester Hadamard matrix (n, n), n a power of two: symmetric,
    orthogonal, entries +-1/sqrt(n). ``hadamard_matrix(2) = [[1, 1], [1, -1]] / sqrt(2)``."""
    _check_size(n, "hadamard_matrix", "n")
    return fwht(xp.eye(n, dtype=dtype))


class HadamardRotation:
    """The orthogonal rotation ``R = diag(signs) @ blockdiag(H_b, ..., H_b)`` of size ``n``:
    random signs (seeded, +-1) in front of a block-diagonal normalised Hadamard with block
    ``b`` (default the largest power of two dividing ``n``, at most ``n``).

    ``rotate(x)`` is ``x @ R`` and ``unrotate(y)`` is ``y @ R.T`` along the last axis, so
    ``rotate(x) @ rotate(w).T == x @ w.T``. ``signs=False`` gives the plain Hadamard.

    Example::

        >>> r = HadamardRotation(256, seed=0)
        >>> x = np.random.default_rng(0).standard_normal((4, 256))
        >>> bool(np.allclose(r.unrotate(r.rotate(x)), x))
        True
    """

    def __init__(self, n: int, *, block: int | None = None, seed: int = 0,
                 signs: bool = True):
        block = block if block is not None else n & -n
        _check_size(block, "HadamardRotation", "block")
        if n % block:
            raise ValueError(f"HadamardRotation: n ({n}) must be a multiple of block ({block})")
        self.n, self.block = n, block
        rng = np.random.default_rng(seed)
        self._signs = rng.choice([-1.0, 1.0], size=n) if signs else np.ones(n)
        self._cache = {}

    @classmethod
    def from_signs(cls, signs, block: int) -> HadamardRotation:
        """The rotation with the given +-1 ``signs`` (n,) and Hadamard ``block`` (how a
        state_dict restores one). Example: ``HadamardRotation.from_signs(r.signs, r.block)``
        equals ``r``."""
        r = cls(len(signs), block=int(block), signs=False)
        r._signs = np.asarray(signs, dtype=np.float64)
        return r

    @property
    def signs(self):
        """The random signs (n,) as a float64 NumPy array."""
        return self._signs

    def _signs_like(self, x):
        # one copy of the signs per device/dtype, so the GPU path never re-uploads them
        xp = array_module(x._data if isinstance(x, Tensor) else x)
        dtype = x._data.dtype if isinstance(x, Tensor) else x.dtype
        key = (xp.__name__, str(dtype))
        if key not in self._cache:
            self._cache[key] = xp.asarray(self._signs.astype(dtype))
        s = self._cache[key]
        return _make(s) if isinstance(x, Tensor) else s

    def rotate(self, x):
        """``x @ R`` along the last axis (size n)."""
        self._check(x, "rotate")
        return fwht(x * self._signs_like(x), self.block)

    def unrotate(self, y):
        """``y @ R.T``, the inverse of :meth:`rotate`."""
        self._check(y, "unrotate")
        return fwht(y, self.block) * self._signs_like(y)

    def matrix(self, xp=np):
        """R as a dense (n, n) float64 array (for tests and for folding into weights)."""
        return self.rotate(xp.eye(self.n))

    def _check(self, x, op):
        if x.shape[-1] != self.n:
            raise ValueError(f"HadamardRotation.{op}: the last axis must have size {self.n}, "
                             f"got shape {tuple(x.shape)}")

    def __repr__(self):
        return f"HadamardRotation(n={self.n}, block={self.block})"
