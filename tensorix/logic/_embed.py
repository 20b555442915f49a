"""Reasoning in embedding space (Domingos 2025, section 5).

Every object gets a vector (a row of ``Emb``); a relation R becomes the superposition of the
tensor products of its tuples, ``EmbR[i,j] = R(x,y) Emb[x,i] Emb[y,j]`` (built from the sparse
tuples by a gather and one einsum, O(|R| D^2)); a rule ``H(x,z) <- A(x,y), B(y,z)`` becomes the
join of the embedded bodies, ``EmbH[i,k] = EmbA[i,j] EmbB[j,k]``: the shared variable y is a
shared embedding index, and sum_y Emb[y,j] Emb[y,j'] (the Gram matrix) stands in for
"same object". Answers are read out by joining with the embeddings again,
``D[a,b] = EmbH[i,k] Emb[a,i] Emb[b,k]``, through the temperature sigmoid
``sigma((D - threshold) / T)``; T = 0 is the step, which reproduces Datalog exactly when the
embeddings are orthonormal (the Gram matrix is the identity) and with high probability for
random unit vectors of large dimension (off-diagonal dot products ~ 1/sqrt(D)).

Recursive rules iterate in embedding space with *denoising*: after every round the read-out is
thresholded (or squashed, T > 0) and re-embedded, as the paper suggests, until the read-out
stops changing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import ops
from ._errors import ProgramError

__all__ = ["embed", "EmbeddingResult"]

_L = "abcdefghijklmnopqrstuvwxyz"


@dataclass
class EmbeddingResult:
    """``scores[R]``: the read-out D over R's domains; ``embedded[R]``: EmbR;
    ``relation(R)``: sigma((D - threshold)/T) (a 0/1 tensor at T = 0); ``tuples(R)``: the
    tuples whose read-out is above 1/2, as constants; ``iterations[R]`` for recursive ones."""

    scores: dict
    embedded: dict
    T: dict
    threshold: float
    domains: dict
    iterations: dict = field(default_factory=dict)

    def relation(self, name):
        return _readout(self.scores[name], self.T.get(name, 0.0), self.threshold)

    def tuples(self, name):
        r = self.relation(name).detach().numpy(force=True)
        doms = self.domains[name]
        return {tuple(d.value_of(int(k)) for d, k in zip(doms, idx))
                for idx in zip(*np.nonzero(r > 0.5))}


def _readout(d, T, theta):
    if T == 0:
        return ops.gt(d.detach(), theta).to(d.dtype)
    return ops.sigmoid((d - theta) / T)


class _Embedder:
    def __init__(self, program, emb, T, threshold):
        self.p = program
        self.c = program.compile()
        self.threshold = threshold
        self.T = T
        self.emb = emb
        self.scores, self.embedded, self.iterations = {}, {}, {}

    def emb_for(self, dom):
        e = self.emb.get(dom.name) if isinstance(self.emb, dict) else self.emb
        if e is None:
            raise ProgramError(f"embed(): no embedding for domain {dom.name!r}")
        if not isinstance(e, ops.Tensor):
            e = ops.tensor(np.asarray(e, dtype=np.float64), dtype=self.p.dtype)
        if e.ndim != 2 or e.shape[0] < dom.size:
            raise ProgramError(f"embed(): the embedding for domain {dom.name!r} must have "
                               f"shape ({dom.size}, D), got {tuple(e.shape)}")
        return e[:dom.size]

    def embed_relation(self, rel):
        """sum over tuples of the outer product of the argument embeddings (sparse gather)."""
        es = [self.emb_for(d) for d in rel.domains]
        rows = [e[ops.tensor(c)] for e, c in zip(es, rel.cols)]
        eq = ",".join("z" + _L[k] for k in range(len(rows))) + "->" + _L[:len(rows)]
        return ops.einsum(eq, *rows)

    def embed_dense(self, soft, doms):
        """The read-out ``soft`` (dense over the domains) embedded back."""
        es = [self.emb_for(d) for d in doms]
        n = len(doms)
        eq = _L[13:13 + n] + "," + ",".join(_L[13 + k] + _L[k] for k in range(n)) + "->" + \
            _L[:n]
        return ops.einsum(eq, soft, *es)

    def readout(self, name, embr):
        doms = self.c.typing.tensors[name].domains
        es = [self.emb_for(d) for d in doms]
        n = len(doms)
        eq = _L[:n] + "," + ",".join(_L[13 + k] + _L[k] for k in range(n)) + "->" + _L[13:13 + n]
        return ops.einsum(eq, embr, *es)

    def rule(self, r, cur):
        """The embedded rule: embedded body atoms joined on shared variables' indices."""
        letters, operands, subs = {}, [], []
        tensors = self.c.typing.tensors
        for a in r.body:
            s = ""
            for k, (kind, v) in enumerate(a.args):
                if kind == "v":
                    s += letters.setdefault(v, _L[len(letters)])
                else:  # a constant argument: contract with its embedding
                    lt = _L[25 - len(operands)]
                    row = self.emb_for(tensors[a.name].domains[k])
                    operands.append(row[v] if v >= 0 else ops.zeros_like(row[0]))
                    subs.append(lt)
                    s += lt
            operands.append(cur[a.name])
            subs.append(s)
        out, extra = "", []
        for k, (kind, v) in enumerate(r.head.args):
            if kind == "v":
                out += letters[v]
            else:
                lt = _L[20 - k]
                extra.append((self.emb_for(tensors[r.head.name].domains[k])[v], lt))
                out += lt
        for t, lt in extra:
            operands.append(t)
            subs.append(lt)
        return ops.einsum(",".join(subs) + "->" + out, *operands)

    def component(self, comp, cur, values, max_iters, denoise):
        rules = [r for e in comp.eqs for r in self.c.rules[e.uid]]
        if any(r.negs or r.cmps for r in rules):
            raise ProgramError("embed(): negation and comparisons have no embedding-space form")
        facts = {h: self.embed_relation(values[h]) for h in comp.heads}
        for h in comp.heads:
            cur.setdefault(h, facts[h])
        for it in range(1, max_iters + 1):
            new = {h: facts[h] for h in comp.heads}
            for r in rules:
                new[r.head.name] = new[r.head.name] + self.rule(r, cur)
            changed = False
            for h in comp.heads:
                d = self.readout(h, new[h])
                soft = _readout(d, self.T.get(h, 0.0), self.threshold)
                old = self.scores.get(h)
                changed |= old is None or not bool(ops.allclose(
                    _readout(old, self.T.get(h, 0.0), self.threshold), soft, atol=1e-6))
                self.scores[h] = d
                cur[h] = self.embed_dense(soft, self.c.typing.tensors[h].domains) \
                    if (comp.recursive or denoise) else new[h]
                self.embedded[h] = new[h]
            if not comp.recursive:
                return
            self.iterations[", ".join(comp.heads)] = it
            if not changed:
                return


def embed(program, emb, T=0.0, threshold=0.5, rule_T=None, max_iters=50, denoise=False):
    """Run the Boolean part of ``program`` in embedding space.

    ``emb``: an (n, D) tensor or array of object embeddings (rows = domain ids), or a dict
    domain name -> embedding. ``T``: temperature of the read-out sigma((D - threshold)/T);
    ``rule_T``: per-relation temperatures. Non-recursive rules compose in embedding space
    directly (``denoise=True`` re-embeds each read-out instead); recursive components are
    denoised every round and iterate until the read-out is stable (``max_iters``).
    """
    e = _Embedder(program, emb, T, threshold)
    e.T = {n: T for n in e.c.typing.tensors}
    e.T.update(rule_T or {})
    values, _ = program.initial_values(e.c)
    cur = {}
    for name, info in e.c.typing.tensors.items():
        if info.kind == "bool" and name not in e.c.heads():
            cur[name] = e.embed_relation(values[name])
            e.embedded[name] = cur[name]
            e.scores[name] = e.readout(name, cur[name])
    for comp in e.c.comps:
        if comp.kind == "bool":
            e.component(comp, cur, values, max_iters, denoise)
    doms = {n: i.domains for n, i in e.c.typing.tensors.items()}
    return EmbeddingResult(e.scores, e.embedded, e.T, threshold, doms, e.iterations)
