"""``tensorix.cuda.amp``: torch's older CUDA-only spellings of ``tensorix.amp``.

``autocast(enabled=True, dtype=float16)`` is ``tensorix.amp.autocast("cuda", ...)`` and
``GradScaler(init_scale=...)`` is ``tensorix.amp.GradScaler("cuda", ...)`` (both disable
themselves with a warning where there is no GPU, as torch's do).

Example::

    scaler = tensorix.cuda.amp.GradScaler(enabled=use_amp)
"""

from __future__ import annotations

from .. import dtypes
from ..amp import GradScaler as _GradScaler
from ..amp import autocast as _autocast

__all__ = ["autocast", "GradScaler"]


class autocast(_autocast):  # noqa: N801 - torch's name
    """``tensorix.amp.autocast("cuda", dtype, enabled)``."""

    def __init__(self, enabled=True, dtype=dtypes.float16, cache_enabled=True):
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(_GradScaler):
    """``tensorix.amp.GradScaler("cuda", ...)``."""

    def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        super().__init__("cuda", init_scale, growth_factor, backoff_factor, growth_interval,
                         enabled)
