"""``GradScaler`` with torch's signature, over ``tensorix.numerics.GradScaler``'s dynamic loss
scaling (which works on every device; the ``device`` argument follows torch's rule that
``"cuda"`` without a GPU warns and disables the scaler, so a script behaves as it does on
torch).

Example::

    scaler = tensorix.amp.GradScaler("cpu")
    scaler.scale(loss).backward()
    scaler.step(opt)          # unscales, skips the step on inf/NaN gradients
    scaler.update()
"""

from __future__ import annotations

import warnings

from ..backend import cuda_available
from ..numerics.policy import GradScaler as _PolicyScaler

__all__ = ["GradScaler"]


class GradScaler(_PolicyScaler):
    """Dynamic loss scaling (``torch.amp.GradScaler``): ``scale(loss)``, ``unscale_(opt)``,
    ``step(opt)``, ``update()``, ``get_scale()``, ``state_dict()``/``load_state_dict()``; with
    ``enabled=False`` every call passes through (``scale`` returns the loss unchanged and
    ``step`` just steps)."""

    def __init__(self, device="cuda", init_scale=2.0**16, growth_factor=2.0,
                 backoff_factor=0.5, growth_interval=2000, enabled=True):
        if device not in ("cpu", "cuda"):
            raise RuntimeError(f"GradScaler: unsupported device {device!r}; expected 'cpu' or "
                               "'cuda'")
        if enabled and device == "cuda" and not cuda_available():
            warnings.warn("GradScaler: enabled for 'cuda' but CUDA is not available; "
                          "disabling", UserWarning, stacklevel=2)
            enabled = False
        self._device = device
        super().__init__(init_scale, growth_factor, backoff_factor, growth_interval, enabled)

    def is_enabled(self) -> bool:
        return self.enabled

    def get_growth_factor(self) -> float:
        return self.growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self.growth_factor = float(new_factor)

    def get_backoff_factor(self) -> float:
        return self.backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self.backoff_factor = float(new_factor)

    def get_growth_interval(self) -> int:
        return self.growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self.growth_interval = int(new_interval)

    def unscale_(self, optimizer) -> None:
        """Divide ``optimizer``'s gradients by the scale in place (once per step), as torch's
        (which returns None); ``step`` then skips the step if one was inf/NaN."""
        super().unscale_(optimizer)

    def step(self, optimizer, *args, **kwargs):
        """``optimizer.step(*args, **kwargs)`` on unscaled gradients, skipped (returning None)
        when one is inf/NaN. A closure is refused, as in torch: the scaled backward must run
        before ``step``."""
        if self.enabled and "closure" in kwargs:
            raise RuntimeError("GradScaler.step: closure use is not currently supported if "
                               "GradScaler is enabled")
        return super().step(optimizer, *args, **kwargs)

    def state_dict(self) -> dict:
        """The scale and its schedule (empty when disabled, as torch's)."""
        return super().state_dict() if self.enabled else {}

    def load_state_dict(self, state: dict) -> None:
        if not self.enabled:
            return
        if not state:
            raise RuntimeError("GradScaler.load_state_dict: the state_dict is empty; it was "
                               "probably saved from a disabled GradScaler")
        super().load_state_dict(state)
