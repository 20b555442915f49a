"""``tensorix.amp``: torch's automatic mixed precision names (``torch.amp``): ``autocast``
(over tensorix's precision policy; see ``autocast_mode`` for which GEMMs it reaches) and
``GradScaler`` (dynamic loss scaling). ``tensorix.autocast`` and ``tensorix.cuda.amp`` are the
same objects.

Example::

    scaler = tensorix.amp.GradScaler("cpu")
    with tensorix.amp.autocast("cpu", dtype=tensorix.bfloat16):
        loss = loss_fn(model(x), y)
    scaler.scale(loss).backward(); scaler.step(opt); scaler.update()
"""

from . import autocast_mode, grad_scaler
from .autocast_mode import (
    autocast,
    custom_bwd,
    custom_fwd,
    get_autocast_dtype,
    is_autocast_available,
    is_autocast_enabled,
)
from .grad_scaler import GradScaler

__all__ = ["autocast", "GradScaler", "is_autocast_available", "is_autocast_enabled",
           "get_autocast_dtype", "custom_fwd", "custom_bwd", "autocast_mode", "grad_scaler"]
