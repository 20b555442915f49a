"""The functions an equation may apply: elementwise nonlinearities and normalizers.

An elementwise function maps a Tensor (and numeric keyword arguments) to a Tensor of the same
shape. A normalizer also gets the axis it normalizes along (the left-side index marked with
'.'); it may only be the outermost function of an equation. ``register_function`` adds user
functions; names are then parsed as calls in the text form.
"""

from __future__ import annotations

from .. import ops
from ._errors import ProgramError

__all__ = ["register_function", "FUNCTIONS", "NORMALIZERS", "function_names", "apply_elementwise",
           "apply_normalizer"]


def _step(x, T=0.0):
    """Heaviside: 1 where x > 0, else 0 (zero gradient)."""
    return ops.gt(x.detach(), 0).to(x.dtype)


def _sig(x, T=1.0):
    """sigmoid(x / T); T = 0 is the step."""
    if T == 0:
        return _step(x)
    return ops.sigmoid(x / T if T != 1.0 else x)


FUNCTIONS = {
    "step": _step,
    "sig": _sig,
    "sigmoid": _sig,
    "relu": lambda x: ops.relu(x),
    "tanh": lambda x: ops.tanh(x),
    "exp": lambda x: ops.exp(x),
    "log": lambda x: ops.log(x),
    "sqrt": lambda x: ops.sqrt(x),
    "abs": lambda x: ops.abs(x),
    "sin": lambda x: ops.sin(x),
    "cos": lambda x: ops.cos(x),
    "softplus": lambda x: ops.softplus(x),
    "gelu": lambda x: ops.gelu(x),
}


def _softmax(x, axis):
    e = ops.exp(x - ops.amax(x.detach(), dim=axis, keepdim=True))
    return e / ops.sum(e, dim=axis, keepdim=True)


def _lnorm(x, axis, eps=1e-5):
    mu = ops.mean(x, dim=axis, keepdim=True)
    d = x - mu
    return d / ops.sqrt(ops.mean(d * d, dim=axis, keepdim=True) + eps)


def _norm(x, axis):
    return x / ops.sum(x, dim=axis, keepdim=True)


NORMALIZERS = {"softmax": _softmax, "lnorm": _lnorm, "norm": _norm}


def register_function(name, fn, *, normalizer=False):
    """Make ``name`` callable in equations.

    ``fn(x, **kwargs)`` maps a Tensor elementwise (numeric keyword arguments come from the
    call, e.g. ``leaky(x, a=0.1)``); with ``normalizer=True`` it is ``fn(x, axis, **kwargs)``
    and normalizes along the left-side index marked with '.'. Build it from tensorix ops so
    that learning can differentiate through it.

    Example::

        >>> tl.register_function("cube", lambda x: x * x * x)
        >>> tl.Program("X = [1, 2]\\nY[i] = cube(X[i])").run().value("Y")
    """
    if not (isinstance(name, str) and name.isidentifier() and name[0].islower()):
        raise ValueError(f"register_function(): name must be a lowercase identifier, got "
                         f"{name!r}")
    if not callable(fn):
        raise TypeError(f"register_function(): fn must be callable, got {type(fn).__name__}")
    (NORMALIZERS if normalizer else FUNCTIONS)[name] = fn
    (FUNCTIONS if normalizer else NORMALIZERS).pop(name, None)


def function_names():
    return set(FUNCTIONS) | set(NORMALIZERS)


def apply_elementwise(name, x, kwargs, where):
    fn = FUNCTIONS.get(name)
    if fn is None:
        if name in NORMALIZERS:
            raise ProgramError(f"{name}() normalizes along a marked index, so it must be the "
                               f"outermost function of the equation, in {where}")
        raise ProgramError(f"unknown function {name!r} in {where}")
    try:
        return fn(x, **dict(kwargs))
    except TypeError as e:
        raise ProgramError(f"bad arguments for {name}() in {where}: {e}") from None


def apply_normalizer(name, x, axis, kwargs, where):
    try:
        return NORMALIZERS[name](x, axis, **dict(kwargs))
    except TypeError as e:
        raise ProgramError(f"bad arguments for {name}() in {where}: {e}") from None
