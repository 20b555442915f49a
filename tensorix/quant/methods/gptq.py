"""GPTQ (Frantar, Ashkboos, Hoefler, Alistarh, "GPTQ: Accurate Post-Training Quantization for
Generative Pre-trained Transformers", ICLR 2023; reference code IST-DASLab/gptq).

Each linear layer's weight W (out, in) is quantized one input column at a time; after each
column the rounding error is spread over the columns not yet quantized, weighted by the inverse
of the layer's Hessian H = 2/n sum x x^T over calibration inputs, which minimises the layer's
output error ||X W^T - X Q^T||^2 to second order. The work is batched ("lazy batch updates"):
a block of ``block_size`` columns updates only itself, then the rest of W once. H^-1 is used
through its upper Cholesky factor, after damping H by ``damp`` times its mean diagonal.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...backend import array_module
from ...tensor import _make
from ..flows import _replace
from ..layers import QuantizedLinear
from ..quantizer import QScheme
from ._calib import linear_layers, sequential_, set_weight
from ._grid import block_qparams, fake_quant_with, weight_scheme

__all__ = ["GPTQResult", "gptq_quantize", "gptq_"]


@dataclass
class GPTQResult:
    """One layer's GPTQ output: ``weight`` the quantize-dequantized weight (out, in) in the
    original column order; ``scales``/``zero_points`` (out, groups) per group of columns of the
    original order (one column for per-channel, shape () for per-tensor); ``perm`` the
    column order used (act-order) or None."""

    weight: object
    scales: object
    zero_points: object
    perm: object = None


def _check(weight, hessian, scheme, damp):
    if weight.ndim != 2:
        raise ValueError(f"gptq_quantize(): argument 'weight' must be 2-d (out, in), got shape "
                         f"{tuple(weight.shape)}")
    cols = weight.shape[1]
    if tuple(hessian.shape) != (cols, cols):
        raise ValueError(f"gptq_quantize(): argument 'hessian' must have shape ({cols}, {cols}) "
                         f"for a weight of shape {tuple(weight.shape)}, got "
                         f"{tuple(hessian.shape)}")
    if scheme.granularity == "per_group" and cols % scheme.group_size:
        raise ValueError(f"gptq_quantize(): group_size {scheme.group_size} does not divide the "
                         f"input dimension {cols}")
    if not damp > 0:
        raise ValueError(f"gptq_quantize(): argument 'damp' must be > 0, got {damp}")


def _inverse_cholesky(h, damp, xp):
    """Upper Cholesky factor U of (H + damp * mean(diag H) * I)^-1, so (H')^-1 = U^T U."""
    n = h.shape[0]
    h = h + damp * float(xp.mean(xp.diag(h))) * xp.eye(n, dtype=h.dtype)
    try:
        lower_inv = xp.linalg.inv(xp.linalg.cholesky(h))
        return xp.linalg.cholesky(lower_inv.T @ lower_inv).T
    except Exception as err:  # LinAlgError on numpy and cupy alike
        raise ValueError(f"gptq_quantize(): the damped Hessian is not positive definite "
                         f"(damp={damp}); raise 'damp' or add calibration data") from err


def gptq_quantize(weight, hessian, scheme: QScheme | None = None, *, block_size: int = 128,
                  damp: float = 0.01, act_order: bool = False) -> GPTQResult:
    """GPTQ-quantize one weight (a backend array, (out, in)) given its input Hessian
    ``hessian`` (in, in) (see :class:`~tensorix.quant.methods.InputStats`).

    ``scheme``: a :class:`~tensorix.quant.QScheme` (default int4 affine, groups of 128).
    Groups take their parameters when their first column is reached (from the updated
    weights), as in the reference; with ``act_order`` columns go in order of decreasing
    Hessian diagonal and group parameters come from the original weights ("static groups"),
    so a group is still a run of consecutive input channels. Returns a :class:`GPTQResult`.

    Example::

        >>> rng = np.random.default_rng(0)
        >>> x, w = rng.standard_normal((512, 256)), rng.standard_normal((64, 256))
        >>> r = gptq_quantize(w, 2 * x.T @ x / 512)
        >>> r.weight.shape, r.scales.shape
        ((64, 256), (64, 2))
    """
    scheme = scheme or weight_scheme()
    _check(weight, hessian, scheme, damp)
    xp = array_module(weight)
    w = weight.astype(xp.float64)  # a copy: updated in place below
    h = hessian.astype(xp.float64)
    rows, cols = w.shape
    dead = xp.diag(h) == 0  # an input that never fires: any value is exact, use 0
    h[dead, dead] = 1.0
    w[:, dead] = 0.0
    g = scheme.group_size if scheme.granularity == "per_group" else cols
    perm = None
    if act_order:
        perm = xp.argsort(-xp.diag(h), kind="stable")
        params = [block_qparams(w[:, k:k + g], scheme) for k in range(0, cols, g)]
        w, h = w[:, perm], h[perm][:, perm]
    elif scheme.granularity != "per_group":
        params = [block_qparams(w, scheme)]  # one set for the whole weight, from the start
    else:
        params = [None] * (cols // g)
    u = _inverse_cholesky(h, damp, xp)
    # blocks hold whole groups, so a group's parameters see its columns' current values
    step = max(g, block_size // g * g) if scheme.granularity == "per_group" else block_size
    q = xp.empty_like(w)
    for i1 in range(0, cols, step):
        i2 = min(i1 + step, cols)
        w1, u1 = w[:, i1:i2], u[i1:i2, i1:i2]
        err = xp.empty_like(w1)
        for i in range(i2 - i1):
            col = i1 + i
            orig = int(perm[col]) if perm is not None else col
            if params[orig // g] is None:
                params[orig // g] = block_qparams(w1[:, i:i + g], scheme)
            scale, zp = params[orig // g]
            qc = fake_quant_with(w1[:, i:i + 1], scale, zp, scheme)
            q[:, col:col + 1] = qc
            e = (w1[:, i:i + 1] - qc) / u1[i, i]
            w1[:, i:] -= e @ u1[i:i + 1, i:]  # spread the error over the block's rest
            err[:, i:i + 1] = e
        w[:, i2:] -= err @ u[i1:i2, i2:]  # the lazy update of everything after the block
    if perm is not None:
        q = q[:, xp.argsort(perm)]
    scales = xp.concatenate([p[0].reshape(rows, -1) for p in params], 1) \
        if scheme.granularity != "per_tensor" else params[0][0]
    zps = xp.concatenate([p[1].reshape(rows, -1) for p in params], 1) \
        if scheme.granularity != "per_tensor" else params[0][1]
    return GPTQResult(q.astype(weight.dtype), scales, zps, perm)


def _qparams_shaped(r: GPTQResult, weight, scheme):
    """The result's scales/zero points in the shapes compute_qparams gives for ``weight``."""
    rows, cols = weight.shape
    if scheme.granularity == "per_tensor":
        return _make(r.scales), _make(r.zero_points)
    shape = (rows, cols // scheme.group_size, 1) if scheme.granularity == "per_group" else \
        (rows, 1)
    return _make(r.scales.reshape(shape)), _make(r.zero_points.reshape(shape))


def gptq_(model, calibration, scheme: QScheme | None = None, *, skip=(), block_size: int = 128,
          damp: float = 0.01, act_order: bool = False, pack: bool = True) -> dict:
    """GPTQ-quantize every ``nn.Linear`` of ``model`` in place, layer after layer in module
    order, each from the Hessian of its inputs over ``calibration`` (an iterable of model
    inputs, e.g. (B, T) token ids) in the partly quantized model.

    With ``pack`` (default) each layer becomes a :class:`~tensorix.quant.QuantizedLinear`
    holding the integer codes (two per byte at 4 bits) with GPTQ's group scales; without, the
    ``nn.Linear`` keeps its kind and its weight becomes the quantize-dequantized values (the
    same function). ``skip``: layer names (or prefixes) left in float, e.g. ``("head",)``.
    Returns ``{layer name: GPTQResult}``.

    Example::

        results = gptq_(model, [ids[i:i + 8] for i in range(0, 32, 8)], skip=("head",))
    """
    scheme = scheme or weight_scheme()
    layers = linear_layers(model, skip)

    def quantize_layer(name, layer, stats):
        r = gptq_quantize(layer.weight._data, stats.hessian, scheme, block_size=block_size,
                          damp=damp, act_order=act_order)
        set_weight(layer, r.weight)
        if pack:
            _replace(model, name, QuantizedLinear.from_float(
                layer, scheme, weight_qparams=_qparams_shaped(r, r.weight, scheme)))
        return r

    return sequential_(model, calibration, layers, quantize_layer, op="gptq_", hessian=True)
