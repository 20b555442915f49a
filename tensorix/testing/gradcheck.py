"""Float64 numerical gradient checks along random directions.

For f: inputs -> outputs, a random cotangent w and a random direction v per input, compare the
analytic <grad_x(w . f), v> against the central difference (w . f(x + eps v) - w . f(x - eps v))
/ (2 eps). One direction checks every element at once; a failure names the input.
"""

from __future__ import annotations

import numpy as np

from ..autograd.engine import grad as _grad
from ..tensor import Tensor, _make

__all__ = ["gradcheck", "gradgradcheck"]


def _outputs(fn, inputs):
    out = fn(*inputs)
    if isinstance(out, Tensor):
        out = (out,)
    return tuple(o for o in out if isinstance(o, Tensor) and o.dtype.category >= 2)


def _dot(outs, ws):
    total = 0.0
    for o, w in zip(outs, ws):
        total = total + (o * w).sum() if o.requires_grad else total + float(
            np.real(np.vdot(w._data, o._data)))
    return total


def gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3, seed=0, name=None,
              create_graph=False):
    """Check the gradient of ``fn(*inputs)`` w.r.t. every float64 input that requires grad.

    Raises AssertionError naming the op, the input index and both values on mismatch.
    Example: ``gradcheck(lambda x: (x * x).sum(), [tensorix.randn(3, dtype=tensorix.float64,
    requires_grad=True)])``.
    """
    name = name or getattr(fn, "__name__", "fn")
    rng = np.random.default_rng(seed)
    inputs = list(inputs)
    diff = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    for i in diff:
        if inputs[i].dtype.name not in ("float64", "complex128"):
            raise TypeError(f"gradcheck({name}): input {i} must be float64 for a numerical "
                            f"check, got {inputs[i].dtype.name}")
    outs = _outputs(fn, inputs)
    ws = [_make(rng.standard_normal(o.shape)) for o in outs]
    dirs = {i: rng.standard_normal(inputs[i].shape) for i in diff}
    live = [o for o in outs if o.requires_grad]
    if not live:
        return True
    analytic = _grad(_dot(outs, ws), [inputs[i] for i in diff], allow_unused=True,
                     create_graph=create_graph)
    for k, i in enumerate(diff):
        a = 0.0 if analytic[k] is None else float(np.sum(analytic[k]._data * dirs[i]))
        x0 = inputs[i]._data.copy()
        vals = []
        for sgn in (1, -1):  # grad mode stays on: fn may itself differentiate (gradgrad)
            args = list(inputs)
            args[i] = _make(x0 + sgn * eps * dirs[i]).requires_grad_()
            vals.append(_dot(_outputs(fn, args), ws))
        n = (float(vals[0]) - float(vals[1])) / (2 * eps)
        if not np.isclose(a, n, rtol=rtol, atol=atol):
            raise AssertionError(f"gradcheck({name}): gradient of input {i} disagrees with "
                                 f"finite differences: analytic {a:.10g} vs numerical {n:.10g}")
    return True


def gradgradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3, seed=0, name=None):
    """Check second derivatives: gradcheck of the map inputs -> grad(w . fn(inputs))."""
    name = name or getattr(fn, "__name__", "fn")
    rng = np.random.default_rng(seed + 1)
    outs = _outputs(fn, inputs)
    ws = [_make(rng.standard_normal(o.shape)) for o in outs]
    diff = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]

    def first(*xs):
        o = _outputs(fn, xs)
        gs = _grad(_dot(o, ws), [xs[i] for i in diff], create_graph=True, allow_unused=True,
                   materialize_grads=True)
        return tuple(gs)

    return gradcheck(first, inputs, eps=eps, atol=atol, rtol=rtol, seed=seed + 2,
                     name=f"grad of {name}")
