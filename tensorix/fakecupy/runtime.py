"""``cupy.cuda`` of the CuPy stand-in (``tensorix/fakecupy``): one device, streams, events and
memory pools that keep CuPy's interface and bookkeeping on the CPU.

Everything is synchronous: streams are always done, events record a host clock, a device
synchronize returns at once. The memory pool counts the bytes of live device arrays (each
new storage asks the current allocator, so ``cupy.cuda.set_allocator`` wrappers such as
tensorix's peak tracker run as on a GPU) and keeps freed bytes cached until
``free_all_blocks``.
"""

from __future__ import annotations

import time
import types
import weakref

import numpy as np

DEVICE_COUNT = 1
_NAME = b"CuPy stand-in (CPU)"


class CUDARuntimeError(RuntimeError):
    """CuPy's error for a failed CUDA runtime call."""


def unemulated(name):
    """A callable for a name CuPy has and the stand-in does not emulate."""
    def fn(*args, **kwargs):
        raise NotImplementedError(f"{name} exists in CuPy, but the CuPy stand-in does not "
                                  "emulate it")
    fn.__name__ = name.rsplit(".", 1)[-1]
    return fn


def unemulated_module(qual):
    mod = types.ModuleType(qual)
    mod.__getattr__ = lambda name: unemulated(f"{qual}.{name}")
    return mod


# -- memory ----------------------------------------------------------------------------------

class PooledMemory:
    """A block handed out by a pool; going away returns its bytes to the pool's cache."""

    def __init__(self, pool, size):
        self.pool, self.size, self.ptr, self.device_id = pool, size, 0, 0

    def __del__(self):
        self.pool._release(self.size)


class MemoryPool:
    """CuPy's caching pool: ``used_bytes`` held by live arrays, ``total_bytes`` with the
    cached free blocks."""

    def __init__(self, allocator=None):
        self._used = self._free = 0

    def malloc(self, size):
        size = int(size)
        reuse = min(self._free, size)
        self._free -= reuse
        self._used += size
        return PooledMemory(self, size)

    def _release(self, size):
        self._used -= size
        self._free += size

    def used_bytes(self):
        return self._used

    def free_bytes(self):
        return self._free

    def total_bytes(self):
        return self._used + self._free

    def free_all_blocks(self, stream=None):
        self._free = 0

    def n_free_blocks(self):
        return int(self._free > 0)


class PinnedMemoryPool(MemoryPool):
    """Pinned host memory: nothing here uses it; kept for ``free_all_blocks``."""


_POOL, _PINNED = MemoryPool(), PinnedMemoryPool()
_ALLOCATOR = [_POOL.malloc]
_HELD: dict = {}  # id(storage) -> the allocator's block, released when the storage dies


def get_default_memory_pool():
    return _POOL


def get_default_pinned_memory_pool():
    return _PINNED


def set_allocator(allocator=None):
    _ALLOCATOR[0] = _POOL.malloc if allocator is None else allocator


def get_allocator():
    return _ALLOCATOR[0]


def allocate(storage):
    """Account a new device array's storage with the current allocator until it is freed."""
    key = id(storage)
    if storage.nbytes and key not in _HELD:
        _HELD[key] = _ALLOCATOR[0](storage.nbytes)
        weakref.finalize(storage, _HELD.pop, key, None)


class MemoryPointer:
    """``ndarray.data``: the address of the first element."""

    def __init__(self, storage):
        self.ptr = storage.ctypes.data
        self.device_id = 0

    def __int__(self):
        return self.ptr


# -- devices, streams, events ----------------------------------------------------------------

_CURRENT = [0]
_STREAMS: list = []


def _check_index(i):
    if not 0 <= i < DEVICE_COUNT:
        raise CUDARuntimeError("cudaErrorInvalidDevice: invalid device ordinal")


class Device:
    """A GPU of the stand-in (there is ``DEVICE_COUNT`` of them, all the host)."""

    def __init__(self, device=None):
        self.id = _CURRENT[0] if device is None else int(device)
        self._prev = []

    def use(self):
        _check_index(self.id)
        _CURRENT[0] = self.id

    def __enter__(self):
        _check_index(self.id)
        self._prev.append(_CURRENT[0])
        _CURRENT[0] = self.id
        return self

    def __exit__(self, *exc):
        _CURRENT[0] = self._prev.pop()
        return False

    def synchronize(self):
        _check_index(self.id)

    @property
    def compute_capability(self):
        return "90"

    def __eq__(self, other):
        return isinstance(other, Device) and other.id == self.id

    def __hash__(self):
        return hash(self.id)

    def __repr__(self):
        return f"<CUDA Device {self.id}>"


class Stream:
    """A stream: work is synchronous here, so it is always done."""

    _next_ptr = [1]

    def __init__(self, null=False, non_blocking=False, ptds=False, priority=None):
        if null:
            self.ptr = 0
        else:
            self.ptr = Stream._next_ptr[0]
            Stream._next_ptr[0] += 1
        self.device_id, self.priority = _CURRENT[0], priority

    done = property(lambda self: True)

    def synchronize(self):
        pass

    def wait_event(self, event):
        if not isinstance(event, Event):
            raise TypeError(f"wait_event: expected a cupy.cuda.Event, got {type(event)}")

    def record(self, event=None):
        event = Event() if event is None else event
        event.record(self)
        return event

    def use(self):
        _STREAMS[:] = [self]
        return self

    def __enter__(self):
        _STREAMS.append(self)
        return self

    def __exit__(self, *exc):
        _STREAMS.pop()
        return False


Stream.null = Stream(null=True)


def get_current_stream(device_id=None):
    return _STREAMS[-1] if _STREAMS else Stream.null


class Event:
    """An event records the host clock (everything before it has already run)."""

    def __init__(self, block=False, disable_timing=False, interprocess=False):
        self.disable_timing, self._t, self.ptr = disable_timing, None, id(self)

    def record(self, stream=None):
        if stream is not None and not isinstance(stream, Stream):
            raise TypeError(f"record: expected a cupy.cuda.Stream, got {type(stream)}")
        self._t = time.perf_counter()

    def synchronize(self):
        pass

    done = property(lambda self: True)


def get_elapsed_time(start_event, end_event):
    if start_event.disable_timing or end_event.disable_timing:
        raise CUDARuntimeError("cudaErrorInvalidResourceHandle: invalid resource handle")
    if start_event._t is None or end_event._t is None:
        raise CUDARuntimeError("cudaErrorInvalidResourceHandle: event not recorded")
    return (end_event._t - start_event._t) * 1000.0


def _runtime():
    rt = types.ModuleType("cupy.cuda.runtime")
    rt.CUDARuntimeError = CUDARuntimeError
    rt.getDeviceCount = lambda: DEVICE_COUNT
    rt.getDevice = lambda: _CURRENT[0]

    def set_device(i):
        _check_index(i)
        _CURRENT[0] = i

    def properties(i):
        _check_index(i)
        return {"name": _NAME, "major": 9, "minor": 0, "totalGlobalMem": 1 << 34,
                "multiProcessorCount": 1}

    rt.setDevice, rt.getDeviceProperties = set_device, properties
    rt.deviceSynchronize = lambda: None
    rt.runtimeGetVersion = rt.driverGetVersion = lambda: 13000
    rt.memGetInfo = lambda: (1 << 34, 1 << 34)
    return rt


def module(names):
    """``cupy.cuda``: the names in ``names`` (CuPy's), emulated or refusing clearly."""
    mod = types.ModuleType("cupy.cuda")
    have = {"Device": Device, "Stream": Stream, "Event": Event, "MemoryPool": MemoryPool,
            "PinnedMemoryPool": PinnedMemoryPool, "MemoryPointer": MemoryPointer,
            "get_current_stream": get_current_stream, "get_elapsed_time": get_elapsed_time,
            "set_allocator": set_allocator, "get_allocator": get_allocator,
            "runtime": _runtime(), "is_available": lambda: True,
            "get_device_id": lambda: _CURRENT[0]}
    memory = types.ModuleType("cupy.cuda.memory")
    for k in ("MemoryPool", "MemoryPointer", "set_allocator", "get_allocator"):
        setattr(memory, k, have[k])
    have["memory"] = memory
    for name in names:
        setattr(mod, name, have.get(name) or unemulated(f"cupy.cuda.{name}"))
    return mod


def core_module():
    """The piece of CuPy's private ``_core`` tensorix uses: the cuBLAS compute type per dtype
    (``backend.set_tf32``); here it is only recorded."""
    core, lin = types.ModuleType("cupy._core"), types.ModuleType("cupy._core._routines_linalg")
    lin.COMPUTE_TYPE_DEFAULT, lin.COMPUTE_TYPE_PEDANTIC, lin.COMPUTE_TYPE_TF32 = 0, 1, 5
    kinds: dict = {}
    lin.set_compute_type = lambda dtype, kind: kinds.__setitem__(np.dtype(dtype).name, kind)
    lin.get_compute_type = lambda dtype: kinds.get(np.dtype(dtype).name, 0)
    core._routines_linalg = lin
    return core
