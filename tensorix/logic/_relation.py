"""Sparse Boolean relations and the joins on them.

A relation is a set of tuples over domains, stored as int64 columns (one per argument) with no
duplicate rows. A tuple's *key* is its mixed-radix code (c0*s1 + c1)*s2 + ...; keys give set
operations in single vectorized calls: membership through a bitmap when the domain product is
small (a perfect hash), else through a sorted key array and ``searchsorted``.

Joins work on *tables* (dict variable -> column, all columns the same length): the probe side's
shared variables are encoded as one key and looked up in an index of the build side, either a
CSR index (offsets by key, when the key space is small: a hash join with a perfect hash) or a
sorted key array (a sort-merge join through ``searchsorted``). Matches are expanded with
``repeat``; no Python loop touches a tuple.
"""

from __future__ import annotations

import numpy as np

from .. import ops
from ._errors import ProgramError

__all__ = ["Relation", "encode", "decode", "unique_keys", "join", "index_of", "dedupe",
           "BITMAP_LIMIT"]

BITMAP_LIMIT = 1 << 26   # domain products up to this use a bitmap (<= 64 MB) for membership
CSR_LIMIT = 1 << 22      # key spaces up to this (or 4x the build side) use a CSR index
_I64 = np.int64


def _space(sizes):
    n = 1
    for s in sizes:
        n *= max(int(s), 1)
    return n


def encode(cols, sizes):
    """Mixed-radix int64 keys of the rows of ``cols`` (int64 arrays) over ``sizes``."""
    if _space(sizes) >= 1 << 62:
        raise ProgramError(f"a relation over domains of sizes {list(sizes)} is too large to "
                           "key in 64 bits")
    if not cols:
        return np.zeros(0, _I64)
    key = cols[0].astype(_I64, copy=True)
    for c, s in zip(cols[1:], sizes[1:]):
        key *= max(int(s), 1)
        key += c
    return key


def unique_keys(keys, space):
    """Sorted unique keys: a bitmap pass when the key space is small for the input (O(n +
    space)), else a sort (NumPy's hash-based ``unique`` is far slower on large int arrays)."""
    if len(keys) < 2:
        return np.sort(keys)
    if space <= BITMAP_LIMIT and space <= 16 * len(keys):
        seen = np.zeros(space, dtype=bool)
        seen[keys] = True
        return np.flatnonzero(seen).astype(_I64, copy=False)
    s = np.sort(keys)
    keep = np.empty(len(s), dtype=bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]


def decode(keys, sizes):
    cols = []
    for s in reversed(sizes[1:]):
        s = max(int(s), 1)
        cols.append(keys % s)
        keys = keys // s
    cols.append(keys)
    return cols[::-1]


class Relation:
    """A set of tuples over ``domains`` (a list of :class:`Domain`).

    ``len(r)``, ``tuple in r`` (constants, e.g. ``("Alice", "Bob") in r``), ``r.tuples()``
    (sorted, as constants), ``r.ids()`` (the int64 columns) and ``r.to_dense()`` (a 0/1 Tensor).
    """

    def __init__(self, name, domains, cols=None, *, unique=False):
        self.name = name
        self.domains = list(domains)
        self.sizes = tuple(max(d.size, 1) for d in self.domains)
        if cols is None:
            cols = [np.zeros(0, _I64) for _ in self.domains]
        cols = [np.ascontiguousarray(c, dtype=_I64) for c in cols]
        self._keys = None
        if not unique and cols and len(cols[0]):
            keys = unique_keys(encode(cols, self.sizes), _space(self.sizes))
            cols, self._keys = decode(keys, self.sizes), keys
        self.cols = cols
        self._bitmap = None
        self._cache = {}

    @property
    def arity(self):
        return len(self.domains)

    def __len__(self):
        return int(len(self.cols[0])) if self.cols else 0

    def keys(self):
        if self._keys is None:
            self._keys = np.sort(encode(self.cols, self.sizes))
        return self._keys

    def contains_keys(self, keys):
        """Boolean mask: which of ``keys`` are tuples of this relation."""
        space = _space(self.sizes)
        if space <= BITMAP_LIMIT:
            if self._bitmap is None:
                bm = np.zeros(space, dtype=bool)
                bm[encode(self.cols, self.sizes)] = True
                self._bitmap = bm
            return self._bitmap[keys]
        k = self.keys()
        if not len(k):
            return np.zeros(len(keys), dtype=bool)
        pos = np.minimum(np.searchsorted(k, keys), len(k) - 1)
        return k[pos] == keys

    def with_added(self, new_keys):
        """A relation holding these tuples and ``new_keys`` (already disjoint and unique)."""
        new_cols = decode(new_keys, self.sizes)
        cols = [np.concatenate([a, b]) for a, b in zip(self.cols, new_cols)]
        r = Relation(self.name, self.domains, cols, unique=True)
        if self._bitmap is not None:  # grow the bitmap in place instead of rebuilding it
            r._bitmap, self._bitmap = self._bitmap, None
            r._bitmap[new_keys] = True
        return r

    def ids(self):
        """The tuples as int64 columns (ids into each domain)."""
        return [c.copy() for c in self.cols]

    def tuples(self):
        """The tuples as constants (symbols or ints), sorted by id."""
        keys = self.keys()
        cols = decode(keys, self.sizes) if self.cols else []
        vals = [d.values_of(c.tolist()) for d, c in zip(self.domains, cols)]
        return list(zip(*vals)) if vals else []

    def __contains__(self, tup):
        if not isinstance(tup, tuple):
            tup = (tup,)
        if len(tup) != self.arity:
            return False
        if not all(d.has(c) for d, c in zip(self.domains, tup)):
            return False
        ids = [np.array([d.id_of(c)], _I64) for d, c in zip(self.domains, tup)]
        return bool(self.contains_keys(encode(ids, self.sizes))[0])

    def __iter__(self):
        return iter(self.tuples())

    def __eq__(self, other):
        if isinstance(other, Relation):
            return set(self.tuples()) == set(other.tuples())
        if isinstance(other, (set, frozenset)):
            return set(self.tuples()) == other
        return NotImplemented

    __hash__ = None

    def to_dense(self, dtype=None, device=None):
        """The relation as a dense 0/1 Tensor over its domains."""
        arr = np.zeros(tuple(d.size for d in self.domains), dtype=np.float64)
        if len(self):
            arr[tuple(self.cols)] = 1.0
        t = ops.tensor(arr, dtype=dtype)
        return t if device is None else t.to(device)

    def __repr__(self):
        shown = self.tuples()[:6]
        more = ", ..." if len(self) > 6 else ""
        body = ", ".join("(" + ", ".join(map(str, t)) + ")" for t in shown)
        return f"Relation({self.name}, {len(self)} tuples: {body}{more})"

    def cached(self, key, make):
        v = self._cache.get(key)
        if v is None:
            v = self._cache[key] = make()
        return v


# -- joins -------------------------------------------------------------------------------------

class Index:
    """Rows of a table grouped by key: CSR offsets or a sorted key array."""

    __slots__ = ("order", "starts", "sorted_keys", "_sorted_cols")

    def __init__(self, keys, space):
        self.order = np.argsort(keys, kind="stable")
        self._sorted_cols = {}
        self.starts = self.sorted_keys = None
        if space <= max(CSR_LIMIT, 4 * len(keys)) and space <= 1 << 25:
            counts = np.bincount(keys, minlength=space)
            self.starts = np.zeros(space + 1, _I64)
            np.cumsum(counts, out=self.starts[1:])
        else:
            self.sorted_keys = keys[self.order]

    @property
    def kind(self):
        return "hash (CSR)" if self.starts is not None else "sort-merge"

    def probe(self, keys):
        """(first position in ``order``, match count) per probe key."""
        if self.starts is not None:
            lo = self.starts[keys]
            return lo, self.starts[keys + 1] - lo
        lo = np.searchsorted(self.sorted_keys, keys, "left")
        return lo, np.searchsorted(self.sorted_keys, keys, "right") - lo

    def sorted_col(self, v, col):
        """``col`` in index order (cached: the build side is reused across probes)."""
        c = self._sorted_cols.get(v)
        if c is None:
            c = self._sorted_cols[v] = col[self.order]
        return c


def index_of(table, vars_, sizes):
    keys = encode([table[v] for v in vars_], [sizes[v] for v in vars_])
    return Index(keys, _space([sizes[v] for v in vars_]))


def _table_len(t):
    for v in t.values():
        return len(v)
    return 0


def join(left, right, sizes, right_index=None, keep=None):
    """The natural join of two tables (dicts var -> int64 column) on their shared variables.

    ``right_index`` is a prebuilt :class:`Index` of ``right`` on the shared variables (in the
    order they appear in ``left``), so a static relation is indexed once per evaluation.
    ``keep``: the variables to materialize (default all); the others are only joined on.
    """
    shared = [v for v in left if v in right]
    nl, nr = _table_len(left), _table_len(right)
    want = (lambda v: True) if keep is None else (lambda v: v in keep)
    if not shared:
        out = {v: np.repeat(c, nr) for v, c in left.items() if want(v)}
        out.update({v: np.tile(c, nl) for v, c in right.items() if v not in out and want(v)})
        return out
    idx = right_index or index_of(right, shared, sizes)
    lo, cnt = idx.probe(encode([left[v] for v in shared], [sizes[v] for v in shared]))
    total = int(cnt.sum())
    # position of every match in index order: lo of its probe plus its rank in the group
    pos = np.arange(total, dtype=_I64)
    pos -= np.repeat(np.cumsum(cnt) - cnt - lo, cnt)
    out = {v: np.repeat(c, cnt) for v, c in left.items() if want(v)}
    for v, c in right.items():
        if v not in out and want(v):
            out[v] = idx.sorted_col(v, c)[pos]
    return out


def dedupe(table, sizes):
    """The table with duplicate rows removed."""
    vars_ = list(table)
    if not vars_ or _table_len(table) < 2:
        return table
    ss = [sizes[v] for v in vars_]
    keys = unique_keys(encode([table[v] for v in vars_], ss), _space(ss))
    return dict(zip(vars_, decode(keys, [sizes[v] for v in vars_])))
