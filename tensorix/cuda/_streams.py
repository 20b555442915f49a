"""Streams and events: queue work on several streams, order them, and time them on the GPU.

Thin shells over ``cupy.cuda.Stream`` and ``cupy.cuda.Event`` with PyTorch's method names;
every tensorix op launched inside ``with stream:`` (or ``with tensorix.cuda.stream(s):``)
is queued on that stream, since CuPy launches on its current stream.
"""

from __future__ import annotations

from .. import backend
from ._device import device_index

__all__ = ["Stream", "Event", "current_stream", "default_stream", "stream"]


def _cp():
    return backend.cupy_module()


class Stream:
    """A CUDA stream on ``device`` (default: the current GPU).

    Example::

        s = tensorix.cuda.Stream()
        with s:
            y = x @ x          # queued on s
        s.synchronize()
    """

    def __init__(self, device=None, priority: int = 0, *, _wrap=None):
        if _wrap is not None:
            self._stream, self.device_index = _wrap, int(_wrap.device_id)
            return
        cp = _cp()
        self.device_index = device_index(device, "Stream")
        with cp.cuda.Device(self.device_index):
            self._stream = cp.cuda.Stream(non_blocking=True, priority=priority or None)

    @property
    def cuda_stream(self) -> int:
        """The raw ``cudaStream_t`` handle, for other libraries."""
        return int(self._stream.ptr)

    def synchronize(self) -> None:
        """Wait until everything queued on this stream has finished."""
        self._stream.synchronize()

    def query(self) -> bool:
        """True when all work queued on this stream has finished."""
        return bool(self._stream.done)

    def record_event(self, event=None):
        """Record ``event`` (a new one by default) on this stream; returns it."""
        event = Event() if event is None else event
        event.record(self)
        return event

    def wait_event(self, event) -> None:
        """Make later work on this stream wait for ``event``."""
        self._stream.wait_event(event._event)

    def wait_stream(self, other) -> None:
        """Make later work on this stream wait for what is queued on ``other`` now."""
        self.wait_event(other.record_event())

    def __enter__(self):
        self._stream.__enter__()
        return self

    def __exit__(self, *exc):
        return self._stream.__exit__(*exc)

    def __eq__(self, other):
        return isinstance(other, Stream) and self.cuda_stream == other.cuda_stream

    def __hash__(self):
        return hash(self.cuda_stream)

    def __repr__(self):
        return f"<tensorix.cuda.Stream device=cuda:{self.device_index} " \
               f"cuda_stream={self.cuda_stream:#x}>"


def current_stream(device=None) -> Stream:
    """The stream ops are queued on now (on the current GPU)."""
    cp = _cp()
    with cp.cuda.Device(device_index(device, "current_stream")):
        return Stream(_wrap=cp.cuda.get_current_stream())


def default_stream(device=None) -> Stream:
    """The GPU's default (null) stream."""
    cp = _cp()
    with cp.cuda.Device(device_index(device, "default_stream")):
        return Stream(_wrap=cp.cuda.Stream.null)


class stream:
    """Context manager queueing ops on ``s`` inside its block (``None``: no change)."""

    def __init__(self, s):
        self.s = s

    def __enter__(self):
        if self.s is not None:
            self.s.__enter__()
        return self.s

    def __exit__(self, *exc):
        return False if self.s is None else self.s.__exit__(*exc)


class Event:
    """A CUDA event: a mark in a stream to wait on or to time from.

    Example::

        start, end = tensorix.cuda.Event(enable_timing=True), tensorix.cuda.Event(True)
        start.record(); y = x @ x; end.record(); end.synchronize()
        ms = start.elapsed_time(end)
    """

    def __init__(self, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False):
        self.enable_timing = bool(enable_timing)
        self._event = _cp().cuda.Event(block=blocking, disable_timing=not enable_timing,
                                       interprocess=interprocess)

    def record(self, stream=None) -> None:
        """Mark the current point of ``stream`` (default: the current stream)."""
        self._event.record(None if stream is None else stream._stream)

    def wait(self, stream=None) -> None:
        """Make later work on ``stream`` (default: current) wait for this event."""
        (current_stream() if stream is None else stream).wait_event(self)

    def query(self) -> bool:
        """True when the work before this event has finished."""
        return bool(self._event.done)

    def synchronize(self) -> None:
        """Wait until the work before this event has finished."""
        self._event.synchronize()

    def elapsed_time(self, end_event) -> float:
        """Milliseconds from this event to ``end_event`` (both recorded with timing on)."""
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("elapsed_time(): both events must be created with "
                               "enable_timing=True")
        return float(_cp().cuda.get_elapsed_time(self._event, end_event._event))

    def __repr__(self):
        return f"<tensorix.cuda.Event enable_timing={self.enable_timing}>"
