"""Matrix products: matmul (batched, broadcasting, 1-d cases), mm, bmm.

Low-precision floats (fp16, bf16, fp8) multiply in float32 and round once at the end, like a
tensor core with fp32 accumulation (NumPy has no BLAS for them). Integer products accumulate in
int64 and refuse, with a clear error, a result that does not fit (NumPy's int8 @ int8 wraps).
"""

from __future__ import annotations

import numpy as np

from .. import backend
from ..autograd.function import Function
from ..tensor import Tensor
from ._common import check_tensor, promote

__all__ = ["matmul", "mm", "bmm"]


def _int_matmul(a, b, dtype):
    xp = backend.array_module(a)
    # a float64 bound on |a| @ |b| finds overflow that int64 arithmetic would hide by wrapping
    bound = xp.abs(a.astype(np.float64)) @ xp.abs(b.astype(np.float64))
    info = np.iinfo(dtype.np)
    if bound.size and float(bound.max()) > min(info.max, 2.0 ** 62):
        raise OverflowError(f"matmul(): integer product overflows {dtype.name} (largest "
                            f"possible magnitude {float(bound.max()):.3g}); cast the operands "
                            "to a wider integer or floating dtype first")
    return (a.astype(np.int64) @ b.astype(np.int64)).astype(dtype.np)


class MatMul(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        d = a._dtype
        if d.category < 2:
            return _int_matmul(a._data, b._data, d)
        if d.low_precision or d.name == "float16":
            return (a._data.astype(np.float32) @ b._data.astype(np.float32)).astype(d.np)
        return a._data @ b._data

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        na, nb = ctx.needs_input_grad
        ga = g @ b.mT.conj() if na else None
        gb = a.mT.conj() @ g if nb else None
        return ga, gb


def matmul(input, other) -> Tensor:
    """Matrix product with NumPy/PyTorch semantics.

    Shapes: ``(..., n, k) @ (..., k, m) -> (..., n, m)`` with broadcast batch dims; a 1-d
    first operand is a row vector and a 1-d second operand a column vector, their added dim
    removed from the result; ``(k,) @ (k,)`` is a 0-d dot product.
    Example: ``tensorix.randn(8, 3, 4) @ tensorix.randn(4, 5)`` has shape ``(8, 3, 5)``.
    """
    check_tensor(input, "matmul", "input")
    check_tensor(other, "matmul", "other")
    if input.ndim == 0 or other.ndim == 0:
        raise RuntimeError(f"matmul(): both arguments need at least 1 dimension, got "
                           f"{input.ndim}D and {other.ndim}D tensors")
    a, b = promote(input, other, "matmul")
    ka = a.shape[-1]
    kb = b.shape[-2] if b.ndim > 1 else b.shape[0]
    if ka != kb:
        raise RuntimeError(f"matmul(): mat1 and mat2 shapes cannot be multiplied "
                           f"({_desc(a)} and {_desc(b)})")
    if a.ndim == 1 and b.ndim == 1:
        return MatMul.apply(a.unsqueeze(0), b.unsqueeze(1)).reshape(())
    if a.ndim == 1:
        return MatMul.apply(a.unsqueeze(0), b).squeeze(-2)
    if b.ndim == 1:
        return MatMul.apply(a, b.unsqueeze(1)).squeeze(-1)
    try:
        np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        raise RuntimeError(f"matmul(): batch dimensions {list(a.shape[:-2])} and "
                           f"{list(b.shape[:-2])} are not broadcastable") from None
    return MatMul.apply(a, b)


def _desc(t):
    return "x".join(str(s) for s in t.shape)


def mm(input, mat2) -> Tensor:
    """Product of two 2-d matrices ``(n, k) @ (k, m)``."""
    if input.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError(f"mm(): expected 2D tensors, got {input.ndim}D and {mat2.ndim}D")
    return matmul(input, mat2)


def bmm(input, mat2) -> Tensor:
    """Batched product of 3-d tensors ``(b, n, k) @ (b, k, m)`` (no broadcasting)."""
    if input.ndim != 3 or mat2.ndim != 3:
        raise RuntimeError(f"bmm(): expected 3D tensors, got {input.ndim}D and {mat2.ndim}D")
    if input.shape[0] != mat2.shape[0]:
        raise RuntimeError(f"bmm(): batch sizes differ: {input.shape[0]} and {mat2.shape[0]}")
    return matmul(input, mat2)


TENSOR_METHODS = {"matmul": matmul, "mm": mm, "bmm": bmm, "__matmul__": matmul,
                  "__rmatmul__": lambda self, other: matmul(other, self)}
