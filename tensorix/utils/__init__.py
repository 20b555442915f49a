"""PyTorch's ``torch.utils`` namespace: ``tensorix.utils.data`` (datasets, samplers,
DataLoader: the same objects as :mod:`tensorix.data`)."""

from . import data

__all__ = ["data"]
