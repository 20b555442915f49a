"""Process groups, the Work handle and the tensor collectives (torch.distributed's names and
semantics). Every collective goes through ``_launch``: check the arguments, optionally check
that all ranks agree on the collective, shape and dtype, start the backend's non-blocking call,
and return a ``Work`` (``async_op=True``) or wait for it against the group's timeout.

Collectives write into the Tensor's own array (torch semantics); tensors on a device are staged
through host memory, as is any non-contiguous array.
"""

from __future__ import annotations

import datetime
import enum
import os
import sys
import threading
import time
import zlib

import numpy as np

from .. import backend as _backend
from ..tensor import Tensor
from . import _progress
from ._mpi import BACKENDS as _MPI_BACKENDS
from ._nccl import NCCLBackend

DEFAULT_TIMEOUT = datetime.timedelta(minutes=30)
BACKENDS = {**_MPI_BACKENDS, "nccl": NCCLBackend}  # chosen by name, as in torch


class DistError(RuntimeError):
    """Base of the errors tensorix.distributed raises (torch.distributed.DistError)."""


class DistBackendError(DistError):
    """A collective failed or timed out (torch.distributed.DistBackendError)."""


class ReduceOp(enum.Enum):
    """How a reducing collective combines the ranks' values."""
    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MAX = "max"
    MIN = "min"
    BAND = "band"
    BOR = "bor"
    BXOR = "bxor"


class DebugLevel(enum.Enum):
    """OFF: no extra checks. DETAIL: every collective first all-gathers a small signature
    (collective, dtype, shape) and raises on a mismatch, naming the ranks."""
    OFF = 0
    INFO = 1
    DETAIL = 2


def _timeout_seconds(timeout):
    if isinstance(timeout, datetime.timedelta):
        return timeout.total_seconds()
    if isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and timeout > 0:
        return float(timeout)
    raise TypeError(f"init_process_group(): expected timeout to be a datetime.timedelta or a "
                    f"positive number of seconds (got {timeout!r})")


class ProcessGroup:
    """A set of ranks that run collectives together: a backend communicator, this rank's place
    in it, and the global ranks of its members (``ranks[group_rank] == global rank``)."""

    def __init__(self, comm, ranks, timeout):
        self.comm, self.ranks, self.timeout = comm, list(ranks), timeout

    def rank(self):
        """This process's rank in the group."""
        return self.comm.rank

    def size(self):
        """The number of ranks in the group."""
        return self.comm.size

    def __repr__(self):
        return f"ProcessGroup(backend={self.comm.name!r}, ranks={self.ranks})"


class _NonMember:
    def __repr__(self):
        return "GroupMember.NON_GROUP_MEMBER"


class GroupMember:
    """``NON_GROUP_MEMBER``: what ``new_group`` returns on a rank outside the group."""
    WORLD = None
    NON_GROUP_MEMBER = _NonMember()


class _State:
    world: ProcessGroup | None = None
    groups: list = []
    excepthook = None
    debug = DebugLevel.OFF
    traffic: dict = {}  # collective -> [calls, payload bytes]: see traffic()
    progress = None  # the _progress.ProgressThread testing async Works (mpi backend)


_state = _State()


def _poll(test, seconds, what):
    """Wait until ``test()`` is true, up to ``seconds``; sleep-poll rather than block
    in MPI so that a rank that never joins gives an error, not a hang. The sleep grows to 1 ms:
    the cores are shared with the other ranks."""
    pause, deadline = 1e-6, time.monotonic() + seconds
    while not test():
        if time.monotonic() > deadline:
            raise DistBackendError(
                f"{what}(): timed out after {seconds:g} s; "
                "not every rank joined (a rank that never calls it, or that runs a different "
                "collective, leaves the others waiting)")
        time.sleep(pause)
        pause = min(pause * 2, 1e-3)


class Work:
    """The handle an ``async_op=True`` collective returns: ``wait()`` blocks (up to the
    group's timeout) and applies the result; ``is_completed()`` polls without blocking.

    Under the mpi backend a progress thread (``_progress``) tests a pending Work's requests
    while the caller computes, so the transfer moves without MPI calls from the caller; the
    results are applied by ``wait()`` / ``is_completed()`` on the caller's thread."""

    # why slots: code that keeps Works (ring attention's shifts, the pipeline's sends) holds
    # a few hundred bytes less per Work than with an instance dict
    __slots__ = ("_group", "_requests", "_finishes", "_what", "_result", "_done", "_statuses",
                 "_tested", "_error", "_abandoned", "_progress", "_lock")

    def __init__(self, group, requests, finishes, what, result=None):
        self._group, self._requests, self._finishes = group, requests, finishes
        self._what, self._result, self._done, self._statuses = what, result, False, []
        self._tested = False  # the requests are complete (statuses filled)
        self._error = None  # an exception the progress thread met testing them
        self._abandoned = False  # wait() timed out: the progress thread lets it go
        self._progress = None  # the progress thread testing it, if any (set by _run)
        self._lock = threading.Lock()  # why: MPI forbids two threads testing one request

    def _test(self, blocking=True) -> bool:
        """True once the requests are complete; callable from any thread. ``blocking=False``
        (the progress thread) skips a Work another thread is testing, and keeps an error for
        ``wait()`` instead of raising it."""
        if self._tested:
            return True
        if not self._lock.acquire(blocking):
            return False
        try:
            if not self._tested and self._group.comm.test(self._requests, self._statuses):
                self._tested = True
        except Exception as exc:  # why: raised again by the waiting thread, in wait()
            if blocking:
                raise
            self._error, self._tested = exc, True
        finally:
            self._lock.release()
        return self._tested

    def _progress_done(self) -> bool:
        return self._tested or self._abandoned or self._done

    def is_completed(self) -> bool:
        if not self._done and self._test():
            self._complete()
        return self._done

    def wait(self, timeout=None) -> bool:
        """Wait for completion; raise DistBackendError after ``timeout`` (seconds or
        timedelta; default: the group's)."""
        if not self._done:
            seconds = self._group.timeout if timeout is None else _timeout_seconds(timeout)
            try:
                _poll(self._test, seconds, self._what)
            except DistBackendError:
                self._abandoned = True
                raise
            self._complete()
        return True

    def _complete(self):
        self._done = True
        if self._error is not None:
            raise DistBackendError(f"{self._what}(): {self._error}") from self._error
        for finish in self._finishes:
            if finish is not None:
                out = finish(self._statuses)
                if out is not None:
                    self._result = out
        # why: the progress thread would list this Work until its next round; the buffers
        # (held by the requests and the finishes) are let go now
        self._requests = self._finishes = self._statuses = ()
        if self._progress is not None:
            self._progress.discard(self)
            self._progress = None

    def result(self):
        """What the collective returns once complete (irecv: the sender's group rank)."""
        return self._result


# -- setup -----------------------------------------------------------------------------------
def is_available() -> bool:
    """True when the MPI backend can run (mpi4py is installed); imports nothing heavy."""
    import importlib.util

    return importlib.util.find_spec("mpi4py") is not None


def is_nccl_available() -> bool:
    """True where the nccl backend can run: CuPy with NCCL and a GPU, or the CuPy stand-in
    (whose NCCL runs over MPI)."""
    try:
        _backend.nccl_module()
    except (ImportError, RuntimeError):
        return False
    return is_available()


def is_mpi_available() -> bool:
    """True when the mpi backend can run (mpi4py is installed)."""
    return is_available()


def is_initialized() -> bool:
    """True between ``init_process_group`` and ``destroy_process_group``."""
    return _state.world is not None


def _env_int(*names):
    for name in names:
        value = os.environ.get(name)
        if value is not None:
            return int(value)
    return None


def init_process_group(backend="mpi", init_method=None, timeout=DEFAULT_TIMEOUT,
                       world_size=-1, rank=-1, store=None, group_name="", pg_options=None,
                       device_id=None):
    """Join the default process group of all ranks started by ``mpiexec`` (or ``tensorix
    run``). The rank and world size come from MPI; where ``RANK``/``WORLD_SIZE`` (torchrun) or
    ``OMPI_COMM_WORLD_RANK``/``_SIZE`` or the arguments name them, they must agree.

    ``timeout`` bounds every collective (default 30 minutes). An uncaught exception on any
    rank then aborts all ranks (MPI_Abort), so that a failure never leaves the others hanging.

    Example (``tensorix run -n 4 train.py``)::

        import tensorix.distributed as dist
        dist.init_process_group("mpi")
        t = tensorix.ones(3) * dist.get_rank()
        dist.all_reduce(t)        # every rank: [6, 6, 6]
    """
    if _state.world is not None:
        raise RuntimeError("init_process_group(): trying to initialize the default process "
                           "group twice")
    if not isinstance(backend, str) or backend.lower() not in BACKENDS:
        raise ValueError(f"init_process_group(): unknown backend {backend!r}; expected one "
                         f"of {sorted(BACKENDS)}")
    seconds = _timeout_seconds(timeout)
    comm = BACKENDS[backend.lower()].world()
    for what, expected, given in (
            ("rank", comm.rank, (rank if rank >= 0 else None,
                                 _env_int("OMPI_COMM_WORLD_RANK", "PMI_RANK", "RANK"))),
            ("world_size", comm.size, (world_size if world_size > 0 else None,
                                       _env_int("OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
                                                "WORLD_SIZE")))):
        for value in given:
            if value is not None and value != expected:
                raise ValueError(
                    f"init_process_group(): {what} {value} (from the arguments or the "
                    f"environment) differs from MPI's {expected}; launch the ranks with "
                    "mpiexec or 'tensorix run -n N script.py'")
    _state.world = ProcessGroup(comm, range(comm.size), seconds)
    _state.groups = [_state.world]
    level = os.environ.get("TENSORIX_DISTRIBUTED_DEBUG",
                           os.environ.get("TORCH_DISTRIBUTED_DEBUG", "OFF"))
    _state.debug = DebugLevel[level.upper()] if level.upper() in DebugLevel.__members__ \
        else DebugLevel.OFF
    if hasattr(comm, "progress"):  # the mpi backend (threaded when MPI allows it)
        _state.progress = _progress.start(threaded=comm.progress)
    _install_excepthook(comm)


def _install_excepthook(comm):
    previous = sys.excepthook

    def abort_all(kind, value, tb):
        # print first: MPI_Abort kills this process and, through mpiexec, every other rank
        previous(kind, value, tb)
        sys.stderr.flush()
        sys.stdout.flush()
        comm.abort(1)

    _state.excepthook = previous
    sys.excepthook = abort_all


def destroy_process_group(group=None):
    """Free ``group``'s communicator; with no argument, leave the default group (and every
    group made from it) so that ``init_process_group`` can run again."""
    if group is None or group is _state.world:
        _progress.stop()
        _state.progress = None
        for g in _state.groups:
            if g is not _state.world:
                g.comm.free()
        if _state.excepthook is not None:
            sys.excepthook = _state.excepthook
        _state.world, _state.groups, _state.excepthook = None, [], None
        return
    group = _group(group, "destroy_process_group")
    group.comm.free()
    _state.groups.remove(group)


def set_debug_level(level) -> None:
    """DebugLevel.DETAIL checks every collective's shape and dtype across ranks first."""
    _state.debug = DebugLevel[level] if isinstance(level, str) else DebugLevel(level)


def get_debug_level() -> DebugLevel:
    """The current DebugLevel (OFF unless set or named in TENSORIX_DISTRIBUTED_DEBUG)."""
    return _state.debug


def _group(group, op):
    if _state.world is None:
        raise ValueError(f"{op}(): default process group has not been initialized, please "
                         "make sure to call init_process_group")
    if group is None:
        return _state.world
    if group is GroupMember.NON_GROUP_MEMBER:
        raise ValueError(f"{op}(): this rank is not a member of the given group")
    if not isinstance(group, ProcessGroup):
        raise TypeError(f"{op}(): expected group to be a ProcessGroup or None (got "
                        f"{type(group).__name__})")
    return group


def new_group(ranks=None, timeout=None, backend=None, pg_options=None,
              use_local_synchronization=False):
    """A group of the given global ranks (all ranks when None). Every rank of the default group
    must call it, as in torch; ranks outside get ``GroupMember.NON_GROUP_MEMBER``.

    Example: ``evens = dist.new_group([0, 2])``; ``dist.all_reduce(t, group=evens)``."""
    world = _group(None, "new_group")
    members = list(range(world.size())) if ranks is None else sorted(int(r) for r in ranks)
    if len(set(members)) != len(members) or any(not 0 <= r < world.size() for r in members):
        raise ValueError(f"new_group(): expected distinct ranks in [0, {world.size()}) (got "
                         f"{ranks})")
    me = world.rank()
    sub = world.comm.split(0 if me in members else None, members.index(me) if me in members
                           else 0)
    if sub is None:
        return GroupMember.NON_GROUP_MEMBER
    group = ProcessGroup(sub, members, world.timeout if timeout is None
                         else _timeout_seconds(timeout))
    _state.groups.append(group)
    return group


def get_rank(group=None) -> int:
    """This process's rank in ``group`` (the default group when None); -1 outside it."""
    if group is GroupMember.NON_GROUP_MEMBER:
        return -1
    return _group(group, "get_rank").rank()


def get_world_size(group=None) -> int:
    """The number of ranks in ``group`` (the default group when None); -1 outside it."""
    if group is GroupMember.NON_GROUP_MEMBER:
        return -1
    return _group(group, "get_world_size").size()


def get_backend(group=None) -> str:
    """The backend's name, e.g. ``"mpi"``."""
    return _group(group, "get_backend").comm.name


def get_group_rank(group, global_rank) -> int:
    """``global_rank``'s place in ``group``: ``get_group_rank(new_group([1, 3]), 3) == 1``."""
    group = _group(group, "get_group_rank")
    if global_rank not in group.ranks:
        raise ValueError(f"get_group_rank(): global rank {global_rank} is not part of group "
                         f"{group}")
    return group.ranks.index(global_rank)


def get_global_rank(group, group_rank) -> int:
    """The global rank at ``group_rank`` in ``group``: ``get_global_rank(g13, 1) == 3``."""
    group = _group(group, "get_global_rank")
    if not 0 <= group_rank < group.size():
        raise ValueError(f"get_global_rank(): group rank {group_rank} out of range for "
                         f"{group}")
    return group.ranks[group_rank]


def get_process_group_ranks(group) -> list:
    """The global ranks of ``group``'s members, in group-rank order."""
    return list(_group(group, "get_process_group_ranks").ranks)


# -- staging and checks ----------------------------------------------------------------------
class _Staged:
    """A tensor's data as a contiguous host array (a device array stays on the device for a
    backend that works there, ``nccl``); ``back`` writes it into the tensor after the
    collective (None when the collective wrote the tensor's own memory) and bumps its version,
    as torch's in-place collectives do."""

    def __init__(self, t, op, arg, group=None):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): expected {arg} to be a tensorix.Tensor (got "
                            f"{type(t).__name__})")
        self.t = t
        data = t._data
        if type(data) is np.ndarray:
            self.host = data if data.flags.c_contiguous else np.ascontiguousarray(data)
        elif getattr(getattr(group, "comm", None), "on_device", False):
            self.host = _backend.array_module(data).ascontiguousarray(data)
        else:  # a device array: through host memory
            self.host = _backend.to_device(data, _backend.Device("cpu")).copy()

    def back(self, statuses=None):
        data = self.t._data
        if self.host is not data:
            if type(data) is np.ndarray:
                data[...] = self.host
            else:
                data[...] = _backend.to_device(self.host, _backend.get_device(data))
        self.t._version[0] += 1


def _signature(what, arrays):
    """Collective, dtype and shape of each buffer as a short int64 vector."""
    sig = [zlib.crc32(what.encode())]
    for a in arrays:
        shape = list(a.shape[:6]) + [0] * (6 - min(6, a.ndim))
        sig += [zlib.crc32(a.dtype.str.encode()), a.ndim, *shape]
    return np.array(sig[:16] + [0] * (16 - len(sig[:16])), dtype=np.int64)


def _check_same(group, what, arrays, describe):
    """DebugLevel.DETAIL: all-gather each rank's signature and raise, naming the ranks, where
    they differ."""
    sig = _signature(what, arrays)
    everyone = np.empty((group.size(), sig.size), np.int64)
    requests, finish = group.comm.iallgather(everyone, sig)
    Work(group, requests, [finish], f"{what} (debug check)").wait()
    bad = [r for r in range(group.size()) if not np.array_equal(everyone[r], everyone[0])]
    if bad:
        raise DistError(
            f"{what}(): ranks disagree on the collective, shape or dtype: global rank "
            f"{group.ranks[0]} differs from global ranks {[group.ranks[r] for r in bad]} "
            f"(this rank, {group.ranks[group.rank()]}, has {describe})")


def _run(group, what, start, staged, async_op, check=(), result=None):
    """Start ``start()`` -> (requests, finish); return a Work or wait for it."""
    if _state.debug is DebugLevel.DETAIL:
        _check_same(group, what, check,
                    ", ".join(f"{a.dtype} {tuple(a.shape)}" for a in check) or "no tensor")
    count = _state.traffic.setdefault(what, [0, 0])
    count[0] += 1
    count[1] += sum(a.nbytes for a in check)
    requests, finish = start()
    work = Work(group, requests, [finish] + [s.back for s in staged], what, result)
    if async_op:
        if _state.progress is not None and hasattr(group.comm, "progress"):
            work._progress = _state.progress
            _state.progress.add(work)
        return work
    work.wait()
    return None


def traffic(reset: bool = False) -> dict:
    """{collective: (calls, payload bytes)} that this process has started: the whole tensor
    of an all_reduce or broadcast, this rank's part of an all_gather or reduce_scatter; with
    ``reset``, start counting again. benchmarks/bench_sharded.py turns it into bytes sent."""
    out = {k: tuple(v) for k, v in _state.traffic.items()}
    if reset:
        _state.traffic = {}
    return out


def _root(group, rank, op, arg):
    """A global rank argument as a rank in ``group``."""
    if not isinstance(rank, (int, np.integer)) or rank not in group.ranks:
        raise ValueError(f"{op}(): expected {arg} to be a global rank in {group.ranks} (got "
                         f"{rank!r})")
    return group.ranks.index(int(rank))


def _op_name(op, what, dtype):
    if not isinstance(op, ReduceOp):
        raise TypeError(f"{what}(): expected op to be a ReduceOp (got {op!r})")
    if op is ReduceOp.AVG and dtype.kind not in "fcV":
        raise TypeError(f"{what}(): ReduceOp.AVG needs a floating or complex tensor (got "
                        f"{dtype})")
    if op in (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR) and dtype.kind not in "biu":
        raise TypeError(f"{what}(): {op.name} needs an integer or bool tensor (got {dtype})")
    return op.value


def _same(tensors, shape, dtype, op, arg):
    for i, t in enumerate(tensors):
        if tuple(t.shape) != tuple(shape) or t._data.dtype != dtype:
            raise ValueError(f"{op}(): expected every tensor in {arg} to have shape "
                             f"{tuple(shape)} and dtype {dtype} (element {i}: "
                             f"{tuple(t.shape)}, {t._data.dtype})")
