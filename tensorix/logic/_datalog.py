"""The Datalog engine: Boolean rules over sparse relations, to a fixpoint by semi-naive
evaluation.

A Boolean equation (a Datalog rule, or ``H[x,z] = step(A[x,y] B[y,z])`` over relations) is
compiled to :class:`CRule` objects, one per additive term: a head atom, positive body atoms,
negated atoms and comparisons, with constants replaced by domain ids. A rule is evaluated as a
left-deep chain of joins (``_relation.join``) starting from the delta atom (or the smallest
atom), each next atom chosen for the most shared variables; comparisons filter as soon as their
variables are bound, negated atoms are anti-joins at the end, and the head's columns are keyed
and checked against the relation so only new tuples come out.

Semi-naive evaluation (per recursive component): R_0 = facts plus the rules without a recursive
body atom; then per round every rule runs once per recursive body atom with *that* atom read
from the last round's delta and the others in full; delta = (results) minus R; stop when every
delta is empty. Finite domains and monotone rules (negation only on lower strata) make that
terminate.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import _ir as ir
from ._errors import ProgramError
from ._relation import Relation, decode, dedupe, encode, index_of, join, unique_keys

__all__ = ["Atom", "CRule", "compile_rules", "eval_rule", "semi_naive", "naive",
           "evaluate_once", "DatalogStats"]

_CMP = {"!=": np.not_equal, "==": np.equal, "<": np.less, "<=": np.less_equal,
        ">": np.greater, ">=": np.greater_equal}


@dataclass
class Atom:
    name: str
    args: tuple   # ('v', var) | ('c', id)

    def vars(self):
        return [a[1] for a in self.args if a[0] == "v"]

    def signature(self):
        """The atom's filter pattern, independent of variable names (for caching)."""
        first, sig = {}, []
        for a in self.args:
            if a[0] == "c":
                sig.append(("c", a[1]))
            else:
                sig.append(("v", first.setdefault(a[1], len(first))))
        return tuple(sig)


@dataclass
class CRule:
    head: Atom
    body: list
    negs: list = field(default_factory=list)
    cmps: list = field(default_factory=list)   # (op, arg, arg)
    sizes: dict = field(default_factory=dict)  # var -> domain size
    where: str = ""

    def text(self):
        def atom(a):
            args = (x[1] if x[0] == "v" else f"#{x[1]}" for x in a.args)
            return f"{a.name}({', '.join(args)})"

        parts = [atom(a) for a in self.body] + ["not " + atom(a) for a in self.negs]
        parts += [f"{c[1][1]} {c[0]} {c[2][1]}" for c in self.cmps]
        return f"{atom(self.head)} <- {', '.join(parts)}"


@dataclass
class DatalogStats:
    iterations: int = 0
    delta_sizes: list = field(default_factory=list)
    joins: list = field(default_factory=list)    # (rule text, rows produced, index kind)


def _arg(ix, dom, where):
    if isinstance(ix, ir.IVar):
        return ("v", ix.name)
    value = ix.value
    return ("c", dom.id_of(value, where) if dom.has(value) else -1)


def compile_rules(ceq, tensors, consts):
    """CRules of a Boolean CEquation, one per additive term."""
    where = ceq.where()

    def atom(ref):
        info = tensors[ref.name]
        args = []
        for ix, d in zip(ref.idx, info.domains):
            if isinstance(ix, ir.IConst) and isinstance(ix.value, str) and ix.value in consts:
                ix = ir.IConst(int(consts[ix.value]))
            args.append(_arg(ix, d, where))
        return Atom(ref.name, tuple(args))

    head_info = tensors[ceq.head]
    head_args = []
    for it, d in zip(ceq.lhs, head_info.domains):
        if it[0] == "var":
            head_args.append(("v", it[1]))
        else:
            c = consts.get(it[1], it[1]) if isinstance(it[1], str) else it[1]
            head_args.append(("c", d.id_of(int(c) if isinstance(c, float) else c, where)))
    head = Atom(ceq.head, tuple(head_args))
    rules = []
    for t in ceq.terms:
        body = [atom(f.ref) for f in t.factors]
        negs = [atom(r) for r in ceq.negs]
        cmps = []
        var_dom = {}
        for f in t.factors:
            for ix, d in zip(f.ref.idx, tensors[f.ref.name].domains):
                if isinstance(ix, ir.IVar):
                    var_dom.setdefault(ix.name, d)
        for c in ceq.cmps:
            dom = next((var_dom.get(ix.name) for ix in (c.left, c.right)
                        if isinstance(ix, ir.IVar)), None)
            cmps.append((c.op, _cmp_arg(c.left, c, consts, dom),
                         _cmp_arg(c.right, c, consts, dom)))
        rule = CRule(head, body, negs, cmps, dict(ceq.sizes), where)
        _check_safe(rule)
        rules.append(rule)
    return rules


def _cmp_arg(ix, c, consts, dom):
    """A comparison argument: a variable, or a constant as an id of the compared domain
    (symbols only under == and !=: their order means nothing)."""
    if isinstance(ix, ir.IVar):
        return ("v", ix.name)
    v = consts.get(ix.value, ix.value) if isinstance(ix.value, str) else ix.value
    if dom is not None and dom.symbolic:
        if c.op not in ("==", "!="):
            raise ProgramError(f"comparison {ir.fmt_expr(c)!r} orders symbols; only == and "
                               "!= compare symbols")
        return ("c", dom.id_of(v) if dom.has(v) else -1)
    if isinstance(v, str):
        raise ProgramError(f"comparison {ir.fmt_expr(c)!r} compares a number with the symbol "
                           f"{v!r}")
    return ("c", int(v))


def _check_safe(rule):
    bound = {v for a in rule.body for v in a.vars()}
    for v in rule.head.vars():
        if v not in bound:
            raise ProgramError(f"unsafe rule {rule.where}: head variable {v!r} does not appear "
                               "in a positive body atom")
    for a in rule.negs:
        for v in a.vars():
            if v not in bound:
                raise ProgramError(f"unsafe rule {rule.where}: variable {v!r} of the negated "
                                   f"atom {a.name} does not appear in a positive body atom")
    for c in rule.cmps:
        for a in c[1:]:
            if a[0] == "v" and a[1] not in bound:
                raise ProgramError(f"unsafe rule {rule.where}: variable {a[1]!r} of a "
                                   "comparison does not appear in a positive body atom")


# -- one rule ------------------------------------------------------------------------------------

def atom_table(atom, rel):
    """The atom's bindings in ``rel``: constants and repeated variables filtered, one column
    per distinct variable (cached on the relation by the atom's pattern)."""
    sig = atom.signature()

    def make():
        mask = None
        first = {}
        for k, a in enumerate(sig):
            if a[0] == "c":
                m = rel.cols[k] == a[1]
            elif a[1] in first:
                m = rel.cols[k] == rel.cols[first[a[1]]]
            else:
                first[a[1]] = k
                continue
            mask = m if mask is None else mask & m
        return {j: rel.cols[k] if mask is None else rel.cols[k][mask] for j, k in _firsts(sig)}

    by_pos = rel.cached(("table", sig), make)
    names = {}
    for k, a in enumerate(atom.args):
        if a[0] == "v" and a[1] not in names:
            names[a[1]] = sig[k][1]
    return {v: by_pos[j] for v, j in names.items()}, sig


def _firsts(sig):
    seen = set()
    for k, a in enumerate(sig):
        if a[0] == "v" and a[1] not in seen:
            seen.add(a[1])
            yield a[1], k


def _order(rule, tables, start):
    order, bound = [start], set(tables[start][0])
    rest = [k for k in range(len(rule.body)) if k != start]
    while rest:
        best = max(rest, key=lambda k: (len(bound & set(tables[k][0])),
                                        -len(next(iter(tables[k][0].values()), ()))))
        order.append(best)
        bound |= set(tables[best][0])
        rest.remove(best)
    return order


def _needed_after(rule, order, pos):
    need = set(rule.head.vars())
    for k in order[pos + 1:]:
        need |= set(rule.body[k].vars())
    for a in rule.negs:
        need |= set(a.vars())
    for c in rule.cmps:
        need |= {a[1] for a in c[1:] if a[0] == "v"}
    return need


def _apply_cmps(rule, table, done):
    for i, (op, a, b) in enumerate(rule.cmps):
        if i in done:
            continue
        if all(x[0] == "c" or x[1] in table for x in (a, b)):
            n = len(next(iter(table.values())))
            av = table[a[1]] if a[0] == "v" else np.full(n, a[1])
            bv = table[b[1]] if b[0] == "v" else np.full(n, b[1])
            keep = _CMP[op](av, bv)
            table = {v: c[keep] for v, c in table.items()}
            done.add(i)
    return table


def _columns(args, table, n):
    return [table[a[1]] if a[0] == "v" else np.full(n, a[1], np.int64) for a in args]


def eval_rule(rule, rels, delta=None, stats=None):
    """Keys of the head tuples the rule derives (may repeat). ``rels``: name -> Relation;
    ``delta``: (body position, Relation) read instead of the full relation there."""
    tables = []
    for k, a in enumerate(rule.body):
        rel = delta[1] if delta is not None and delta[0] == k else rels[a.name]
        cols, sig = atom_table(a, rel)
        tables.append((cols, rel, sig))
    if delta is not None:
        start = delta[0]
    else:
        start = min(range(len(tables)), key=lambda k: len(next(iter(tables[k][0].values()), ())))
    order = _order(rule, tables, start)
    table, done, kinds = dict(tables[start][0]), set(), []
    table = _apply_cmps(rule, table, done)
    for pos, k in enumerate(order[1:], start=1):
        cols, rel, sig = tables[k]
        shared = [v for v in table if v in cols]
        idx = None
        if shared:
            idx = rel.cached(("index", sig, tuple(_pos_of(rule.body[k], v) for v in shared)),
                             lambda cols=cols, shared=shared: index_of(cols, shared, rule.sizes))
            kinds.append(idx.kind)
        need = _needed_after(rule, order, pos)
        pending = {a[1] for i, c in enumerate(rule.cmps) if i not in done
                   for a in c[1:] if a[0] == "v"}
        dropped = (set(table) | set(cols)) - need - pending
        table = join(table, cols, rule.sizes, idx, keep=need | pending)
        table = _apply_cmps(rule, table, done)
        if pos < len(order) - 1 and (dropped or any(v not in need for v in table)):
            # a projection made duplicates: drop them before they multiply in later joins
            table = dedupe({v: c for v, c in table.items() if v in need}, rule.sizes)
    n = len(next(iter(table.values()))) if table else 0
    keep = np.ones(n, dtype=bool)
    for a in rule.negs:
        rel = rels[a.name]
        cols = _columns(a.args, table, n)
        ok = np.all([c >= 0 for c in cols], axis=0) if cols else keep
        hit = np.zeros(n, dtype=bool)
        if ok.any():
            hit[ok] = rel.contains_keys(encode([c[ok] for c in cols], rel.sizes))
        keep &= ~hit
    head_rel = rels[rule.head.name]
    keys = encode([c[keep] for c in _columns(rule.head.args, table, n)], head_rel.sizes)
    if stats is not None:
        stats.joins.append((rule.text(), int(len(keys)), ", ".join(kinds) or "scan"))
    return keys


def _pos_of(atom, v):
    for k, a in enumerate(atom.args):
        if a == ("v", v):
            return k
    return -1


# -- components -----------------------------------------------------------------------------------

def _new_keys(keys_list, rel):
    if not keys_list:
        return np.zeros(0, np.int64)
    keys = np.concatenate(keys_list) if len(keys_list) > 1 else keys_list[0]
    keys = keys[~rel.contains_keys(keys)]
    return unique_keys(keys, int(np.prod(rel.sizes, dtype=object)))


def evaluate_once(rules, rels, stats=None):
    """A non-recursive component: every rule once; the heads' relations grown in ``rels``."""
    per_head = {}
    for r in rules:
        per_head.setdefault(r.head.name, []).append(eval_rule(r, rels, None, stats))
    for h, ks in per_head.items():
        new = _new_keys(ks, rels[h])
        if len(new):
            rels[h] = rels[h].with_added(new)
    return rels


def semi_naive(rules, rels, scc, stats, max_iters=None):
    """Semi-naive fixpoint of a recursive component (heads in ``scc``), in place on ``rels``.
    ``rels[h]`` holds the facts of each head on entry."""
    recursive = [r for r in rules if any(a.name in scc for a in r.body)]
    exit_rules = [r for r in rules if r not in recursive]
    evaluate_once(exit_rules, rels, stats)
    delta = {h: rels[h] for h in scc}
    stats.delta_sizes.append(sum(len(d) for d in delta.values()))
    while any(len(d) for d in delta.values()):
        if max_iters is not None and stats.iterations >= max_iters:
            break
        stats.iterations += 1
        per_head = {h: [] for h in scc}
        for r in recursive:
            for k, a in enumerate(r.body):
                if a.name in scc and len(delta[a.name]):
                    per_head[r.head.name].append(eval_rule(r, rels, (k, delta[a.name]), stats))
        for h in scc:
            new = _new_keys(per_head[h], rels[h])
            delta[h] = Relation(h, rels[h].domains, _decode(new, rels[h]), unique=True)
            if len(new):
                rels[h] = rels[h].with_added(new)
        n = sum(len(d) for d in delta.values())
        if n:
            stats.delta_sizes.append(n)
    return rels


def naive(rules, rels, scc, stats, max_iters=None):
    """Naive fixpoint (every rule on the full relations each round); for testing."""
    while True:
        if max_iters is not None and stats.iterations >= max_iters:
            break
        stats.iterations += 1
        per_head = {h: [] for h in scc}
        for r in rules:
            per_head[r.head.name].append(eval_rule(r, rels, None, stats))
        grew = 0
        for h in scc:
            new = _new_keys(per_head[h], rels[h])
            if len(new):
                rels[h] = rels[h].with_added(new)
                grew += len(new)
        if not grew:
            break
        stats.delta_sizes.append(grew)
    return rels


def _decode(keys, rel):
    return decode(keys, rel.sizes) if len(keys) else [np.zeros(0, np.int64)
                                                      for _ in rel.sizes]
