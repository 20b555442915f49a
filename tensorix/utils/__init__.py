"""PyTorch's ``torch.utils`` namespace: ``tensorix.utils.data`` (datasets, samplers,
DataLoader: the same objects as :mod:`tensorix.data`) and ``tensorix.utils.checkpoint``
(activation checkpointing) with ``tensorix.utils.remat`` (what to recompute under a budget)."""

from . import checkpoint, data, remat

__all__ = ["checkpoint", "data", "remat"]
