"""Symbolics of the einsum contraction primitives: ``_semiring.Contract`` (sum-product) and
``_semiring.BoolContract`` (the boolean semiring) as ONNX ``Einsum``. An output label that
no operand has (a gradient of a sum, or ``bilinear``'s einsum) is broadcast: ONNX Einsum
cannot name it, so the contraction is written without it and Unsqueeze/Expand add it at its
static size (the size is part of the primitive's spec, as in eager)."""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..ops import _semiring
from ._symbolic import _same, symbolic

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
