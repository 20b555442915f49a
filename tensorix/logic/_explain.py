"""``Program.explain()``: the evaluation plan in words, per component and equation."""

from __future__ import annotations

__all__ = ["explain"]


def _rule_einsum(rule, tensors):
    """A Datalog rule as the Boolean-semiring einsum it denotes (with domain sizes)."""
    letters = {}
    subs = []
    for a in rule.body:
        s = ""
        for kind, v in a.args:
            s += letters.setdefault(v, chr(97 + len(letters))) if kind == "v" else "#"
        subs.append(s.replace("#", ""))
    out = "".join(letters[v] for kind, v in rule.head.args if kind == "v")
    sizes = ", ".join(f"{v}={rule.sizes.get(v, '?')}" for v in letters)
    return f"step(einsum({','.join(subs)}->{out})) over {{{sizes}}}"


def _bool_lines(e, compiled, report):
    lines = []
    for r in compiled.rules[e.uid]:
        lines.append(f"    rule   {r.text()}")
        lines.append(f"    means  {_rule_einsum(r, compiled.typing.tensors)}")
        if report is not None:
            joins = [j for j in report.joins if j[0] == r.text()]
            if joins:
                total = sum(j[1] for j in joins)
                lines.append(f"    ran    {len(joins)} evaluations, {total:,} head tuples "
                             f"produced, joins by {joins[-1][2]}")
    return lines


def _dense_lines(e, program):
    plans = program.plans.plans_for(e.uid)
    if not plans:
        return ["    (no einsum: constants or a direct copy)"]
    lines = []
    seen = set()
    for p in plans:
        tag = (p.key, p.equation, p.shapes)
        if tag in seen:
            continue
        seen.add(tag)
        lines.append(f"    term {p.key[1]}: {p.describe()}")
    return lines


def explain(program):
    if not program.values:
        program.run()
    c = program.compile(params=bool(program.params))
    reports = {}
    if program.report is not None:
        for r in program.report.components:
            for h in r.heads:
                reports[h] = r
    out = []
    for comp in c.comps:
        rep = reports.get(comp.heads[0])
        out.append(f"component {comp.describe()}" + (f"  [{rep}]" if rep else ""))
        for e in comp.eqs:
            f = "" if e.fn is None else f"  outer {e.fn[0]}"
            out.append(f"  {e.where()}  projection {e.op}{f}")
            out += _bool_lines(e, c, rep) if e.boolean else _dense_lines(e, program)
    info = program.plans.info()
    out.append(f"plan cache: {info['plans']} plans, {info['hits']} hits, "
               f"{info['misses']} misses")
    return "\n".join(out)
