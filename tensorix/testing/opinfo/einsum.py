"""Registry entries for ops/einsum.py, and brute-force semiring references.

The references do not share code with the engine: they expand every operand over the full
index space by broadcast indexing (a repeated label indexes with the same grid, a size-1
dimension with zeros), combine with the semiring's product and reduce with its sum, i.e. the
explicit loop over all index assignments, vectorised.
"""

from __future__ import annotations

import functools
import string

import numpy as np

import tensorix as tx

from ..registry import OpInfo, Sample, exempt, register
from ._samples import uniform

__all__ = ["brute_einsum", "brute_einsum_torch", "SEMIRING_OPS"]


def _labels(equation, ndims):
    """Input label lists, output labels and label order, with '...' spelled out."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    spare = [c for c in string.ascii_uppercase[::-1] + string.ascii_lowercase[::-1]
             if c not in eq]
    n_ell = max([nd - len(t.replace("...", "")) for t, nd in zip(terms, ndims) if "..." in t],
                default=0)
    ell = "".join(spare[:n_ell][::-1])
    ins = []
    for t, nd in zip(terms, ndims):
        e = nd - len(t.replace("...", ""))
        ins.append(t.replace("...", ell[n_ell - e:] if e else ""))
    if arrow:
        out = rhs.replace("...", ell)
    else:
        flat = "".join(terms).replace("...", "")
        out = ell + "".join(sorted(c for c in set(flat) if flat.count(c) == 1))
    return ins, out, sorted(set("".join(ins)))


def _expand(arrays, ins, order, sizes, arange):
    """Each operand as an array broadcastable over the full index space ``order``."""
    full = []
    for a, labels in zip(arrays, ins):
        idx = []
        for c, d in zip(labels, a.shape):
            shape = [1] * len(order)
            shape[order.index(c)] = sizes[c]
            grid = arange(sizes[c]).reshape(shape)
            idx.append(grid if d != 1 else grid * 0)
        full.append(a[tuple(idx)] if idx else a)
    return full


def _sizes(arrays, ins):
    sizes = {}
    for a, labels in zip(arrays, ins):
        for c, d in zip(labels, a.shape):
            sizes[c] = max(sizes.get(c, 1), d) if d != 1 else sizes.get(c, 1)
    return sizes


_NP_SEMIRINGS = {
    "sum-product": (lambda x, ax: x.sum(axis=ax), np.multiply),
    "log-sum-exp": (lambda x, ax: _np_logsumexp(x, ax), np.add),
    "max-product": (lambda x, ax: x.max(axis=ax), np.multiply),
    "max-plus": (lambda x, ax: x.max(axis=ax), np.add),
    "min-product": (lambda x, ax: x.min(axis=ax), np.multiply),
    "min-plus": (lambda x, ax: x.min(axis=ax), np.add),
    "boolean": (lambda x, ax: x.any(axis=ax), np.logical_and),
}


def _np_logsumexp(x, ax):
    m = x.max(axis=ax, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    with np.errstate(divide="ignore"):
        return (np.log(np.exp(x - m).sum(axis=ax, keepdims=True)) + m).squeeze(ax)


def brute_einsum(equation, *arrays, semiring="sum-product"):
    """NumPy reference: every index assignment at once, then the semiring's sum."""
    plus, times = _NP_SEMIRINGS[semiring]
    arrays = [np.asarray(a) for a in arrays]
    if semiring == "boolean":
        arrays = [a != 0 for a in arrays]
    ins, out, order = _labels(equation, [a.ndim for a in arrays])
    sizes = _sizes(arrays, ins)
    full = _expand(arrays, ins, order, sizes, np.arange)
    prod = functools.reduce(times, full)
    prod = np.broadcast_to(prod, tuple(sizes[c] for c in order))
    red = tuple(i for i, c in enumerate(order) if c not in out)
    res = plus(prod, red) if red else prod
    kept = [c for c in order if c in out]
    return np.asarray(res).transpose([kept.index(c) for c in out])


def brute_einsum_torch(equation, *tensors, semiring="sum-product"):
    """The same reference in torch (a gradient oracle for every semiring)."""
    import torch

    plus = {"sum-product": torch.sum, "log-sum-exp": torch.logsumexp,
            "max-product": torch.amax, "max-plus": torch.amax, "min-product": torch.amin,
            "min-plus": torch.amin}[semiring]
    times = torch.mul if semiring.endswith("product") else torch.add
    ins, out, order = _labels(equation, [t.ndim for t in tensors])
    sizes = _sizes(tensors, ins)
    full = _expand(tensors, ins, order, sizes, torch.arange)
    prod = functools.reduce(times, full).expand(tuple(sizes[c] for c in order))
    red = tuple(i for i, c in enumerate(order) if c not in out)
    res = plus(prod, red) if red else prod
    kept = [c for c in order if c in out]
    return res.permute([kept.index(c) for c in out])


# -- samples ---------------------------------------------------------------------------------

_CASES = [
    ("ij,jk->ik", (3, 4), (4, 5)),
    ("bij,bjk->bik", (2, 3, 4), (2, 4, 2)),
    ("ij,jk,kl->il", (2, 3), (3, 4), (4, 2)),
    ("ii->i", (3, 3)),
    ("ii", (4, 4)),
    ("iij,jk->ki", (3, 3, 2), (2, 4)),
    ("...ij,...jk", (2, 3, 4), (4, 2)),
    ("b...i,b...i->b...", (2, 1, 3), (2, 4, 3)),
    ("ij,ij->ij", (3, 1), (1, 4)),
    ("i,j->ij", (3,), (4,)),
    ("ijk->kj", (2, 3, 4)),
    ("ij,jk,kl,lm->mi", (2, 3), (3, 2), (2, 3), (3, 2)),
    ("ab,bc,ca->", (3, 4), (4, 2), (2, 3)),
]


def _samples(cases, low=-2.0):
    def samples(rng, dtype):
        return [Sample((eq, *[uniform(rng, s, low=low) for s in shapes]))
                for eq, *shapes in cases]
    return samples


def _bool_samples(rng, dtype):
    cases = [("ij,jk->ik", (4, 5), (5, 3)), ("ij,jk,kl->il", (3, 4), (4, 4), (4, 2)),
             ("ii->i", (3, 3)), ("ij->", (3, 4)), ("xy,yz,zx->x", (3, 3), (3, 3), (3, 3))]
    return [Sample((eq, *[(rng.random(s) < 0.4).astype(np.float64) for s in shapes]))
            for eq, *shapes in cases]


# Hadamard steps, lone reductions, diagonals, broadcasting and multi-step paths
_SEMIRING_CASES = [_CASES[i] for i in (0, 1, 2, 3, 5, 7, 8, 10, 11)]


def _semiring_entry(name):
    # max/min-product are semirings on non-negative numbers only
    low = 0.1 if name.endswith("product") else -2.0
    return OpInfo(f"einsum[{name}]", _samples(_SEMIRING_CASES, low),
                  functools.partial(brute_einsum, semiring=name),
                  op=functools.partial(tx.einsum, semiring=name),
                  torch=functools.partial(brute_einsum_torch, semiring=name),
                  gradgrad=True)


SEMIRING_OPS = ("log-sum-exp", "max-product", "max-plus", "min-product", "min-plus")

register(
    OpInfo("einsum", _samples(_CASES), np.einsum, gradgrad=True,
           dtypes=(tx.float32, tx.float64, tx.bfloat16),
           tol={"bfloat16": (3e-2, 3e-2)}),
    *[_semiring_entry(name) for name in SEMIRING_OPS],
    OpInfo("einsum[boolean]", _bool_samples,
           functools.partial(brute_einsum, semiring="boolean"),
           op=functools.partial(tx.einsum, semiring="boolean"), torch=False, grad=False,
           dtypes=(tx.float32,)),
)

exempt("compiles or prints an einsum plan rather than computing an array; tested in "
       "tests/test_einsum.py", "einsum_expression", "einsum_plan")
