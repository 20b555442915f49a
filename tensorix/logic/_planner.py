"""Einsum plans for equation terms, cached and printable.

A term's operands carry variable names as labels; the planner maps them to einsum letters in
order of first appearance (so equal terms give equal subscripts), asks
``tensorix.einsum_expression`` for the compiled contraction (path from opt_einsum) and keeps it
under (equation, term, subscripts, shapes, dtype, semiring). A later run with the same shapes
reuses the plan (counted in ``hits``); ``explain()`` prints the recorded plans.
"""

from __future__ import annotations

import string
from dataclasses import dataclass

from .. import ops
from ._errors import ProgramError

__all__ = ["PlanCache", "TermPlan"]

_LETTERS = string.ascii_letters


@dataclass
class TermPlan:
    key: tuple            # (equation uid, term index)
    subscripts: str       # with variable names: "W[h,i] X[i] -> [h]"
    equation: str         # einsum letters
    shapes: tuple
    semiring: str
    expression: object    # tensorix EinsumExpression (has .plan)

    def describe(self):
        p = self.expression.plan
        return (f"einsum {self.equation!r}  ({self.subscripts})  shapes {list(self.shapes)}\n"
                f"      path {p.path}  planned FLOPs {p.flops:.4g} (naive {p.naive_flops:.4g})  "
                f"largest intermediate {p.largest_intermediate:,}  semiring {self.semiring}")


def _name(v):
    return "row" if v == "#" else v


class PlanCache:
    """Compiled term contractions keyed by (term, subscripts, shapes, dtype, semiring)."""

    def __init__(self, optimize="auto"):
        self.optimize = optimize
        self.entries = {}
        self.hits = 0
        self.misses = 0

    def contract(self, key, operands, out, semiring="sum-product"):
        """Contract ``operands`` ([(Tensor, labels)]) onto the ``out`` labels."""
        if len(operands) == 1 and list(operands[0][1]) == list(out):
            return operands[0][0]
        letters = {}
        for _, labels in operands:
            for v in labels:
                letters.setdefault(v, _LETTERS[len(letters) % 52])
        if len(letters) > len(_LETTERS):  # located at its equation by the evaluator
            raise ProgramError(f"term {key[1]} has {len(letters)} distinct indices; einsum "
                               f"names them with letters, so a term can have at most "
                               f"{len(_LETTERS)}")
        eq = ",".join("".join(letters[v] for v in labels) for _, labels in operands)
        eq += "->" + "".join(letters[v] for v in out)
        tensors = [t for t, _ in operands]
        shapes = tuple(tuple(t.shape) for t in tensors)
        dtype = tensors[0].dtype
        k = (key, eq, shapes, dtype, semiring)
        plan = self.entries.get(k)
        if plan is None:
            self.misses += 1
            expr = ops.einsum_expression(eq, *shapes, optimize=self.optimize, semiring=semiring)
            subs = " ".join(f"[{','.join(_name(v) for v in labels)}]" for _, labels in operands)
            subs += f" -> [{','.join(_name(v) for v in out)}]"
            plan = self.entries[k] = TermPlan(key, subs, eq, shapes, semiring, expr)
        else:
            self.hits += 1
        return plan.expression(*tensors)

    def plans_for(self, uid):
        return [p for p in self.entries.values() if p.key[0] == uid]

    def info(self):
        return {"plans": len(self.entries), "hits": self.hits, "misses": self.misses}
