"""The "mpi" backend: collectives on host arrays through mpi4py's non-blocking calls.

A backend object owns one communicator and answers every collective with a list of MPI requests
plus a ``finish`` callable (copy a staging buffer back, divide for AVG); ``_c10d`` turns that
into a ``Work`` and polls it against a deadline, so that no collective can block forever. A
later "nccl" backend implements the same methods on device buffers.

Why raw bytes: non-reducing collectives move ``MPI.BYTE`` buffers, so every tensorix dtype
(bfloat16, fp8 codes, bool, complex) travels without an MPI datatype of its own. Reductions need
a type MPI understands; 16-bit and smaller floats are widened to float32 on the wire and
rounded once on the way back.
"""

from __future__ import annotations

import contextlib
import functools
import threading

import numpy as np


def _mpi():
    from mpi4py import MPI  # importing mpi4py initialises MPI: only ever done here, lazily

    return MPI


class _Serial:
    """The lock every MPI call of the backend takes: a no-op under MPI_THREAD_MULTIPLE (any
    thread may call MPI at any time), one lock under MPI_THREAD_SERIALIZED, so that the
    progress thread (``_progress``) and the main thread never call MPI at the same time."""

    lock = contextlib.nullcontext()


def _serialized(method):
    @functools.wraps(method)
    def call(self, *args, **kwargs):
        with _Serial.lock:
            return method(self, *args, **kwargs)
    return call


def thread_level() -> str:
    """"multiple", "serialized", or "main" (FUNNELED/SINGLE: MPI from the main thread only):
    what MPI granted at initialisation (mpi4py asks for MULTIPLE unless
    ``mpi4py.rc.thread_level`` says otherwise)."""
    mpi = _mpi()
    level = mpi.Query_thread()
    if level >= mpi.THREAD_MULTIPLE:
        return "multiple"
    return "serialized" if level == mpi.THREAD_SERIALIZED else "main"


# dtypes MPI reduces natively (by numpy typecode, as mpi4py maps buffers)
_NATIVE = frozenset("bBhHiIlLqQfdFD")


def _wire_dtype(dtype):
    """The dtype a reduction runs in: the array's own where MPI knows it, else a wider one."""
    if dtype.char in _NATIVE:
        return dtype
    if dtype == np.bool_:
        return np.dtype(np.uint8)
    return np.dtype(np.float32)  # float16, bfloat16, fp8/fp6/fp4 values


def as_bytes(array):
    """A contiguous uint8 view of ``array`` (C order) for byte-moving collectives."""
    return np.ascontiguousarray(array).reshape(-1).view(np.uint8)


class MPIBackend:
    """Collectives over one MPI communicator (``comm``); every method is non-blocking and
    returns ``(requests, finish)``."""

    name = "mpi"
    # whether a thread may test this backend's requests while the main thread computes
    # (``_progress``); set by ``world()`` from MPI's thread level
    progress = False

    def __init__(self, comm):
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()

    @classmethod
    def world(cls):
        level = thread_level()
        cls.progress = level != "main"
        _Serial.lock = threading.RLock() if level == "serialized" else contextlib.nullcontext()
        return cls(_mpi().COMM_WORLD)

    @_serialized
    def split(self, color, key):
        """A sub-communicator (MPI_Comm_split; collective over this one). None for a rank
        outside the new group."""
        mpi = _mpi()
        sub = self.comm.Split(mpi.UNDEFINED if color is None else color, key)
        return None if sub == mpi.COMM_NULL else type(self)(sub)

    @_serialized
    def free(self):
        mpi = _mpi()
        if self.comm not in (mpi.COMM_WORLD, mpi.COMM_SELF) and self.comm != mpi.COMM_NULL:
            self.comm.Free()

    def abort(self, code=1):
        self.comm.Abort(code)

    @_serialized
    def test(self, requests, statuses):
        """True once every request is complete; ``statuses`` (a list) receives their MPI
        statuses, which a receive from any rank reads its sender from."""
        return _mpi().Request.Testall(requests, statuses)

    def _op(self, op):
        mpi = _mpi()
        return {"sum": mpi.SUM, "avg": mpi.SUM, "product": mpi.PROD, "max": mpi.MAX,
                "min": mpi.MIN, "band": mpi.BAND, "bor": mpi.BOR, "bxor": mpi.BXOR}[op]

    # -- reductions: ``array`` is a contiguous host array, written in place -------------------
    def _reduce_buffers(self, array, op):
        wire = _wire_dtype(array.dtype)
        send = array if wire == array.dtype else array.astype(wire)
        if array.dtype == np.bool_ and op == "sum":
            op = "max"  # a boolean sum is a logical or, as in torch
        return send, wire, op

    def _reduce_finish(self, array, result, op):
        def finish(statuses):
            if op == "avg":
                np.true_divide(result, self.size, out=result, casting="unsafe")
            if result is not array:
                array[...] = result.astype(array.dtype)
        return finish

    @_serialized
    def iallreduce(self, array, op):
        send, _, mop = self._reduce_buffers(array, op)
        mpi = _mpi()
        req = self.comm.Iallreduce(mpi.IN_PLACE, send, self._op(mop))
        return [req], self._reduce_finish(array, send, op)

    @_serialized
    def ireduce(self, array, op, root):
        send, _, mop = self._reduce_buffers(array, op)
        mpi = _mpi()
        if self.rank == root:
            req = self.comm.Ireduce(mpi.IN_PLACE, send, self._op(mop), root)
            return [req], self._reduce_finish(array, send, op)
        req = self.comm.Ireduce(send, None, self._op(mop), root)
        return [req], None

    @_serialized
    def ireduce_scatter(self, out, inp, op):
        """``out`` (n elements) gets this rank's block of the reduction of ``inp`` (size*n)."""
        send, wire, mop = self._reduce_buffers(inp, op)
        recv = out if wire == out.dtype else np.empty(out.shape, wire)
        req = self.comm.Ireduce_scatter_block(send, recv, self._op(mop))
        return [req], self._reduce_finish(out, recv, op)

    # -- data movement: raw bytes ------------------------------------------------------------
    @_serialized
    def ibroadcast(self, array, root):
        buf = as_bytes(array)
        return [self.comm.Ibcast([buf, _mpi().BYTE], root)], _copy_back(array, buf)

    @_serialized
    def iallgather(self, out, inp):
        """``out`` holds ``size`` blocks, block r from rank r's ``inp``."""
        recv = as_bytes(out)
        req = self.comm.Iallgather([as_bytes(inp), _mpi().BYTE], [recv, _mpi().BYTE])
        return [req], _copy_back(out, recv)

    @_serialized
    def igather(self, out, inp, root):
        recv = as_bytes(out) if self.rank == root else None
        spec = [recv, _mpi().BYTE] if recv is not None else None
        req = self.comm.Igather([as_bytes(inp), _mpi().BYTE], spec, root)
        return [req], _copy_back(out, recv) if recv is not None else None

    @_serialized
    def iscatter(self, out, inp, root):
        recv = as_bytes(out)
        spec = [as_bytes(inp), _mpi().BYTE] if self.rank == root else None
        req = self.comm.Iscatter(spec, [recv, _mpi().BYTE], root)
        return [req], _copy_back(out, recv)

    @_serialized
    def iallgatherv(self, out, inp, counts):
        """Variable-size all-gather of bytes: ``counts[r]`` bytes from rank r into ``out``."""
        displs = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        req = self.comm.Iallgatherv([inp, _mpi().BYTE],
                                    [out, (list(counts), list(displs)), _mpi().BYTE])
        return [req], None

    @_serialized
    def ialltoallv(self, out, inp, send_counts, recv_counts):
        """``send_counts[r]`` bytes of ``inp`` go to rank r; ``recv_counts[r]`` arrive."""
        def displs(c):
            return [int(x) for x in np.concatenate([[0], np.cumsum(c)[:-1]])]
        recv = as_bytes(out)
        mpi = _mpi()
        req = self.comm.Ialltoallv(
            [as_bytes(inp), (list(send_counts), displs(send_counts)), mpi.BYTE],
            [recv, (list(recv_counts), displs(recv_counts)), mpi.BYTE])
        return [req], _copy_back(out, recv)

    @_serialized
    def ibarrier(self):
        return [self.comm.Ibarrier()], None

    # -- point to point ------------------------------------------------------------------------
    @_serialized
    def isend(self, array, dst, tag):
        buf = as_bytes(array)
        return [self.comm.Isend([buf, _mpi().BYTE], dst, tag)], None

    @_serialized
    def irecv(self, array, src, tag):
        """Receive into ``array`` from ``src`` (None: any rank); ``finish`` returns the
        sender's rank in this communicator."""
        mpi = _mpi()
        buf = as_bytes(array)
        source = mpi.ANY_SOURCE if src is None else src
        req = self.comm.Irecv([buf, mpi.BYTE], source, tag)
        copy = _copy_back(array, buf)

        def finish(statuses):
            if copy is not None:
                copy(statuses)
            return statuses[0].Get_source()
        return [req], finish


def _copy_back(array, buf):
    """After completion, write a staging byte buffer back into ``array`` (a no-op when the
    buffer was a view of it)."""
    if buf is None or np.shares_memory(array, buf):
        return None

    def finish(statuses):
        array[...] = buf.view(array.dtype).reshape(array.shape)
    return finish


BACKENDS = {"mpi": MPIBackend, "gloo": MPIBackend}  # and "nccl" (_nccl.py), in _c10d
