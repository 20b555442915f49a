"""Fully sharded data parallel (torch.distributed.fsdp): ZeRO stages 2 and 3, hybrid sharding,
prefetch, CPU offload and the sharded state-dict types.

See :class:`FullyShardedDataParallel`; ZeRO stage 1 is
``tensorix.distributed.optim.ZeroRedundancyOptimizer``.
"""

from ._fsdp import (
                    BackwardPrefetch,
                    CPUOffload,
                    FullyShardedDataParallel,
                    MixedPrecision,
                    ModuleWrapPolicy,
                    ShardingStrategy,
                    lambda_auto_wrap_policy,
                    size_based_auto_wrap_policy,
)
from ._optim_state import (
                    FullOptimStateDictConfig,
                    OptimStateDictConfig,
                    ShardedOptimStateDictConfig,
)
from ._state_dict import (
                    FullStateDictConfig,
                    LocalStateDictConfig,
                    ShardedStateDictConfig,
                    ShardedTensor,
                    StateDictConfig,
                    StateDictSettings,
                    StateDictType,
)

__all__ = ["BackwardPrefetch", "CPUOffload", "FullOptimStateDictConfig", "FullStateDictConfig",
           "FullyShardedDataParallel", "OptimStateDictConfig", "ShardedOptimStateDictConfig",
           "LocalStateDictConfig", "MixedPrecision", "ModuleWrapPolicy", "ShardedStateDictConfig",
           "ShardedTensor", "ShardingStrategy", "StateDictConfig", "StateDictSettings",
           "StateDictType", "lambda_auto_wrap_policy", "size_based_auto_wrap_policy"]
