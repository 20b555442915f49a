"""The dense evaluator: one equation's contribution as a Tensor, built from tensorix ops so that
autograd runs through it.

Per term: each tensor reference becomes an einsum operand (constant indices select, shifted
indices ``x+dx`` gather with zeros outside the range, repeated indices take diagonals);
elementwise factors (nested calls, powers, parenthesized sums) are computed over their own
indices; top-level Boolean relations are joined sparsely into *rows* (one per satisfying
assignment) and the dense operands are gathered at those rows, so a relation is never
densified there. The term is then contracted onto the left-side indices with the projection's
semiring (sum, max, min; avg = sum / count), rows are scattered back to left-side positions,
left-side division aggregates blocks, terms are added, and the outer function, the validity
masks of shifted reads and constant left-side positions are applied.
"""

from __future__ import annotations

import numpy as np

from .. import ops
from . import _ir as ir
from ._datalog import Atom, atom_table
from ._errors import ProgramError, located
from ._functions import apply_elementwise, apply_normalizer
from ._relation import encode, join

__all__ = ["DenseEvaluator"]

_SEMIRING = {"sum": "sum-product", "avg": "sum-product", "or": "sum-product",
             "max": "max-product", "min": "min-product"}
ROW = "#"


def _fix_index(ix, fixed):
    if not fixed:
        return ix
    if isinstance(ix, ir.IVar) and ix.name in fixed:
        return ir.IConst(int(fixed[ix.name]))
    if isinstance(ix, ir.IAff) and any(v in fixed for _, v in ix.terms):
        terms = [(c, v) for c, v in ix.terms if v not in fixed]
        const = ix.const + sum(c * fixed[v] for c, v in ix.terms if v in fixed)
        return ir.affine(terms, const)
    return ix


def _align(t, labels, target):
    """``t`` (axes ``labels``, unique) permuted and reshaped to broadcast against ``target``."""
    if list(labels) == list(target):
        return t
    present = [v for v in target if v in labels]
    perm = [labels.index(v) for v in present]
    if perm != list(range(len(perm))):
        t = t.permute(*perm)
    shape = []
    it = iter(t.shape)
    for v in target:
        shape.append(next(it) if v in labels else 1)
    return t.reshape(*shape) if tuple(shape) != tuple(t.shape) else t


class DenseEvaluator:
    """Evaluates equations densely against ``values`` (name -> Tensor | Relation)."""

    def __init__(self, typing, values, plans, dtype, device=None):
        self.typing, self.values, self.plans = typing, values, plans
        self.dtype, self.device = dtype, device
        self._dense_rel = {}

    # -- small helpers --------------------------------------------------------------------------
    def tensor(self, x):
        return ops.tensor(x, dtype=self.dtype, device=self.device)

    def index(self, arr):
        return ops.tensor(np.asarray(arr, dtype=np.int64), device=self.device)

    def value(self, name, where):
        if name in self.typing.consts:
            return self.tensor(self.typing.consts[name])
        v = self.values.get(name)
        if v is None:
            raise ProgramError(f"tensor {name!r} has no value yet when evaluating {where} "
                               "(it is read before it is computed)", at=where)
        if not isinstance(v, ops.Tensor):  # a Relation read densely
            key = (name, id(v))
            d = self._dense_rel.get(key)
            if d is None:
                d = self._dense_rel[key] = v.to_dense(self.dtype, self.device)
            return d
        return v

    def const_id(self, name, axis, c):
        if isinstance(c, str) and c in self.typing.consts:
            return int(self.typing.consts[c])
        info = self.typing.tensors.get(name)
        if info is None:
            return int(c)
        d = info.domains[axis]
        return d.id_of(c) if d.has(c) else -1

    # -- operands ------------------------------------------------------------------------------
    def operand(self, e, ref, fixed):
        """(Tensor, labels) of a reference; None when a constant index is out of range."""
        t = self.value(ref.name, e.where())
        if len(ref.idx) != t.ndim:
            raise ProgramError(f"{ref.name} has {t.ndim} axes but is indexed with "
                               f"{len(ref.idx)} in {e.where()}")
        labels, axis = [], 0
        for k, ix in enumerate(ref.idx):
            ix = _fix_index(ix, fixed)
            n = t.shape[axis]
            if isinstance(ix, ir.IConst):
                c = self.const_id(ref.name, k, ix.value)
                if not 0 <= c < n:
                    return None
                t = t.select(axis, c)
            elif isinstance(ix, ir.IVar):
                labels.append(ix.name)
                axis += 1
            else:
                t = self.gather_affine(t, axis, ix, e.sizes)
                labels += [v for _, v in ix.terms]
                axis += len(ix.terms)
        return t, labels

    def gather_affine(self, t, axis, ix, sizes):
        """Axis ``axis`` of ``t`` read at sum(c*v)+const: one axis per variable, zeros where the
        position is out of range."""
        dims = [sizes[v] for _, v in ix.terms]
        grid = np.full(dims, ix.const, dtype=np.int64)
        for k, (c, _) in enumerate(ix.terms):
            shape = [1] * len(dims)
            shape[k] = dims[k]
            grid = grid + c * np.arange(dims[k]).reshape(shape)
        flat = grid.ravel()
        n = t.shape[axis]
        valid = (flat >= 0) & (flat < n)
        g = t.index_select(axis, self.index(np.clip(flat, 0, max(n - 1, 0))))
        new_shape = list(t.shape[:axis]) + dims + list(t.shape[axis + 1:])
        g = g.reshape(*new_shape)
        if not valid.all():
            mshape = [1] * axis + dims + [1] * (t.ndim - axis - 1)
            g = g * self.tensor(valid.reshape(mshape).astype(np.float64))
        return g

    def unique_labels(self, key, t, labels):
        """Diagonals of repeated labels, so every label names one axis."""
        if len(set(labels)) == len(labels):
            return t, list(labels)
        out = list(dict.fromkeys(labels))
        return self.plans.contract(key, [(t, labels)], out), out

    # -- elementwise sub-expressions -------------------------------------------------------------
    def elementwise(self, e, x, fixed, key):
        """(Tensor, labels) of a sub-expression, with no projection; None when it is zero."""
        if isinstance(x, ir.Num):
            return self.tensor(x.value), []
        if isinstance(x, ir.Ref):
            r = self.operand(e, x, fixed)
            if r is None:
                return self.tensor(0.0), []
            return self.unique_labels(key, *r)
        if isinstance(x, ir.Call):
            if len(x.args) != 1:
                raise ProgramError(f"{x.fn}() takes one argument in {e.where()}")
            t, labels = self.elementwise(e, x.args[0], fixed, key)
            return apply_elementwise(x.fn, t, x.kwargs, e.where()), labels
        if isinstance(x, ir.Pow):
            t, labels = self.elementwise(e, x.base, fixed, key)
            return t ** x.exp, labels
        if isinstance(x, (ir.Sum, ir.Prod)):
            parts = [self.elementwise(e, y, fixed, key)
                     for y in (x.terms if isinstance(x, ir.Sum) else x.factors)]
            target = []
            for _, labels in parts:
                target += [v for v in labels if v not in target]
            acc = None
            for t, labels in parts:
                t = _align(t, labels, target)
                acc = t if acc is None else (acc + t if isinstance(x, ir.Sum) else acc * t)
            return acc, target
        raise ProgramError(f"cannot evaluate {ir.fmt_expr(x)!r} in {e.where()}")

    # -- sparse rows -----------------------------------------------------------------------------
    def rows(self, e, factors, fixed):
        """Join the term's top-level Boolean relations: var -> id column, one row per
        satisfying assignment; None when a ground atom is false."""
        table = None
        for f in sorted(factors, key=lambda f: len(self.values[f.ref.name])):
            rel = self.values[f.ref.name]
            args = []
            for k, ix in enumerate(f.ref.idx):
                ix = _fix_index(ix, fixed)
                if isinstance(ix, ir.IConst):
                    args.append(("c", self.const_id(f.ref.name, k, ix.value)))
                else:
                    args.append(("v", ix.name))
            if all(a[0] == "c" for a in args):
                if not self._ground_true(rel, args):
                    return None
                continue
            cols, _ = atom_table(Atom(f.ref.name, tuple(args)), rel)
            table = cols if table is None else join(table, cols, e.sizes)
        return table if table is not None else {}

    @staticmethod
    def _ground_true(rel, args):
        ids = [np.array([a[1]], np.int64) for a in args]
        if any(a[1] < 0 for a in args):
            return False
        return bool(rel.contains_keys(encode(ids, rel.sizes))[0])

    def gather_rows(self, key, t, labels, table, nrows):
        bound = [v for v in dict.fromkeys(labels) if v in table]
        if not bound:
            return t, labels
        t, labels = self.unique_labels(key, t, labels)
        pos = [labels.index(v) for v in bound]
        rest = [k for k in range(len(labels)) if k not in pos]
        if pos + rest != list(range(len(labels))):
            t = t.permute(*(pos + rest))
        g = t[tuple(self.index(table[v]) for v in bound)]
        return g, [ROW] + [labels[k] for k in rest]

    # -- terms ---------------------------------------------------------------------------------
    def term(self, e, k, term, pre, fixed):
        """The term projected onto the left-side variables it mentions: (Tensor, labels)."""
        key = (e.uid, k, tuple(sorted(fixed.items())) if fixed else ())
        tvars = [v for v in term.vars() if not (fixed and v in fixed)]
        out = [v for v in pre if v in tvars]
        sparse = [f for f in term.factors if f.sparse]
        table = self.rows(e, sparse, fixed) if sparse else None
        if sparse and table is None:
            return None
        operands = []
        for f in term.factors:
            if f.sparse:
                continue
            r = (self.operand(e, f.ref, fixed) if f.kind == "ref"
                 else self.elementwise(e, f.expr, fixed, key))
            if r is None:
                return None
            operands.append(r)
        if table:
            n = len(next(iter(table.values())))
            operands = [self.gather_rows(key, t, labels, table, n) for t, labels in operands]
            if not any(ROW in labels for _, labels in operands):
                operands.append((ops.ones(n, dtype=self.dtype, device=self.device), [ROW]))
        if not operands:
            operands = [(self.tensor(1.0), [])]
        bound_out = [v for v in out if table and v in table]
        free_out = [v for v in out if v not in bound_out]
        cout = ([ROW] if bound_out else []) + free_out
        val = self.plans.contract(key, operands, cout, _SEMIRING[e.op])
        if bound_out:
            val = self.scatter_rows(val, table, bound_out, free_out, e)
        val = _align(val, bound_out + free_out, out) if bound_out else val
        if e.op == "avg":
            val = val / self.avg_count(e, tvars, out, table)
        if term.coef != 1.0:
            val = val * term.coef
        return val, out

    def scatter_rows(self, val, table, bound, free, e):
        sizes = [e.sizes[v] for v in bound]
        flat = self.index(encode([table[v] for v in bound], sizes))
        space = int(np.prod(sizes))
        base = ops.zeros(space, *val.shape[1:], dtype=val.dtype, device=self.device)
        if e.op in ("max", "min"):
            idx = flat.reshape(-1, *([1] * (val.ndim - 1))).expand(*val.shape)
            red = "amax" if e.op == "max" else "amin"
            out = base.scatter_reduce(0, idx, val, red, include_self=False)
        else:
            out = base.index_add(0, flat, val)
        return out.reshape(*sizes, *val.shape[1:])

    def avg_count(self, e, tvars, out, table):
        summed = [v for v in tvars if v not in out and not (table and v in table)]
        n = float(np.prod([e.sizes[v] for v in summed])) if summed else 1.0
        if not table:
            return n
        bound = [v for v in out if v in table]
        if not bound:
            return n * len(next(iter(table.values())))
        sizes = [e.sizes[v] for v in bound]
        cnt = np.bincount(encode([table[v] for v in bound], sizes),
                          minlength=int(np.prod(sizes))).astype(np.float64)
        shape = [e.sizes[v] if v in bound else 1 for v in out]
        cnt = np.maximum(cnt, 1.0).reshape([e.sizes[v] for v in bound])
        cnt = _np_align(cnt, bound, out).reshape(shape)
        return self.tensor(cnt * n)

    # -- left side -----------------------------------------------------------------------------
    def blocks(self, val, labels, e, div):
        """Aggregate the left-side ``x/S`` positions into blocks of S with the projection."""
        for v, s in div.items():
            if v not in labels:
                continue
            ax = labels.index(v)
            n = val.shape[ax]
            m = -(-n // s)
            pad_n = m * s - n
            if pad_n:
                fill = {"max": -np.inf, "min": np.inf}.get(e.op, 0.0)
                widths = [0, 0] * (val.ndim - 1 - ax) + [0, pad_n]
                val = ops.pad(val, tuple(widths), value=fill)
            val = val.reshape(*val.shape[:ax], m, s, *val.shape[ax + 1:])
            if e.op == "max":
                val = ops.amax(val, dim=ax + 1)
            elif e.op == "min":
                val = ops.amin(val, dim=ax + 1)
            elif e.op == "avg":
                cnt = np.full(m, float(s))
                cnt[-1] = s - pad_n
                val = ops.sum(val, dim=ax + 1) / self.tensor(
                    cnt.reshape([m] + [1] * (val.ndim - 2 - ax)))
            else:
                val = ops.sum(val, dim=ax + 1)
            labels = labels[:ax] + [v + "/"] + labels[ax + 1:]
        return val, labels

    def contribution(self, e, fixed=None):
        """The equation's contribution over the head's full shape (None: nothing here)."""
        with located(e):
            return self._contribution(e, fixed)

    def _contribution(self, e, fixed):
        if fixed and not self._fixed_valid(e, fixed):
            return None
        items = [("const", fixed[it[1]]) if fixed and it[0] == "var" and it[1] in fixed
                 else it for it in e.lhs]
        pre = [it[1] for it in items if it[0] in ("var", "div")]
        div = {it[1]: int(self.typing.consts.get(it[2], it[2])) for it in items
               if it[0] == "div"}
        out = [it[1] if it[0] == "var" else it[1] + "/" for it in items if it[0] != "const"]
        sizes = {v: e.sizes[v] for v in pre}
        sizes.update({v + "/": -(-e.sizes[v] // s) for v, s in div.items()})
        acc = None
        for k, term in enumerate(e.terms):
            r = self.term(e, k, term, pre, fixed)
            if r is None:
                continue
            val, labels = self.blocks(*r, e, div)
            val = _align(val, labels, out)
            acc = val if acc is None else acc + val
        if acc is None:
            acc = self.tensor(0.0)
        if acc.ndim != len(out):
            acc = acc.reshape(*([1] * len(out)))
        acc = acc.expand(*[sizes[v] for v in out])
        acc = self.outer(e, acc, items)
        acc = self.apply_masks(e, acc, out)
        if e.op == "or":
            acc = apply_elementwise("step", acc, (), e.where())
        return self.place(e, acc, items)

    def outer(self, e, acc, items):
        if e.fn is not None:
            name, kw = e.fn
            if e.normalizer:
                axis = sum(1 for it in items[:e.norm_axis] if it[0] != "const")
                if items[e.norm_axis][0] == "const":
                    raise ProgramError(f"the normalized index is fixed in {e.where()}")
                acc = apply_normalizer(name, acc.contiguous(), axis, kw, e.where())
            else:
                acc = apply_elementwise(name, acc, kw, e.where())
        if e.power is not None:
            acc = acc ** e.power
        return acc

    def _fixed_valid(self, e, fixed):
        return all(v not in fixed or 0 <= fixed[v] + c < n for v, c, n in e.masks)

    def apply_masks(self, e, acc, out):
        for v, c, n in e.masks:
            if v not in out:
                continue
            pos = np.arange(e.sizes[v]) + c
            valid = (pos >= 0) & (pos < n)
            if valid.all():
                continue
            shape = [e.sizes[v] if u == v else 1 for u in out]
            m = ops.tensor(valid.reshape(shape), device=self.device)
            acc = ops.where(m, acc, ops.zeros((), dtype=acc.dtype, device=self.device))
        return acc

    def place(self, e, acc, items):
        """Write the value into the head's shape at constant left-side positions."""
        info = self.typing.tensors[e.head]
        for k, it in enumerate(items):
            if it[0] != "const":
                continue
            n = info.domains[k].size
            c = self.const_id(e.head, k, it[1])
            if not 0 <= c < n:
                raise ProgramError(f"left-side constant {it[1]!r} is outside axis {k} of "
                                   f"{e.head} (size {n}) in {e.where()}")
            acc = acc.unsqueeze(k)
            widths = [0, 0] * (acc.ndim - 1 - k) + [c, n - c - 1]
            acc = ops.pad(acc, tuple(widths))
        return acc


def _np_align(a, labels, target):
    present = [v for v in target if v in labels]
    return np.transpose(a, [labels.index(v) for v in present])
