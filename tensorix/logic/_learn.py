"""Learning: ``fit`` trains every tensor that is not data through tensorix autograd.

Parameters are the real tensors the program reads but neither defines by an equation nor gets
as data: tensors with no value at all (initialized here) and literal tensors (their literal is
the initial value), minus those named in ``constants``. Named constants (``Dk = 2``) are never
learned. Each step runs the dependency slice of the loss with the current parameters, calls
``backward()`` on the loss (a scalar tensor) and steps the optimizer; gradients flow through
the einsums, gathers, scatters and smooth nonlinearities (``step`` has zero gradient).
Fixpoints are differentiated by unrolling their iterations.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import ops, optim
from . import _ir as ir
from ._errors import ProgramError

__all__ = ["fit", "FitResult", "parameters"]

_OPTIMIZERS = {"sgd": "SGD", "adam": "Adam", "adamw": "AdamW"}


@dataclass
class FitResult:
    """``losses``: the loss before each step and after the last one (steps + 1 values);
    ``params``: name -> trained Tensor."""

    losses: list = field(default_factory=list)
    params: dict = field(default_factory=dict)

    @property
    def final_loss(self):
        return self.losses[-1]


def parameters(program, data=(), constants=()):
    """Names of the tensors ``fit`` would learn (given the data names)."""
    c = program.compile(params=True)
    heads = c.heads()
    literal = {s.name for s in program.statements if isinstance(s, ir.Literal) and s.value.ndim}
    out = []
    for name, info in c.typing.tensors.items():
        if info.kind != "real" or name in heads or name in constants or name in data:
            continue
        if name in program._data:
            continue
        if info.source == "param" or name in literal or info.source == "declared":
            out.append(name)
    return out


def _init(program, name, shape, init, rng):
    if init is not None and name in init:
        v = init[name]
        t = v.detach().clone() if isinstance(v, ops.Tensor) else ops.tensor(
            np.asarray(v, dtype=np.float64), dtype=program.dtype, device=program.device)
        if tuple(t.shape) != tuple(shape):
            raise ProgramError(f"fit(): the initial value of {name!r} has shape "
                               f"{tuple(t.shape)}, the program needs {tuple(shape)}")
        return t.to(dtype=program.dtype, device=program.device)
    for s in program.statements:
        if isinstance(s, ir.Literal) and s.name == name:
            return ops.tensor(s.value, dtype=program.dtype, device=program.device)
    bound = 1.0 / np.sqrt(shape[-1]) if shape else 1.0
    return ops.tensor(rng.uniform(-bound, bound, size=shape), dtype=program.dtype,
                      device=program.device)


def _optimizer(optimizer, params, lr, kwargs):
    if isinstance(optimizer, str):
        cls = getattr(optim, _OPTIMIZERS.get(optimizer.lower(), ""), None)
        if cls is None:
            raise ValueError(f"fit(): unknown optimizer {optimizer!r}; expected one of "
                             f"{list(_OPTIMIZERS)}, an optimizer class or a factory")
        return cls(params, lr=lr, **kwargs)
    if isinstance(optimizer, type):
        return optimizer(params, lr=lr, **kwargs)
    if callable(optimizer):
        return optimizer(params)
    raise TypeError(f"fit(): optimizer must be a name, a class or a callable, got "
                    f"{type(optimizer).__name__}")


def fit(program, loss="Loss", data=None, optimizer="sgd", lr=0.1, steps=100, init=None,
        constants=(), seed=0, callback=None, **optimizer_kwargs):
    """Train the program's parameters to minimize the scalar tensor ``loss``.

    ``data``: name -> array of training data (not learned). ``init``: name -> initial value
    of a parameter (default: the literal if the program has one, else uniform in
    +-1/sqrt(last axis size) from ``seed``). ``optimizer``: 'sgd', 'adam', 'adamw', an
    optimizer class (called with ``lr`` and ``optimizer_kwargs``) or ``callable(params)``.
    ``callback(step, loss_value, params)`` runs after each step. Returns a :class:`FitResult`;
    the program keeps the trained values (``program.params``), so ``run()`` and ``value()``
    then use them.

    Example::

        >>> P = tl.Program("P[e] = sig(W[j] X[e,j] + B)\\n"
        ...                "Loss avg= -(Lab[e] log(P[e]) + (1 - Lab[e]) log(1 - P[e]))")
        >>> r = tl.fit(P, data={"X": X, "Lab": y}, init={"W": [0, 0], "B": 0}, lr=0.5)
    """
    for k, v in (data or {}).items():
        program.set_data(k, v)
    shapes = {k: tuple(np.shape(v.detach().numpy(force=True) if isinstance(v, ops.Tensor)
                                else v)) for k, v in (init or {}).items()}
    if shapes != program._param_shapes:
        program._param_shapes = shapes
        program._changed()
    c = program.compile(params=True)
    if loss not in c.typing.tensors:
        raise ProgramError(f"fit(): the loss {loss!r} is not a tensor of the program")
    names = parameters(program, constants=constants)
    if not names:
        raise ProgramError("fit(): the program has no parameters to learn (every tensor is "
                           "data, defined by an equation or constant)")
    rng = np.random.default_rng(seed)
    params = {}
    for n in names:
        params[n] = _init(program, n, c.typing.tensors[n].shape, init, rng).requires_grad_(True)
    opt = _optimizer(optimizer, list(params.values()), lr, optimizer_kwargs)
    result = FitResult(params=params)
    for step in range(steps + 1):
        program.run(params=params, targets=[loss])
        value = program.values[loss]
        if value.numel() != 1:
            raise ProgramError(f"fit(): the loss {loss!r} must be a scalar, it has shape "
                               f"{tuple(value.shape)}")
        result.losses.append(float(value.detach().reshape(()).item()))
        if step == steps:
            break
        opt.zero_grad()
        value.reshape(()).backward()
        opt.step()
        if callback is not None:
            callback(step, result.losses[-1], params)
    program.params = params
    return result
