"""Grad modes: no_grad, enable_grad, set_grad_enabled, inference_mode, anomaly detection.

The state is one module-level object read on every op, so it is a plain attribute, not a
thread-local (tensorix ops are not run from several threads at once).
"""

from __future__ import annotations

import functools

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
           "is_inference_mode_enabled", "detect_anomaly", "set_detect_anomaly",
           "is_anomaly_enabled"]


class _State:
    __slots__ = ("enabled", "inference", "anomaly")

    def __init__(self):
        self.enabled = True
        self.inference = False
        self.anomaly = False


state = _State()


class _Mode:
    """Base for the grad-mode context managers; each is also a function decorator."""

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__(*self._args):
                return fn(*args, **kwargs)

        return wrapper

    _args: tuple = ()

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
    """Set grad mode on or off; a context manager, a decorator, or a plain call."""

    def __init__(self, mode: bool):
        self._args = (mode,)
        self._prev = (state.enabled, state.inference)
        state.enabled = bool(mode)  # takes effect as a plain call too, like PyTorch

    def __enter__(self):  # the mode was already set (and the old one kept) by __init__
        return self


class inference_mode(_Mode):  # noqa: N801
    """no_grad for inference; tensors made inside are marked and may not enter autograd."""

    def __init__(self, mode: bool = True):
        self._args = (mode,)

    def _set(self):
        if self._args[0]:
            state.enabled, state.inference = False, True


def is_grad_enabled() -> bool:
    return state.enabled


def is_inference_mode_enabled() -> bool:
    return state.inference


class detect_anomaly:  # noqa: N801
    """Anomaly mode: backward names the op whose gradient became NaN/Inf, with its forward
    stack. Example: ``with tensorix.autograd.detect_anomaly(): loss.backward()``."""

    def __init__(self, check_nan: bool = True):
        self.check_nan = check_nan

    def __enter__(self):
        self._prev = state.anomaly
        state.anomaly = self.check_nan

    def __exit__(self, *exc):
        state.anomaly = self._prev
        return False


def set_detect_anomaly(mode: bool) -> None:
    state.anomaly = bool(mode)


def is_anomaly_enabled() -> bool:
    return state.anomaly
