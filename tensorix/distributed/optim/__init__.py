"""Distributed optimizers (torch.distributed.optim): ZeroRedundancyOptimizer (ZeRO stage 1),
and DistributedMatrixOptimizer (Muon/Shampoo/SOAP work split over ranks by cost)."""

from .matrix import DistributedMatrixOptimizer, balanced_partition, matrix_cost
from .zero import ZeroRedundancyOptimizer

__all__ = ["DistributedMatrixOptimizer", "ZeroRedundancyOptimizer", "balanced_partition",
           "matrix_cost"]
