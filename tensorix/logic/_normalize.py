"""Equations in evaluation form: the outer function, the additive terms and their factors.

This is where the projection rule of docs/logic.md is applied: the outermost univariate
function (or normalizer, or numeric power) of the right side is the nonlinearity; its argument
is split into top-level additive terms (parentheses flattened only at the top level, also under
a numeric factor: ``-(A + B)`` gives ``-A`` and ``-B``); each term is a coefficient times
factors. A factor is a tensor reference (an einsum operand) or an elementwise sub-expression
(a nested call, a power or a parenthesized sum), evaluated over its own indices without
projection. Left-side index arithmetic ``t+1`` is moved to the right side (``t`` then names
the output position), and slices become shifted indices over matched or fresh variables.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import _ir as ir
from ._errors import ProgramError
from ._functions import FUNCTIONS, NORMALIZERS

__all__ = ["Factor", "Term", "CEquation", "normalize_equation"]


@dataclass
class Factor:
    kind: str               # 'ref' (einsum operand) or 'elem' (elementwise sub-expression)
    ref: object = None      # ir.Ref for 'ref'
    expr: object = None     # the expression for 'elem'
    sparse: bool = False    # a Boolean relation joined sparsely (decided after typing)

    def vars(self):
        if self.kind == "ref":
            return _ref_vars(self.ref)
        return _expr_vars(self.expr)


@dataclass
class Term:
    coef: float
    factors: list

    def vars(self):
        out = []
        for f in self.factors:
            for v in f.vars():
                if v not in out:
                    out.append(v)
        return out


@dataclass
class CEquation:
    """One equation ready for typing and evaluation."""

    uid: int
    src: object                  # the ir.Equation (for messages)
    head: str
    lhs: list                    # ('var', v) | ('const', c) | ('div', v, S)
    op: str                      # 'sum' | 'or' | 'max' | 'min' | 'avg'
    fn: tuple | None             # (name, kwargs) of the outer function
    normalizer: bool
    power: float | None
    norm_axis: int | None
    terms: list
    rule: bool = False
    negs: list = field(default_factory=list)    # negated atoms (ir.Ref) of a rule
    cmps: list = field(default_factory=list)    # comparisons (ir.Cmp) of a rule
    boolean: bool = False        # evaluated by the Datalog engine
    slices: dict = field(default_factory=dict)  # var -> (ref name, axis, start, stop)
    sizes: dict = field(default_factory=dict)   # var -> size (filled by typing)
    masks: list = field(default_factory=list)   # (var, offset, tensor, axis): shifted reads

    def where(self):
        return self.src.where()

    def lhs_vars(self):
        return [it[1] for it in self.lhs if it[0] in ("var", "div")]

    def reads(self):
        out = []
        for t in self.terms:
            for f in t.factors:
                for r, _ in (((f.ref, False),) if f.kind == "ref" else ir.expr_refs(f.expr)):
                    out.append(r.name)
        out += [r.name for r in self.negs]
        return out


def _ref_vars(ref):
    out = []
    for ix in ref.idx:
        for v in ir.index_vars(ix):
            if v not in out:
                out.append(v)
    return out


def _expr_vars(e):
    out = []
    for r, _ in ir.expr_refs(e):
        for v in _ref_vars(r):
            if v not in out:
                out.append(v)
    return out


# -- substitution and renaming ------------------------------------------------------------------

def _map_index(ix, fn):
    """Apply fn(var) -> (coef-1 var name, offset) to every variable of an index."""
    if isinstance(ix, ir.IVar):
        v, off = fn(ix.name)
        return ir.affine(((1, v),), off) if off or v != ix.name else ix
    if isinstance(ix, ir.IAff):
        terms, const = [], ix.const
        for c, v in ix.terms:
            nv, off = fn(v)
            terms.append((c, nv))
            const += c * off
        return ir.affine(terms, const)
    return ix


def _map_refs(e, fn):
    """The expression with every Ref replaced by fn(ref)."""
    if isinstance(e, ir.Ref):
        return fn(e)
    if isinstance(e, ir.Not):
        return ir.Not(fn(e.atom))
    if isinstance(e, ir.Sum):
        return ir.Sum(tuple(_map_refs(t, fn) for t in e.terms))
    if isinstance(e, ir.Prod):
        return ir.Prod(tuple(_map_refs(t, fn) for t in e.factors))
    if isinstance(e, ir.Call):
        return ir.Call(e.fn, tuple(_map_refs(a, fn) for a in e.args), e.kwargs)
    if isinstance(e, ir.Pow):
        return ir.Pow(_map_refs(e.base, fn), e.exp)
    if isinstance(e, ir.Cmp):
        return ir.Cmp(e.op, fn(ir.Ref("", (e.left,))).idx[0], fn(ir.Ref("", (e.right,))).idx[0])
    return e


def _subst(e, fn):
    return _map_refs(e, lambda r: ir.Ref(r.name, tuple(_map_index(i, fn) for i in r.idx),
                                         r.atom))


def _rename_anonymous(eq):
    """Each '_' becomes a fresh variable."""
    count = [0]

    def fresh(v):
        if v != "_":
            return v, 0
        count[0] += 1
        return f"_{count[0]}", 0

    lhs = ir.Ref(eq.lhs.name, tuple(_map_index(i, fresh) for i in eq.lhs.idx), eq.lhs.atom)
    return lhs, _subst(eq.rhs, fresh)


# -- the left side ------------------------------------------------------------------------------

def _lhs_items(eq, lhs, rhs):
    """Left-side items; ``t+1`` on the left becomes ``t`` with ``t-1`` read on the right."""
    items, norm_axis, shifts = [], None, {}
    for k, ix in enumerate(lhs.idx):
        if isinstance(ix, ir.IVar):
            items.append(("var", ix.name))
            if ix.mark == ".":
                norm_axis = k
        elif isinstance(ix, ir.IConst):
            items.append(("const", ix.value))
        elif isinstance(ix, ir.IDiv):
            items.append(("div", ix.var, ix.div))
        elif isinstance(ix, ir.IAff) and len(ix.terms) == 1 and ix.terms[0][0] == 1:
            v = ix.terms[0][1]
            items.append(("var", v))
            shifts[v] = -ix.const
        elif isinstance(ix, ir.ISlice):
            raise ProgramError(f"slices on the left side are not supported, in {eq.where()}; "
                               "use a constant index or index arithmetic")
        else:
            raise ProgramError(f"left-side index {ir.fmt_index(ix)!r} is not supported in "
                               f"{eq.where()}: use x, x+c, x/S or a constant")
    seen = [it[1] for it in items if it[0] != "const"]
    dup = {v for v in seen if seen.count(v) > 1}
    if dup:
        raise ProgramError(f"index {sorted(dup)[0]!r} appears twice on the left side of "
                           f"{eq.where()}")
    if shifts:
        rhs = _subst(rhs, lambda v: (v, shifts.get(v, 0)))
    return items, norm_axis, rhs


# -- the right side -----------------------------------------------------------------------------

def _outer(rhs):
    """(fn, normalizer, power, argument) of the right side."""
    if isinstance(rhs, ir.Call) and len(rhs.args) == 1 and (rhs.fn in FUNCTIONS or
                                                            rhs.fn in NORMALIZERS):
        return (rhs.fn, rhs.kwargs), rhs.fn in NORMALIZERS, None, rhs.args[0]
    if isinstance(rhs, ir.Pow):
        return None, False, rhs.exp, rhs.base
    return None, False, None, rhs


def _split_terms(e, coef=1.0):
    """Top-level additive terms as (coef, expr), distributing numeric factors over sums."""
    if isinstance(e, ir.Sum):
        out = []
        for t in e.terms:
            out += _split_terms(t, coef)
        return out
    if isinstance(e, ir.Prod) and isinstance(e.factors[0], ir.Num):
        rest = e.factors[1:]
        c = coef * e.factors[0].value
        if len(rest) == 1:
            return _split_terms(rest[0], c)
        return [(c, ir.Prod(rest))]
    if isinstance(e, ir.Num):
        return [(coef * e.value, None)]
    return [(coef, e)]


def _factor(e, eq):
    if isinstance(e, ir.Ref):
        return Factor("ref", ref=e)
    if isinstance(e, (ir.Call, ir.Pow, ir.Sum)):
        return Factor("elem", expr=e)
    if isinstance(e, (ir.Not, ir.Cmp)):
        raise ProgramError(f"negation and comparisons belong in Datalog rules (<-), in "
                           f"{eq.where()}")
    raise ProgramError(f"unexpected expression {ir.fmt_expr(e)!r} in {eq.where()}")


def _term(coef, e, eq):
    if e is None:
        return Term(coef, [])
    fs = e.factors if isinstance(e, ir.Prod) else (e,)
    return Term(coef, [_factor(f, eq) for f in fs])


def _bind_slices(terms, lhs_vars, eq):
    """Slices in references become shifted variables: an unused left-side index if one is
    free in the term, else a fresh summed index."""
    slices, fresh = {}, [0]
    for t in terms:
        free = [v for v in lhs_vars if v not in t.vars()]

        def fix(r, free=free):
            idx = []
            for k, ix in enumerate(r.idx):
                if isinstance(ix, ir.ISlice):
                    if free:
                        v = free.pop(0)
                    else:
                        fresh[0] += 1
                        v = f"_s{fresh[0]}"
                    slices[v] = (r.name, k, ix.start, ix.stop)
                    ix = ir.IAff(((1, v),), ix.start or 0)  # kept affine even at offset 0
                idx.append(ix)
            return ir.Ref(r.name, tuple(idx), r.atom)

        for f in t.factors:
            if f.kind == "ref":
                f.ref = fix(f.ref)
            else:
                f.expr = _map_refs(f.expr, fix)
    return slices


def _rule_body(head, rhs, eq):
    lits = rhs.factors if isinstance(rhs, ir.Prod) else (rhs,)
    pos, negs, cmps = [], [], []
    for lit in lits:
        if isinstance(lit, ir.Ref):
            pos.append(Factor("ref", ref=ir.Ref(lit.name, lit.idx, True)))
        elif isinstance(lit, ir.Not):
            negs.append(lit.atom)
        elif isinstance(lit, ir.Cmp):
            cmps.append(lit)
        else:
            raise ProgramError(f"a rule body holds atoms, 'not' atoms and comparisons, not "
                               f"{ir.fmt_expr(lit)!r}, in {eq.where()}")
    if not pos:
        raise ProgramError(f"unsafe rule {eq.where()}: the body has no positive atom")
    bound = {v for f in pos for v in _ref_vars(f.ref)}
    for what, vs in (("head variable", _ref_vars(head)),
                     *((f"variable {{}} of the negated atom {n.name}", _ref_vars(n))
                       for n in negs),
                     *(("variable {} of a comparison", [ix.name for ix in (c.left, c.right)
                                                        if isinstance(ix, ir.IVar)])
                       for c in cmps)):
        for v in vs:
            if v not in bound:
                label = what.format(repr(v)) if "{}" in what else f"{what} {v!r}"
                raise ProgramError(f"unsafe rule {eq.where()}: {label} does not appear in a "
                                   "positive body atom")
    return pos, negs, cmps


def normalize_equation(eq, uid):
    """The CEquation of an ir.Equation (before typing)."""
    lhs, rhs = _rename_anonymous(eq)
    items, norm_axis, rhs = _lhs_items(eq, lhs, rhs)
    op = ir.PROJ_OPS[eq.op]
    if eq.rule:
        pos, negs, cmps = _rule_body(lhs, rhs, eq)
        return CEquation(uid, eq, lhs.name, items, "or", ("step", ()), False, None, None,
                         [Term(1.0, pos)], rule=True, negs=negs, cmps=cmps)
    fn, normalizer, pw, arg = _outer(rhs)
    terms = [_term(c, e, eq) for c, e in _split_terms(arg)]
    if normalizer and norm_axis is None:
        lv = [it for it in items if it[0] == "var"]
        if len(items) != 1 or not lv:
            raise ProgramError(f"{fn[0]}() needs the left-side index it normalizes over marked "
                               f"with '.', e.g. Comp[p, q.], in {eq.where()}")
        norm_axis = 0
    if norm_axis is not None and not normalizer:
        raise ProgramError(f"the index marked with '.' needs an outer normalizer (softmax, "
                           f"lnorm, norm) in {eq.where()}")
    ceq = CEquation(uid, eq, lhs.name, items, op, fn, normalizer, pw, norm_axis, terms)
    ceq.slices = _bind_slices(terms, ceq.lhs_vars(), eq)
    return ceq
