"""PyTorch's ``torch.utils`` namespace: ``tensorix.utils.data`` (datasets, samplers,
DataLoader: the same objects as :mod:`tensorix.data`) and ``tensorix.utils.checkpoint``
(activation checkpointing)."""

from . import checkpoint, data

__all__ = ["checkpoint", "data"]
