"""Reasoning in embedding space (Domingos 2025, section 5).

Every object gets a vector (a row of ``Emb``); a relation R becomes the superposition of the
tensor products of its tuples, ``EmbR[i,j] = R(x,y) Emb[x,i] Emb[y,j]``; a rule
``H(x,z) <- A(x,y), B(y,z)`` becomes the join of the embedded bodies,
``EmbH[i,k] = EmbA[i,j] EmbB[j,k]``: the shared variable y is a shared embedding index, and
sum_j Emb[y,j] Emb[y',j] (the Gram matrix) stands in for "same object". Answers are read out
by joining with the embeddings again, ``D[a,b] = EmbH[i,k] Emb[a,i] Emb[b,k]``, through the
temperature sigmoid sigma((D - threshold)/T); T = 0 is the step, which reproduces Datalog
exactly when the embeddings are orthonormal (Gram matrix = identity) and with high probability
for random unit vectors of large dimension (off-diagonal dot products ~ 1/sqrt(D)).

Two evaluation modes compute the same numbers. ``mode="dense"`` materializes every EmbR
(D^arity entries), literally as written above. ``mode="factored"`` (default) keeps each
embedded tensor in its Tucker form EmbR = core x_1 Emb x_2 Emb ... (the paper's own reading of
D[x,y]): a rule's einsum over embedding indices becomes an einsum over the object-indexed
cores in which each summed embedding index j turns into its "Gram" tensor
sum_j prod Emb[y_k, j] (the Gram matrix S for two occurrences). That costs O(n^2 D) instead of
O(D^3) for D >> n objects; rules it cannot express (a variable in the head and in two body
atoms) fall back to the dense form.

Recursive rules iterate with *denoising*: after every round the read-out is thresholded (or
squashed, T > 0) and re-embedded, as the paper suggests, until the read-out stops changing.
"""

from __future__ import annotations

import string
from dataclasses import dataclass, field

import numpy as np

from .. import ops
from ._errors import ProgramError

__all__ = ["embed", "EmbeddingResult"]

_L = string.ascii_letters


def _readout(d, T, theta):
    if T == 0:
        return ops.gt(d.detach(), theta).to(d.dtype)
    return ops.sigmoid((d - theta) / T)


@dataclass
class _Emb:
    """An embedded relation: a dense tensor over embedding indices, or a core over objects."""

    kind: str      # 'dense' | 'core'
    value: object


@dataclass
class EmbeddingResult:
    """``scores[R]``: the read-out D over R's domains; ``relation(R)``: sigma((D - threshold)/T)
    (0/1 at T = 0); ``tuples(R)``: tuples whose read-out is above 1/2, as constants;
    ``embedded(R)``: EmbR over embedding indices; ``iterations`` of recursive components."""

    scores: dict
    T: dict
    threshold: float
    domains: dict
    _embedder: object = None
    iterations: dict = field(default_factory=dict)

    def relation(self, name):
        return _readout(self.scores[name], self.T.get(name, 0.0), self.threshold)

    def tuples(self, name):
        r = self.relation(name).detach().numpy(force=True)
        doms = self.domains[name]
        return {tuple(d.value_of(int(k)) for d, k in zip(doms, idx))
                for idx in zip(*np.nonzero(r > 0.5))}

    def embedded(self, name):
        return self._embedder.dense(name, self._embedder.store[name])


class _Embedder:
    def __init__(self, program, emb, T, threshold, mode):
        self.p, self.c = program, program.compile()
        self.threshold, self.T, self.emb, self.mode = threshold, T, emb, mode
        self.scores, self.store, self.iterations = {}, {}, {}
        self._E = {}

    # -- embeddings ---------------------------------------------------------------------------
    def E(self, dom):
        if dom.name in self._E:
            return self._E[dom.name]
        e = self.emb.get(dom.name) if isinstance(self.emb, dict) else self.emb
        if e is None:
            raise ProgramError(f"embed(): no embedding for domain {dom.name!r}")
        if not isinstance(e, ops.Tensor):
            e = ops.tensor(np.asarray(e, dtype=np.float64), dtype=self.p.dtype,
                           device=self.p.device)
        if e.ndim != 2 or e.shape[0] < dom.size:
            raise ProgramError(f"embed(): the embedding for domain {dom.name!r} must have "
                               f"shape ({dom.size}, D), got {tuple(e.shape)}")
        self._E[dom.name] = e[:dom.size]
        return self._E[dom.name]

    def doms(self, name):
        return self.c.typing.tensors[name].domains

    def dense(self, name, x):
        """EmbR over embedding indices."""
        if x.kind == "dense":
            return x.value
        n = x.value.ndim
        eq = _L[26:26 + n] + "," + ",".join(_L[26 + k] + _L[k] for k in range(n)) + "->" + _L[:n]
        return ops.einsum(eq, x.value, *[self.E(d) for d in self.doms(name)])

    def embed_relation(self, name, rel):
        if self.mode == "factored":
            return _Emb("core", rel.to_dense(self.p.dtype, self.p.device))
        rows = [self.E(d)[ops.tensor(c, device=self.p.device)]
                for d, c in zip(rel.domains, rel.cols)]
        eq = ",".join("z" + _L[k] for k in range(len(rows))) + "->" + _L[:len(rows)]
        return _Emb("dense", ops.einsum(eq, *rows))

    def embed_soft(self, name, soft):
        if self.mode == "factored":
            return _Emb("core", soft)
        return self.dense(name, _Emb("core", soft))

    def readout(self, name, x):
        doms = self.doms(name)
        n = len(doms)
        if x.kind == "core":
            gram = [self.E(d) @ self.E(d).t() for d in doms]
            eq = _L[:n] + "," + ",".join(_L[k] + _L[26 + k] for k in range(n)) + "->" + \
                _L[26:26 + n]
            return ops.einsum(eq, x.value, *gram)
        eq = _L[:n] + "," + ",".join(_L[26 + k] + _L[k] for k in range(n)) + "->" + _L[26:26 + n]
        return ops.einsum(eq, x.value, *[self.E(d) for d in doms])

    # -- rules --------------------------------------------------------------------------------
    def rule_spec(self, r):
        """The embedded rule as (operands, output): an operand is ('rel', name, letters) or
        ('row', domain, object id, letter); letters are embedding indices."""
        letters, operands = {}, []
        fresh = iter(range(20, 52))
        for a in r.body:
            s = ""
            for k, (kind, v) in enumerate(a.args):
                if kind == "v":
                    s += letters.setdefault(v, _L[len(letters)])
                else:
                    lt = _L[next(fresh)]
                    operands.append(("row", self.doms(a.name)[k], v, lt))
                    s += lt
            operands.append(("rel", a.name, s))
        out = ""
        for k, (kind, v) in enumerate(r.head.args):
            if kind == "v":
                out += letters[v]
            else:
                lt = _L[next(fresh)]
                operands.append(("row", self.doms(r.head.name)[k], v, lt))
                out += lt
        return operands, out

    def rule_dense(self, r, cur):
        operands, out = self.rule_spec(r)
        tensors, subs = [], []
        for op in operands:
            if op[0] == "rel":
                tensors.append(self.dense(op[1], cur[op[1]]))
                subs.append(op[2])
            else:
                row = self.E(op[1])
                tensors.append(row[op[2]] if op[2] >= 0 else ops.zeros_like(row[0]))
                subs.append(op[3])
        return _Emb("dense", ops.einsum(",".join(subs) + "->" + out, *tensors))

    def rule_factored(self, r, cur):
        """The rule over object-indexed cores; None if it has no factored form."""
        operands, out = self.rule_spec(r)
        occ, consts, cores, labels = {}, {}, [], []
        obj = iter(_L)
        for op in operands:
            if op[0] == "rel":
                doms = self.doms(op[1])
                lab = ""
                for k, lt in enumerate(op[2]):
                    o = next(obj)
                    occ.setdefault(lt, []).append((o, doms[k]))
                    lab += o
                cores.append(cur[op[1]].value)
                labels.append(lab)
            else:
                consts.setdefault(op[3], []).append((op[1], op[2]))
        out_labels = ""
        for lt in out:
            body, fixed = occ.get(lt, []), consts.get(lt, [])
            if len(body) == 1 and not fixed:
                out_labels += body[0][0]
            elif not body and len(fixed) == 1:
                d, c = fixed[0]
                o = next(obj)
                onehot = np.zeros(d.size)
                if c >= 0:
                    onehot[c] = 1.0
                cores.append(ops.tensor(onehot, dtype=self.p.dtype, device=self.p.device))
                labels.append(o)
                out_labels += o
            else:
                return None
        for lt, body in occ.items():
            if lt in out:
                continue
            g, lab = self.gram(body, consts.get(lt, []))
            cores.append(g)
            labels.append(lab)
        return _Emb("core", ops.einsum(",".join(labels) + "->" + out_labels, *cores))

    def gram(self, body, fixed):
        """sum_j prod_k Emb[y_k, j] over the occurrences of one summed embedding index."""
        ts, subs = [], []
        for o, d in body:
            ts.append(self.E(d))
            subs.append(o + "Z")
        for d, c in fixed:
            row = self.E(d)
            ts.append(row[c] if c >= 0 else ops.zeros_like(row[0]))
            subs.append("Z")
        lab = "".join(o for o, _ in body)
        return ops.einsum(",".join(subs) + "->" + lab, *ts), lab

    def rule(self, r, cur):
        if self.mode == "factored" and all(cur[a.name].kind == "core" for a in r.body):
            x = self.rule_factored(r, cur)
            if x is not None:
                return x
        return self.rule_dense(r, cur)

    def add(self, name, a, b):
        if a.kind == b.kind:
            return _Emb(a.kind, a.value + b.value)
        return _Emb("dense", self.dense(name, a) + self.dense(name, b))

    def component(self, comp, cur, values, max_iters, denoise):
        rules = [r for e in comp.eqs for r in self.c.rules[e.uid]]
        if any(r.negs or r.cmps for r in rules):
            raise ProgramError("embed(): negation and comparisons have no embedding-space form")
        facts = {h: self.embed_relation(h, values[h]) for h in comp.heads}
        for h in comp.heads:
            cur.setdefault(h, facts[h])
        for it in range(1, max_iters + 1):
            new = dict(facts)
            for r in rules:
                new[r.head.name] = self.add(r.head.name, new[r.head.name], self.rule(r, cur))
            changed = False
            for h in comp.heads:
                d = self.readout(h, new[h])
                T = self.T.get(h, 0.0)
                soft = _readout(d, T, self.threshold)
                old = self.scores.get(h)
                changed |= old is None or not bool(ops.allclose(
                    _readout(old, T, self.threshold), soft, atol=1e-6))
                self.scores[h], self.store[h] = d, new[h]
                cur[h] = self.embed_soft(h, soft) if (comp.recursive or denoise) else new[h]
            if not comp.recursive:
                return
            self.iterations[", ".join(comp.heads)] = it
            if not changed:
                return


def embed(program, emb, T=0.0, threshold=0.5, rule_T=None, max_iters=50, denoise=False,
          mode="factored"):
    """Run the Boolean part of ``program`` in embedding space; returns an
    :class:`EmbeddingResult`.

    ``emb``: an (n, D) tensor or array of object embeddings (rows = domain ids), or a dict
    domain name -> embedding. ``T``: temperature of the read-out sigma((D - threshold)/T);
    ``rule_T``: per-relation temperatures. Non-recursive rules compose in embedding space
    directly (``denoise=True`` re-embeds each read-out instead); recursive components are
    denoised every round and iterate until the read-out is stable (``max_iters``).
    ``mode``: 'factored' (Tucker cores, the default) or 'dense' (materialized EmbR).
    """
    if mode not in ("factored", "dense"):
        raise ValueError(f"embed(): mode must be 'factored' or 'dense', got {mode!r}")
    e = _Embedder(program, emb, T, threshold, mode)
    e.T = {n: T for n in e.c.typing.tensors}
    e.T.update(rule_T or {})
    values, _ = program.initial_values(e.c)
    cur = {}
    for name, info in e.c.typing.tensors.items():
        if info.kind == "bool" and name not in e.c.heads():
            cur[name] = e.store[name] = e.embed_relation(name, values[name])
            e.scores[name] = e.readout(name, cur[name])
    for comp in e.c.comps:
        if comp.kind == "bool":
            e.component(comp, cur, values, max_iters, denoise)
    doms = {n: i.domains for n, i in e.c.typing.tensors.items()}
    return EmbeddingResult(e.scores, e.T, threshold, doms, e, e.iterations)
