"""The CUDA kernels: launchers over CuPy arrays, declared with ``cuda_kernel`` (``_table.py``).

Each compiles its kernel on first call (CuPy caches the binary on disk) and works on raw
``cupy.ndarray``s; the ops that use them (gelu, softmax/log_softmax, nll_loss, layer_norm,
Adam/AdamW, dropout, low-precision matmul) keep autograd and argument checks, and call these
only for the dtypes registered here. Nothing here has run on a GPU yet: docs/gpu.md.
"""

from __future__ import annotations

import math

import numpy as np

from .. import backend
from ._cuda_src import ELEMENTWISE, PREAMBLE, ROWS_SOURCE
from ._table import cuda_kernel

_ROWS_PER_BLOCK = 8  # one warp per row, 8 warps (256 threads) per block
_SUFFIX = {"float32": "f32", "float64": "f64"}
_NULL = np.uint64(0)  # a null pointer argument (no weight / bias / gxhat)


def _ew(name):
    in_params, out_params, operation, _ = ELEMENTWISE[name]
    return backend.elementwise_kernel(in_params, out_params, operation, name, PREAMBLE)


def _rows(name, dtype):
    return backend.raw_kernel(ROWS_SOURCE, f"{name}_{_SUFFIX[np.dtype(dtype).name]}")


def _launch(kernel, rows, args):
    if rows:
        blocks = (rows + _ROWS_PER_BLOCK - 1) // _ROWS_PER_BLOCK
        kernel((blocks,), (32 * _ROWS_PER_BLOCK,), args)


def _contig(a):
    return backend.cupy_module().ascontiguousarray(a)


@cuda_kernel()
def gelu(x, approximate):
    """gelu(x), exact (erf) or tanh-approximated, in one pass."""
    return _ew("tx_gelu_tanh" if approximate == "tanh" else "tx_gelu_erf")(x)


@cuda_kernel()
def gelu_backward(x, g, approximate):
    """``g * gelu'(x)`` in one pass (first-order backward)."""
    return _ew("tx_gelu_tanh_bwd" if approximate == "tanh" else "tx_gelu_erf_bwd")(x, g)


@cuda_kernel()
def softmax(x, log):
    """softmax (or log_softmax with ``log``) over the last dim, one warp per row."""
    x = _contig(x)
    y = backend.cupy_module().empty_like(x)
    cols = x.shape[-1] if x.ndim else 1
    rows = x.size // cols if cols else 0
    _launch(_rows("tx_log_softmax" if log else "tx_softmax", x.dtype), rows,
            (x, y, np.int64(rows), np.int64(cols)))
    return y


@cuda_kernel()
def softmax_backward(y, g, log):
    """First-order backward of softmax / log_softmax over the last dim, from the output."""
    y, g = _contig(y), _contig(g)
    dx = backend.cupy_module().empty_like(y)
    cols = y.shape[-1] if y.ndim else 1
    rows = y.size // cols if cols else 0
    _launch(_rows("tx_log_softmax_bwd" if log else "tx_softmax_bwd", y.dtype), rows,
            (y, g, dx, np.int64(rows), np.int64(cols)))
    return dx


@cuda_kernel()
def layer_norm(x, weight, bias, cols, eps):
    """Normalise each run of ``cols`` trailing elements; returns (y, mean, rstd), the
    statistics one per row (shape ``(rows,)``)."""
    cp = backend.cupy_module()
    x = _contig(x)
    rows = x.size // cols if cols else 0
    y = cp.empty_like(x)
    mean, rstd = cp.empty(rows, dtype=x.dtype), cp.empty(rows, dtype=x.dtype)
    w = _NULL if weight is None else _contig(weight)
    b = _NULL if bias is None else _contig(bias)
    _launch(_rows("tx_layernorm", x.dtype), rows,
            (x, w, b, y, mean, rstd, np.int64(rows), np.int64(cols), np.float64(eps)))
    return y, mean, rstd


@cuda_kernel()
def layer_norm_backward(g, x, weight, mean, rstd, cols, need_gxhat):
    """First-order backward: returns (dx, g * xhat or None); the caller sums the latter (and
    ``g``) over rows for the weight (and bias) gradients."""
    cp = backend.cupy_module()
    g, x = _contig(g), _contig(x)
    rows = x.size // cols if cols else 0
    dx = cp.empty_like(x)
    gxhat = cp.empty_like(x) if need_gxhat else None
    w = _NULL if weight is None else _contig(weight)
    _launch(_rows("tx_layernorm_bwd", x.dtype), rows,
            (g, x, w, _contig(mean), _contig(rstd), dx, _NULL if gxhat is None else gxhat,
             np.int64(rows), np.int64(cols)))
    return dx, gxhat


@cuda_kernel()
def adam(p, g, m, v, step, *, lr, beta1, beta2, eps, weight_decay, decoupled, maximize):
    """One Adam(W) step on p, m and v in place, in one pass (amsgrad is not served)."""
    bc1 = 1 - beta1 ** step
    bc2_sqrt = math.sqrt(1 - beta2 ** step)
    l2 = 0.0 if decoupled else float(weight_decay)
    decay_mul = 1 - lr * weight_decay if decoupled else 1.0
    _ew("tx_adam")(g, float(beta1), 1 - beta1, float(beta2), 1 - beta2, lr / bc1, bc2_sqrt,
                   float(eps), l2, decay_mul, bool(maximize), p, m, v)


@cuda_kernel()
def dropout_mask(shape, dtype, p, seed):
    """The scaled keep-mask of dropout: ``1/(1-p)`` with probability ``1-p``, else 0, from a
    counter-based hash of (seed, element index)."""
    mask = backend.cupy_module().empty(shape, dtype=dtype)
    _ew("tx_dropout_mask")(np.uint64(seed), float(p), 1.0 / (1.0 - p), mask)
    return mask


@cuda_kernel()
def nll_backward(target, scale, classes):
    """The (N, C) coefficient of nll_loss's backward: ``scale[n]`` at ``target[n]``, else 0."""
    out = backend.cupy_module().empty((target.shape[0], classes), dtype=scale.dtype)
    _ew("tx_nll_bwd")(_contig(target.astype(np.int64, copy=False)), _contig(scale),
                      np.int64(classes), out)
    return out


@cuda_kernel(dtypes=("float16", "bfloat16"))
def matmul(a, b):
    """16-bit float products through cuBLAS, accumulating in float32 and rounding once (the
    CPU path upcasts to float32 and rounds at the end: the same contract)."""
    return a @ b
