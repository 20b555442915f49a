"""Symbolics of the einsum contraction primitives: ``_semiring.Contract`` (sum-product) and
``_semiring.BoolContract`` (the boolean semiring) as ONNX ``Einsum``; the max/min semirings'
winners (``BestWinners``) as ArgMax/ArgMin over the terms broadcast to (batch, m, k, n), and the
log-sum-exp pair (``LogSumExpPair``) as a max-shifted Log(ReduceSum(Exp)) of those terms, its
shift a ReduceMax of this call's terms (never the example's). An output label that
no operand has (a gradient of a sum, or ``bilinear``'s einsum) is broadcast: ONNX Einsum
cannot name it, so the contraction is written without it and Unsqueeze/Expand add it at its
static size (the size is part of the primitive's spec, as in eager)."""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..ops import _semiring, _semiring_prims
from ._emit import Value
from ._symbolic import _reduce, _same, symbolic
from ._symbolic_order import arg_extreme

__all__: list = []


def einsum(em, operands, labels, out, sizes):
    """The name of the sum-product einsum of ``operands`` (Values of one dtype) labelled
    ``labels`` (one string each) into ``out``; ``sizes`` gives each label's size (read only
    for the output labels no operand has)."""
    present = set("".join(labels))
    kept = "".join(c for c in out if c in present)
    letters: dict = {}

    def word(ls):  # tensorix labels may be any hashable character: renamed to a-z for ONNX
        return "".join(letters.setdefault(c, chr(ord("a") + len(letters))) for c in ls)

    inputs = ",".join(word(ls) for ls in labels)
    res = em.op("Einsum", *operands, equation=f"{inputs}->{word(kept)}")
    if kept == out:
        return res
    axes = [i for i, c in enumerate(out) if c not in present]
    res = em.op("Unsqueeze", res, em.ints(axes))
    return em.op("Expand", res, em.ints([sizes[c] for c in out]))


@symbolic(_semiring.Contract)
def contract(em, node, a, b, spec):
    sa, sb, out, sizes = spec
    operands = [a] if b is None else [a, b]
    labels = [sa] if b is None else [sa, sb]
    return einsum(em, _same(em, node, *operands), labels, out, sizes)


@symbolic(_semiring.BoolContract)
def bool_contract(em, node, a, sa, b, sb, out, sizes):
    """Counts of witnesses (the 0/1 operands' sum-product, in float32 below 2**24 terms as
    eager counts them, else float64: exact integers) compared with 0."""
    reduced = [c for c in set(sa) | set(sb or "") if c not in out]
    terms = int(np.prod([sizes[c] for c in reduced])) if reduced else 1
    cd = dt.float32 if terms < 2 ** 24 else dt.float64
    operands = [a] if b is None else [a, b]
    labels = [sa] if b is None else [sa, sb]
    counts = einsum(em, [em.cast(v, cd) for v in operands], labels, out, sizes)
    return em.op("Greater", counts, em.const(np.asarray(0, dtype=cd.np)))


def _terms(em, node, a3, b3, plus, dtype):
    """``a3[:, :, :, None] (x) b3[:, None, :, :]``: every term, (batch, m, k, n)."""
    a3, b3 = em.cast(a3, dtype), em.cast(b3, dtype)
    x = em.op("Unsqueeze", a3, em.ints([3]))
    y = em.op("Unsqueeze", b3, em.ints([1]))
    return em.op("Add" if plus else "Mul", x, y)


@symbolic(_semiring_prims.BestWinners)
def best_winners(em, node, a3, b3, pick, plus, name):
    """The first max/min over k of the terms (a NaN term wins, as numpy's argmax/argmin)."""
    shape = (a3.shape[0], a3.shape[1], a3.shape[2], b3.shape[2])
    terms = Value(_terms(em, node, a3, b3, plus, a3.dtype), shape, a3.dtype)
    return arg_extreme(em, node, terms, pick, 2, False)


@symbolic(_semiring_prims.LogSumExpPair)
def logsumexp_pair(em, node, a3, b3):
    """log(sum_k exp(terms - m)) + m, m the max over k of this input's terms (0 where it is
    not finite: an all -inf slice gives log(0) = -inf, as eager)."""
    d = node.meta["dtype"]
    shape = (a3.shape[0], a3.shape[1], a3.shape[2], b3.shape[2])
    terms = Value(_terms(em, node, a3, b3, True, d), shape, d)
    m = Value(_reduce(em, "ReduceMax", terms, [2], True), shape[:2] + (1,) + shape[3:], d)
    finite = em.op("Not", em.op("Or", em.op("IsInf", m), em.op("IsNaN", m)))
    m = Value(em.op("Where", finite, m, em.scalar(0, m)), m.shape, d)
    shifted = Value(em.op("Exp", em.op("Sub", terms, m)), shape, d)
    total = _reduce(em, "ReduceSum", shifted, [2], False)
    return em.op("Add", em.op("Log", total), em.op("Squeeze", m, em.ints([2])))
