"""Normalisation: layer_norm and batch_norm as primitives (one graph node each, for speed),
group_norm and instance_norm on top of them, rms_norm, local_response_norm and normalize as
composites.

The primitives save the input plus the per-group mean and reciprocal std (not the normalised
input, as PyTorch) and rebuild ``xhat`` in backward. When the backward itself is being recorded
(``create_graph=True``), mean and rstd are recomputed from the input with ops, so second
derivatives see their dependence on the input.
"""

from __future__ import annotations

from ... import backend, kernels
from ... import dtypes as dt
from ...autograd.dispatch import NARROW, kernel
from ...autograd.function import Function
from ...autograd.grad_mode import is_grad_enabled
from ...ops._common import check_tensor, same_device
from ...ops.shape import pad
from ...tensor import Tensor, _make
from ._pool import avg_pool2d, avg_pool3d

__all__ = ["layer_norm", "batch_norm", "group_norm", "instance_norm", "rms_norm",
           "local_response_norm", "normalize"]


def _stats(x, axes, eps):
    """mean and 1/sqrt(var + eps) over ``axes`` (biased var), with ops (differentiable)."""
    mu = x.mean(axes, keepdim=True)
    xc = x - mu
    return mu, ((xc * xc).mean(axes, keepdim=True) + eps).rsqrt()


def _raw_stats(data, axes, eps):
    xp = backend.array_module(data)
    mu = data.mean(axis=axes, keepdims=True)
    xc = data - mu
    var = (xc * xc).mean(axis=axes, keepdims=True)
    return mu, xc, var, 1.0 / xp.sqrt(var + eps)


def _xhat(ctx, x, mu, rstd):
    if is_grad_enabled():  # create_graph: the stats' dependence on x matters for the next order
        mu, rstd = _stats(x, ctx.axes, ctx.eps)
    return (x - mu) * rstd, rstd


def _raw_backward(g, x, weight, mu, rstd, axes, param_axes, needs):
    """The first-order backward of the normalisations on raw arrays (no graph is being
    built): a few fused NumPy passes instead of a dozen graph ops."""
    nx, nw, nb = needs
    gd, rs = g._data, rstd._data
    xhat = (x._data - mu._data) * rs
    gw = _make((gd * xhat).sum(axis=param_axes)) if nw else None
    gb = _make(gd.sum(axis=param_axes)) if nb else None
    gx = None
    if nx:
        gh = gd if weight is None else gd * weight
        inner = (gh * xhat).mean(axis=axes, keepdims=True)
        xhat *= inner
        gx = gh - gh.mean(axis=axes, keepdims=True)
        gx -= xhat
        gx *= rs
        gx = _make(gx)
    return gx, gw, gb


def _graph_backward(ctx, g, x, weight, mu, rstd, param_axes, needs):
    """The backward with ops, for ``create_graph`` (differentiable again); ``weight`` already
    shaped to broadcast against ``x``. The same formulas as :func:`_raw_backward`."""
    nx, nw, nb = needs
    axes = ctx.axes
    xhat, rstd = _xhat(ctx, x, mu, rstd)
    gw = (g * xhat).sum(param_axes) if nw else None
    gb = g.sum(param_axes) if nb else None
    gx = None
    if nx:
        gh = g if weight is None else g * weight
        gx = rstd * (gh - gh.mean(axes, keepdim=True)
                     - xhat * (gh * xhat).mean(axes, keepdim=True))
    return gx, gw, gb


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _fused_backward(fused, g, x, weight, mu, rstd, axes, needs):
    """LayerNorm's first-order backward through the device kernel (see kernels/_cuda.py)."""
    nx, nw, nb = needs
    cols = _numel(x._data.shape[x._data.ndim - len(axes):])
    dx, gxhat = fused(g._data, x._data, None if weight is None else weight._data,
                      mu._data, rstd._data, cols, nw)
    pshape = x._data.shape[x._data.ndim - len(axes):]
    gw = _make(gxhat.reshape(-1, cols).sum(axis=0).reshape(pshape)) if nw else None
    gb = _make(g._data.reshape(-1, cols).sum(axis=0).reshape(pshape)) if nb else None
    return (_make(dx) if nx else None), gw, gb, None, None


class LayerNorm(Function):
    _widen16 = True  # computed in float32, rounded once (autograd/dispatch.py)
    # one warp per row on CUDA; the statistics come back one per row
    _kernels = {"forward": (kernels.cuda.layer_norm,),
                "backward": (kernels.cuda.layer_norm_backward,)}

    @staticmethod
    def forward(ctx, x, weight, bias, nd, eps):
        axes = tuple(range(x._data.ndim - nd, x._data.ndim))
        fused = kernel(LayerNorm, "forward", x.device, x._dtype)
        if fused is not None:  # one pass per row; stats come back one per row
            keep = x._data.shape[:x._data.ndim - nd] + (1,) * nd
            out, mu, rstd = fused(x._data, None if weight is None else weight._data,
                                  None if bias is None else bias._data,
                                  _numel(x._data.shape[x._data.ndim - nd:]), eps)
            mu, rstd = mu.reshape(keep), rstd.reshape(keep)
        else:
            mu, xc, _, rstd = _raw_stats(x._data, axes, eps)
            out = xc * rstd
            if weight is not None:
                out *= weight._data
            if bias is not None:
                out += bias._data
        ctx.axes, ctx.eps = axes, eps
        ctx.save_for_backward(x, weight, _make(mu), _make(rstd))
        return out

    @staticmethod
    def backward(ctx, g):
        x, weight, mu, rstd = ctx.saved_tensors
        nx, nw, nb = ctx.needs_input_grad[:3]
        axes = ctx.axes
        lead = tuple(range(g.ndim - len(axes)))
        fused = kernel(LayerNorm, "backward", x.device, x._dtype)
        if fused is not None and not is_grad_enabled() and g._dtype is x._dtype:
            return _fused_backward(fused, g, x, weight, mu, rstd, axes, (nx, nw, nb))
        if not is_grad_enabled():
            return _raw_backward(g, x, None if weight is None else weight._data, mu, rstd,
                                 axes, lead, (nx, nw, nb)) + (None, None)
        return _graph_backward(ctx, g, x, weight, mu, rstd, lead, (nx, nw, nb)) + (None, None)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5) -> Tensor:
    """Normalise over the trailing ``normalized_shape`` dims, then scale and shift.

    Shapes: input (*, *normalized_shape); weight and bias shaped ``normalized_shape``.
    Example: ``F.layer_norm(x, (x.shape[-1],))``.
    """
    check_tensor(input, "layer_norm")
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else \
        tuple(normalized_shape)
    if tuple(input.shape[input.ndim - len(shape):]) != shape or len(shape) > input.ndim:
        raise RuntimeError(f"layer_norm(): given normalized_shape={list(shape)}, expected input "
                           f"with shape [*, {', '.join(map(str, shape))}], but got input of "
                           f"size {list(input.shape)}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != shape:
            raise RuntimeError(f"layer_norm(): expected {name} of shape {list(shape)}, got "
                               f"{list(t.shape)}")
    same_device("layer_norm", input, weight, bias)
    return LayerNorm.apply(input, weight, bias, len(shape), eps)


class BatchNorm(Function):
    """Training-mode batch norm over every dim but 1; updates the running stats in place.

    ``num_batches`` (the module's ``num_batches_tracked``, or None) is counted up in place here
    too, and ``momentum=None`` then means the cumulative average ``1 / count``: inside the
    primitive, a compiled training step counts and averages on every call (the module's
    ``+= 1`` outside it was a write no graph recorded, so a graph break)."""

    _widen16 = (0, 1, 2)  # input, weight, bias in float32; the running stats are written as are
    _writes = (3, 4, 7)  # running_mean, running_var, num_batches (autograd/dispatch.py)

    @staticmethod
    def forward(ctx, x, weight, bias, running_mean, running_var, momentum, eps, num_batches):
        if num_batches is not None:
            num_batches._data += 1
            num_batches._version[0] += 1
            if momentum is None:
                momentum = 1.0 / float(num_batches._data)
        momentum = 0.0 if momentum is None else momentum
        data = x._data
        axes = (0,) + tuple(range(2, data.ndim))
        mu, xc, var, rstd = _raw_stats(data, axes, eps)
        shape = (1, -1) + (1,) * (data.ndim - 2)
        out = xc * rstd
        if weight is not None:
            out *= weight._data.reshape(shape)
        if bias is not None:
            out += bias._data.reshape(shape)
        if running_mean is not None or running_var is not None:
            n = data.size // data.shape[1]
            _update(running_mean, mu.reshape(-1), momentum)
            _update(running_var, var.reshape(-1) * (n / max(n - 1, 1)), momentum)
        ctx.axes, ctx.eps, ctx.shape = axes, eps, shape
        ctx.save_for_backward(x, weight, _make(mu), _make(rstd))
        return out

    @staticmethod
    def backward(ctx, g):
        x, weight, mu, rstd = ctx.saved_tensors
        nx, nw, nb = ctx.needs_input_grad[:3]
        axes = ctx.axes
        if not is_grad_enabled():
            w = None if weight is None else weight._data.reshape(ctx.shape)
            return _raw_backward(g, x, w, mu, rstd, axes, axes, (nx, nw, nb)) + \
                (None,) * 5
        w = None if weight is None else weight.reshape(ctx.shape)
        return _graph_backward(ctx, g, x, w, mu, rstd, axes, (nx, nw, nb)) + (None,) * 5


def _update(stat, value, momentum):
    """``stat = (1 - momentum) * stat + momentum * value`` in place (a buffer, no graph)."""
    if stat is None:
        return
    d = stat._data
    d *= 1 - momentum
    d += (momentum * value).astype(d.dtype, copy=False)
    stat._version[0] += 1


def _per_channel_size(x):
    n = 1
    for i, s in enumerate(x.shape):
        if i != 1:
            n *= s
    return n


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5, *, _num_batches=None) -> Tensor:
    """Normalise each channel (dim 1) over the batch and spatial dims, then scale and shift.

    Training uses the batch statistics and updates ``running_mean``/``running_var`` in place
    (``(1 - momentum) * running + momentum * batch``, unbiased batch variance); evaluation
    uses the running statistics.
    Shapes: input (N, C) or (N, C, *); running stats, weight and bias (C,).
    Example: ``F.batch_norm(x, None, None, training=True)``.
    (``_num_batches``, private: the BatchNorm modules' counter, counted up in training, with
    ``momentum=None`` the cumulative average; see the BatchNorm primitive.)
    """
    check_tensor(input, "batch_norm")
    if input.ndim < 2:
        raise ValueError(f"batch_norm(): expected an input of at least 2 dims (N, C, ...), got "
                         f"shape {list(input.shape)}")
    c = input.shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != (c,):
            raise RuntimeError(f"batch_norm(): expected {name} of shape [{c}] (the input's "
                               f"channel count), got {list(t.shape)}")
    if not training:
        if running_mean is None or running_var is None:
            raise RuntimeError("batch_norm(): running_mean and running_var must be defined in "
                               "evaluation mode")
        shape = (1, c) + (1,) * (input.ndim - 2)
        scale = (running_var + eps).rsqrt()
        if weight is not None:
            scale = scale * weight
        shift = -running_mean * scale
        if bias is not None:
            shift = shift + bias
        return input * scale.reshape(shape) + shift.reshape(shape)
    if _per_channel_size(input) <= 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input "
                         f"size {list(input.shape)}")
    return BatchNorm.apply(input, weight, bias, running_mean, running_var, momentum, eps,
                           _num_batches)


def _affine(out, weight, bias):
    shape = (1, -1) + (1,) * (out.ndim - 2)
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5) -> Tensor:
    """Normalise each group of ``C / num_groups`` channels over (channels, spatial), per sample;
    then a per-channel scale and shift.

    Shapes: input (N, C, *), weight and bias (C,). Example: ``F.group_norm(x, 4)``.
    """
    check_tensor(input, "group_norm")
    if input.ndim < 2:
        raise RuntimeError(f"group_norm(): expected an input of at least 2 dims (N, C, ...), "
                           f"got shape {list(input.shape)}")
    n, c = input.shape[:2]
    if num_groups <= 0 or c % num_groups:
        raise RuntimeError(f"group_norm(): expected number of channels in input to be divisible "
                           f"by num_groups, but got input of shape {list(input.shape)} and "
                           f"num_groups={num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != (c,):
            raise RuntimeError(f"group_norm(): expected {name} of shape [{c}], got "
                               f"{list(t.shape)}")
    grouped = input.reshape(n, num_groups, -1)
    out = layer_norm(grouped, (grouped.shape[-1],), None, None, eps).reshape(input.shape)
    return _affine(out, weight, bias)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5) -> Tensor:
    """Normalise each (sample, channel) plane over its spatial dims.

    With ``use_input_stats`` the plane's own statistics are used and the running stats (when
    given) move towards their mean over the batch; otherwise the running stats are used.
    Shapes: input (N, C, *), running stats, weight and bias (C,).
    """
    check_tensor(input, "instance_norm")
    if input.ndim < 3:
        raise ValueError(f"instance_norm(): expected an input of at least 3 dims (N, C, L...), "
                         f"got shape {list(input.shape)}")
    if not use_input_stats:
        return batch_norm(input, running_mean, running_var, weight, bias, False, momentum, eps)
    n, c = input.shape[:2]
    spatial = 1
    for s in input.shape[2:]:
        spatial *= s
    if spatial <= 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size "
                         f"{list(input.shape)}")
    flat = input.reshape(n, c, spatial)
    if running_mean is not None or running_var is not None:
        data = flat._data
        mean = data.mean(axis=(0, 2))
        var = data.var(axis=2, ddof=1).mean(axis=0)
        _update(running_mean, mean, momentum)
        _update(running_var, var, momentum)
    out = layer_norm(flat, (spatial,), None, None, eps).reshape(input.shape)
    return _affine(out, weight, bias)


def rms_norm(input, normalized_shape, weight=None, eps=None) -> Tensor:
    """``input / sqrt(mean(input**2) + eps) * weight`` over the trailing ``normalized_shape``
    dims; ``eps`` defaults to the machine epsilon of the dtype computed in (as PyTorch): the
    input's, float32's for 16-bit and narrower inputs.

    Example: ``F.rms_norm(x, (x.shape[-1],))``.
    """
    check_tensor(input, "rms_norm")
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else \
        tuple(normalized_shape)
    if len(shape) > input.ndim or tuple(input.shape[input.ndim - len(shape):]) != shape:
        raise RuntimeError(f"rms_norm(): given normalized_shape={list(shape)}, expected input "
                           f"with shape [*, {', '.join(map(str, shape))}], but got input of "
                           f"size {list(input.shape)}")
    if weight is not None and tuple(weight.shape) != shape:
        raise RuntimeError(f"rms_norm(): expected weight of shape {list(shape)}, got "
                           f"{list(weight.shape)}")
    # a composite: low-precision inputs compute in float32 here (primitives declare _widen16)
    x = input.to(dt.float32) if input.dtype in NARROW else input
    if eps is None:  # of the dtype computed in: float32's for 16-bit input, as torch's kernel
        eps = float(dt.finfo(x.dtype).eps)
    axes = tuple(range(x.ndim - len(shape), x.ndim))
    out = x * ((x * x).mean(axes, keepdim=True) + eps).rsqrt()
    out = out.to(input.dtype)
    return out if weight is None else out * weight


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0) -> Tensor:
    """Normalise each channel by the sum of squares of ``size`` neighbouring channels:
    ``x / (k + alpha / size * sum(x**2))**beta`` (zero-padded at the channel ends).

    Shapes: input (N, C, *) with at least 3 dims.
    """
    check_tensor(input, "local_response_norm")
    if input.ndim < 3:
        raise ValueError(f"local_response_norm(): expected 3D or higher dimensional input, got "
                         f"{input.ndim}D")
    if input.numel() == 0:
        return input
    sq = (input * input).unsqueeze(1)
    if input.ndim == 3:
        div = pad(sq, (0, 0, size // 2, (size - 1) // 2))
        div = avg_pool2d(div, (size, 1), stride=1).squeeze(1)
    else:
        n, c = input.shape[:2]
        div = sq.reshape(n, 1, c, input.shape[2], -1)
        div = pad(div, (0, 0, 0, 0, size // 2, (size - 1) // 2))
        div = avg_pool3d(div, (size, 1, 1), stride=1).squeeze(1).reshape(input.shape)
    return input / (div * alpha + k) ** beta


def normalize(input, p=2.0, dim=1, eps=1e-12) -> Tensor:
    """``input / max(||input||_p, eps)`` along ``dim``.

    Example: ``F.normalize(tensorix.tensor([[3., 4.]]))`` is ``[[0.6, 0.8]]``.
    """
    check_tensor(input, "normalize")
    norm = input.norm(p, dim, keepdim=True)
    return input / norm.clamp_min(eps).expand_as(input)
