"""Distributed optimizers (torch.distributed.optim): ZeroRedundancyOptimizer (ZeRO stage 1)."""

from .zero import ZeroRedundancyOptimizer

__all__ = ["ZeroRedundancyOptimizer"]
