"""The softmax family: softmax, log_softmax (one primitive each, for speed and stability),
softmin and gumbel_softmax; ``tensorix.nn.functional`` re-exports them, and ``Tensor.softmax``
/ ``Tensor.log_softmax`` delegate here.

softmax and log_softmax run one fused device kernel where the kernel table has one (CUDA),
else a max-shifted ``xp`` form; the output is saved for a backward that needs only it, written
with tensorix ops (so it is differentiable again). 16-bit inputs compute in float32 and round
once.
"""

from __future__ import annotations

import numpy as np

from .. import _threads, kernels
from ..autograd.dispatch import kernel, widened_from
from ..autograd.function import Function
from ..autograd.grad_mode import is_grad_enabled, untraced_first_order
from ..tensor import Tensor, _make
from . import _reduce32
from ._common import RAW_FLOATS, check_tensor, norm_dim

__all__ = ["softmax", "log_softmax"]
# nn.functional's names (torch has no top-level softmin or gumbel_softmax)
FUNCTIONAL = ["softmax", "log_softmax", "softmin", "gumbel_softmax"]


def _row_kernel(role, t, dim):
    """The device's fused kernel for a softmax-family op over the last dim, or None."""
    return kernel(_SoftmaxFamily, role, t.device, t._dtype) if dim == t._data.ndim - 1 \
        else None


def _fused_grad(y, g, dim, log):
    """(log_)softmax's first-order backward through the device kernel, or None where there is
    none or a graph is being recorded (double backward needs the op form)."""
    fused = _row_kernel("backward", y, dim)
    if fused is not None and not is_grad_enabled() and g._dtype is y._dtype:
        return _make(fused(y._data, g._data, log))
    return None


def _raw_grad(y, g, dim, log):
    """(log_)softmax's first-order backward on NumPy float32/float64 arrays where no graph is
    recorded and no tracer records (storage codes elsewhere in the process do not matter:
    both are float arrays; a GEMM policy has no GEMM here to take): the op form's formula and
    NumPy calls, in place, so the same bits, without its four dispatches (on a small model's
    (32, 10) logits they cost ~4x the arithmetic). None elsewhere."""
    yd, gd = y._data, g._data
    if not untraced_first_order() or type(yd) is not np.ndarray or \
            type(gd) is not np.ndarray or yd.dtype != gd.dtype or yd.shape != gd.shape or \
            yd.dtype not in RAW_FLOATS or not yd.ndim:
        return None
    if log:  # g - exp(y) * sum(g)
        s = gd.sum(axis=(dim,), keepdims=True, dtype=gd.dtype)
        e = _threads.ufunc(np.exp, yd)
        np.multiply(e, s, out=e)
        return _make(np.subtract(gd, e, out=e))
    gy = _threads.ufunc(np.multiply, gd, yd, min_part=_threads.CHEAP)  # y * (g - sum(g y))
    s = gy.sum(axis=(dim,), keepdims=True, dtype=gy.dtype)
    np.subtract(gd, s, out=gy)
    return _make(np.multiply(yd, gy, out=gy))


class _SoftmaxFamily(Function):
    """softmax and log_softmax along ``dim``: one fused device kernel or a max-shifted NumPy
    form (stable), the output saved for a backward that needs only it."""

    log = False
    _widen16 = True  # computed in float32, rounded once (autograd/dispatch.py)
    # one warp per row on CUDA, over the last dim (``log`` picks the log form)
    _kernels = {"forward": (kernels.cuda.softmax,), "backward": (kernels.cuda.softmax_backward,),
                "rows32": (_reduce32.SOFTMAX_KERNEL,)}  # numba, float32 rows (_reduce32.py)

    @classmethod
    def forward(cls, ctx, x, dim):
        fused = _row_kernel("forward", x, dim)
        data = x._data
        if fused is not None:
            out = fused(data, cls.log)
        elif type(data) is np.ndarray and data.dtype == np.float32 and data.ndim and \
                dim == data.ndim - 1 and data.size >= _reduce32.SOFTMAX_MIN and \
                data.flags.c_contiguous and widened_from() is None and _reduce32.jit_ready():
            # one pass a row with _math32's exp32 (NumPy's exp, max, sum and divide: 4 passes)
            rows = kernel(_SoftmaxFamily, "rows32", x.device, x._dtype)
            out = _reduce32.softmax32(data.reshape(-1, data.shape[-1]), rows, cls.log)
            out = out.reshape(data.shape)
        else:
            xp = x.xp
            # an all -inf row gives NaN silently, as in PyTorch
            with np.errstate(invalid="ignore", divide="ignore"):
                shifted = x._data - x._data.max(axis=dim, keepdims=True)
                e = _threads.ufunc(xp.exp, shifted)  # split over the pool when large
                total = e.sum(axis=dim, keepdims=True)
                # in place: one temporary fewer (4 MB at 1M float32), the same bits
                if cls.log:
                    out = xp.subtract(shifted, xp.log(total), out=shifted) if shifted.ndim \
                        else shifted - xp.log(total)  # (a 0-d difference is a NumPy scalar)
                else:
                    e /= total
                    out = e
        out = _make(out)
        ctx.dim = dim
        ctx.save_for_backward(out)
        return out

    @classmethod
    def backward(cls, ctx, g):
        (y,) = ctx.saved_tensors
        fused = _fused_grad(y, g, ctx.dim, log=cls.log)
        if fused is not None:
            return fused
        raw = _raw_grad(y, g, ctx.dim, cls.log)
        if raw is not None:
            return raw
        if cls.log:
            return g - y.exp() * g.sum(ctx.dim, keepdim=True)
        return y * (g - (g * y).sum(ctx.dim, keepdim=True))


class Softmax(_SoftmaxFamily):
    log = False


class LogSoftmax(_SoftmaxFamily):
    log = True


def _softmax_dim(x, dim, op):
    if dim is None:
        # PyTorch's legacy implicit choice: dim 0 for 0-, 1- and 3-d inputs, else 1
        dim = 0 if x.ndim in (0, 1, 3) else 1
    return norm_dim(dim, x.ndim, op)


def _softmax_input(x, dtype, op):
    check_tensor(x, op)
    if dtype is not None:
        x = x.to(dtype)
    if x.dtype.category < 2:
        raise RuntimeError(f"{op}(): expected a floating point input, got {x.dtype.name}")
    return x


def softmax(input, dim=None, dtype=None) -> Tensor:
    """``exp(x) / sum(exp(x))`` along ``dim`` (stable: the max is subtracted first); with
    ``dtype`` the input is cast first. Shapes: same as the input.

    Example: ``tensorix.softmax(tensorix.tensor([1., 2., 3.]), dim=0)`` is ``tensor([0.0900,
    0.2447, 0.6652])``.
    """
    x = _softmax_input(input, dtype, "softmax")
    return Softmax.apply(x, _softmax_dim(x, dim, "softmax"))


def softmin(input, dim=None, dtype=None) -> Tensor:
    """``softmax(-input)`` along ``dim``. Shapes: same as the input.
    Example: ``F.softmin(tensorix.tensor([1., 2.]), 0)`` is ``tensor([0.7311, 0.2689])``."""
    return softmax(-input, dim, dtype)


def log_softmax(input, dim=None, dtype=None) -> Tensor:
    """``log(softmax(x))`` along ``dim``, computed stably as ``x - max - log(sum(exp(x -
    max)))``. Shapes: same as the input.
    Example: ``tensorix.log_softmax(tensorix.tensor([0., 0.]), 0)`` is ``tensor([-0.6931,
    -0.6931])``."""
    x = _softmax_input(input, dtype, "log_softmax")
    return LogSoftmax.apply(x, _softmax_dim(x, dim, "log_softmax"))


def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1, generator=None) -> Tensor:
    """Sample from the Gumbel-softmax distribution; with ``hard`` the one-hot of the argmax,
    with the soft sample's gradient (straight-through)."""
    from .random import rand

    check_tensor(logits, "gumbel_softmax", "logits")
    u = rand(*logits.shape, generator=generator, dtype=logits.dtype, device=logits.device)
    gumbels = -(-(1 - u).log()).log()  # -log(Exp(1)) with Exp(1) = -log(1 - U)
    soft = softmax((logits + gumbels) / tau, dim)
    if not hard:
        return soft
    index = soft.argmax(dim, keepdim=True)
    from .creation import zeros_like

    one = zeros_like(logits).scatter(dim, index, 1.0)
    return one - soft.detach() + soft


TENSOR_METHODS = {"softmax": softmax, "log_softmax": log_softmax}
