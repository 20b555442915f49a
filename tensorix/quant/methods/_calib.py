"""Calibration plumbing shared by the methods: which layers to quantize, and the statistics
of each layer's inputs gathered over calibration batches (GPTQ's Hessian, AWQ's mean |x|,
SmoothQuant's max |x|, a token sample for output-error searches).

Everything works on the backend arrays behind the tensors (NumPy or CuPy), in float64 so that
a Hessian summed over many tokens keeps its small eigenvalues.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ... import nn
from ...autograd import no_grad
from ...backend import array_module
from ...tensor import _make

__all__ = ["InputStats", "linear_layers", "collect_input_stats", "as_batches", "set_weight",
           "sequential_", "run_model"]


@dataclass
class InputStats:
    """Statistics of one layer's inputs, flattened to (tokens, in_features).

    ``hessian`` is GPTQ's H = 2/n sum x x^T (in, in); ``abs_mean``/``abs_max`` are per input
    channel (in,); ``sample`` holds the first ``keep`` tokens (keep, in).
    """

    tokens: int = 0
    hessian: object = None
    abs_sum: object = None
    abs_max: object = None
    sample: list = field(default_factory=list)
    kept: int = 0

    @property
    def abs_mean(self):
        return self.abs_sum / self.tokens

    def add(self, x, *, hessian: bool, keep: int) -> None:
        xp = array_module(x)
        x = x.reshape(-1, x.shape[-1]).astype(xp.float64)
        n = x.shape[0]
        if hessian:
            # running mean of 2 x x^T, rescaled as tokens arrive (the GPTQ reference's update)
            h = 2.0 * (x.T @ x)
            self.hessian = h / n if self.hessian is None else \
                self.hessian * (self.tokens / (self.tokens + n)) + h / (self.tokens + n)
        a = xp.abs(x)
        self.abs_sum = a.sum(0) if self.abs_sum is None else self.abs_sum + a.sum(0)
        m = a.max(0)
        self.abs_max = m if self.abs_max is None else xp.maximum(self.abs_max, m)
        if self.kept < keep:
            take = x[:keep - self.kept]
            self.sample.append(take)
            self.kept += take.shape[0]
        self.tokens += n

    def tokens_sample(self):
        xp = array_module(self.sample[0])
        return xp.concatenate(self.sample, 0)


def linear_layers(model, skip=()) -> dict:
    """``{qualified name: nn.Linear}`` in module order, leaving out names in ``skip`` (a
    name or a prefix of one, e.g. ``"head"``)."""
    return {name: m for name, m in model.named_modules()
            if isinstance(m, nn.Linear) and not any(name == s or name.startswith(s + ".")
                                                    for s in skip)}


def as_batches(calibration, op: str) -> list:
    """The calibration inputs as a list, refusing an empty one (nothing to measure)."""
    batches = list(calibration) if calibration is not None else []
    if not batches:
        raise ValueError(f"{op}: calibration data is empty; pass an iterable of at least one "
                         "batch of model inputs")
    return batches


def run_model(model, batches) -> list:
    """Run ``model`` in eval mode without grad over ``batches`` (a tuple is unpacked); returns
    the outputs."""
    was_training = model.training
    model.eval()
    try:
        with no_grad():
            return [model(*batch) if isinstance(batch, tuple) else model(batch)
                    for batch in batches]
    finally:
        model.train(was_training)


def collect_input_stats(model, layers: dict, batches: list, *, hessian: bool = False,
                        keep: int = 0) -> dict:
    """Run ``model`` over ``batches`` (each passed as ``model(batch)``, or ``model(*batch)``
    for a tuple) and return ``{name: InputStats}`` for the given ``{name: layer}``."""
    stats = {name: InputStats() for name in layers}

    def hook_for(name):
        def hook(module, args):
            stats[name].add(args[0]._data, hessian=hessian, keep=keep)
        return hook

    handles = [layer.register_forward_pre_hook(hook_for(name)) for name, layer in layers.items()]
    try:
        run_model(model, batches)
    finally:
        for h in handles:
            h.remove()
    return stats


def set_weight(layer, array) -> None:
    """Overwrite ``layer.weight`` in place with a backend array of the same shape."""
    w = layer.weight
    with no_grad():
        w.copy_(_make(array.astype(w._data.dtype)))


def sequential_(model, calibration, layers: dict, quantize_layer, *, op: str,
                hessian: bool = False, keep: int = 0) -> dict:
    """Quantize ``layers`` one at a time in module order, each from statistics of its inputs
    in the model as it stands, i.e. with the layers before it already quantized (GPTQ's
    sequential mode: later layers see, and compensate for, the earlier layers' errors).
    ``quantize_layer(name, layer, InputStats)`` returns a per-layer result."""
    batches = as_batches(calibration, op)
    if not layers:
        raise ValueError(f"{op}: the model has no nn.Linear layer to quantize")
    results = {}
    for name, layer in layers.items():
        stats = collect_input_stats(model, {name: layer}, batches, hessian=hessian,
                                    keep=keep)[name]
        results[name] = quantize_layer(name, layer, stats)
    return results
