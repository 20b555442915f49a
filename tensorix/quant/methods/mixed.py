"""Sensitivity-guided mixed precision (in the spirit of HAWQ / "mixed-precision search by
layer sensitivity"): measure how much the model's output moves when one layer alone is
quantized at each candidate bit width, then give the bits to the layers that need them most
under an average-bits budget.

The search is greedy on the knapsack "error drop per extra bit": start every layer at its
cheapest scheme and repeatedly upgrade the layer whose next scheme buys the largest drop in
measured sensitivity per extra weight bit, while the budget allows. Sensitivities are measured
one layer at a time (their interactions are ignored, as in the papers' first-order view).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..quantizer import QScheme
from ._calib import as_batches, linear_layers, run_model, set_weight
from ._grid import fake_quant_array

__all__ = ["MixedPrecisionPlan", "layer_sensitivity", "mixed_precision_search"]


@dataclass
class MixedPrecisionPlan:
    """The search's answer: ``assignment`` {layer: scheme name}, the weight-count-weighted
    ``average_bits``, and the summed ``sensitivity`` of the chosen schemes."""

    assignment: dict
    average_bits: float
    sensitivity: float


def layer_sensitivity(model, calibration, schemes: dict, *, skip=()) -> dict:
    """``{layer: {scheme name: sensitivity}}``: the mean squared change of the model's outputs
    over ``calibration`` when only that ``nn.Linear``'s weight is quantized (round to nearest)
    with ``schemes[name]`` (a :class:`~tensorix.quant.QScheme`), relative to the outputs'
    mean square. The model is left as it was.

    Example::

        s = layer_sensitivity(model, batches, {"int4": weight_scheme(4, 128),
                                               "int8": QScheme(8, True, "per_channel")})
    """
    batches = as_batches(calibration, "layer_sensitivity")
    if not schemes:
        raise ValueError("layer_sensitivity(): argument 'schemes' is empty")
    reference = run_model(model, batches)
    power = sum(float((r ** 2).mean().item()) for r in reference)
    result = {}
    for name, layer in linear_layers(model, skip).items():
        original = layer.weight._data.copy()
        result[name] = {}
        try:
            for label, scheme in schemes.items():
                set_weight(layer, fake_quant_array(original, scheme))
                outs = run_model(model, batches)
                err = sum(float(((o - r) ** 2).mean().item()) for o, r in zip(outs, reference))
                result[name][label] = err / power
        finally:
            set_weight(layer, original)
    return result


def _bits(scheme: QScheme) -> int:
    return scheme.bits_per_value


def mixed_precision_search(sensitivity: dict, schemes: dict, sizes: dict,
                           budget_bits: float) -> MixedPrecisionPlan:
    """Pick a scheme per layer with the weight-count-weighted average bits per weight at most
    ``budget_bits``, greedily minimising the summed ``sensitivity`` (from
    :func:`layer_sensitivity`). ``sizes``: {layer: number of weights}.

    Example::

        >>> sens = {"a": {"int4": 0.5, "int8": 0.01}, "b": {"int4": 0.02, "int8": 0.01}}
        >>> schemes = {"int4": QScheme(4), "int8": QScheme(8)}
        >>> mixed_precision_search(sens, schemes, {"a": 100, "b": 100}, 6).assignment
        {'a': 'int8', 'b': 'int4'}
    """
    by_bits = sorted(schemes, key=lambda k: _bits(schemes[k]))
    total = sum(sizes[name] for name in sensitivity)
    if budget_bits < _bits(schemes[by_bits[0]]):
        raise ValueError(f"mixed_precision_search(): budget_bits {budget_bits} is below the "
                         f"cheapest scheme ({_bits(schemes[by_bits[0]])} bits)")
    level = {name: 0 for name in sensitivity}
    used = sum(sizes[n] * _bits(schemes[by_bits[0]]) for n in sensitivity)
    while True:
        best = None
        for name, i in level.items():
            if i + 1 == len(by_bits):
                continue
            now, nxt = by_bits[i], by_bits[i + 1]
            extra = sizes[name] * (_bits(schemes[nxt]) - _bits(schemes[now]))
            if used + extra > budget_bits * total:
                continue
            gain = (sensitivity[name][now] - sensitivity[name][nxt]) / max(extra, 1)
            if best is None or gain > best[0]:
                best = (gain, name, extra)
        if best is None or best[0] <= 0:
            break
        level[best[1]] += 1
        used += best[2]
    assignment = {name: by_bits[i] for name, i in level.items()}
    return MixedPrecisionPlan(assignment, used / total,
                              sum(sensitivity[n][s] for n, s in assignment.items()))
