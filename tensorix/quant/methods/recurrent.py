"""Binary, ternary and quaternary weights for LSTM/GRU (Ardakani, Ji, Gross, "Learning
Recurrent Binary/Ternary Weights", ICLR 2019; ternary thresholds of Li & Liu, "Ternary Weight
Networks", 2016; binary scaling of Rastegari et al., XNOR-Net, 2016).

These are not the uniform min/max grids of the core quantizer: each row r of a weight gets
codes in {-1, +1} (binary), {-1, 0, +1} (ternary) or {-3, -1, +1, +3} (quaternary, 2 bits with
no zero) times a scale chosen to minimise ||w_r - scale * codes||^2 for those codes:

- binary: scale = mean |w_r|;
- ternary: threshold 0.7 mean |w_r|, scale = mean |w| over the weights above it;
- quaternary: levels at +-scale, +-3 scale, split at 2 scale, the scale refined by a few
  Lloyd (k-means) steps from 0.5 mean |w_r|.

The functions take Tensors and keep a straight-through gradient (``w + (q - w).detach()``),
so they serve both post-training conversion and training with quantized weights.
"""

from __future__ import annotations

from ...autograd import no_grad
from ...nn.layers.rnn import RNNBase, RNNCellBase
from ...ops.pointwise import where
from ...tensor import Tensor

__all__ = ["LEVELS", "binarize", "ternarize", "quaternarize", "lowbit_recurrent_"]


def _rows(w: Tensor, op: str) -> Tensor:
    if not isinstance(w, Tensor) or not w.dtype.is_floating_point or w.ndim != 2:
        raise TypeError(f"{op}(): argument 'weight' must be a 2-d floating-point Tensor, got "
                        f"{getattr(w, 'shape', type(w).__name__)}")
    return w.detach()


def _ste(w: Tensor, q: Tensor) -> Tensor:
    # forward q, backward the identity (straight-through)
    return w + (q - w).detach()


def binarize(w: Tensor) -> Tensor:
    """Per-row binary weights: ``mean|w_r| * sign(w_r)`` (zeros count as +1). (out, in) ->
    (out, in). Example: ``binarize(tensorix.tensor([[0.5, -1.5]]))`` is ``[[1., -1.]]``."""
    d = _rows(w, "binarize")
    scale = d.abs().mean(1, keepdim=True)
    return _ste(w, where(d >= 0, scale, -scale))


def ternarize(w: Tensor) -> Tensor:
    """Per-row ternary weights (TWN): zero below 0.7 mean|w_r|, else ``+-scale`` with scale the
    mean |w| of the kept weights. (out, in) -> (out, in).

    Example: ``ternarize(tensorix.tensor([[0.1, -2.0, 1.0]]))`` is ``[[0., -1.5, 1.5]]``."""
    d = _rows(w, "ternarize")
    a = d.abs()
    keep = a > 0.7 * a.mean(1, keepdim=True)
    kept = keep.to(d.dtype)
    scale = (a * kept).sum(1, keepdim=True) / kept.sum(1, keepdim=True).clamp(min=1.0)
    return _ste(w, d.sign() * scale * kept)


def quaternarize(w: Tensor, steps: int = 5) -> Tensor:
    """Per-row 2-bit weights on ``{-3, -1, 1, 3} * scale`` (no zero level), the scale fitted by
    ``steps`` Lloyd iterations. (out, in) -> (out, in).

    Example: ``quaternarize(tensorix.tensor([[-3., -1., 1., 3.]]))`` returns the input."""
    d = _rows(w, "quaternarize")
    a = d.abs()
    scale = 0.5 * a.mean(1, keepdim=True)
    for _ in range(steps):
        level = 1.0 + 2.0 * (a > 2 * scale).to(d.dtype)  # the nearer of scale, 3 scale
        scale = (a * level).sum(1, keepdim=True) / (level * level).sum(1, keepdim=True)
    level = 1.0 + 2.0 * (a > 2 * scale).to(d.dtype)
    sign = 2.0 * (d >= 0).to(d.dtype) - 1.0  # zeros count as +
    return _ste(w, sign * level * scale)


LEVELS = {"binary": binarize, "ternary": ternarize, "quaternary": quaternarize}


def lowbit_recurrent_(model, levels: str = "ternary") -> dict:
    """Replace the weight matrices (``weight_ih*``, ``weight_hh*``, ``weight_hr*``; not the
    biases) of every ``nn.LSTM``/``nn.GRU``/``nn.RNN`` and their cells in ``model`` by their
    ``levels`` (``"binary"``, ``"ternary"`` or ``"quaternary"``) form, in place. Returns
    ``{parameter name: relative error ||w - q|| / ||w||}``.

    Example::

        lstm = nn.LSTM(32, 64)
        errors = lowbit_recurrent_(lstm, "ternary")
    """
    if levels not in LEVELS:
        raise ValueError(f"lowbit_recurrent_(): argument 'levels' must be one of "
                         f"{sorted(LEVELS)}, got {levels!r}")
    kinds = (RNNBase, RNNCellBase)
    errors = {}
    for mname, mod in model.named_modules():
        if not isinstance(mod, kinds):
            continue
        for pname, p in mod.named_parameters(recurse=False):
            if not pname.startswith("weight"):
                continue
            with no_grad():
                q = LEVELS[levels](p.detach())
                errors[f"{mname}.{pname}" if mname else pname] = \
                    ((p - q).norm() / p.norm()).item()
                p.copy_(q)
    if not errors:
        raise ValueError("lowbit_recurrent_(): the model has no recurrent layer (LSTM, GRU, "
                         "RNN or their cells)")
    return errors
