"""Running components in order: Datalog fixpoints, dense equations, Jacobi sweeps and
position-by-position index recursion, with a report of what each component did."""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from .. import ops
from ._datalog import DatalogStats, evaluate_once, naive, semi_naive
from ._dense import DenseEvaluator
from ._errors import ProgramError
from ._relation import encode, unique_keys

__all__ = ["ComponentReport", "RunReport", "Runner"]


@dataclass
class ComponentReport:
    heads: list
    kind: str
    recursive: bool
    strategy: str
    iterations: int = 0
    delta_sizes: list = field(default_factory=list)
    converged: bool = True
    max_delta: float = 0.0
    seconds: float = 0.0
    joins: list = field(default_factory=list)

    def __str__(self):
        s = f"{', '.join(self.heads)}: {self.strategy}"
        if self.kind == "bool" and self.recursive:
            s += f", {self.iterations} iterations, delta sizes {self.delta_sizes}"
        elif self.kind == "index":
            s += f", {self.iterations} positions"
        elif self.recursive:
            s += (f", {self.iterations} sweeps, max |change| {self.max_delta:.3g}, "
                  f"{'converged' if self.converged else 'NOT converged'}")
        return s + f" ({self.seconds * 1e3:.1f} ms)"


@dataclass
class RunReport:
    """What a run did, per component (in evaluation order)."""

    components: list

    def component(self, head):
        for c in self.components:
            if head in c.heads:
                return c
        raise KeyError(f"no component computes {head!r} in this run")

    @property
    def converged(self):
        return all(c.converged for c in self.components)

    def __str__(self):
        return "\n".join(str(c) for c in self.components)


class Runner:
    def __init__(self, compiled, values, base, plans, dtype, device, options):
        self.c, self.values, self.base = compiled, values, base
        self.dtype, self.device, self.opt = dtype, device, options
        self.ev = DenseEvaluator(compiled.typing, values, plans, dtype, device)

    def run(self, comps):
        reports = []
        for comp in comps:
            t0 = time.perf_counter()
            rep = getattr(self, "_" + comp.kind)(comp)
            rep.seconds = time.perf_counter() - t0
            reports.append(rep)
        return RunReport(reports)

    # -- Boolean ---------------------------------------------------------------------------------
    def _bool(self, comp):
        rules = [r for e in comp.eqs if e.boolean for r in self.c.rules[e.uid]]
        stats = DatalogStats()
        strategy = "once"
        if comp.recursive:
            scc = set(comp.heads)
            if self.opt.get("datalog", "semi-naive") == "naive":
                naive(rules, self.values, scc, stats, self.opt.get("max_iters"))
                strategy = "naive fixpoint"
            else:
                semi_naive(rules, self.values, scc, stats, self.opt.get("max_iters"))
                strategy = "semi-naive fixpoint"
        else:
            evaluate_once(rules, self.values, stats)
        for e in comp.eqs:
            if not e.boolean:
                self._dense_bool(e)
        return ComponentReport(comp.heads, "bool", comp.recursive, strategy, stats.iterations,
                               stats.delta_sizes, joins=stats.joins)

    def _dense_bool(self, e):
        """A Boolean head defined by a real-valued equation: the nonzero entries, OR-ed in."""
        val = self.ev.contribution(e)
        if val is None:
            return
        rel = self.values[e.head]
        nz = np.nonzero(val.detach().numpy(force=True) > 0)
        keys = encode([c.astype(np.int64) for c in nz], rel.sizes)
        new = unique_keys(keys[~rel.contains_keys(keys)], int(np.prod(rel.sizes, dtype=object)))
        if len(new):
            self.values[e.head] = rel.with_added(new)

    # -- dense -----------------------------------------------------------------------------------
    def _head_op(self, h, eqs):
        kinds = {"max" if e.op == "max" else "min" if e.op == "min" else "sum" for e in eqs}
        if len(kinds) > 1:
            raise ProgramError(f"equations for {h} mix projection operators "
                               f"({', '.join(sorted(kinds))}); use one", at=eqs[-1])
        return kinds.pop()

    def combine(self, h, parts, eqs):
        parts = [p for p in parts if p is not None]
        if self.base.get(h) is not None:
            parts.insert(0, self.base[h])
        shape = self.c.typing.tensors[h].shape
        if not parts:
            return ops.zeros(*shape, dtype=self.dtype, device=self.device)
        op = self._head_op(h, eqs)
        acc = parts[0]
        for p in parts[1:]:
            acc = (ops.maximum(acc, p) if op == "max" else ops.minimum(acc, p) if op == "min"
                   else acc + p)
        if tuple(acc.shape) != tuple(shape):
            acc = acc.expand(*shape)
        return acc

    def _heads(self, comp):
        by = {h: [] for h in comp.heads}
        for e in comp.eqs:
            by[e.head].append(e)
        return by

    def _real(self, comp):
        by = self._heads(comp)
        if not comp.recursive:
            for h, eqs in by.items():
                self.values[h] = self.combine(h, [self.ev.contribution(e) for e in eqs], eqs)
            return ComponentReport(comp.heads, "real", False, "once")
        return self._jacobi(comp, by)

    def _jacobi(self, comp, by):
        init = self.opt.get("init", 0.0)
        tol, max_iters = self.opt.get("tol", 1e-9), self.opt.get("max_iters") or 1000
        for h in by:
            shape = self.c.typing.tensors[h].shape
            self.values[h] = ops.full(shape, float(init), dtype=self.dtype, device=self.device)
        converged, delta, it = False, float("inf"), 0
        while it < max_iters:
            it += 1
            new = {h: self.combine(h, [self.ev.contribution(e) for e in eqs], eqs)
                   for h, eqs in by.items()}
            delta = max(float(ops.amax(ops.abs(new[h].detach() - self.values[h].detach())))
                        if new[h].numel() else 0.0 for h in by)
            self.values.update(new)
            if delta <= tol:
                converged = True
                break
        if not converged:
            warnings.warn(f"tensor logic: {', '.join(comp.heads)} did not converge in {it} "
                          f"sweeps (max |change| {delta:.3g} > tol {tol:g})", RuntimeWarning,
                          stacklevel=4)
        return ComponentReport(comp.heads, "real", True, "Jacobi sweeps", it, [], converged,
                               delta)

    def _index(self, comp):
        by = self._heads(comp)
        rec = {e.uid for e in comp.eqs if e.uid in comp.time}
        for h, eqs in by.items():
            base_eqs = [e for e in eqs if e.uid not in rec]
            self.values[h] = self.combine(h, [self.ev.contribution(e) for e in base_eqs], eqs)
        steps = max(e.sizes[comp.time[e.uid]] for e in comp.eqs if e.uid in rec)
        for p in range(steps):
            adds = {}
            for e in comp.eqs:
                if e.uid not in rec or p >= e.sizes[comp.time[e.uid]]:
                    continue
                if e.op != "sum":
                    raise ProgramError(f"index recursion needs '=' projection, in {e.where()}",
                                       at=e)
                val = self.ev.contribution(e, {comp.time[e.uid]: p})
                if val is not None:
                    adds[e.head] = val if e.head not in adds else adds[e.head] + val
            for h, v in adds.items():
                self.values[h] = self.values[h] + v
        return ComponentReport(comp.heads, "index", True, "position by position", steps)
