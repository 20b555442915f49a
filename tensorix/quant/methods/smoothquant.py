"""SmoothQuant (Xiao, Lin, Seznec, Wu, Demouth, Han, "SmoothQuant: Accurate and Efficient
Post-Training Quantization for Large Language Models", ICML 2023; reference code
mit-han-lab/smoothquant).

Activations of LLMs have a few channels with outliers 10-100x the rest, which ruin a
per-tensor int8 scale, while weights are easy to quantize. SmoothQuant divides each input
channel j of the activations by s_j = max|X_j|^alpha / max|W_:,j|^(1 - alpha) and multiplies
the weight's column j by it (the product is unchanged), migrating the difficulty from the
activations to the weights; alpha = 0.5 balances them. Then both go to int8 (W8A8): weights per
output channel, activations per tensor with a static scale from calibration (SmoothQuant-O3) or
per token, dynamically.
"""

from __future__ import annotations

from ...backend import array_module
from ..quantizer import QScheme
from ._calib import as_batches, collect_input_stats, linear_layers
from ._linear import quantize_linears_

__all__ = ["smooth_scales", "smoothquant_"]


def smooth_scales(act_abs_max, weight, alpha: float = 0.5):
    """s (in,) = max|X_j|^alpha / max_i |W_ij|^(1 - alpha), both floored at 1e-5 as in the
    reference. ``act_abs_max`` (in,) per input channel over calibration; ``weight`` (out, in).

    Example::

        >>> smooth_scales(np.array([16.0, 1.0]), np.array([[1.0, 4.0]]))
        array([4. , 0.5])
    """
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"smooth_scales(): argument 'alpha' must be in [0, 1], got {alpha}")
    if act_abs_max.shape != (weight.shape[1],):
        raise ValueError(f"smooth_scales(): 'act_abs_max' must have shape ({weight.shape[1]},) "
                         f"for a weight of shape {tuple(weight.shape)}, got "
                         f"{tuple(act_abs_max.shape)}")
    xp = array_module(weight)
    w_max = xp.maximum(xp.abs(weight).max(0), 1e-5)
    a_max = xp.maximum(act_abs_max, 1e-5)
    return xp.maximum(a_max ** alpha / w_max ** (1.0 - alpha), 1e-5)


def smoothquant_(model, calibration, alpha: float = 0.5, *,
                 weight_scheme: QScheme | None = None, act_scheme: QScheme | None = None,
                 skip=()) -> dict:
    """SmoothQuant W8A8: measure each ``nn.Linear``'s input ranges over ``calibration`` (an
    iterable of model inputs) in the float model, smooth with strength ``alpha``, then swap the
    layers for :class:`ActQuantLinear` with int8 per-channel weights and int8 activations
    (default per tensor, static from the same calibration data). ``alpha=0`` is plain W8A8.
    Returns ``{name: ActQuantLinear}``.

    Example::

        smoothquant_(model, calibration_batches, alpha=0.5, skip=("head",))
    """
    batches = as_batches(calibration, "smoothquant_")
    weight_scheme = weight_scheme or QScheme(8, True, "per_channel", axis=0)
    act_scheme = act_scheme or QScheme(8, True, "per_tensor")
    layers = linear_layers(model, skip)
    stats = collect_input_stats(model, layers, batches)
    smooth = {name: smooth_scales(stats[name].abs_max.astype(layer.weight._data.dtype),
                                  layer.weight._data, alpha)
              for name, layer in layers.items()}
    return quantize_linears_(model, weight_scheme, act_scheme, smooth=smooth,
                             calibration=batches, skip=skip)
