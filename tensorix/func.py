"""``tensorix.func``: torch's composable function transforms (``torch.func``) on tensorix's
reverse-mode engine.

* ``grad``, ``grad_and_value`` (``argnums``, ``has_aux``), ``vjp``, ``jvp``, ``jacrev``,
  ``jacfwd``, ``hessian``: arguments may be Tensors or tuples/lists/dicts of them (pytrees).
  Each transform differentiates fresh copies of its inputs. When it runs inside another
  transform, or an input already requires grad, the result keeps its graph, so transforms nest
  (``grad(grad(f))``, ``jacrev(grad(f))``, ``vmap(grad(f))``) and ordinary ``backward()``
  reaches the inputs. At the top level with inputs that do not require grad the result is
  detached; tensors that ``f`` closes over are then constants (torch would differentiate
  through them as well).
* ``jvp`` and ``jacfwd`` are reverse mode inside (the double-vjp trick and one vjp per output
  element); they give forward mode's results at reverse mode's cost.
* ``vmap`` is a loop: it calls ``func`` once per index of the mapped dimension and stacks the
  results (correct for every op, batched or not; the cost is the loop). ``randomness``:
  ``"error"`` (the default, as torch) raises if ``func`` draws from the default generator;
  ``"different"`` gives each sample its own draws (the loop's natural behaviour);
  ``"same"`` replays the default generator's state so every sample sees the same draws.
  Draws from an explicit ``Generator`` are not watched.
* ``functional_call(module, params_and_buffers, args)`` runs ``module`` with the given tensors
  in place of its parameters and buffers (by dotted name), restoring them afterwards.

Example::

    from tensorix.func import functional_call, grad, vmap
    params = dict(model.named_parameters())
    def loss(p, x, y):
        return F.mse_loss(functional_call(model, p, (x,)), y)
    per_sample = vmap(grad(loss), in_dims=(None, 0, 0))(params, xs, ys)
"""

from __future__ import annotations

import functools
import threading

from .autograd import functional as _fn
from .autograd.engine import grad as _autograd_grad
from .autograd.grad_mode import enable_grad
from .ops import get_rng_state, set_rng_state, stack
from .ops.creation import zeros_like
from .tensor import Tensor

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "vmap",
           "functional_call"]

_depth = threading.local()  # how many transforms enclose the current call (thread-local mode)


# -- pytrees: Tensors in tuples, lists and dicts --------------------------------------------
def _flatten(tree):
    """(leaves, spec): the Tensors of ``tree`` in order and how to rebuild it."""
    if isinstance(tree, (tuple, list)):
        leaves, specs = [], []
        for t in tree:
            lv, sp = _flatten(t)
            leaves += lv
            specs.append(sp)
        return leaves, (type(tree), specs)
    if isinstance(tree, dict):
        leaves, specs = [], []
        for k, t in tree.items():
            lv, sp = _flatten(t)
            leaves += lv
            specs.append((k, sp))
        return leaves, (dict, specs)
    return [tree], None


def _unflatten(spec, leaves):
    it = iter(leaves)

    def build(sp):
        if sp is None:
            return next(it)
        kind, children = sp
        if kind is dict:
            return {k: build(c) for k, c in children}
        return kind(build(c) for c in children)

    return build(spec)


def _map(fn, tree):
    leaves, spec = _flatten(tree)
    return _unflatten(spec, [fn(t) for t in leaves])


# -- the nesting rule ------------------------------------------------------------------------
def _level():
    return getattr(_depth, "n", 0)


class _Nested:
    """Marks the body of a transform, so transforms called inside keep their graphs."""

    def __enter__(self):
        _depth.n = _level() + 1

    def __exit__(self, *exc):
        _depth.n -= 1


def _keep_graph(leaves):
    return _level() > 0 or any(isinstance(t, Tensor) and t.requires_grad for t in leaves)


def _fresh(t, keep):
    """A leaf to differentiate with respect to: a view of ``t`` in the caller's graph when
    the graph is kept and ``t`` is in one, else a detached copy that requires grad."""
    if not isinstance(t, Tensor):
        raise TypeError(f"func: expected the differentiated arguments to be Tensors (or "
                        f"tuples/lists/dicts of them), got {type(t).__name__}")
    if keep and t.requires_grad:
        return t.view_as(t)
    return t.detach().requires_grad_(True)


def _finish(tree, keep):
    return tree if keep else _map(lambda t: t.detach() if isinstance(t, Tensor) else t, tree)


def _argnums(argnums, nargs, fn_name):
    nums = argnums if isinstance(argnums, tuple) else (argnums,)
    for n in nums:
        if not isinstance(n, int) or not -nargs <= n < nargs:
            raise RuntimeError(f"{fn_name}: Got argnums={argnums!r} but only {nargs} "
                               "positional inputs")
    return tuple(n % nargs for n in nums)


def _split_aux(out, has_aux, fn_name):
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise RuntimeError(f"{fn_name}(f, ...): output of function f should be a tuple: "
                           "(output, aux) if has_aux is True")
    return out


def _prepare_args(args, argnums, fn_name):
    """(args with the differentiated ones replaced by fresh leaves, their leaves per argnum
    as (leaves, spec) pairs, whether to keep the graph)."""
    nums = _argnums(argnums, len(args), fn_name)
    flat = [_flatten(args[n]) for n in nums]
    keep = _keep_graph([t for lv, _ in flat for t in lv])
    args = list(args)
    fresh = []
    for n, (lv, spec) in zip(nums, flat):
        new = [_fresh(t, keep) for t in lv]
        args[n] = _unflatten(spec, new)
        fresh.append((new, spec))
    return args, fresh, keep


# -- grad ----------------------------------------------------------------------------------
def grad_and_value(func, argnums=0, has_aux=False):
    """A function returning ``(gradient, value)`` of a scalar ``func`` with respect to the
    positional argument(s) ``argnums`` (an int, or a tuple giving a tuple of gradients); each
    gradient has its argument's structure and shapes. With ``has_aux``, ``func`` returns
    ``(value, aux)`` and the result is ``(gradient, (value, aux))``.

    Example: ``grad_and_value(lambda x: (x ** 2).sum())(x)`` is ``(2 * x, (x ** 2).sum())``.
    """

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        args, fresh, keep = _prepare_args(args, argnums, "grad_and_value")
        with enable_grad(), _Nested():
            out = func(*args, **kwargs)
            value, aux = _split_aux(out, has_aux, "grad_and_value")
            if not isinstance(value, Tensor):
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a "
                                   f"Tensor, got {type(value).__name__}")
            if value.ndim != 0:
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a "
                                   f"scalar Tensor, got tensor with {value.ndim} dims. Maybe "
                                   "you wanted to use the vjp or jacrev APIs instead?")
            leaves = [t for lv, _ in fresh for t in lv]
            if value.requires_grad:
                gs = _autograd_grad([value], leaves, create_graph=keep, retain_graph=keep,
                                    allow_unused=True)
            else:
                gs = [None] * len(leaves)
        gs = [zeros_like(t) if g is None else g for g, t in zip(gs, leaves)]
        grads, k = [], 0
        for lv, spec in fresh:
            grads.append(_unflatten(spec, gs[k:k + len(lv)]))
            k += len(lv)
        g = tuple(grads) if isinstance(argnums, tuple) else grads[0]
        g, value = _finish(g, keep), _finish(value, keep)
        return (g, (value, _finish(aux, keep))) if has_aux else (g, value)

    return wrapper


def grad(func, argnums=0, has_aux=False):
    """The gradient of a scalar ``func`` as a function (``grad_and_value`` without the value;
    with ``has_aux`` it returns ``(gradient, aux)``).

    Example::

        >>> tensorix.func.grad(lambda x: (x ** 3).sum())(tensorix.tensor([1.0, 2.0]))
        tensor([ 3., 12.])
    """
    gv = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, value = gv(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    return wrapper


# -- vjp / jvp -----------------------------------------------------------------------------
def vjp(func, *primals, has_aux=False):
    """``(func(*primals), vjp_fn)`` (and ``aux`` with ``has_aux``): ``vjp_fn(cotangents)``,
    with cotangents shaped as the output, returns a tuple with one ``v^T J`` per primal, shaped
    as the primal. ``vjp_fn`` may be called several times.

    Example: ``out, fn = vjp(torch.sin, x); fn(torch.ones_like(out))`` is ``(cos(x),)``.
    """
    args, fresh, keep = _prepare_args(primals, tuple(range(len(primals))), "vjp")
    with enable_grad(), _Nested():
        out = func(*args)
    out, aux = _split_aux(out, has_aux, "vjp")
    outs, out_spec = _flatten(out)
    leaves = [t for lv, _ in fresh for t in lv]

    def vjp_fn(cotangents):
        cts, ct_spec = _flatten(cotangents)
        if ct_spec != out_spec or len(cts) != len(outs):
            raise RuntimeError("vjp_fn: expected the cotangents to have the structure of the "
                               "primal output")
        for o, c in zip(outs, cts):
            if tuple(o.shape) != tuple(c.shape):
                raise RuntimeError(f"vjp_fn: cotangent of shape {list(c.shape)} for an output "
                                   f"of shape {list(o.shape)}; they must match")
        pairs = [(o, c) for o, c in zip(outs, cts) if o.requires_grad]
        with enable_grad():
            gs = _autograd_grad([o for o, _ in pairs], leaves, [c for _, c in pairs],
                                create_graph=keep, retain_graph=True,
                                allow_unused=True) if pairs else [None] * len(leaves)
        gs = [zeros_like(t) if g is None else g for g, t in zip(gs, leaves)]
        res, k = [], 0
        for lv, spec in fresh:
            res.append(_finish(_unflatten(spec, gs[k:k + len(lv)]), keep))
            k += len(lv)
        return tuple(res)

    result = (_finish(out, keep), vjp_fn)
    return result + (_finish(aux, keep),) if has_aux else result


def jvp(func, primals, tangents, *, has_aux=False):
    """``(func(*primals), J @ tangents)`` (and ``aux`` with ``has_aux``): the Jacobian-vector
    product, ``primals`` and ``tangents`` tuples of matching Tensors. Computed in reverse mode
    by the double-vjp trick (two backward passes).

    Example: ``jvp(torch.sin, (x,), (v,))`` is ``(sin(x), cos(x) * v)``.
    """
    if not isinstance(primals, tuple) or not isinstance(tangents, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to be "
                           "tuples")
    p_leaves, p_spec = _flatten(primals)
    t_leaves, t_spec = _flatten(tangents)
    if p_spec != t_spec:
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have "
                           "the same python structure")
    keep = _keep_graph(p_leaves + t_leaves)
    aux_box = []

    def flat_func(*leaves):
        with _Nested():
            out = func(*_unflatten(p_spec, leaves))
        out, aux = _split_aux(out, has_aux, "jvp")
        aux_box.append(aux)
        outs, spec = _flatten(out)
        aux_box.append(spec)
        return tuple(outs)

    out, tangent_out = _fn.jvp(flat_func, tuple(p_leaves), tuple(t_leaves), create_graph=keep)
    spec = aux_box[1]
    result = (_finish(_unflatten(spec, out), keep), _finish(_unflatten(spec, tangent_out), keep))
    return result + (_finish(aux_box[0], keep),) if has_aux else result


# -- Jacobians -----------------------------------------------------------------------------
def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None):
    """The Jacobian of ``func`` with respect to argument(s) ``argnums``, as a function: for an
    output of shape ``O`` and an input of shape ``I``, a Tensor of shape ``O + I``; nested as
    (outputs, then argnums) for tuple outputs or tuple ``argnums``. One vjp per output element.
    The differentiated arguments are Tensors (not pytrees, unlike :func:`grad`); ``chunk_size``
    is accepted and ignored (the rows are computed one at a time).

    Example: ``jacrev(torch.sin)(x)`` is ``diag(cos(x))``.
    """
    return _jacobian(func, argnums, has_aux, "jacrev")


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """The Jacobian as :func:`jacrev` computes it (tensorix has reverse mode only: the same
    values, at reverse mode's cost of one vjp per output element)."""
    return _jacobian(func, argnums, has_aux, "jacfwd")


def _jacobian(func, argnums, has_aux, fn_name):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        nums = _argnums(argnums, len(args), fn_name)
        for n in nums:
            if not isinstance(args[n], Tensor):
                raise TypeError(f"{fn_name}: argument {n} must be a Tensor, got "
                                f"{type(args[n]).__name__}")
        keep = _keep_graph([args[n] for n in nums])
        aux_box = []

        def partial(*chosen):
            full = list(args)
            for n, t in zip(nums, chosen):
                full[n] = t
            with _Nested():
                out = func(*full, **kwargs)
            out, aux = _split_aux(out, has_aux, fn_name)
            aux_box[:] = [aux]
            return out

        jac = _fn.jacobian(partial, tuple(args[n] for n in nums), create_graph=keep)
        # autograd.functional nests (outputs, inputs) with tuples where given tuples: the
        # inputs level is a tuple here, so unwrap it for a single int argnums
        if not isinstance(argnums, tuple):
            jac = tuple(j[0] for j in jac) if _is_tuple_output(jac) else jac[0]
        jac = _finish(jac, keep)
        return (jac, _finish(aux_box[0], keep)) if has_aux else jac

    return wrapper


def _is_tuple_output(jac):
    """Whether a jacobian (with a tuple of inputs) came from a tuple of outputs: then it is a
    tuple of tuples."""
    return isinstance(jac, tuple) and len(jac) > 0 and isinstance(jac[0], tuple)


def hessian(func, argnums=0):
    """The Hessian of a scalar ``func`` with respect to argument(s) ``argnums``, as a function
    (``jacfwd(jacrev(func, argnums), argnums)``): shape ``I + I`` for an input of shape ``I``.

    Example: ``hessian(lambda x: (x ** 3).sum())(x)`` is ``diag(6 * x)``.
    """
    return jacfwd(jacrev(func, argnums), argnums)


# -- vmap ----------------------------------------------------------------------------------
def _in_dims_per_arg(in_dims, args, fn_name):
    if isinstance(in_dims, int) or in_dims is None:
        return [in_dims] * len(args)
    if not isinstance(in_dims, (tuple, list)) or len(in_dims) != len(args):
        raise ValueError(f"{fn_name}: in_dims is not compatible with the structure of "
                         f"`inputs`: expected an int, None, or a tuple of {len(args)} entries, "
                         f"got {in_dims!r}")
    return list(in_dims)


def _leaf_dims(dims, arg, fn_name):
    """``dims`` (an int, None or a structure like ``arg``) broadcast over ``arg``'s leaves."""
    leaves, spec = _flatten(arg)
    if dims is None or isinstance(dims, int):
        return leaves, [dims] * len(leaves)
    d_leaves, d_spec = _flatten(dims)
    if d_spec != spec:
        raise ValueError(f"{fn_name}: in_dims {dims!r} does not match the structure of its "
                         "input")
    return leaves, d_leaves


def _batch_size(args, dims_per_arg, fn_name):
    sizes = []
    for arg, dims in zip(args, dims_per_arg):
        for t, d in zip(*_leaf_dims(dims, arg, fn_name)):
            if d is None:
                continue
            if not isinstance(t, Tensor):
                raise ValueError(f"{fn_name}: Got in_dim={d} for an input but the input is of "
                                 f"type {type(t).__name__}. We cannot vmap over non-Tensor "
                                 "arguments, please use None as the respective in_dim")
            if not -t.ndim <= d < max(t.ndim, 1) or t.ndim == 0:
                raise ValueError(f"{fn_name}: Got in_dim={d} for an input but the input is of "
                                 f"dimension {t.ndim}; expected in_dim in [-{t.ndim}, "
                                 f"{t.ndim})")
            sizes.append(t.shape[d])
    if not sizes:
        raise ValueError(f"{fn_name}: at least one input must be mapped over (got in_dims "
                         "all None)")
    if len(set(sizes)) != 1:
        raise ValueError(f"{fn_name}: Expected all tensors to have the same size in the mapped "
                         f"dimension, got sizes {sizes} for the mapped dimension")
    return sizes[0]


def _slice_args(args, dims_per_arg, i, fn_name):
    out = []
    for arg, dims in zip(args, dims_per_arg):
        leaves, ds = _leaf_dims(dims, arg, fn_name)
        sliced = [t if d is None else t.select(d, i) for t, d in zip(leaves, ds)]
        out.append(_unflatten(_flatten(arg)[1], sliced))
    return out


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """``func`` mapped over a dimension of its inputs: ``in_dims`` says which dimension of each
    positional argument is mapped (an int, None for "not mapped", or a tuple with one entry per
    argument, itself nested for tuple/list/dict arguments), ``out_dims`` where the mapped
    dimension goes in each output. Implemented as a loop over the mapped index that stacks the
    results (see the module docstring for ``randomness``). Nests: ``vmap(vmap(f))``.

    Example::

        >>> x, y = tensorix.randn(5, 3), tensorix.randn(3)
        >>> vmap(tensorix.dot, in_dims=(0, None))(x, y).shape
        tensorix.Size([5])
    """
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"vmap: Only allowed values for randomness are 'error', 'different', "
                           f"or 'same'. Got {randomness}")
    name = f"vmap({getattr(func, '__name__', 'func')}, ...)"

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        dims = _in_dims_per_arg(in_dims, args, name)
        n = _batch_size(args, dims, name)
        rng = get_rng_state() if randomness in ("error", "same") else None
        results = []
        for i in range(n):
            if randomness == "same":
                set_rng_state(rng)
            out = func(*_slice_args(args, dims, i, name), **kwargs)
            if randomness == "error" and i == 0 and not _same_state(rng, get_rng_state()):
                raise RuntimeError("vmap: called random operation while in randomness error "
                                   "mode. Please either use the 'same' or 'different' "
                                   "randomness flags on vmap or perform the randomness "
                                   "operation out of vmap")
            results.append(_flatten(out))
        spec = results[0][1]
        odims = _out_dims(out_dims, spec, name)
        stacked = []
        for k, d in enumerate(odims):
            column = [r[0][k] for r in results]
            if not all(isinstance(t, Tensor) for t in column):
                bad = next(type(t) for t in column if not isinstance(t, Tensor))
                raise ValueError(f"{name}: `{getattr(func, '__name__', 'func')}` must only "
                                 f"return Tensors, got type {bad}")
            if d is None:
                stacked.append(column[0])
            else:
                nd = column[0].ndim + 1
                if not -nd <= d < nd:
                    raise ValueError(f"{name}: out_dims={d} is out of range for an output "
                                     f"with {nd - 1} dimensions")
                stacked.append(stack(column, dim=d))
        return _unflatten(spec, stacked)

    return wrapper


def _same_state(a, b):
    return bool((a == b).all())


def _out_dims(out_dims, spec, name):
    """One out_dim per output leaf: an int/None for all, or one entry per top-level output
    (applied to all leaves of that output)."""
    if out_dims is None or isinstance(out_dims, int):
        return [out_dims] * len(_unflatten_count(spec))
    children = spec[1] if spec is not None and spec[0] in (tuple, list) else None
    if children is None or not isinstance(out_dims, (tuple, list)) or \
            len(out_dims) != len(children):
        raise ValueError(f"{name}: out_dims={out_dims!r} is not compatible with the structure "
                         "of the outputs")
    dims = []
    for d, child in zip(out_dims, children):
        dims += [d] * len(_unflatten_count(child))
    return dims


def _unflatten_count(spec):
    """The leaf slots of a spec (a list as long as its number of leaves)."""
    if spec is None:
        return [None]
    kind, children = spec
    return [s for c in children for s in _unflatten_count(c[1] if kind is dict else c)]


# -- functional_call -------------------------------------------------------------------------
def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                    tie_weights=True, strict=False):
    """``module(*args, **kwargs)`` with the tensors of ``parameter_and_buffer_dicts`` (a dict,
    or a tuple of dicts, of dotted names such as ``"0.weight"``) in place of the module's own
    parameters and buffers, which are restored afterwards (the module is unchanged). With
    ``tie_weights``, a parameter shared under several names takes the given value under all of
    them; with ``strict`` every parameter and buffer must be given. Names the module does not
    have are ignored.

    Example: ``functional_call(model, {"weight": w, "bias": b}, (x,))``.
    """
    dicts = parameter_and_buffer_dicts
    if isinstance(dicts, dict):
        dicts = (dicts,)
    given = {}
    for d in dicts:
        for k, v in d.items():
            if k in given:
                raise ValueError(f"functional_call: [{k!r}] appeared in multiple dictionaries; "
                                 "behavior of functional call is ambiguous")
            given[k] = v
    slots = _slots(module)
    if tie_weights:
        by_id = {id(slots[k][2]): v for k, v in given.items() if k in slots}
        given = {**{k: by_id[id(s[2])] for k, s in slots.items() if id(s[2]) in by_id}, **given}
    if strict:
        missing = sorted(set(slots) - set(given))
        unexpected = sorted(set(given) - set(slots))
        if missing or unexpected:
            raise RuntimeError(f"functional_call: Error(s) in reparametrizing for "
                               f"{type(module).__name__}: missing key(s) {missing}, unexpected "
                               f"key(s) {unexpected}")
    saved = []
    try:
        for k, v in given.items():
            if k in slots:
                table, name, old = slots[k]
                saved.append((table, name, old))
                table[name] = v
        args = () if args is None else args if isinstance(args, tuple) else (args,)
        return module(*args, **(kwargs or {}))
    finally:
        for table, name, old in reversed(saved):
            table[name] = old


def _slots(module):
    """dotted name -> (the dict holding it, its key, its tensor) for every parameter and
    buffer, shared ones under each of their names."""
    out = {}
    for prefix, mod in module.named_modules(remove_duplicate=False):
        for table in (mod._parameters, mod._buffers):
            for name, t in table.items():
                if t is not None:
                    out[f"{prefix}.{name}" if prefix else name] = (table, name, t)
    return out
