"""Answering queries: select from a relation or a tensor after evaluating what is needed."""

from __future__ import annotations

import numpy as np

from .. import ops
from . import _ir as ir
from ._errors import ProgramError
from ._relation import decode, encode, unique_keys

__all__ = ["answer", "select_relation", "select_tensor"]


def _const_ids(ref, info, consts):
    ids = []
    for ix, d in zip(ref.idx, info.domains):
        if isinstance(ix, ir.IConst):
            c = ix.value
            if isinstance(c, str) and c in consts:
                c = int(consts[c])
            ids.append(d.id_of(c) if d.has(c) else -1)
        elif isinstance(ix, ir.IVar):
            ids.append(None)
        else:
            raise ProgramError(f"query {ir.fmt_ref(ref)!r}: only constants and variables can "
                               "be asked for")
    return ids


def answer(program, ref, goal_directed, run_options):
    c = program.compile()
    if ref.name in c.typing.consts and not ref.idx:
        return ops.tensor(c.typing.consts[ref.name], dtype=program.dtype)
    info = c.typing.tensors.get(ref.name)
    if info is None:
        raise ProgramError(f"unknown tensor {ref.name!r} in the query {ir.fmt_ref(ref)!r}")
    if len(ref.idx) not in (0, info.arity):
        raise ProgramError(f"query {ir.fmt_ref(ref)!r}: {ref.name} has {info.arity} indices")
    if info.kind == "bool" and ref.idx:
        ids = _const_ids(ref, info, c.typing.consts)
        if -1 in ids:  # a constant outside the domain: nothing can match
            free = [ix.name for ix in ref.idx if isinstance(ix, ir.IVar)]
            return {v: [] for v in dict.fromkeys(free)} if free else False
        if goal_directed and ref.name in c.heads() and not run_options:
            from ._magic import magic_solve

            values, _ = program.initial_values(c)
            res = magic_solve(program, c, ref, values, ids)
            if res is not None:
                program.last_magic = res
                return select_relation(res.relation, ref, ids)
        program.run(targets=[ref.name], **run_options)
        return select_relation(program.values[ref.name], ref, ids)
    program.run(targets=[ref.name], **run_options)
    val = program.values[ref.name]
    if info.kind == "bool":
        return val
    return select_tensor(val, ref, info, c.typing.consts)


def select_relation(rel, ref, ids):
    """{var: [values]} of the tuples matching the atom (True/False when it is ground)."""
    n = len(rel)
    mask = np.ones(n, dtype=bool)
    first = {}
    for k, (ix, cid) in enumerate(zip(ref.idx, ids)):
        if cid is not None:
            mask &= rel.cols[k] == cid
        elif ix.name in first:
            mask &= rel.cols[k] == rel.cols[first[ix.name]]
        else:
            first[ix.name] = k
    if not first:
        return bool(mask.any())
    pos = list(first.values())
    sizes = [rel.sizes[k] for k in pos]
    keys = unique_keys(encode([rel.cols[k][mask] for k in pos], sizes),
                       int(np.prod(sizes, dtype=object)))
    cols = decode(keys, sizes) if len(keys) else [np.zeros(0, np.int64) for _ in pos]
    return {v: rel.domains[k].values_of(col.tolist()) for (v, k), col in
            zip(first.items(), cols)}


def select_tensor(t, ref, info, consts):
    """The tensor read at the query's indices: constants select, variables stay as axes (in
    order of first appearance; a repeated variable takes the diagonal)."""
    if not ref.idx:
        return t
    labels = []
    for k, ix in reversed(list(enumerate(ref.idx))):
        if isinstance(ix, ir.IConst):
            c = ix.value
            if isinstance(c, str) and c in consts:
                c = int(consts[c])
            t = t.select(k, info.domains[k].id_of(c))
        elif isinstance(ix, ir.IVar):
            labels.insert(0, ix.name)
        else:
            raise ProgramError(f"query {ir.fmt_ref(ref)!r}: only constants and variables")
    out = list(dict.fromkeys(labels))
    for v in out:
        sizes = {t.shape[k] for k, u in enumerate(labels) if u == v}
        if len(sizes) > 1:
            raise ProgramError(f"query {ir.fmt_ref(ref)!r}: index {v!r} is used on axes of "
                               f"sizes {sorted(sizes)}")
    if out != labels:
        letters = {v: chr(97 + i) for i, v in enumerate(out)}
        t = ops.einsum("".join(letters[v] for v in labels) + "->" +
                       "".join(letters[v] for v in out), t)
    return t
