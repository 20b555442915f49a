"""The "nccl" backend: collectives on device arrays through ``cupy.cuda.nccl``.

Same interface as ``_mpi.MPIBackend`` (every method returns ``(requests, finish)``), on CuPy
arrays: each call is enqueued on the current CUDA stream by NCCL, and its request is a CUDA
event recorded after it, so ``Work.wait`` polls the event against the group's timeout. Host
(NumPy) arrays, which the object collectives and the debug checks use, go through the MPI
communicator the backend was bootstrapped on (torch's "cuda:nccl,cpu:gloo" arrangement).

Bootstrap: rank 0 of the group makes NCCL's unique id and broadcasts it over MPI; every member
then makes its ``NcclCommunicator`` on the current device (set it first, e.g.
``tensorix.cuda.set_device(local_rank)``). Sub-groups split the MPI communicator and make a
new NCCL communicator the same way.

NCCL reduces sum, product, max, min and avg; the bitwise ReduceOps raise. Non-reducing
collectives move bytes, so every dtype travels. gather, scatter and the all-to-alls are NCCL
send/receive pairs inside one groupStart/groupEnd.

Tested here on the CuPy stand-in, whose ``nccl`` runs the same calls over MPI on host memory
(``tensorix/fakecupy/nccl.py``); the run on GPUs belongs to the GPU issue.
"""

from __future__ import annotations

import numpy as np

from .. import backend
from ._mpi import MPIBackend


def _ptr(array) -> int:
    return backend.data_ptr(array)


class _Event:
    """A CUDA event recorded after the NCCL call on the current stream."""

    __slots__ = ("event",)

    def __init__(self, cupy):
        self.event = cupy.cuda.Event(disable_timing=True)
        self.event.record(cupy.cuda.get_current_stream())

    @property
    def done(self):
        return self.event.done


class NCCLBackend:
    """Collectives over one NCCL communicator (device arrays) and its MPI twin (host
    arrays)."""

    name = "nccl"
    on_device = True

    def __init__(self, host: MPIBackend, comm, nccl):
        self.host, self.comm, self._nccl = host, comm, nccl
        self.rank, self.size = host.rank, host.size
        self._cupy = backend.cupy_module()

    @classmethod
    def world(cls):
        return cls._bootstrap(MPIBackend.world())

    @classmethod
    def _bootstrap(cls, host):
        nccl = backend.nccl_module()
        uid = nccl.get_unique_id() if host.rank == 0 else None
        uid = host.comm.bcast(uid, root=0)  # torch sends it through its store; MPI here
        return cls(host, nccl.NcclCommunicator(host.size, uid, host.rank), nccl)

    def split(self, color, key):
        sub = self.host.split(color, key)
        return None if sub is None else self._bootstrap(sub)

    def free(self):
        self.comm.destroy()
        self.host.free()

    def abort(self, code=1):
        self.host.abort(code)

    def test(self, requests, statuses):
        if requests and isinstance(requests[0], _Event):
            return all(r.done for r in requests)
        return self.host.test(requests, statuses)

    # -- helpers -------------------------------------------------------------------------------
    def _on_host(self, what, *arrays):
        """True when every array is a host one (MPI's job); a mix is an error."""
        host = [type(a) is np.ndarray for a in arrays if a is not None]
        if all(host):
            return True
        if any(host):
            raise TypeError(f"{what}(): the nccl backend needs all tensors of one collective "
                            f"on the GPU, or all on the CPU (got a mix)")
        return False

    def _stream(self):
        return self._cupy.cuda.get_current_stream().ptr

    def _done(self):
        return [_Event(self._cupy)]

    def _dtype(self, dtype, what):
        n = self._nccl
        codes = {np.dtype(np.int8): n.NCCL_INT8, np.dtype(np.uint8): n.NCCL_UINT8,
                 np.dtype(np.int32): n.NCCL_INT32, np.dtype(np.uint32): n.NCCL_UINT32,
                 np.dtype(np.int64): n.NCCL_INT64, np.dtype(np.uint64): n.NCCL_UINT64,
                 np.dtype(np.float16): n.NCCL_FLOAT16, np.dtype(np.float32): n.NCCL_FLOAT32,
                 np.dtype(np.float64): n.NCCL_FLOAT64}
        if dtype.name == "bfloat16":
            return n.NCCL_BFLOAT16
        if dtype not in codes:
            raise TypeError(f"{what}(): the nccl backend cannot reduce {dtype} (NCCL reduces "
                            f"8/32/64-bit integers and 16/32/64-bit floats)")
        return codes[dtype]

    def _reduction(self, array, op, what):
        """(buffer, NCCL dtype, NCCL op) for a reduction of ``array`` by ``op``."""
        n = self._nccl
        if array.dtype == np.bool_:  # a boolean sum is a logical or, as in torch
            array, op = array.view(np.uint8), "max" if op == "sum" else op
        elif array.dtype.kind == "c":
            if op not in ("sum", "avg"):
                raise TypeError(f"{what}(): the nccl backend reduces complex tensors by sum "
                                f"or avg only")
            array = array.view(array.real.dtype)
        codes = {"sum": n.NCCL_SUM, "avg": n.NCCL_AVG, "product": n.NCCL_PROD,
                 "max": n.NCCL_MAX, "min": n.NCCL_MIN}
        if op not in codes:
            raise ValueError(f"{what}(): ReduceOp.{op.upper()} is not supported by the nccl "
                             f"backend (NCCL reduces by SUM, AVG, PRODUCT, MAX, MIN)")
        return array, self._dtype(array.dtype, what), codes[op]

    @staticmethod
    def _bytes(array):
        return array.reshape(-1).view(np.uint8)

    # -- reductions ----------------------------------------------------------------------------
    def iallreduce(self, array, op):
        if self._on_host("all_reduce", array):
            return self.host.iallreduce(array, op)
        buf, dt, nop = self._reduction(array, op, "all_reduce")
        self.comm.allReduce(_ptr(buf), _ptr(buf), buf.size, dt, nop, self._stream())
        return self._done(), None

    def ireduce(self, array, op, root):
        if self._on_host("reduce", array):
            return self.host.ireduce(array, op, root)
        buf, dt, nop = self._reduction(array, op, "reduce")
        self.comm.reduce(_ptr(buf), _ptr(buf), buf.size, dt, nop, root, self._stream())
        return self._done(), None

    def ireduce_scatter(self, out, inp, op):
        if self._on_host("reduce_scatter", out, inp):
            return self.host.ireduce_scatter(out, inp, op)
        recv, dt, nop = self._reduction(out, op, "reduce_scatter")
        send = self._reduction(inp, op, "reduce_scatter")[0]
        self.comm.reduceScatter(_ptr(send), _ptr(recv), recv.size, dt, nop, self._stream())
        return self._done(), None

    # -- data movement: bytes --------------------------------------------------------------------
    def ibroadcast(self, array, root):
        if self._on_host("broadcast", array):
            return self.host.ibroadcast(array, root)
        n = self._nccl
        self.comm.broadcast(_ptr(array), _ptr(array), array.nbytes, n.NCCL_UINT8, root,
                            self._stream())
        return self._done(), None

    def iallgather(self, out, inp):
        if self._on_host("all_gather", out, inp):
            return self.host.iallgather(out, inp)
        self.comm.allGather(_ptr(inp), _ptr(out), inp.nbytes, self._nccl.NCCL_UINT8,
                            self._stream())
        return self._done(), None

    def _exchange(self, sends, recvs):
        """NCCL send/receive pairs in one group: ``sends``/``recvs`` are (byte array, peer)."""
        n, stream = self._nccl, self._stream()
        n.groupStart()
        try:
            for buf, peer in sends:
                self.comm.send(_ptr(buf), buf.size, n.NCCL_UINT8, peer, stream)
            for buf, peer in recvs:
                self.comm.recv(_ptr(buf), buf.size, n.NCCL_UINT8, peer, stream)
        finally:
            n.groupEnd()
        return self._done(), None

    def igather(self, out, inp, root):
        if self._on_host("gather", out, inp):
            return self.host.igather(out, inp, root)
        sends = [(self._bytes(inp), root)]
        recvs = [] if self.rank != root else \
            [(self._bytes(out[r]), r) for r in range(self.size)]
        return self._exchange(sends, recvs)

    def iscatter(self, out, inp, root):
        if self._on_host("scatter", out, inp):
            return self.host.iscatter(out, inp, root)
        sends = [] if self.rank != root else \
            [(self._bytes(inp[r]), r) for r in range(self.size)]
        return self._exchange(sends, [(self._bytes(out), root)])

    def _runs(self, array, counts):
        flat, at, out = self._bytes(array), 0, []
        for r, c in enumerate(counts):
            if c:
                out.append((flat[at:at + int(c)], r))
            at += int(c)
        return out

    def iallgatherv(self, out, inp, counts):
        if self._on_host("all_gather", out, inp):
            return self.host.iallgatherv(out, inp, counts)
        sends = [(self._bytes(inp), r) for r in range(self.size) if inp.nbytes]
        return self._exchange(sends, self._runs(out, counts))

    def ialltoallv(self, out, inp, send_counts, recv_counts):
        if self._on_host("all_to_all", out, inp):
            return self.host.ialltoallv(out, inp, send_counts, recv_counts)
        return self._exchange(self._runs(inp, send_counts), self._runs(out, recv_counts))

    def ibarrier(self):
        # NCCL has no barrier: a one-element all-reduce on the device, then the event
        one = self._cupy.zeros(1, np.float32)
        self.comm.allReduce(_ptr(one), _ptr(one), 1, self._nccl.NCCL_FLOAT32,
                            self._nccl.NCCL_SUM, self._stream())
        return self._done(), None

    # -- point to point --------------------------------------------------------------------------
    def isend(self, array, dst, tag):
        if self._on_host("send", array):
            return self.host.isend(array, dst, tag)
        buf = self._bytes(array)
        self.comm.send(_ptr(buf), buf.size, self._nccl.NCCL_UINT8, dst, self._stream())
        return self._done(), None

    def irecv(self, array, src, tag):
        if self._on_host("recv", array):
            return self.host.irecv(array, src, tag)
        if src is None:
            raise ValueError("recv(): the nccl backend needs a source rank (NCCL has no "
                             "receive from any rank)")
        buf = self._bytes(array)
        self.comm.recv(_ptr(buf), buf.size, self._nccl.NCCL_UINT8, src, self._stream())
        return self._done(), lambda statuses: src
