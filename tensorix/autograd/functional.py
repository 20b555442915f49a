"""Function transforms built on the engine: vjp, jvp, jacobian, hessian, vhp, hvp.

The signatures and the shapes of the results are PyTorch's (``torch.autograd.functional``):
``inputs`` is a Tensor or a tuple of Tensors and each result has the same structure. Every
transform is reverse mode on top of :func:`tensorix.autograd.grad`:

* ``vjp`` is one backward pass seeded with ``v``;
* ``jvp`` uses the double-vjp trick: ``u -> vjp(u)`` is linear in ``u``, so differentiating it
  with respect to ``u`` along ``v`` gives ``J @ v`` (this is why every backward is written with
  differentiable ops);
* ``jacobian`` runs one vjp per output element (``vectorize`` is accepted and computes the same
  loop); ``hessian`` is the jacobian of the gradient;
* ``vhp`` differentiates the gradient along ``v``; ``hvp`` uses the double-vjp trick on it.

Unless ``create_graph=True`` the results are detached. With ``strict=True`` an output that does
not depend on an input is an error; otherwise its block is zeros.

Example::

    >>> f = lambda x: (x ** 3).sum()
    >>> tensorix.autograd.functional.hessian(f, tensorix.tensor([1.0, 2.0]))
    tensor([[ 6.,  0.],
            [ 0., 12.]])
"""

from __future__ import annotations

from ..tensor import Tensor
from .engine import grad as _grad
from .function import Function
from .grad_mode import enable_grad

__all__ = ["vjp", "jvp", "jacobian", "hessian", "vhp", "hvp"]


def _as_tuple(x, what, fn_name):
    """(tuple of Tensors, whether x was a tuple)."""
    is_tuple = isinstance(x, (tuple, list))
    items = tuple(x) if is_tuple else (x,)
    for i, t in enumerate(items):
        if not isinstance(t, Tensor):
            if what == "outputs":
                raise TypeError(f"{fn_name}: the function given to {fn_name} must return "
                                "either a Tensor or a tuple of Tensors but the value at index "
                                f"{i} has type {type(t).__name__}")
            raise TypeError(f"{fn_name}: the {what} given to {fn_name} must be either a "
                            f"Tensor or a tuple of Tensors but the value at index {i} has "
                            f"type {type(t).__name__}")
    return items, is_tuple


def _prepare(inputs, create_graph, fn_name):
    """``inputs`` (a Tensor or a tuple of them) as fresh leaves to differentiate with respect
    to (kept in the caller's graph when create_graph and the input already requires grad, as
    PyTorch does), and whether they came as a tuple."""
    inputs, is_tuple = _as_tuple(inputs, "inputs", fn_name)
    out = []
    for t in inputs:
        if create_graph and t._rg:
            out.append(t.view_as(t))
        else:
            out.append(t.detach().requires_grad_(t._dtype.category >= 2))
    return tuple(out), is_tuple


def _finish(items, create_graph):
    return tuple(None if t is None else t if create_graph else t.detach() for t in items)


def _restructure(items, is_tuple):
    return items if is_tuple else items[0]


def _check_v(v, outputs, what, fn_name):
    if v is None:
        if len(outputs) != 1 or outputs[0]._data.size != 1:
            raise RuntimeError(f"{fn_name}: the vector v can only be None if the "
                               f"{what} is a single Tensor with a single element")
        return None
    v, _ = _as_tuple(v, "v", fn_name)
    if len(v) != len(outputs):
        raise RuntimeError(f"{fn_name}: v has {len(v)} Tensors but the {what} has "
                           f"{len(outputs)}; they must match")
    for i, (a, b) in enumerate(zip(v, outputs)):
        if a._data.shape != b._data.shape:
            raise RuntimeError(f"{fn_name}: entry {i} of v has shape {list(a._data.shape)} "
                               f"but the matching {what} has shape {list(b._data.shape)}")
    return v


def _grads(outputs, inputs, grad_outputs, create_graph, strict, fn_name, what="output"):
    """autograd.grad that tolerates outputs without a graph and unused inputs (zeros unless
    strict)."""
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs or [None] * len(outputs)) if o._rg]
    if pairs:
        res = _grad([o for o, _ in pairs], inputs, [g for _, g in pairs],
                    create_graph=create_graph, retain_graph=True, allow_unused=True)
    else:
        res = (None,) * len(inputs)
    out = []
    for i, (r, inp) in enumerate(zip(res, inputs)):
        if r is None:
            if strict:
                raise RuntimeError(f"{fn_name}: the {what} of the user-provided function is "
                                   f"independent of input {i}. This is not allowed in strict "
                                   "mode.")
            r = inp.new_zeros(inp.shape)  # Tensor methods: the ops sit a layer above
        out.append(r)
    return tuple(out)


class _StackRows(Function):
    """Jacobian rows -> one tensor (autograd may not depend on the op families above it, so
    it keeps this one small differentiable stack for itself)."""

    @staticmethod
    def forward(ctx, *rows):
        return rows[0].xp.stack([r._data for r in rows])

    @staticmethod
    def backward(ctx, g):
        return tuple(g[k] for k in range(g._data.shape[0]))


def _call(func, inputs, fn_name):
    with enable_grad():
        outputs = func(*inputs)
    return _as_tuple(outputs, "outputs", fn_name)


def _double_vjp(values, like, inputs, v, create_graph, strict, fn_name, what="output"):
    """``J v`` for ``J`` the Jacobian of ``values`` (shaped as ``like``) w.r.t. ``inputs``: the
    map u -> J^T u is linear in u, so its derivative along v (w.r.t. u) is J v. ``v=None``
    means ones; a part that does not depend on v is zeros."""
    us = tuple(t.new_zeros(t.shape).requires_grad_(True) for t in like)
    back = _grads(values, inputs, us, True, strict, fn_name, what=what)
    if v is None:
        v = tuple(i.new_ones(i.shape) for i in inputs)
    pairs = [(b, w) for b, w in zip(back, v) if b._rg]
    res = _grad([b for b, _ in pairs], us, [w for _, w in pairs], create_graph=create_graph,
                retain_graph=True, allow_unused=True) if pairs else (None,) * len(us)
    return tuple(t.new_zeros(t.shape) if r is None else r for r, t in zip(res, like))


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), v^T J)``: the vector-Jacobian product at ``inputs``.

    ``v`` has the shape of the output (None for a one-element output). Example::

        >>> out, g = vjp(lambda x: x ** 2, tensorix.tensor([1.0, 2.0]), tensorix.ones(2))
        >>> g
        tensor([2., 4.])
    """
    with enable_grad():
        inputs, in_tuple = _prepare(inputs, create_graph, "vjp")
        outputs, out_tuple = _call(func, inputs, "vjp")
        v = _check_v(v, outputs, "output of the user-provided function", "vjp")
        res = _grads(outputs, inputs, v, create_graph, strict, "vjp")
    return (_restructure(_finish(outputs, create_graph), out_tuple),
            _restructure(_finish(res, create_graph), in_tuple))


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), J v)``: the Jacobian-vector product, by the double-vjp trick.

    ``v`` has the shape of the inputs (None for a one-element input). Example::

        >>> out, t = jvp(lambda x: x ** 2, tensorix.tensor([1.0, 2.0]), tensorix.ones(2))
        >>> t
        tensor([2., 4.])
    """
    with enable_grad():
        inputs, in_tuple = _prepare(inputs, create_graph, "jvp")
        v = _check_v(v, inputs, "input", "jvp")
        outputs, out_tuple = _call(func, inputs, "jvp")
        live = [o for o in outputs if o._rg]
        if strict and len(live) != len(outputs):
            raise RuntimeError("jvp: the output of the user-provided function does not "
                               "require gradients; in strict mode the outputs must be "
                               "computed in a differentiable manner from the inputs")
        res = _double_vjp(outputs, outputs, inputs, v, create_graph, strict, "jvp")
    return (_restructure(_finish(outputs, create_graph), out_tuple),
            _restructure(_finish(res, create_graph), out_tuple))


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """The Jacobian of ``func`` at ``inputs``: for output ``i`` and input ``j`` a Tensor of
    shape ``out_i.shape + in_j.shape``, nested as tuples following the structure of the
    outputs and inputs (a plain Tensor when both are single Tensors).

    Example: ``jacobian(lambda x: x.exp(), tensorix.zeros(2))`` is the 2x2 identity.
    """
    if strategy not in ("reverse-mode", "forward-mode"):
        raise ValueError(f"jacobian: expected strategy to be 'reverse-mode' or "
                         f"'forward-mode', got {strategy!r}")
    if strategy == "forward-mode":
        raise NotImplementedError("jacobian: strategy='forward-mode' is not implemented "
                                  "(tensorix has reverse mode only); use 'reverse-mode'")
    with enable_grad():
        inputs, in_tuple = _prepare(inputs, create_graph, "jacobian")
        outputs, out_tuple = _call(func, inputs, "jacobian")
        jac = []
        for i, out in enumerate(outputs):
            flat = out.reshape(-1)
            rows = [[] for _ in inputs]
            for k in range(flat._data.shape[0]):
                one = _grads([flat[k]], inputs, None, create_graph, strict, "jacobian",
                             what=f"output {i}")
                for j, g in enumerate(one):
                    rows[j].append(g)
            blocks = []
            for j, inp in enumerate(inputs):
                shape = tuple(out._data.shape) + tuple(inp._data.shape)
                if rows[j]:
                    blocks.append(_StackRows.apply(*rows[j]).reshape(shape))
                else:  # an empty output
                    blocks.append(inp.new_zeros(shape))
            jac.append(_restructure(_finish(blocks, create_graph), in_tuple))
    return _restructure(tuple(jac), out_tuple)


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a scalar ``func`` at ``inputs``: ``in.shape + in.shape`` for one input,
    a tuple of tuples ``H[i][j]`` for several.

    Example: ``hessian(lambda x: (x ** 3).sum(), x)`` is ``diag(6 * x)``.
    """
    inputs_t, in_tuple = _as_tuple(inputs, "inputs", "hessian")

    def gradient(*inp):
        out, _ = _call(func, inp, "hessian")
        if len(out) != 1 or out[0]._data.size != 1:
            raise RuntimeError("hessian: the function given to hessian should return a single "
                               "Tensor with a single element")
        g = _grads(out, inp, None, True, strict, "hessian")
        return g if in_tuple else g[0]

    return jacobian(gradient, inputs_t if in_tuple else inputs_t[0],
                    create_graph=create_graph, strict=strict,
                    strategy=outer_jacobian_strategy)


def _scalar_grad(func, inputs, v, fn_name):
    inputs, in_tuple = _prepare(inputs, True, fn_name)
    outputs, _ = _call(func, inputs, fn_name)
    if len(outputs) != 1 or outputs[0]._data.size != 1:
        raise RuntimeError(f"{fn_name}: the function given to {fn_name} should return a "
                           "single Tensor with a single element")
    v = _check_v(v, inputs, "input", fn_name)
    return inputs, in_tuple, outputs, v


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), v^T H)`` for a scalar ``func``: the gradient differentiated along v.

    Example: ``vhp(lambda x: (x ** 3).sum(), x, v)[1]`` is ``6 * x * v``.
    """
    with enable_grad():
        inputs, in_tuple, outputs, v = _scalar_grad(func, inputs, v, "vhp")
        g = _grads(outputs, inputs, None, True, strict, "vhp")
        res = _grads(g, inputs, v, create_graph, strict, "vhp", what="jacobian")
    return (_finish(outputs, create_graph)[0],
            _restructure(_finish(res, create_graph), in_tuple))


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), H v)`` for a scalar ``func``, by the double-vjp trick (for a twice
    continuously differentiable ``func`` it equals :func:`vhp`).

    Example: ``hvp(lambda x: (x ** 3).sum(), x, v)[1]`` is ``6 * x * v``.
    """
    with enable_grad():
        inputs, in_tuple, outputs, v = _scalar_grad(func, inputs, v, "hvp")
        g = _grads(outputs, inputs, None, True, strict, "hvp")
        res = _double_vjp(g, inputs, inputs, v, create_graph, strict, "hvp", what="jacobian")
    return (_finish(outputs, create_graph)[0],
            _restructure(_finish(res, create_graph), in_tuple))
