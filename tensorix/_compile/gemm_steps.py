"""The executor's steps for the GEMM nodes that layouts.py and cat_into.py leave as they are:
a MatMul of two tensors and a Linear, run on the raw arrays.

A compiled GPT training step runs ~40 such GEMMs. Through ``Function.apply`` each costs 7-30
us of Python beyond its BLAS call (the dispatcher's rules, ``ctx``, saving inputs nothing
reads: the compiled graph records nothing); the step here asks ``whole_gemm_shape`` whether
one BLAS call may run it (NumPy arrays of one float dtype, no dispatch hook, a GEMM the pool
would not split: the cases where ``MatMul.forward`` and ``Linear.forward`` make exactly that
call) and makes it, else it calls ``apply``. The same calls in the same order: eager's bits.
"""

from __future__ import annotations

import numpy as np

from ..nn.functional._core import Linear
from ..tensor import _make
from .layouts import gemm_step, whole_gemm_shape

__all__ = ["matmul_step", "linear_step"]


def matmul_step(out, a, b, dtype):
    """``env[out] = env[a] @ env[b]``: ``np.matmul`` where one BLAS call is MatMul's
    forward, ``MatMul.apply`` otherwise."""
    return gemm_step(out, a, b, dtype, lambda x, y, shape: np.matmul(x, y))


def linear_step(out, x_slot, w_slot, b_slot, dtype):
    """``env[out] = linear(env[x], env[w], env[b])`` (``b_slot`` None: no bias) as
    ``Linear.forward`` computes it where its GEMM is one BLAS call: the input as one
    contiguous (rows, in) matrix times ``w.T``, then the bias added in place."""
    apply = Linear.apply
    matmul = np.matmul

    def run(env):
        tx, tw = env[x_slot], env[w_slot]
        tb = env[b_slot] if b_slot is not None else None
        xd, wt = tx._data, tw._data.T
        flat = xd
        if xd.ndim > 2 and type(xd) is np.ndarray:
            flat = np.ascontiguousarray(xd).reshape(-1, xd.shape[-1])
        if (tb is None or type(tb._data) is np.ndarray) and \
                whole_gemm_shape(flat, wt) is not None:
            y = matmul(flat, wt)
            if xd.ndim > 2:
                y = y.reshape(xd.shape[:-1] + (-1,))
            if tb is not None:
                y += tb._data
            env[out] = _make(y, dtype)
            return
        env[out] = apply(tx, tw, tb)
    return run
