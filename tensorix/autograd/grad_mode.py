"""Grad modes: no_grad, enable_grad, set_grad_enabled, inference_mode, anomaly detection.

The modes are per thread, as in PyTorch: a ``no_grad`` block (an optimizer step) in one thread
leaves graph recording on in the others, and a new thread starts with grad enabled, inference
and anomaly mode off. Each thread's modes are one slotted :class:`_State`; the per-op hot path
reads it once (``modes.state``, one thread-local lookup) and then plain attributes.
"""

from __future__ import annotations

import functools
import threading
import weakref

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
           "is_inference_mode_enabled", "detect_anomaly", "set_detect_anomaly",
           "is_anomaly_enabled", "is_anomaly_check_nan_enabled"]


_STATES = weakref.WeakSet()  # every thread's _State, to tell them all that codes exist
_CODES = [False]  # whether the process has made a tensor of uint8 codes on a device


class _State:
    __slots__ = ("enabled", "inference", "anomaly", "check_nan", "saved_hooks", "hooked",
                 "_tracer", "_gemm", "__weakref__")

    def __init__(self):
        self.enabled = True  # record graphs
        self.inference = False  # inside inference_mode
        self.anomaly = False  # keep each node's forward stack
        self.check_nan = True  # with anomaly: fail on a NaN/Inf gradient
        self.saved_hooks = None  # (pack, unpack) of autograd.graph.saved_tensors_hooks
        # the dispatch hooks (autograd/dispatch.py); ``hooked``, the one flag Function.apply
        # reads per op, is whether a hook is set or storage codes exist
        self._tracer = self._gemm = None
        self.hooked = _CODES[0]
        _STATES.add(self)

    def _rehook(self):
        self.hooked = self._tracer is not None or self._gemm is not None or _CODES[0]

    @property
    def tracer(self):
        """Graph capture: an object whose ``record(cls, args, out)`` sees every op, or None."""
        return self._tracer

    @tracer.setter
    def tracer(self, value):
        self._tracer = value
        self._rehook()

    @property
    def gemm(self):
        """A callable ``(cls, args) -> Tensor | None`` computing the GEMM primitives (a
        precision policy), or None."""
        return self._gemm

    @gemm.setter
    def gemm(self, value):
        self._gemm = value
        self._rehook()


def codes_exist() -> None:
    """Note that a tensor of uint8 codes exists (tensor._make calls this once): from now on
    every thread's ops pass the dispatcher's storage-code check."""
    if not _CODES[0]:
        _CODES[0] = True
        for state in list(_STATES):
            state.hooked = True


class _Modes(threading.local):
    """``modes.state`` is the calling thread's :class:`_State`; __init__ runs once in every
    thread that touches ``modes``, so each thread starts from the defaults."""
    def __init__(self):
        self.state = _State()


modes = _Modes()


class _Mode:
    """Base for the grad-mode context managers; each is also a function decorator, with or
    without parentheses (``@no_grad`` and ``@no_grad()``)."""

    _args: tuple = ()

    def __new__(cls, *args, **kwargs):
        if len(args) == 1 and not kwargs and callable(args[0]):
            return cls()(args[0])  # used bare as a decorator
        return super().__new__(cls)

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__(*self._args):
                return fn(*args, **kwargs)

        return wrapper

    def __enter__(self):
        state = modes.state
        self._prev = (state.enabled, state.inference)
        self._set(state)
        return self

    def __exit__(self, *exc):
        state = modes.state
        state.enabled, state.inference = self._prev
        return False


class no_grad(_Mode):  # noqa: N801 - PyTorch's names
    """Disable graph recording. Example: ``with tensorix.no_grad(): y = w * 2``."""

    def _set(self, state):
        state.enabled = False


class enable_grad(_Mode):  # noqa: N801
    """Re-enable graph recording inside a no_grad region."""

    def _set(self, state):
        state.enabled = True


class set_grad_enabled(_Mode):  # noqa: N801
    """Set grad mode on or off; a context manager, a decorator, or a plain call.

    Example: ``with tensorix.set_grad_enabled(is_train): out = model(x)``.
    """

    def __new__(cls, mode: bool):
        return object.__new__(cls)

    def __init__(self, mode: bool):
        if not isinstance(mode, bool):
            raise TypeError(f"set_grad_enabled(): argument 'mode' must be bool, not "
                            f"{type(mode).__name__}")
        self._args = (mode,)
        state = modes.state
        self._prev = (state.enabled, state.inference)
        state.enabled = mode  # takes effect as a plain call too, like PyTorch

    def __call__(self, fn):
        state = modes.state
        state.enabled, state.inference = self._prev  # as a decorator it changes nothing now
        return super().__call__(fn)

    def __enter__(self):  # the mode was already set (and the old one kept) by __init__
        return self

    def clone(self):
        return self.__class__(*self._args)


class inference_mode(_Mode):  # noqa: N801
    """no_grad for pure inference (``mode=False`` leaves grad mode alone). Tensors made inside
    are ordinary tensors here: unlike PyTorch they are not marked as inference tensors, so using
    them in autograd later is allowed (as constants)."""

    def __init__(self, mode: bool = True):
        self._args = (bool(mode),)

    def _set(self, state):
        if self._args[0]:
            state.enabled, state.inference = False, True


def is_grad_enabled() -> bool:
    """Whether ops record graphs now (in this thread)."""
    return modes.state.enabled


def untraced_first_order() -> bool:
    """Inside a backward that records no graph (no ``create_graph``) and that no tracer sees:
    where an op may compute its gradient on raw arrays instead of through recorded ops (a
    double backward needs the ops; a compiled backward must record them, or it would keep one
    call's values). Storage codes and GEMM policies are the caller's to check, if they matter.
    """
    state = modes.state
    return not state.enabled and state.tracer is None


def is_inference_mode_enabled() -> bool:
    """Whether we are inside ``inference_mode()``."""
    return modes.state.inference


class detect_anomaly:  # noqa: N801
    """Anomaly mode: every node keeps the stack of the forward call that made it; a backward
    that returns NaN/Inf (with ``check_nan``) or raises names the node and shows that stack.

    Example: ``with tensorix.autograd.detect_anomaly(): loss.backward()``.
    """

    def __init__(self, check_nan: bool = True):
        self.check_nan = bool(check_nan)

    def __enter__(self):
        state = modes.state
        self._prev = (state.anomaly, state.check_nan)
        state.anomaly, state.check_nan = True, self.check_nan
        return self

    def __exit__(self, *exc):
        state = modes.state
        state.anomaly, state.check_nan = self._prev
        return False


def set_detect_anomaly(mode: bool, check_nan: bool = True) -> None:
    """Turn anomaly mode on or off for this thread (see :class:`detect_anomaly`)."""
    state = modes.state
    state.anomaly, state.check_nan = bool(mode), bool(check_nan)


def is_anomaly_enabled() -> bool:
    """Whether anomaly mode is on in this thread."""
    return modes.state.anomaly


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly mode (in this thread) fails on a NaN/Inf gradient."""
    return modes.state.check_nan
