"""Dependency analysis: the tensor dependency graph, its strongly connected components in
topological order, and how each component is evaluated.

Kinds: 'bool' (Datalog rules; recursive ones by semi-naive evaluation), 'real' (dense
equations; recursive ones by Jacobi sweeps to a tolerance) and 'index' (recursive only through
reads of earlier positions along one index, ``X[i,j] = f(X[i-1,k])`` or ``H[t+1] = f(H[t])``:
evaluated position by position, no fixpoint needed). A negated atom inside a recursive
component makes the program unstratifiable, which is an error.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import _ir as ir
from ._errors import ProgramError

__all__ = ["Component", "components", "needed"]


@dataclass
class Component:
    heads: list
    eqs: list
    kind: str                 # 'bool' | 'real' | 'index'
    recursive: bool
    time: dict = field(default_factory=dict)  # index kind: head -> (axis, ...) ; uid -> var

    def describe(self):
        how = {"bool": "semi-naive fixpoint" if self.recursive else "once (joins)",
               "real": "Jacobi sweeps to tolerance" if self.recursive else "once (einsums)",
               "index": "position by position along the recursive index"}[self.kind]
        return f"{', '.join(self.heads)}: {self.kind}, {how}"


def _tarjan(nodes, edges):
    """SCCs, dependencies first (iterative Tarjan: no recursion limit)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(edges.get(root, ())))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(edges.get(w, ()))))
                    advanced = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(comp)
    return out


def _member_refs(e, members):
    refs = []
    for t in e.terms:
        for f in t.factors:
            rs = [f.ref] if f.kind == "ref" else [r for r, _ in ir.expr_refs(f.expr)]
            refs += [r for r in rs if r.name in members]
    return refs


def _time_var(e, refs):
    """The left-side variable every member read shifts back along (None if there is none)."""
    for it in e.lhs:
        if it[0] != "var":
            continue
        v = it[1]
        ok = all(any(isinstance(ix, ir.IAff) and ix.terms == ((1, v),) and ix.const < 0
                     for ix in r.idx) for r in refs)
        if ok:
            return v
    return None


def _index_recursion(eqs, members):
    """{uid: time var} when the component recurses only through earlier positions."""
    out = {}
    for e in eqs:
        refs = _member_refs(e, members)
        if not refs:
            continue
        v = _time_var(e, refs)
        if v is None:
            return None
        out[e.uid] = v
    return out


def components(ceqs, tensors, together=()):
    """The evaluation components of the equations, dependencies first. The heads in
    ``together`` are swept jointly (one recursive component, as loopy BP runs its messages)."""
    heads = {}
    for e in ceqs:
        heads.setdefault(e.head, []).append(e)
    edges, neg = {}, set()
    for h, eqs in heads.items():
        deps = []
        for e in eqs:
            deps += [r for r in e.reads() if r in heads]
            neg |= {(h, r.name) for r in e.negs}
        edges[h] = list(dict.fromkeys(deps))
    joint = [h for h in together if h in heads]
    for h in joint:
        edges[h] = list(dict.fromkeys(edges[h] + joint))
    out = []
    for comp in _tarjan(list(heads), edges):
        members = set(comp)
        recursive = len(comp) > 1 or comp[0] in edges.get(comp[0], ())
        eqs = [e for h in comp for e in heads[h]]
        bad = [(a, b) for a, b in neg if a in members and b in members]
        if recursive and bad:
            at = next(e for e in heads[bad[0][0]] if any(r.name == bad[0][1] for r in e.negs))
            raise ProgramError(f"the program is not stratifiable: {bad[0][0]} depends "
                               f"negatively on {bad[0][1]} inside a recursive component "
                               f"({', '.join(sorted(members))})", at=at)
        kinds = {tensors[h].kind for h in comp}
        if len(kinds) > 1 and recursive:
            raise ProgramError("recursion through both Boolean relations and real tensors is "
                               f"not supported ({', '.join(sorted(members))})", at=eqs[0])
        kind = "bool" if kinds == {"bool"} else "real"
        if kind == "bool" and recursive and not all(e.boolean for e in eqs):
            e = next(e for e in eqs if not e.boolean)
            raise ProgramError(f"a recursive Boolean relation needs Datalog rules (joins of "
                               f"relations under step); {e.where()} is not one", at=e)
        c = Component(comp, eqs, kind, recursive)
        if kind == "real" and recursive:
            t = _index_recursion(eqs, members)
            if t is not None:
                c.kind, c.time = "index", t
        out.append(c)
    return out


def needed(comps, targets):
    """The components the ``targets`` depend on, in evaluation order (a dependency slice)."""
    by_head = {h: c for c in comps for h in c.heads}
    want, stack = set(), [t for t in targets if t in by_head]
    while stack:
        h = stack.pop()
        c = by_head[h]
        if id(c) in want:
            continue
        want.add(id(c))
        for e in c.eqs:
            stack += [r for r in e.reads() if r in by_head]
    return [c for c in comps if id(c) in want]
