"""Grad modes: no_grad, enable_grad, set_grad_enabled, inference_mode, anomaly detection.

The state is one module-level object read on every op, so it is a plain attribute, not a
thread-local (tensorix ops are not run from several threads at once).
"""

from __future__ import annotations

import functools

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
           "is_inference_mode_enabled", "detect_anomaly", "set_detect_anomaly",
           "is_anomaly_enabled", "is_anomaly_check_nan_enabled"]


class _State:
    __slots__ = ("enabled", "inference", "anomaly", "check_nan")

    def __init__(self):
        self.enabled = True  # record graphs
        self.inference = False  # inside inference_mode
        self.anomaly = False  # keep each node's forward stack
        self.check_nan = True  # with anomaly: fail on a NaN/Inf gradient


state = _State()


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
        self._prev = (state.enabled, state.inference)
        self._set()
        return self

    def __exit__(self, *exc):
        state.enabled, state.inference = self._prev
        return False


class no_grad(_Mode):  # noqa: N801 - PyTorch's names
    """Disable graph recording. Example: ``with tensorix.no_grad(): y = w * 2``."""

    def _set(self):
        state.enabled = False


class enable_grad(_Mode):  # noqa: N801
    """Re-enable graph recording inside a no_grad region."""

    def _set(self):
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
        self._prev = (state.enabled, state.inference)
        state.enabled = mode  # takes effect as a plain call too, like PyTorch

    def __call__(self, fn):
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

    def _set(self):
        if self._args[0]:
            state.enabled, state.inference = False, True


def is_grad_enabled() -> bool:
    """Whether ops record graphs now."""
    return state.enabled


def is_inference_mode_enabled() -> bool:
    """Whether we are inside ``inference_mode()``."""
    return state.inference


class detect_anomaly:  # noqa: N801
    """Anomaly mode: every node keeps the stack of the forward call that made it; a backward
    that returns NaN/Inf (with ``check_nan``) or raises names the node and shows that stack.

    Example: ``with tensorix.autograd.detect_anomaly(): loss.backward()``.
    """

    def __init__(self, check_nan: bool = True):
        self.check_nan = bool(check_nan)

    def __enter__(self):
        self._prev = (state.anomaly, state.check_nan)
        state.anomaly, state.check_nan = True, self.check_nan
        return self

    def __exit__(self, *exc):
        state.anomaly, state.check_nan = self._prev
        return False


def set_detect_anomaly(mode: bool, check_nan: bool = True) -> None:
    """Turn anomaly mode on or off globally (see :class:`detect_anomaly`)."""
    state.anomaly, state.check_nan = bool(mode), bool(check_nan)


def is_anomaly_enabled() -> bool:
    return state.anomaly


def is_anomaly_check_nan_enabled() -> bool:
    return state.check_nan
