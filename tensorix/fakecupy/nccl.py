"""A stand-in for ``cupy.cuda.nccl`` (NCCL's Python binding) over mpi4py, on host memory.

It lets the "nccl" backend of tensorix.distributed run its own code path on the CuPy stand-in:
the same calls with the same arguments (device pointers as ints, element counts, NCCL's
datatype and reduction codes, a stream pointer) as on a GPU. A pointer of the stand-in is the
address of host memory (``fakecupy.ndarray.data.ptr``), so each call views it with ctypes and
runs the matching MPI call.

- ``get_unique_id()`` names the creating process (its MPI world rank) and a counter;
  ``NcclCommunicator(ndev, unique_id, rank)`` is collective over its members only (as in
  NCCL): each member tells the creator its world rank, the creator sends back the member list,
  and the members make an MPI communicator of exactly them (``Create_group``).
- Every call completes before it returns (the stand-in has no asynchrony), except ``send``
  outside a group, which is posted non-blocking (a blocking send would deadlock the
  isend/isend/irecv/irecv pattern NCCL allows) and finished by the communicator's next call.
- ``groupStart``/``groupEnd`` queue the sends and receives between them and post them
  together at ``groupEnd``.

What it cannot check: NCCL's kernels, streams, real device memory, NCCL's own reduction order
and its timeouts (a rank that never joins blocks here, as it hangs NCCL). The real run belongs
to the GPU issue.
"""

from __future__ import annotations

import ctypes
import itertools

import ml_dtypes
import numpy as np

# NCCL's datatype and reduction codes (nccl.h), as cupy.cuda.nccl exports them
NCCL_INT8 = NCCL_CHAR = 0
NCCL_UINT8 = 1
NCCL_INT32 = NCCL_INT = 2
NCCL_UINT32 = 3
NCCL_INT64 = 4
NCCL_UINT64 = 5
NCCL_FLOAT16 = NCCL_HALF = 6
NCCL_FLOAT32 = NCCL_FLOAT = 7
NCCL_FLOAT64 = NCCL_DOUBLE = 8
NCCL_BFLOAT16 = 9
NCCL_SUM, NCCL_PROD, NCCL_MAX, NCCL_MIN, NCCL_AVG = 0, 1, 2, 3, 4

_DTYPES = {NCCL_INT8: np.int8, NCCL_UINT8: np.uint8, NCCL_INT32: np.int32,
           NCCL_UINT32: np.uint32, NCCL_INT64: np.int64, NCCL_UINT64: np.uint64,
           NCCL_FLOAT16: np.float16, NCCL_FLOAT32: np.float32, NCCL_FLOAT64: np.float64,
           NCCL_BFLOAT16: ml_dtypes.bfloat16}
_TAG = 31000  # the rendezvous's messages on COMM_WORLD (below MPI's guaranteed tag bound)
_ids = itertools.count()
_group_depth = [0]
_queued: list = []  # (communicator, "send" | "recv", array, peer) between groupStart/End


class NcclError(RuntimeError):
    """NCCL's error (an invalid argument, here)."""


def _mpi():
    from mpi4py import MPI

    return MPI


def get_version() -> int:
    return 22105  # the NCCL version the stand-in imitates (2.21.5)


def get_unique_id():
    """A tuple naming this process and a fresh number (NCCL's is 128 opaque bytes)."""
    return (_mpi().COMM_WORLD.Get_rank(), next(_ids))


def groupStart():  # noqa: N802 - NCCL's name
    _group_depth[0] += 1


def groupEnd():  # noqa: N802 - NCCL's name
    if _group_depth[0] == 0:
        raise NcclError("groupEnd(): no groupStart() before it")
    _group_depth[0] -= 1
    if _group_depth[0] == 0:
        queued, _queued[:] = list(_queued), []
        requests = [c._comm.Irecv(a, peer) if kind == "recv" else c._comm.Isend(a, peer)
                    for c, kind, a, peer in queued]
        _mpi().Request.Waitall(requests)


def _view(ptr, count, datatype):
    """``count`` elements of NCCL ``datatype`` at host address ``ptr``, as a NumPy array."""
    if datatype not in _DTYPES:
        raise NcclError(f"invalid datatype {datatype!r}")
    dtype = np.dtype(_DTYPES[datatype])
    if count == 0:
        return np.empty(0, dtype)
    raw = (ctypes.c_uint8 * (count * dtype.itemsize)).from_address(int(ptr))
    return np.frombuffer(raw, np.uint8).view(dtype)


def _wide(a):
    """MPI reduces no 16-bit floats: reduce them in float32."""
    return a.astype(np.float32) if a.dtype in (np.float16, ml_dtypes.bfloat16) else a


class NcclCommunicator:
    """NCCL's communicator, emulated (see the module docstring)."""

    def __init__(self, ndev, commId, rank):  # noqa: N803 - NCCL's names
        mpi = _mpi()
        world = mpi.COMM_WORLD
        creator, number = commId
        tag = _TAG + number % 1000
        me = world.Get_rank()
        if me == creator:  # collect every member's world rank, by its rank in the new comm
            members = {rank: me}
            for _ in range(ndev - 1):
                r, w = world.recv(source=mpi.ANY_SOURCE, tag=tag)
                members[r] = w
            order = [members[r] for r in range(ndev)]
            for w in order:
                if w != me:
                    world.send(order, dest=w, tag=tag)
        else:
            world.send((rank, me), dest=creator, tag=tag)
            order = world.recv(source=creator, tag=tag)
        self._comm = world.Create_group(world.group.Incl(order), tag)
        self._rank, self._size, self._pending = rank, ndev, []

    def rank_id(self):
        return self._rank

    def size(self):
        return self._size

    def device_id(self):
        return 0

    def destroy(self):
        self._finish_sends()
        if self._comm is not None:
            self._comm.Free()
            self._comm = None

    def abort(self):
        self._comm.Abort(1)

    def _finish_sends(self):
        if self._pending:
            _mpi().Request.Waitall(self._pending)
            self._pending = []

    def _op(self, op):
        mpi = _mpi()
        return {NCCL_SUM: mpi.SUM, NCCL_PROD: mpi.PROD, NCCL_MAX: mpi.MAX, NCCL_MIN: mpi.MIN,
                NCCL_AVG: mpi.SUM}[op]

    def _reduced(self, send, op, reduce):
        wide = _wide(send)
        out = np.empty_like(wide)
        reduce(wide, out, self._op(op))
        if op == NCCL_AVG:
            out = out / self._size
        return out.astype(send.dtype)

    # -- collectives (``stream`` is accepted and ignored: everything is synchronous) ----------
    def allReduce(self, sendbuf, recvbuf, count, datatype, op, stream):  # noqa: N802
        self._finish_sends()
        send, recv = _view(sendbuf, count, datatype), _view(recvbuf, count, datatype)
        recv[...] = self._reduced(send.copy(), op, self._comm.Allreduce)

    def reduce(self, sendbuf, recvbuf, count, datatype, op, root, stream):
        self._finish_sends()
        send = _view(sendbuf, count, datatype).copy()
        out = self._reduced(send, op, lambda s, o, mop: self._comm.Reduce(s, o, mop, root))
        if self._rank == root:
            _view(recvbuf, count, datatype)[...] = out

    def broadcast(self, sendbuf, recvbuf, count, datatype, root, stream):
        self._finish_sends()
        recv = _view(recvbuf, count, datatype)
        if self._rank == root and sendbuf != recvbuf:
            recv[...] = _view(sendbuf, count, datatype)
        self._comm.Bcast(recv.view(np.uint8), root)

    def bcast(self, buff, count, datatype, root, stream):
        self.broadcast(buff, buff, count, datatype, root, stream)

    def allGather(self, sendbuf, recvbuf, count, datatype, stream):  # noqa: N802
        self._finish_sends()
        send = _view(sendbuf, count, datatype).copy()  # may be inside recvbuf (in place)
        self._comm.Allgather(send.view(np.uint8),
                             _view(recvbuf, count * self._size, datatype).view(np.uint8))

    def reduceScatter(self, sendbuf, recvbuf, recvcount, datatype, op, stream):  # noqa: N802
        self._finish_sends()
        send = _view(sendbuf, recvcount * self._size, datatype).copy()
        recv = _view(recvbuf, recvcount, datatype)
        wide = _wide(send)
        out = np.empty(recvcount, wide.dtype)
        self._comm.Reduce_scatter_block(wide, out, self._op(op))
        if op == NCCL_AVG:
            out = out / self._size
        recv[...] = out.astype(recv.dtype)

    # -- point to point -------------------------------------------------------------------------
    def send(self, sendbuf, count, datatype, peer, stream):
        a = _view(sendbuf, count, datatype).view(np.uint8)
        if _group_depth[0]:
            _queued.append((self, "send", a, peer))
        else:
            self._pending.append(self._comm.Isend(a, peer))

    def recv(self, recvbuf, count, datatype, peer, stream):
        a = _view(recvbuf, count, datatype).view(np.uint8)
        if _group_depth[0]:
            _queued.append((self, "recv", a, peer))
        else:
            self._comm.Recv(a, peer)
