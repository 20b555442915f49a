"""AWQ (Lin et al., "AWQ: Activation-aware Weight Quantization for LLM Compression and
Acceleration", MLSys 2024, arXiv 2306.00978; reference code mit-han-lab/llm-awq), as spec
numerics.md section 7.2 states it.

A weight's input channels that meet large activations matter most. AWQ scales those columns
up by s before weight-only quantization and the activations down by 1/s (folded into the
previous op), which shrinks their relative rounding error: the effective weight is
Q(W diag(s)) diag(1/s). s = s_x^alpha with s_x the mean |x| per input channel, alpha searched
on the grid {0, 1/20, ..., 19/20} for the lowest output error on calibration tokens; alpha = 0
is plain round-to-nearest, so AWQ never does worse than RTN on those tokens.
"""

from __future__ import annotations

from dataclasses import dataclass

from ... import nn
from ...autograd import no_grad
from ...backend import array_module
from ...tensor import _make
from ..flows import _replace
from ..layers import QuantizedLinear
from ..quantizer import QScheme
from ._calib import as_batches, collect_input_stats, linear_layers, sequential_, set_weight
from ._grid import fake_quant_array, weight_scheme

__all__ = ["AWQResult", "awq_scales", "awq_search", "awq_clip", "awq_", "awq_fold_"]


@dataclass
class AWQResult:
    """One layer's AWQ output: ``weight`` = Q(W diag(s)) diag(1/s) (out, in), ``scales`` s
    (in,), the chosen ``alpha`` and ``losses`` (the output MSE at each grid point)."""

    weight: object
    scales: object
    alpha: float
    losses: list


def awq_scales(x_abs_mean, alpha: float):
    """s = max(s_x^alpha, 1e-4) / sqrt(max(s) min(s)) for per-channel mean |x| ``s_x`` (in,)
    (the normalisation keeps s centred on 1 in log scale; alpha = 0 gives s = 1)."""
    xp = array_module(x_abs_mean)
    s = xp.maximum(x_abs_mean ** alpha, 1e-4)
    return s / xp.sqrt(s.max() * s.min())


def awq_search(weight, x, scheme: QScheme | None = None, *, x_abs_mean=None,
               n_grid: int = 20) -> AWQResult:
    """Search AWQ's per-input-channel scale for ``weight`` (out, in) on calibration inputs
    ``x`` (tokens, in) (backend arrays). ``x_abs_mean`` (in,) defaults to mean |x| over
    ``x``; pass it when it was gathered over more tokens than ``x`` holds. ``scheme`` defaults
    to int4 affine in groups of 128. Loss: mean((x W^T - x Q^T)^2) over the grid
    alpha = i / n_grid, i = 0 .. n_grid - 1 (alpha = 1 excluded, as in llm-awq).

    Example::

        >>> rng = np.random.default_rng(0)
        >>> w, x = rng.standard_normal((32, 64)), rng.standard_normal((512, 64))
        >>> x[:, [3, 17]] *= 25
        >>> r = awq_search(w, x, weight_scheme(3, 32))
        >>> r.losses[0] > min(r.losses)      # alpha = 0 (plain RTN) is beaten
        True
    """
    scheme = scheme or weight_scheme()
    if weight.ndim != 2 or x.ndim != 2 or x.shape[1] != weight.shape[1]:
        raise ValueError(f"awq_search(): 'weight' (out, in) and 'x' (tokens, in) must agree on "
                         f"in, got shapes {tuple(weight.shape)} and {tuple(x.shape)}")
    if x.shape[0] == 0:
        raise ValueError("awq_search(): argument 'x' holds no calibration tokens")
    xp = array_module(weight)
    w, x = weight.astype(xp.float64), x.astype(xp.float64)
    s_x = xp.abs(x).mean(0) if x_abs_mean is None else x_abs_mean.astype(xp.float64)
    reference = x @ w.T
    best = None
    losses = []
    for i in range(n_grid):
        alpha = i / n_grid
        s = awq_scales(s_x, alpha)
        q = fake_quant_array(w * s, scheme) / s
        loss = float(((x @ q.T - reference) ** 2).mean())
        losses.append(loss)
        if best is None or loss < best[0]:
            best = (loss, alpha, s, q)
    _, alpha, s, q = best
    return AWQResult(q.astype(weight.dtype), s, alpha, losses)


def awq_clip(weight, x, scheme: QScheme | None = None, *, n_grid: int = 10,
             max_shrink: float = 0.5, tokens: int = 512):
    """AWQ's ``auto_clip`` (llm-awq): for each output row and group of ``scheme``, clamp the
    weights to +-r max|w| for r = 1, 0.95, ... (``n_grid`` steps down to 1 - ``max_shrink``),
    fake-quantize, and keep the r whose group's partial dot products with the inputs ``x``
    (first ``tokens`` rows) change least. ``weight`` (out, in), ``x`` (tokens, in); returns the
    clipped float weight (quantize it after). Groups follow ``scheme`` (whole rows when not per
    group).

    Example::

        w_clipped = awq_clip(w, x, weight_scheme(4, 128))
    """
    scheme = scheme or weight_scheme()
    xp = array_module(weight)
    rows, cols = weight.shape
    g = scheme.group_size if scheme.granularity == "per_group" else cols
    w = weight.astype(xp.float64).reshape(rows, cols // g, g)
    xs = x[:tokens].astype(xp.float64).reshape(-1, cols // g, g)
    reference = xp.einsum("ngk,ogk->nog", xs, w)
    top = xp.abs(w).max(-1, keepdims=True)
    best_err = xp.full((rows, cols // g, 1), xp.inf)
    best = w
    for i in range(n_grid):
        r = 1.0 - max_shrink * i / n_grid
        clipped = xp.clip(w, -r * top, r * top)
        q = fake_quant_array(clipped.reshape(rows, cols), scheme).reshape(w.shape)
        err = ((xp.einsum("ngk,ogk->nog", xs, q) - reference) ** 2).mean(0)[..., None]
        better = err < best_err
        best = xp.where(better, clipped, best)
        best_err = xp.where(better, err, best_err)
    return best.reshape(rows, cols).astype(weight.dtype)


def awq_(model, calibration, scheme: QScheme | None = None, *, skip=(), tokens: int = 4096,
         n_grid: int = 20, clip: bool = False) -> dict:
    """AWQ-quantize every ``nn.Linear`` of ``model`` in place (weights become
    Q(W diag(s)) diag(1/s), i.e. the scale already folded), layer after layer, searching each
    on up to ``tokens`` calibration tokens of its inputs (mean |x| over all of them).
    ``calibration``: an iterable of model inputs; ``skip``: names (or prefixes) left in
    float; ``clip``: also search clipping ranges on the scaled weight (:func:`awq_clip`).
    Returns ``{layer name: AWQResult}``.

    Folding 1/s into the previous op instead (a LayerNorm's weight and bias, the previous
    linear's rows) gives the same function with a plain quantized weight Q(W diag(s)); the
    model here keeps the product, which is what it computes either way.

    Example::

        results = awq_(model, calibration_batches, skip=("head",))
        {name: r.alpha for name, r in results.items()}
    """
    scheme = scheme or weight_scheme()

    def quantize_layer(name, layer, stats):
        x = stats.tokens_sample()
        r = awq_search(layer.weight._data, x, scheme, x_abs_mean=stats.abs_mean,
                       n_grid=n_grid)
        if clip:  # clip the scaled weight W diag(s) against the scaled inputs x / s
            w = awq_clip(layer.weight._data.astype(x.dtype) * r.scales, x / r.scales, scheme)
            r.weight = (fake_quant_array(w, scheme) / r.scales).astype(r.weight.dtype)
        set_weight(layer, r.weight)
        return r

    return sequential_(model, calibration, linear_layers(model, skip), quantize_layer,
                       op="awq_", keep=tokens)


def _fold_target(modules, prev, names, op):
    """The previous op (a LayerNorm/RMSNorm with a weight, or a Linear) and its linears,
    checked: 1/s must be foldable into it and every linear must read its output."""
    p = modules.get(prev)
    if isinstance(p, (nn.LayerNorm, nn.RMSNorm)) and getattr(p, "weight", None) is not None:
        width = p.weight.shape[-1]
    elif type(p) is nn.Linear:
        width = p.out_features
    else:
        raise ValueError(f"{op}: {prev!r} must name a LayerNorm or RMSNorm with a weight, or an "
                         f"nn.Linear, to fold the scales into; got "
                         f"{type(p).__name__ if p is not None else 'no such module'}")
    layers = {}
    for n in names:
        lin = modules.get(n)
        if type(lin) is not nn.Linear or lin.in_features != width:
            raise ValueError(f"{op}: {n!r} must be an nn.Linear reading the {width} outputs of "
                             f"{prev!r}")
        layers[n] = lin
    return p, layers


def _divide_outputs(prev, s) -> None:
    """prev's outputs divided by s (per channel): a norm's weight and bias, a linear's rows
    and bias."""
    with no_grad():
        for name in ("weight", "bias"):
            t = getattr(prev, name, None)
            if t is None:
                continue
            d = t._data.astype(s.dtype)
            d = d / (s if d.ndim == 1 else s[:, None])
            t.copy_(_make(d.astype(t._data.dtype)))


def awq_fold_(model, calibration, groups: dict, scheme: QScheme | None = None, *,
              tokens: int = 4096, n_grid: int = 20, quantize: bool = True) -> dict:
    """AWQ as AutoAWQ applies it: the scales folded into the previous op, the weights stored
    as real int4 (:class:`~tensorix.quant.QuantizedLinear`, two codes per byte).

    ``groups``: ``{previous op name: [names of the nn.Linear layers reading its output]}``,
    the previous op a LayerNorm / RMSNorm (its weight and bias are divided by s) or an
    nn.Linear (its rows and bias); the layers of one group share one s, searched on their
    weights stacked (AutoAWQ's q/k/v). Groups run in order, each searched on the model as it
    stands (earlier groups' scales applied, weights still float); then, with ``quantize``,
    every linear of the groups becomes ``QuantizedLinear(Q(W diag(s)))`` - the function of
    :func:`awq_`'s ``Q(W diag(s)) diag(1/s)`` up to float rounding, with a weight 8x smaller
    than float32. ``quantize=False`` leaves the scaled float model (the same function as
    before, to rounding) for another quantizer. Returns ``{previous op name: AWQResult}``.

    Example (a pre-norm transformer block)::

        awq_fold_(model, batches, {"blocks.0.ln1": ["blocks.0.attn.qkv"],
                                   "blocks.0.ln2": ["blocks.0.mlp.0"]})
    """
    scheme = scheme or weight_scheme()
    batches = as_batches(calibration, "awq_fold_()")
    modules = dict(model.named_modules())
    checked = [(prev, *_fold_target(modules, prev, names, "awq_fold_()"))
               for prev, names in groups.items()]
    results = {}
    for prev_name, prev, layers in checked:
        first = next(iter(layers))
        stats = collect_input_stats(model, {first: layers[first]}, batches, keep=tokens)[first]
        x = stats.tokens_sample()
        w = array_module(x).concatenate([lin.weight._data.astype(x.dtype)
                                         for lin in layers.values()], 0)
        r = awq_search(w, x, scheme, x_abs_mean=stats.abs_mean, n_grid=n_grid)
        _divide_outputs(prev, r.scales)
        for lin in layers.values():
            set_weight(lin, lin.weight._data.astype(x.dtype) * r.scales)
        results[prev_name] = r
    if quantize:
        for _, _, layers in checked:
            for name, lin in layers.items():
                _replace(model, name, QuantizedLinear.from_float(lin, scheme))
    return results
