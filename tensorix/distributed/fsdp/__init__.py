"""Fully sharded data parallel (torch.distributed.fsdp): ZeRO stages 2 and 3.

See :class:`FullyShardedDataParallel`; ZeRO stage 1 is
``tensorix.distributed.optim.ZeroRedundancyOptimizer``.
"""

from ._fsdp import (
                    FullyShardedDataParallel,
                    MixedPrecision,
                    ModuleWrapPolicy,
                    ShardingStrategy,
                    lambda_auto_wrap_policy,
                    size_based_auto_wrap_policy,
)

__all__ = ["FullyShardedDataParallel", "MixedPrecision", "ModuleWrapPolicy", "ShardingStrategy",
           "lambda_auto_wrap_policy", "size_based_auto_wrap_policy"]
