"""Multi-process training over MPI with torch.distributed's API: process groups, the tensor
collectives (in place, ``async_op`` Works, a timeout on every one), point-to-point calls,
object collectives, and differentiable collectives in ``tensorix.distributed.nn.functional``.
DistributedDataParallel lives in ``tensorix.nn.parallel``. See docs/distributed.md.

Example (``tensorix run -n 2 script.py``)::

    import tensorix, tensorix.distributed as dist
    dist.init_process_group("mpi")
    t = tensorix.full((2,), float(dist.get_rank()))
    dist.all_reduce(t, op=dist.ReduceOp.MAX)     # [1., 1.] on both ranks
"""

from ._c10d import (
                    DEFAULT_TIMEOUT,
                    DebugLevel,
                    DistBackendError,
                    DistError,
                    GroupMember,
                    ProcessGroup,
                    ReduceOp,
                    Work,
                    destroy_process_group,
                    get_backend,
                    get_debug_level,
                    get_global_rank,
                    get_group_rank,
                    get_process_group_ranks,
                    get_rank,
                    get_world_size,
                    init_process_group,
                    is_available,
                    is_initialized,
                    is_mpi_available,
                    is_nccl_available,
                    new_group,
                    set_debug_level,
                    traffic,
)
from ._collectives import (
                    all_gather,
                    all_gather_into_tensor,
                    all_reduce,
                    all_to_all,
                    all_to_all_single,
                    barrier,
                    broadcast,
                    gather,
                    irecv,
                    isend,
                    recv,
                    reduce,
                    reduce_scatter,
                    reduce_scatter_tensor,
                    scatter,
                    send,
)
from ._objects import all_gather_object, broadcast_object_list, gather_object, scatter_object_list
from .planner import plan

__all__ = ["DEFAULT_TIMEOUT", "DebugLevel", "DistBackendError", "DistError", "GroupMember",
           "ProcessGroup", "ReduceOp", "Work", "all_gather", "all_gather_into_tensor",
           "all_gather_object", "all_reduce", "all_to_all", "all_to_all_single", "barrier",
           "broadcast", "broadcast_object_list", "destroy_process_group", "gather",
           "gather_object", "get_backend", "get_debug_level", "get_global_rank",
           "get_group_rank", "get_process_group_ranks", "get_rank", "get_world_size",
           "init_process_group", "irecv", "is_available", "is_initialized", "is_mpi_available",
           "is_nccl_available", "isend",
           "new_group", "plan", "recv", "reduce", "reduce_scatter", "reduce_scatter_tensor",
           "scatter", "scatter_object_list", "send", "set_debug_level", "traffic"]
