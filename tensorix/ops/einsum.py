"""The einsum engine: NumPy/PyTorch einsum over a choice of semirings, planned by opt_einsum.

``einsum`` parses the equation (``_einsum_plan``), asks opt_einsum for a pairwise contraction
order and runs each pair as one matmul-shaped kernel (``_semiring``). Plans are cached by
(equation, shapes, dtype, semiring, strategy), so a repeated call only looks its plan up;
``einsum_expression`` hands out the compiled object and ``einsum_plan`` prints what it does.

Gradients: a sum-product contraction's backward is again a contraction of the gradient with
the other operand, so derivatives of every order work; diagonals ('ii->i') and broadcast
dimensions are separate, differentiable steps before contracting.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

from .. import dtypes as dt
from ..tensor import Tensor
from ._common import same_device
from ._einsum_plan import EinsumPlan, make_plan, parse, split_args
from ._semiring import SEMIRINGS, Diagonal, get_semiring

__all__ = ["einsum", "einsum_expression", "einsum_plan"]

_CACHE: OrderedDict = OrderedDict()
_CACHE_SIZE = 512


class EinsumExpression:
    """An einsum compiled for fixed operand shapes: call it on tensors of those shapes.

    ``plan`` is the printable :class:`EinsumPlan` (path, intermediate shapes, FLOPs, largest
    intermediate). Made by :func:`einsum_expression`; :func:`einsum` uses the same objects.
    """

    def __init__(self, equation, shapes, plan, semiring, dtype):
        self.equation = equation
        self.shapes = shapes
        self.plan = plan
        self.semiring = semiring
        self.dtype = dtype

    def __call__(self, *operands):
        if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
            operands = tuple(operands[0])
        if len(operands) != len(self.shapes):
            raise RuntimeError(f"einsum(): this expression for {self.equation!r} takes "
                               f"{len(self.shapes)} operands, got {len(operands)}")
        ops = _promote(_check_operands(operands), self.dtype)
        for k, (t, s) in enumerate(zip(ops, self.shapes)):
            if tuple(t.shape) != s:
                raise RuntimeError(f"einsum(): this expression for {self.equation!r} was "
                                   f"compiled for shapes {list(self.shapes)} but operand {k} "
                                   f"has shape {tuple(t.shape)}")
        return _execute(self.plan, self.semiring, ops)

    def __repr__(self):
        return (f"EinsumExpression({self.plan.equation!r}, shapes={list(self.shapes)}, "
                f"semiring={self.semiring.name!r}, optimize={self.plan.optimize!r})")


def _check_operands(operands):
    for k, t in enumerate(operands):
        if not isinstance(t, Tensor):
            raise TypeError(f"einsum(): operand {k} must be a Tensor, not "
                            f"{type(t).__name__}")
    return operands


def _promote(ops, dtype=None):
    """One dtype for all operands (PyTorch's promotion, or ``dtype`` when given)."""
    if any(type(t._data) is not np.ndarray for t in ops):
        same_device("einsum", *ops)
    d = dtype
    if d is None:
        d = ops[0]._dtype if ops else None
        if any(t._dtype is not d for t in ops):
            d = dt.result_type(*ops)
    return [t if t._dtype is d else t.to(d) for t in ops]


def _execute(plan, semiring, ops):
    vals = []
    for k, (t, p) in enumerate(zip(ops, plan.prep)):
        t = semiring.prepare(t, k)
        if p.diagonal is not None:
            t = Diagonal.apply(t, p.labels_in, p.diagonal)
        if p.shape is not None:  # size-1 dims that broadcast: the operand lacks that label
            t = t.reshape(p.shape)
        vals.append(t)
    for s in plan.steps:
        a = vals[s.a]
        b = None if s.b is None else vals[s.b]
        vals[s.a] = None  # intermediates are freed as soon as they are consumed
        if s.b is not None:
            vals[s.b] = None
        vals.append(semiring.contract(a, s.sa, b, s.sb, s.out, plan.sizes))
    return vals[-1]


def _optimize_key(optimize):
    if optimize is None or isinstance(optimize, (bool, str)):
        return optimize.lower() if isinstance(optimize, str) else optimize
    if isinstance(optimize, (list, tuple)):
        return tuple(tuple(c) if isinstance(c, (list, tuple)) else c for c in optimize)
    return _UNCACHED  # an optimizer object: may be stateful or random, plan it every time


_UNCACHED = object()


def _expression(equation, shapes, dtype, semiring, optimize):
    okey = _optimize_key(optimize)
    key = None if okey is _UNCACHED else (equation, shapes, dtype, semiring, okey)
    if key is not None:
        expr = _CACHE.get(key)
        if expr is not None:
            _CACHE.move_to_end(key)
            return expr
    plan = make_plan(parse(equation, shapes), shapes, optimize, semiring)
    expr = EinsumExpression(equation, shapes, plan, semiring, dtype)
    if key is not None:
        _CACHE[key] = expr
        if len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return expr


def _shape_of(x, k):
    if isinstance(x, Tensor):
        return tuple(x.shape)
    if isinstance(x, (tuple, list)) and all(isinstance(s, int) and s >= 0 for s in x):
        return tuple(int(s) for s in x)
    raise TypeError(f"einsum_expression(): shape {k} must be a tuple of non-negative ints or a "
                    f"Tensor, got {x!r}")


def einsum(*args, optimize="auto", semiring="sum-product") -> Tensor:
    """Einstein summation over the operands, with NumPy/PyTorch's full syntax.

    Forms: ``einsum('ij,jk->ik', a, b)`` (explicit output), ``einsum('ij,jk', a, b)``
    (implicit: labels seen once, sorted, after the ``...`` dims), ``einsum('ij,jk', [a, b])``
    and torch's sublists ``einsum(a, [0, 1], b, [1, 2], [0, 2])``. ``...`` broadcasts like
    NumPy; a label repeated in one operand takes a diagonal (``'ii->i'``; ``'ii'`` is the
    trace); a size-1 dimension broadcasts against the label's size elsewhere. Operands are
    promoted to one dtype.

    ``optimize``: the contraction order: an opt_einsum strategy (``'auto'``, ``'greedy'``,
    ``'optimal'``, ``'dp'``, ``'branch-2'``, ...), ``True`` (``'auto'``), ``False`` (left to
    right), an explicit path ``[(0, 1), (0, 1)]`` or an opt_einsum ``PathOptimizer``.

    ``semiring``: the (plus, times) pair summed and multiplied with: ``'sum-product'``
    (default), ``'log-sum-exp'`` (operands are logs; max-shifted, stable), ``'max-product'``,
    ``'max-plus'``, ``'min-product'``, ``'min-plus'`` (Viterbi-style; gradients flow to the
    winning terms) and ``'boolean'`` (or, and; exact, returns bool, no gradient).

    Example::

        >>> a, b = tensorix.randn(8, 3, 4), tensorix.randn(8, 4, 5)
        >>> tensorix.einsum('bij,bjk->bik', a, b).shape
        tensorix.Size([8, 3, 5])
        >>> tensorix.einsum('ij,jk', a[0], b[0], semiring='max-plus').shape
        tensorix.Size([3, 5])
    """
    if args and type(args[0]) is str and all(type(t) is Tensor for t in args[1:]):
        equation, operands = args[0], args[1:]  # the common form, without the general parse
    else:
        equation, operands = split_args(args)
    ops = _promote(_check_operands(operands))
    sr = SEMIRINGS.get(semiring) if type(semiring) is str else None
    sr = sr or get_semiring(semiring)
    shapes = tuple(t._data.shape for t in ops)
    dtype = ops[0]._dtype if ops else None
    return _execute(_expression(equation, shapes, dtype, sr, optimize).plan, sr, ops)


def einsum_expression(equation, *shapes, optimize="auto", semiring="sum-product",
                      dtype=None) -> EinsumExpression:
    """A reusable einsum compiled for ``shapes`` (tuples, or tensors whose shapes are used).

    The expression is cached by (equation, shapes, dtype, semiring, strategy): asking twice
    gives the same object. Calling it checks the shapes and runs the plan; with ``dtype`` the
    operands are cast to it. ``expr.plan`` prints the path, shapes and FLOPs.

    Example::

        >>> expr = tensorix.einsum_expression('ij,jk,kl->il', (64, 8), (8, 64), (64, 8))
        >>> a, b, c = tensorix.randn(64, 8), tensorix.randn(8, 64), tensorix.randn(64, 8)
        >>> expr(a, b, c).shape
        tensorix.Size([64, 8])
        >>> expr.plan.path
        [(1, 2), (0, 1)]
    """
    sr = get_semiring(semiring)
    shapes = tuple(_shape_of(s, k) for k, s in enumerate(shapes))
    d = None if dtype is None else dt.as_dtype(dtype)
    return _expression(equation, shapes, d, sr, optimize)


def einsum_plan(equation, *operands_or_shapes, optimize="auto",
                semiring="sum-product") -> EinsumPlan:
    """The contraction plan einsum would run: print it to see the path, each step's
    contraction, result shape, FLOPs and kernel, the planned vs naive FLOPs and the largest
    intermediate.

    Example::

        >>> print(tensorix.einsum_plan('ij,jk,kl->il', (10, 1000), (1000, 10), (10, 1000)))
    """
    return einsum_expression(equation, *operands_or_shapes, optimize=optimize,
                             semiring=semiring).plan


TENSOR_METHODS: dict = {}
