"""Goal-directed Datalog queries by the magic-sets rewriting.

For a query ``Q(A, x)?`` (bound/free pattern, its *adornment*, "bf"), every rule that can
contribute is rewritten so it only fires for argument values the query can reach:

* the head ``p`` with adornment ``a`` becomes ``p_a`` and gets the guard ``magic_p_a(bound
  head arguments)`` as its first body atom;
* an IDB body atom ``q(...)`` gets the adornment of which of its arguments are bound at that
  point (constants, or variables bound by the guard or by atoms to its left: left-to-right
  sideways information passing), is renamed ``q_b``, and produces the magic rule
  ``magic_q_b(bound arguments) <- guard, atoms to its left``;
* facts stored for an IDB relation join as ``p_a(v..) <- magic_p_a(..), p__facts(v..)``;
* the seed is the fact ``magic_Q_bf(A)``.

The rewritten program is evaluated by the same semi-naive engine, component by component.
For ``Path(a, y)?`` over a graph this derives only the paths from ``a`` instead of the whole
transitive closure. Slices with negation or real tensors fall back to the dependency slice.
"""

from __future__ import annotations

from dataclasses import dataclass

from ._analysis import _tarjan, needed
from ._datalog import Atom, CRule, DatalogStats, evaluate_once, semi_naive
from ._relation import Relation

__all__ = ["magic_solve", "MagicResult"]


@dataclass
class MagicResult:
    relation: Relation       # the adorned query relation
    rules: list              # the rewritten rules
    derived: int             # tuples derived in all rewritten relations
    stats: DatalogStats


def _adorn(args, bound):
    return "".join("b" if a[0] == "c" or a[1] in bound else "f" for a in args)


class _Rewriter:
    def __init__(self, rules, idb, domains):
        self.by_head = {}
        for r in rules:
            self.by_head.setdefault(r.head.name, []).append(r)
        self.idb, self.domains = idb, domains
        self.out, self.seen, self.todo = [], set(), []
        self.rel_domains = {}   # new relation name -> domains
        self.magic_facts = {}   # magic relation -> [id tuples] (rules with an empty body)

    def request(self, name, ad):
        key = (name, ad)
        if key not in self.seen:
            self.seen.add(key)
            self.todo.append(key)
        new = f"{name}_{ad}"
        self.rel_domains[new] = self.domains[name]
        if "b" in ad:
            self.rel_domains[f"magic_{name}_{ad}"] = [d for d, c in zip(self.domains[name], ad)
                                                      if c == "b"]
        return new

    def run(self, query_name, query_ad):
        self.request(query_name, query_ad)
        while self.todo:
            name, ad = self.todo.pop()
            self.rewrite_pred(name, ad)
        return self.out

    def rewrite_pred(self, name, ad):
        guard = None
        if "b" in ad:
            guard = lambda args: Atom(f"magic_{name}_{ad}",  # noqa: E731
                                      tuple(a for a, c in zip(args, ad) if c == "b"))
        for r in self.by_head.get(name, []):
            self.rewrite_rule(r, name, ad, guard)
        # stored facts of an IDB relation join through the guard as well
        fargs = tuple(("v", f"_f{k}") for k in range(len(ad)))
        sizes = {f"_f{k}": max(d.size, 1) for k, d in enumerate(self.domains[name])}
        body = ([guard(fargs)] if guard else []) + [Atom(f"{name}__facts", fargs)]
        self.rel_domains[f"{name}__facts"] = self.domains[name]
        self.out.append(CRule(Atom(f"{name}_{ad}", fargs), body, [], [], sizes,
                              f"facts of {name}"))

    def rewrite_rule(self, r, name, ad, guard):
        bound = {a[1] for a, c in zip(r.head.args, ad) if c == "b" and a[0] == "v"}
        body = [guard(r.head.args)] if guard else []
        for atom in r.body:
            if atom.name in self.idb:
                beta = _adorn(atom.args, bound)
                if "b" in beta:
                    margs = tuple(a for a, c in zip(atom.args, beta) if c == "b")
                    mname = f"magic_{atom.name}_{beta}"
                    if body:
                        self.out.append(CRule(Atom(mname, margs), list(body), [],
                                              [c for c in r.cmps if _bound_cmp(c, bound)],
                                              r.sizes, f"magic for {r.where}"))
                    else:
                        self.magic_facts.setdefault(mname, []).append(
                            tuple(a[1] for a in margs))
                body.append(Atom(self.request(atom.name, beta), atom.args))
            else:
                body.append(atom)
            bound |= set(atom.vars())
        self.out.append(CRule(Atom(f"{name}_{ad}", r.head.args), body, r.negs, r.cmps,
                              r.sizes, r.where))


def _bound_cmp(c, bound):
    return all(a[0] == "c" or a[1] in bound for a in c[1:])


def magic_solve(program, compiled, ref, values, const_ids):
    """Evaluate ``ref`` (an atom with some constants) goal-directed; None when the magic-sets
    rewriting does not apply (negation, real tensors or no constant in the query)."""
    comps = needed(compiled.comps, [ref.name])
    if not comps or any(c.kind != "bool" or not all(e.boolean and not e.negs for e in c.eqs)
                        for c in comps):
        return None
    ad = "".join("b" if c is not None else "f" for c in const_ids)
    if "b" not in ad:
        return None
    rules = [r for c in comps for e in c.eqs for r in compiled.rules[e.uid]]
    idb = {h for c in comps for h in c.heads}
    domains = {n: info.domains for n, info in compiled.typing.tensors.items()}
    rw = _Rewriter(rules, idb, domains)
    new_rules = rw.run(ref.name, ad)
    rels = {}
    for n, doms in rw.rel_domains.items():
        if n.endswith("__facts"):
            base = n[:-len("__facts")]
            rels[n] = Relation(n, doms, values[base].cols, unique=True)
        else:
            rels[n] = Relation(n, doms)
    for n, v in values.items():
        if n not in idb and isinstance(v, Relation):
            rels[n] = v
    seed = f"magic_{ref.name}_{ad}"
    rw.magic_facts.setdefault(seed, []).append(tuple(c for c in const_ids if c is not None))
    for n, rows in rw.magic_facts.items():
        cols = [[row[k] for row in rows] for k in range(len(rows[0]))]
        rels[n] = Relation(n, rw.rel_domains[n], cols)
    stats = _evaluate(new_rules, rels)
    derived = sum(len(rels[n]) for n in rw.rel_domains if not n.endswith("__facts"))
    return MagicResult(rels[f"{ref.name}_{ad}"], new_rules, derived, stats)


def _evaluate(rules, rels):
    heads = {}
    for r in rules:
        heads.setdefault(r.head.name, []).append(r)
    edges = {h: list(dict.fromkeys(a.name for r in rs for a in r.body if a.name in heads))
             for h, rs in heads.items()}
    stats = DatalogStats()
    for comp in _tarjan(list(heads), edges):
        rs = [r for h in comp for r in heads[h]]
        if len(comp) > 1 or comp[0] in edges[comp[0]]:
            semi_naive(rs, rels, set(comp), stats)
        else:
            evaluate_once(rs, rels, stats)
    return stats
