"""Data-parallel training: ``DistributedDataParallel`` over tensorix.distributed."""

from .distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
