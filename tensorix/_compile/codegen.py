"""Code generation for fused groups: one kernel per group, in three forms.

* **numba** (the ``jit`` extra): a two-level loop over an ``(outer, inner)`` view of the
  group's shape, every member computed per element in registers, sums accumulated in float64;
  written to a file under the cache directory so numba's on-disk cache (``cache=True``) keeps
  the machine code across processes.
* **NumPy** (the fallback, and the stand-in GPU's path through ``xp``): the same expressions on
  row blocks of ``chunk`` rows, so temporaries stay in cache; ``chunk`` is autotuned
  (tensorix._compile.tune).
* **CUDA**: a ``cupy.ElementwiseKernel`` (in_params, out_params, operation) whose operation is
  the group in C; CuPy broadcasts the inputs. Sums run after it with ``xp.sum``. A row kernel
  (members read the group's reductions) is a RawKernel instead: tensorix._compile.cuda_rows.

The ``(outer, inner)`` view: the group's shape splits at dim ``k`` so that each input is
*full* (the whole shape), a *row* (broadcast over the leading dims), a *col* (broadcast over
the trailing dims) or a *scalar*; an input that is none of these is broadcast into a full
copy (*mat*). Sums over the trailing dims are per row, over the leading dims per column.
"""

from __future__ import annotations

import hashlib
import math
import os
import pathlib
import re

import numpy as np

from .exprs import expr

__all__ = ["KernelPlan", "numba_source", "numpy_source", "cuda_source",
           "cache_dir"]

_CTYPE = {"float32": "float", "float64": "double", "bool": "bool"}


def cache_dir() -> pathlib.Path:
    """Where generated kernels (and numba's cache of them) live:
    ``$TENSORIX_CACHE_DIR/kernels`` or ``~/.cache/tensorix/kernels``."""
    root = os.environ.get("TENSORIX_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "tensorix")
    path = pathlib.Path(root) / "kernels"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _kind(s, shape, k):
    s = (1,) * (len(shape) - len(s)) + tuple(s)
    if math.prod(s) == 1:
        return "scalar"
    if s == tuple(shape):
        return "full"
    lead_one, trail_one = all(d == 1 for d in s[:k]), all(d == 1 for d in s[k:])
    if lead_one and s[k:] == tuple(shape[k:]):
        return "row"
    if trail_one and s[:k] == tuple(shape[:k]):
        return "col"
    return "mat"


class KernelPlan:
    """A group laid out for code generation: the split, each input's kind, each member's
    expression per dialect, its role and its phase. ``key`` names the kernel (equal groups
    share one).

    Roles: a *full* member is computed per element, a *row* member once per row (it reads
    row values: inner reductions kept as (..., 1), per-row inputs), a *reduction* is
    accumulated per row (inner) or per column (outer). A member's *level* is how many
    reductions lie on its longest path from the inputs: the numba kernel makes one pass over
    a row per level (``phases``), accumulating in pass ``p`` the reductions whose operand has
    level ``p``; full values a later pass needs are kept in a scratch row (``stash``) rather
    than computed again.
    """

    def __init__(self, group):
        self.group = group
        shape = tuple(group.shape)
        nd = len(shape)
        in_shapes = [tuple(i.meta["shape"]) for i in group.inputs]
        if group.split is not None:
            k = group.split[0]
        else:  # the split that broadcasts the most inputs without copying them, then the
            # longest inner loop (numba vectorizes the inner loop only)
            k = min(range(nd + 1), key=lambda k: (
                sum(_kind(s, shape, k) == "mat" for s in in_shapes), k))
        self.k, self.shape = k, shape
        self.side = group.split[1] if group.split else None
        self.outer, self.inner = math.prod(shape[:k]), math.prod(shape[k:])
        self.kinds = [_kind(s, shape, k) for s in in_shapes]
        self.in_dtypes = [i.meta["dtype"].name for i in group.inputs]
        self.names = {n: f"v{j}" for j, n in enumerate(group.inputs)}
        self.level = dict.fromkeys(group.inputs, 0)
        self.steps = []  # (var, node, role, {dialect: expression} | None) in program order
        self.reductions = []  # (node, operand var, kind, side, readable)
        for n in group.nodes:
            info = group.reduce_info.get(n)
            if info is not None or n in group.reductions:
                kind, side, readable = info or ("sum", self.side, False)
                var = f"s{len(self.reductions)}"
                self.reductions.append((n, self.names[n.args[0]], kind, side, readable))
                self.level[n] = self.level[n.args[0]] + 1
                self.steps.append((var, n, "reduce", None))
            else:
                var = f"t{len(self.steps)}"
                ops = [self.names[i] for i in n.inputs]
                role = "full" if tuple(n.meta["shape"]) == shape else "row"
                self.level[n] = max((self.level[i] for i in n.inputs), default=0)
                self.steps.append((var, n, role, {d: expr(n, ops, d) for d in ("py", "np",
                                                                                 "cu")}))
            self.names[n] = var
        self.body = [(v, n, e) for v, n, r, e in self.steps if r != "reduce"]
        role = {n: r for _, n, r, _ in self.steps}
        self.full_outputs = [n for n in group.outputs if role[n] == "full"]
        self.row_outputs = [n for n in group.outputs if role[n] == "row"]
        self.sums = [(r, v) for r, v, *_ in self.reductions]
        # what the kernel returns, in this order: full outputs, row outputs, then every
        # reduction read outside (the kernel writes all reductions; the rest are dropped)
        self.outputs = self.full_outputs + self.row_outputs + \
            [r for r, *_ in self.reductions if r in group.outputs]
        self.phased = any(r == "row" for _, _, r, _ in self.steps) or \
            any(kind != "sum" or readable for _, _, kind, _, readable in self.reductions)
        text = repr((self.k, self.kinds, self.in_dtypes,
                     [(v, r, n.meta["dtype"].name, e and e["py"], self.level[n])
                      for v, n, r, e in self.steps],
                     [(kind, side, readable, src) for _, src, kind, side, readable
                      in self.reductions],
                     [self.names[n] for n in self.outputs],
                     [n.meta["dtype"].name for n in self.outputs]))
        # the helpers' source and the loop nest's form are part of the key: a changed helper
        # (a faster exp) or loop is a new kernel (its own file and numba cache entry, which a
        # process running older code does not overwrite), whose cost the tuner measures
        # afresh rather than reuse the old one's
        self.key = "fused_" + hashlib.sha1((text + _ERF32_SOURCE + _LOOP_FORM).encode()
                                           ).hexdigest()[:16]

    def signature(self):
        """Argument names: inputs ``x<j>``, full outputs ``o<j>``, row outputs ``q<j>``,
        reductions ``r<j>``."""
        ins = [f"x{j}" for j in range(len(self.kinds))]
        outs = [f"o{j}" for j in range(len(self.full_outputs))]
        outs += [f"q{j}" for j in range(len(self.row_outputs))]
        sums = [f"r{j}" for j in range(len(self.reductions))]
        return ins, outs, sums

    def phases(self):
        """Per pass over a row: ``(compute, stash_store, outputs, reductions, rows_after)``;
        ``compute`` lists ``(var, expression, stashed_earlier)`` in program order (stashed:
        load it from its scratch row), ``rows_after`` the row members and reductions ready
        after the pass. Also returns the stashed vars."""
        level, names = self.level, self.names
        full = [(v, n) for v, n, r, _ in self.steps if r == "full"]
        last = max([level[n] for _, n in full] +
                   [level[r.args[0]] for r, *_ in self.reductions] + [0])
        roots = {p: [] for p in range(last + 1)}
        for _, n in full:
            if n in self.full_outputs:
                roots[level[n]].append(n)
        for r, *_ in self.reductions:
            roots[level[r.args[0]]].append(r.args[0])
        members = {n for _, n in full}
        needed = {p: set() for p in roots}
        # a max/min runs over the stored row after its pass (_rowext: independent maxima;
        # one running maximum is a chain of dependent compares, ~5 cycles an element)
        stash = {r.args[0] for r, _, kind, _, _ in self.reductions
                 if kind != "sum" and r.args[0] in members}
        for p in range(last, -1, -1):  # later passes first: what they stash, p must compute
            todo = list(roots[p]) + [n for n in stash if level[n] == p]
            while todo:
                n = todo.pop()
                if n in needed[p] or n not in members:
                    continue
                if level[n] < p:  # computed in its own pass, kept for this one
                    stash.add(n)
                    needed[p].add(n)
                    continue
                needed[p].add(n)
                todo.extend(n.inputs)
        out = []
        for p in range(last + 1):
            compute = [(v, n, level[n] < p) for v, n in full if n in needed[p]]
            stores = [names[n] for n in stash if level[n] == p]
            outs = [n for n in self.full_outputs if level[n] == p]
            reds = [x for x in self.reductions if level[x[0].args[0]] == p]
            after = [(v, n, r) for v, n, r, _ in self.steps
                     if r in ("row", "reduce") and level[n] == p + 1]
            out.append((compute, sorted(stores), outs, reds, after))
        return out, sorted(names[n] for n in stash)


def _index(kind, a, b):
    return {"full": f"[{a}, {b}]", "mat": f"[{a}, {b}]", "row": f"[0, {b}]",
            "col": f"[{a}, 0]", "scalar": "[0, 0]"}[kind]


# Eigen's float32 tanh (generic_fast_tanh_float): odd rational 13/6 on [-7.9, 7.9], within 7
# ulp of tanh; a pure-arithmetic loop body LLVM vectorizes, where libm's tanhf is a scalar call
_TANH32_P = (-2.76076847742355e-16, 2.00018790482477e-13, -8.60467152213735e-11,
             5.12229709037114e-08, 1.48572235717979e-05, 6.37261928875436e-04,
             4.89352455891786e-03)
_TANH32_Q = (1.19825839466702e-06, 1.18534705686654e-04, 2.26843463243900e-03,
             4.89352518554385e-03)
_LITERAL = re.compile(r"(?<![\w.])(\d+\.\d*(?:e[-+]?\d+)?)")


def _erf32_source():
    from ..ops._erf import _ERF32_P, _ERF32_Q

    p = ", ".join(f"np.float32({float(c)!r})" for c in _ERF32_P)
    q = ", ".join(f"np.float32({float(c)!r})" for c in _ERF32_Q)
    tp = ", ".join(f"np.float32({c!r})" for c in _TANH32_P)
    tq = ", ".join(f"np.float32({c!r})" for c in _TANH32_Q)
    return f"""_P = ({p})
_Q = ({q})


@numba.njit(cache=True, inline="always", error_model="numpy")
def _rational(x, p_coeffs, q_coeffs):
    x2 = x * x
    p = x2 * p_coeffs[0] + p_coeffs[1]
    for c in p_coeffs[2:]:
        p = p * x2 + c
    q = x2 * q_coeffs[0] + q_coeffs[1]
    for c in q_coeffs[2:]:
        q = q * x2 + c
    return x * (p / q)


@numba.njit(cache=True, inline="always", error_model="numpy")
def _erf32(x):
    x = np.float32(min(max(x, np.float32(-4.0)), np.float32(4.0)))
    return min(max(_rational(x, _P, _Q), np.float32(-1.0)), np.float32(1.0))


_TP = ({tp})
_TQ = ({tq})


@numba.njit(cache=True, inline="always", error_model="numpy")
def _tanh32(x):
    c = np.float32(min(max(x, np.float32(-7.90531110763549805)),
                       np.float32(7.90531110763549805)))
    # saturated: exactly +-1 (the rational is 1 ulp short there, which 1 + tanh in GELU's left
    # tail would turn into an error of |x| ulp instead of the true -0)
    sat = np.float32(1.0) if x > 0 else (np.float32(-1.0) if x < 0 else x)  # nan stays
    return _rational(c, _TP, _TQ) if c == x else sat


@numba.njit(cache=True, inline="always", error_model="numpy")
def _beats(a, m, is_max):
    return a > m if is_max else a < m


@numba.njit(cache=True, inline="always", error_model="numpy")
def _rowext(w, n, is_max):
    # the max (is_max) or min of w[:n]: four independent running extremes (one is a chain of
    # dependent compares); NaN wins, as in NumPy. is_max is a literal at every call and the
    # body is inlined there, so the other compare folds away (one function, cached with the
    # kernel: a closure per kind would not be)
    m0 = m1 = m2 = m3 = w[0]
    nan = 0
    i = 0
    while i + 4 <= n:
        a0, a1, a2, a3 = w[i], w[i + 1], w[i + 2], w[i + 3]
        m0 = a0 if _beats(a0, m0, is_max) else m0
        m1 = a1 if _beats(a1, m1, is_max) else m1
        m2 = a2 if _beats(a2, m2, is_max) else m2
        m3 = a3 if _beats(a3, m3, is_max) else m3
        nan += (a0 != a0) + (a1 != a1) + (a2 != a2) + (a3 != a3)
        i += 4
    while i < n:
        m0 = w[i] if _beats(w[i], m0, is_max) else m0
        nan += w[i] != w[i]
        i += 1
    m0 = m1 if _beats(m1, m0, is_max) else m0
    m2 = m3 if _beats(m3, m2, is_max) else m2
    m0 = m2 if _beats(m2, m0, is_max) else m0
    return m0 if nan == 0 else (m0 - m0) / (m0 - m0)  # NaN in w's dtype


@numba.extending.intrinsic
def _f32_from_bits(typingctx, bits):
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(numba.types.float32))

    return numba.types.float32(numba.types.int32), codegen


@numba.njit(cache=True, inline="always", error_model="numpy")
def _exp32(x):
    # Cephes' expf: x = m ln2 + r, |r| <= ln2/2, a degree-7 polynomial in r, times 2^m built
    # from its bits; floor as a truncation and a compare, so the whole body is arithmetic,
    # compares and a bitcast, which LLVM vectorizes (libm's expf is a scalar call; math.floor
    # was one too)
    # outside [-104, 88.72] (and NaN) the polynomial runs on 0, not on the clamped x: at -104
    # it made subnormal products, whose microcode assists cost every masked softmax entry
    # (-inf, half of a causal mask's) more than the rest of its exp (the kernel 0.37 -> 0.27
    # ms); the lanes inside compute exactly what they did, so the bits are the same
    inside = (x >= np.float32(-104.0)) & (x <= np.float32(88.7228317))
    c = x if inside else np.float32(0.0)
    y = c * np.float32(1.44269504088896341) + np.float32(0.5)
    mi = np.int32(y)
    mi = np.int32(mi - np.int32(y < np.float32(mi)))
    m = np.float32(mi)
    r = c - m * np.float32(0.693359375) - m * np.float32(-2.12194440e-4)
    p = np.float32(1.9875691500e-4) * r + np.float32(1.3981999507e-3)
    p = p * r + np.float32(8.3334519073e-3)
    p = p * r + np.float32(4.1665795894e-2)
    p = p * r + np.float32(1.6666665459e-1)
    p = p * r + np.float32(5.0000001201e-1)
    p = p * r * r + r + np.float32(1.0)
    # 2^m as 2^m1 2^m2, each a normal float: m runs from -150 (subnormal results, rounded
    # by the last product) to 128 (x just below ln(max float))
    m1 = np.int32(mi >> np.int32(1))
    m2 = np.int32(mi - m1)
    e = p * _f32_from_bits(np.int32((m1 + np.int32(127)) << np.int32(23))) * \
        _f32_from_bits(np.int32((m2 + np.int32(127)) << np.int32(23)))
    # outside the clamp: 0 below (exp(-inf) = 0 exactly: a masked softmax entry), inf
    # above; NaN stays NaN
    e = e if inside else (np.float32(0.0) if x < 0 else np.float32(np.inf))
    return e if x == x else x
"""


_ERF32_SOURCE = _erf32_source()
# the numba loop nest's form, in the kernel key: changed with it (3: column sums in a loop of
# their own after each pass, reading the row their operand is stored in)
_LOOP_FORM = "loops 3"


def _numba_lowering(plan):
    """The expression rewriter of a plan's numba source and the float32 constants it named.

    float32 groups: erf and tanh as float32 rational forms (ops/_erf.py's erf32, the eager
    float32 erf, within 8 ulp; Eigen's tanh, 7 ulp; Cephes' exp, 2 ulp) instead of libm's
    scalar calls, and
    literals as float32 constants (a float64 literal would widen the whole expression): the
    loop body is then plain float32 arithmetic that LLVM vectorizes."""
    f32 = plan.group.dtype.name == "float32"
    consts: dict = {}

    def lower(e):
        if not f32:
            return e
        e = e.replace("math.erf(", "_erf32(").replace("math.tanh(", "_tanh32(")
        e = e.replace("math.exp(", "_exp32(")
        return _LITERAL.sub(lambda m: consts.setdefault(m.group(1), f"_c{len(consts)}"), e)

    return lower, consts


class _NumbaWriter:
    """The loop nest of a plan's numba kernel, line by line (numba_source's parts)."""

    def __init__(self, plan, lower):
        self.plan, self.lower, self.lines = plan, lower, []
        self.out_name = {n: f"o{j}" for j, n in enumerate(plan.full_outputs)}
        self.out_name.update({n: f"q{j}" for j, n in enumerate(plan.row_outputs)})
        self.exprs = {n: e["py"] for _, n, _, e in plan.steps if e is not None}
        self.red = {r: (j, kind, side) for j, (r, _, kind, side, _) in
                    enumerate(plan.reductions)}
        self.scratch = []  # column sums whose operand needs a row of its own

    def emit(self, depth, line):
        self.lines.append("    " * depth + line)

    def row_values(self, ready):
        """Row members and finished inner reductions, once per row (after a pass)."""
        for var, n, role in ready:
            if role != "reduce":
                self.emit(2, f"{var} = {self.lower(self.exprs[n])}")
                if n in self.out_name:
                    self.emit(2, f"{self.out_name[n]}[a, 0] = {var}")
                continue
            j, kind, side = self.red[n]
            if side == "inner":  # a column sum is complete only after the last row
                dtype = n.meta["dtype"].np.name
                if kind == "sum":
                    self.emit(2, f"{var} = np.{dtype}(acc{j})")
                else:  # over the row stored in its pass (or the input's row)
                    src = self.plan.names[n.args[0]]
                    row = f"w_{src}" if src.startswith("t") else \
                        f"x{src[1:]}[a]"
                    self.emit(2, f"{var} = _rowext({row}, inner, {kind == 'max'})")
                    self.emit(2, f"acc{j} = {var}")
                self.emit(2, f"r{j}[a] = acc{j}")

    def accumulators(self, reds):
        for r, *_ in reds:
            j, kind, side = self.red[r]
            if side != "inner":
                continue
            if kind == "sum":
                self.emit(2, f"acc{j} = 0.0")

    def one_pass(self, compute, stores, outs, reds):
        plan = self.plan
        self.emit(2, "for b in range(inner):")
        for j, kind in enumerate(plan.kinds):
            if kind not in ("scalar", "col"):
                self.emit(3, f"v{j} = x{j}{_index(kind, 'a', 'b')}")
        for var, n, earlier in compute:
            self.emit(3, f"{var} = w_{var}[b]" if earlier else
                      f"{var} = {self.lower(self.exprs[n])}")
        for var in stores:
            self.emit(3, f"w_{var}[b] = {var}")
        for n in outs:
            self.emit(3, f"{self.out_name[n]}[a, b] = {plan.names[n]}")
        cols = []
        for r, src, *_ in reds:
            j, kind, side = self.red[r]
            if side == "outer":  # summed in a loop of its own, from the row it is stored in
                cols.append((j, self._stored_row(src, outs, stores, j)))
            elif kind == "sum":
                self.emit(3, f"acc{j} += {src}")
        # Why a loop of its own: ``r[b] += t`` in the pass (a float64 read-modify-write among
        # float32 loads and stores) kept LLVM from vectorizing the pass (GELU's backward with
        # its bias gradient: 0.36 ms, 0.20 split, 0.17 without the sum). Each column still
        # adds the same float64 values in row order: the same bits.
        if cols:
            self.emit(2, "for b in range(inner):")
            for j, row in cols:
                self.emit(3, f"r{j}[b] += {row}")

    def _stored_row(self, src, outs, stores, j):
        """Where the pass leaves column sum j's operand ``src`` for the loop after it: its
        input's row, its output's or its scratch row (the value as stored: the node's dtype,
        which the kernel computes it in), else a row ``c<j>`` of its own."""
        plan = self.plan
        if src.startswith("v"):
            k = int(src[1:])
            if plan.kinds[k] in ("full", "row"):
                return f"x{k}{_index(plan.kinds[k], 'a', 'b')}"
            return src  # one value per row (or per kernel): the same at every b
        for n in outs:
            if plan.names[n] == src:
                return f"{self.out_name[n]}[a, b]"
        if src in stores:
            return f"w_{src}[b]"
        self.emit(3, f"c{j}[b] = {src}")
        self.scratch.append(j)
        return f"c{j}[b]"


def numba_source(plan: KernelPlan) -> str:
    """A module defining ``kernel(outer, inner, x..., o..., q..., r...)`` compiled by numba:
    per row, one pass over it per phase (see :meth:`KernelPlan.phases`; one pass when no
    member reads a reduction)."""
    ins, outs, sums = plan.signature()
    lower, consts = _numba_lowering(plan)
    w = _NumbaWriter(plan, lower)
    phases, stashed = plan.phases()
    dtypes = {plan.names[n]: n.meta["dtype"].np for _, n, _, _ in plan.steps}
    for j, kind in enumerate(plan.kinds):
        if kind == "scalar":
            w.emit(1, f"v{j} = x{j}[0, 0]")
    for var in stashed:  # the scratch rows of values a later pass reads
        name = "bool_" if dtypes[var].name == "bool" else dtypes[var].name
        w.emit(1, f"w_{var} = np.empty(inner, np.{name})")
    mark = len(w.lines)
    w.emit(1, "for a in range(outer):")
    for j, kind in enumerate(plan.kinds):
        if kind == "col":  # one value per row
            w.emit(2, f"v{j} = x{j}[a, 0]")
    w.row_values([(v, n, r) for v, n, r, _ in plan.steps if r == "row" and plan.level[n] == 0])
    for compute, stores, outs_p, reds, after in phases:
        w.accumulators(reds)
        w.one_pass(compute, stores, outs_p, reds)
        w.row_values(after)
    for j in reversed(w.scratch):  # the rows of column sums' operands stored nowhere else
        name = plan.reductions[j][0].args[0].meta["dtype"].np.name
        name = "bool_" if name == "bool" else name
        w.lines.insert(mark, f"    c{j} = np.empty(inner, np.{name})")
    head = ["import math", "import numba", "import numba.extending", "import numpy as np", ""]
    head += [f"{name} = np.float32({lit})" for lit, name in consts.items()]
    head += [_ERF32_SOURCE, "", "@numba.njit(cache=True, nogil=True, error_model='numpy', "
             "fastmath={'reassoc', 'contract'})",
             f"def kernel({', '.join(['outer', 'inner'] + ins + outs + sums)}):"]
    return "\n".join(head + w.lines) + "\n"


def numpy_source(plan: KernelPlan) -> str:
    """``kernel(outer, inner, chunk, x..., o..., q..., r...)`` on ``xp`` arrays, ``chunk`` rows
    at a time, or ``chunk`` columns when there is one row and no member reads a row value
    (``xp`` and ``_erf`` are supplied by the caller's namespace). A block holds whole rows,
    so the members run in program order, an inner reduction as a ``keepdims`` reduction of
    the block."""
    ins, outs, sums = plan.signature()
    by_cols = plan.outer == 1 and not plan.phased
    rows, cols = ("0:1", "b0:b1") if by_cols else ("a0:a1", ":")
    lines = [f"def kernel({', '.join(['outer', 'inner', 'chunk'] + ins + outs + sums)}):"]
    if by_cols:
        lines += ["    for b0 in range(0, inner, chunk):", "        b1 = min(b0 + chunk, inner)"]
    else:
        lines += ["    for a0 in range(0, outer, chunk):", "        a1 = min(a0 + chunk, outer)"]
    for j, kind in enumerate(plan.kinds):
        idx = {"full": f"[{rows}, {cols}]", "mat": f"[{rows}, {cols}]",
               "col": f"[{rows}, :]", "row": f"[:, {cols}]", "scalar": ""}[kind]
        lines.append(f"        v{j} = x{j}{idx}")
    block = "(1, b1 - b0)" if by_cols else "(a1 - a0, inner)"
    red_index = {r: j for j, (r, *_) in enumerate(plan.reductions)}
    for var, n, role, e in plan.steps:
        if role != "reduce":
            lines.append(f"        {var} = {e['np'].replace('np.', 'xp.')}")
            continue
        j = red_index[n]
        _, src, kind, side, _ = plan.reductions[j]
        full = f"xp.broadcast_to({src}, {block})"
        if side == "outer":
            lines.append(f"        r{j}[{cols}] += {full}.sum(axis=0)")
        elif by_cols:
            lines.append(f"        r{j}[{rows}] += {full}.sum(axis=1)")
        else:
            lines.append(f"        {var} = {full}.{kind}(axis=1, keepdims=True)")
            lines.append(f"        r{j}[a0:a1] = {var}[:, 0]")
    for j, n in enumerate(plan.full_outputs):
        lines.append(f"        o{j}[{rows}, {cols}] = {plan.names[n]}")
    for j, n in enumerate(plan.row_outputs):
        lines.append(f"        q{j}[{rows}, :] = {plan.names[n]}")
    return "\n".join(lines) + "\n"


def cuda_source(plan: KernelPlan) -> dict:
    """The group as ``cupy.ElementwiseKernel(in_params, out_params, operation, name)``
    arguments; the sums' operands are extra outputs (``s<j>``), summed by the caller.
    A phased plan (members read a reduction: a row kernel) is not one elementwise kernel:
    NotImplementedError (tensorix._compile.cuda_rows writes it as a RawKernel)."""
    if plan.phased:
        raise NotImplementedError(f"cuda_source: {plan.key} reads its own reductions (a row "
                                  "kernel); only elementwise groups with trailing sums are "
                                  "written as ElementwiseKernel source")
    in_params = ", ".join(f"{t} v{j}" for j, t in enumerate(plan.in_dtypes))
    outs = [(f"o{j}", n.meta["dtype"].name, plan.names[n])
            for j, n in enumerate(plan.full_outputs)]
    outs += [(f"s{j}", r.meta["dtype"].name, v) for j, (r, v) in enumerate(plan.sums)]
    out_params = ", ".join(f"{t} {name}" for name, t, _ in outs)
    ops = [f"{_CTYPE[n.meta['dtype'].name]} {var} = {e['cu']};" for var, n, e in plan.body]
    ops += [f"{name} = {var};" for name, _, var in outs]
    return {"in_params": in_params, "out_params": out_params, "operation": "\n".join(ops),
            "name": plan.key}


def run_prepare(plan: KernelPlan, arrays, xp):
    """The input arrays in the kernel's 2-d layout (a *mat* input becomes a full copy)."""
    out = []
    o, i = plan.outer, plan.inner
    for x, kind in zip(arrays, plan.kinds):
        if kind == "scalar":
            out.append(x.reshape(1, 1))
        elif kind == "row":
            out.append(x.reshape(1, i))
        elif kind == "col":
            out.append(x.reshape(o, 1))
        elif kind == "full":
            out.append(x.reshape(o, i))
        else:
            out.append(xp.ascontiguousarray(xp.broadcast_to(x, plan.shape)).reshape(o, i))
    return out


def output_buffers(plan: KernelPlan, xp) -> list:
    """The full outputs (outer, inner) and row outputs (outer, 1), in their dtypes."""
    outs = [xp.empty((plan.outer, plan.inner), dtype=n.meta["dtype"].np)
            for n in plan.full_outputs]
    return outs + [xp.empty((plan.outer, 1), dtype=n.meta["dtype"].np)
                   for n in plan.row_outputs]


def allocate(plan: KernelPlan, xp):
    """Output buffers in signature order: :func:`output_buffers`, then every reduction in
    float64 (zeroed)."""
    outs = output_buffers(plan, xp)
    sums = [xp.zeros(plan.outer if side == "inner" else plan.inner, dtype=np.float64)
            for _, _, _, side, _ in plan.reductions]
    return outs, sums
