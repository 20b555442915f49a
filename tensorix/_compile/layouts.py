"""Output layouts chosen by the compiled graph: a GEMM written where its reader wants it.

Attention ends in ``(att @ v).transpose(1, 2).reshape(b, t, c)``: the GEMM's (b, h, t, d)
result, permuted, is no longer contiguous, so the reshape copies it (as does the backward's
``dq``, before the Cat of the q, k, v gradients). Where every reader of a MatMul is a Permute
by one ``perm``, the executor runs the GEMM into a buffer laid out as the *permuted* shape
(``np.matmul(a, b, out=buf.transpose(inverse))``): the permute is then a contiguous view and
the reshape after it a view too, no copy. BLAS writes each (m, n) matrix with a row stride
(ldc) of its own; the products are the same numbers, stored elsewhere.

A Reshape that is a view of a strided input (a head split of the fused q, k, v projection,
the backward's head merges) costs Reshape's stride arithmetic and ``as_strided`` in Python,
10-70 us a call; NumPy's ``reshape(copy=False)`` finds the same view in C (~1 us) or says
there is none (then Reshape runs as eager's, and copies).
"""

from __future__ import annotations

import math

import numpy as np

from .. import _threads
from ..autograd.grad_mode import modes
from ..ops.linalg import MatMul
from ..ops.movement import Permute, Reshape
from ..tensor import _make

__all__ = ["permuted_reader", "gemm_step", "matmul_into", "whole_gemm_shape", "reshape_view",
           "permute_view"]

BLAS_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))  # what the raw GEMM steps take


def permuted_reader(node):
    """The ``perm`` that every reader of MatMul ``node`` permutes its (>= 3-d) result by,
    else None (a reader that is not that Permute, or no reader)."""
    if node.op is not MatMul or len(node.meta.get("shape", ())) < 3 or not node.users:
        return None
    perms = {_perm(u, node) for u in node.users}
    if len(perms) != 1:
        return None
    perm, = perms
    if perm is None or perm == tuple(range(len(perm))) or perm[-1] != len(perm) - 1:
        return None  # the last dim must stay last: BLAS needs unit stride along a row
    return perm


def _perm(user, node):
    if user.op is not Permute or len(user.args) != 2 or user.args[0] is not node:
        return None
    perm = user.args[1]
    return tuple(perm) if isinstance(perm, (tuple, list)) else None


def gemm_step(out, a, b, dtype, into):
    """The executor's step ``env[out] = env[a] @ env[b]`` on the raw arrays: where
    :func:`whole_gemm_shape` gives the GEMM's shape, ``into(x, y, shape)`` makes the one BLAS
    call and returns the result array (None: it cannot, e.g. no such layout); MatMul.apply
    otherwise. The one fallback of every raw GEMM step (this module's, cat_into's,
    gemm_steps')."""
    apply = MatMul.apply

    def run(env):
        ta, tb = env[a], env[b]
        x, y = ta._data, tb._data
        shape = whole_gemm_shape(x, y)
        if shape is not None:
            res = into(x, y, shape)
            if res is not None:
                env[out] = _make(res, dtype)
                return
        env[out] = apply(ta, tb)
    return run


def matmul_into(out, a, b, perm, dtype):
    """The executor's step for a MatMul whose readers permute by ``perm``: the GEMM into a
    buffer contiguous in the permuted order; MatMul.apply where that does not hold (another
    dtype, an array that is not NumPy's, a GEMM the thread pool splits, a dispatch hook such
    as a GEMM precision policy)."""
    inverse = tuple(int(i) for i in np.argsort(perm))

    def into(x, y, shape):
        if len(shape) != len(perm):
            return None
        view = np.empty([shape[i] for i in perm], x.dtype).transpose(inverse)
        np.matmul(x, y, out=view)
        return view
    return gemm_step(out, a, b, dtype, into)


def whole_gemm_shape(x, y):
    """The shape of ``x @ y`` where an executor step may run it as one BLAS call on the raw
    arrays, BLAS pinned to one thread as ``_threads.matmul`` pins it; None where MatMul.apply
    must: another dtype or rank, an array that is not NumPy's, a dispatch hook (a GEMM
    precision policy, storage codes), 1-d operands (MatMul's vector rules), or a GEMM the
    thread pool splits (its parts round as eager's do)."""
    if type(x) is not np.ndarray or type(y) is not np.ndarray or x.dtype != y.dtype or \
            x.dtype not in BLAS_FLOATS or x.ndim != y.ndim or x.ndim < 2 or modes.state.hooked:
        return None
    # ~40 calls per GPT step: equal batch dims (the usual case) and math.prod are found
    # without NumPy's broadcast_shapes and np.prod (~5 us a call between them)
    xs, ys = x.shape, y.shape
    batch = xs[:-2] if xs[:-2] == ys[:-2] else np.broadcast_shapes(xs[:-2], ys[:-2])
    shape = batch + (xs[-2], ys[-1])
    if _threads.parts_for(xs[-1] * math.prod(shape), _threads._GEMM_MIN_PART) > 1:
        return None
    if not _threads._blas_pinned:
        _threads._pin_blas()
    return shape


def reshape_view(out, a, shape):
    """The executor's step for a Reshape node: NumPy's view where one exists (the output a
    view Tensor of the input, sharing its version counter as Reshape's do), Reshape.apply
    otherwise (a copy, another array type, a dispatch hook such as storage codes)."""
    apply = Reshape.apply

    def run(env):
        t = env[a]
        x = t._data
        if type(x) is np.ndarray and not modes.state.hooked:
            try:
                raw = np.reshape(x, shape, copy=False)
            except ValueError:  # no view: Reshape copies
                raw = None
            if raw is not None:
                env[out] = _view_of(t, raw)
                return
        env[out] = apply(t, shape)
    return run


def _view_of(t, raw):
    """A view Tensor of ``t`` over ``raw``, as a movement op makes it (sharing ``t``'s version
    counter and base)."""
    v = _make(raw, t._dtype)
    base = t._base if t._base is not None else t
    v._version, v._base, v._base_fn = t._version, base, base.grad_fn
    return v


def permute_view(out, a, dims):
    """The executor's step for a Permute node: NumPy's transposed view, made as Permute's
    (a view Tensor sharing its input's version counter), without the ~5 us of Function.apply
    (~30 permutes in a GPT training step); Permute.apply for another array type or under a
    dispatch hook (storage codes)."""
    apply = Permute.apply

    def run(env):
        t = env[a]
        x = t._data
        if type(x) is np.ndarray and x.size and not modes.state.hooked:
            env[out] = _view_of(t, x.transpose(dims))
            return
        env[out] = apply(t, dims)
    return run
