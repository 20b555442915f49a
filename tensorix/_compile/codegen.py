"""Code generation for fused groups: one kernel per group, in three forms.

* **numba** (the ``jit`` extra): a two-level loop over an ``(outer, inner)`` view of the
  group's shape, every member computed per element in registers, sums accumulated in float64;
  written to a file under the cache directory so numba's on-disk cache (``cache=True``) keeps
  the machine code across processes.
* **NumPy** (the fallback, and the stand-in GPU's path through ``xp``): the same expressions on
  row blocks of ``chunk`` rows, so temporaries stay in cache; ``chunk`` is autotuned
  (tensorix._compile.tune).
* **CUDA**: a ``cupy.ElementwiseKernel`` (in_params, out_params, operation) whose operation is
  the group in C; CuPy broadcasts the inputs. Sums run after it with ``xp.sum``.

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
    expression per dialect. ``key`` names the kernel (equal groups share one)."""

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
        self.body = []  # (var, node, {dialect: expression})
        for j, n in enumerate(x for x in group.nodes if x not in group.reductions):
            var = f"t{j}"
            ops = [self.names[i] for i in n.inputs]
            self.body.append((var, n, {d: expr(n, ops, d) for d in ("py", "np", "cu")}))
            self.names[n] = var
        self.full_outputs = [n for n in group.outputs if n not in group.reductions]
        self.sums = [(r, self.names[r.args[0]]) for r in group.reductions]
        text = repr((self.k, self.side, self.kinds, self.in_dtypes,
                     [(v, n.meta["dtype"].name, e["py"]) for v, n, e in self.body],
                     [self.names[n] for n in self.full_outputs],
                     [(v, r.meta["dtype"].name) for r, v in self.sums],
                     [n.meta["dtype"].name for n in self.full_outputs]))
        self.key = "fused_" + hashlib.sha1(text.encode()).hexdigest()[:16]

    def signature(self):
        ins = [f"x{j}" for j in range(len(self.kinds))]
        outs = [f"o{j}" for j in range(len(self.full_outputs))]
        sums = [f"r{j}" for j in range(len(self.sums))]
        return ins, outs, sums


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
"""


_ERF32_SOURCE = _erf32_source()


def numba_source(plan: KernelPlan) -> str:
    """A module defining ``kernel(outer, inner, x..., o..., r...)`` compiled by numba."""
    ins, outs, sums = plan.signature()
    lines = ["import math", "import numba", "import numpy as np", "", _ERF32_SOURCE,
             "", "@numba.njit(cache=True, nogil=True, error_model='numpy', "
             "fastmath={'reassoc', 'contract'})",
             f"def kernel({', '.join(['outer', 'inner'] + ins + outs + sums)}):"]
    # float32 groups: erf and tanh as float32 rational forms (ops/_erf.py's erf32, the eager
    # float32 erf, within 8 ulp; Eigen's tanh, 7 ulp) instead of libm's scalar calls, and
    # literals as float32 constants (a float64 literal would widen the whole expression):
    # the loop body is then plain float32 arithmetic that LLVM vectorizes
    f32 = plan.group.dtype.name == "float32"
    consts: dict = {}

    def lower(e):
        if not f32:
            return e
        e = e.replace("math.erf(", "_erf32(").replace("math.tanh(", "_tanh32(")
        return _LITERAL.sub(lambda m: consts.setdefault(m.group(1), f"_c{len(consts)}"), e)

    for j, kind in enumerate(plan.kinds):
        if kind == "scalar":
            lines.append(f"    v{j} = x{j}[0, 0]")
    inner_sums = [(j, v) for j, (_, v) in enumerate(plan.sums)] if plan.side == "inner" else []
    lines.append("    for a in range(outer):")
    for j, _ in inner_sums:
        lines.append(f"        acc{j} = 0.0")
    lines.append("        for b in range(inner):")
    for j, kind in enumerate(plan.kinds):
        if kind != "scalar":
            lines.append(f"            v{j} = x{j}{_index(kind, 'a', 'b')}")
    for var, _n, e in plan.body:
        lines.append(f"            {var} = {lower(e['py'])}")
    for j, n in enumerate(plan.full_outputs):
        lines.append(f"            o{j}[a, b] = {plan.names[n]}")
    for j, (_, v) in enumerate(plan.sums):
        if plan.side == "inner":
            lines.append(f"            acc{j} += {v}")
        else:
            lines.append(f"            r{j}[b] += {v}")
    for j, _ in inner_sums:
        lines.append(f"        r{j}[a] = acc{j}")
    head = lines.index("") + 1  # the constants go after the imports
    lines[head:head] = [f"{name} = np.float32({lit})" for lit, name in consts.items()]
    return "\n".join(lines) + "\n"


def numpy_source(plan: KernelPlan) -> str:
    """``kernel(outer, inner, chunk, x..., o..., r...)`` on ``xp`` arrays, ``chunk`` rows at a
    time, or ``chunk`` columns when there is one row (``xp`` and ``_erf`` are supplied by the
    caller's namespace)."""
    ins, outs, sums = plan.signature()
    by_cols = plan.outer == 1
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
    for var, _n, e in plan.body:
        lines.append(f"        {var} = {e['np'].replace('np.', 'xp.')}")
    for j, n in enumerate(plan.full_outputs):
        lines.append(f"        o{j}[{rows}, {cols}] = {plan.names[n]}")
    block = "(1, b1 - b0)" if by_cols else "(a1 - a0, inner)"
    for j, (_, v) in enumerate(plan.sums):
        full = f"xp.broadcast_to({v}, {block})"
        if plan.side == "inner":
            lines.append(f"        r{j}[{rows}] += {full}.sum(axis=1)" if by_cols else
                         f"        r{j}[a0:a1] = {full}.sum(axis=1)")
        else:
            lines.append(f"        r{j}[{cols}] += {full}.sum(axis=0)")
    return "\n".join(lines) + "\n"


def cuda_source(plan: KernelPlan) -> dict:
    """The group as ``cupy.ElementwiseKernel(in_params, out_params, operation, name)``
    arguments; the sums' operands are extra outputs (``s<j>``), summed by the caller."""
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


def allocate(plan: KernelPlan, xp):
    """Output buffers: full outputs in their dtypes, sums in float64 (zeroed)."""
    outs = [xp.empty((plan.outer, plan.inner), dtype=n.meta["dtype"].np)
            for n in plan.full_outputs]
    size = plan.outer if plan.side == "inner" else plan.inner
    sums = [xp.zeros(size, dtype=np.float64) for _ in plan.sums]
    return outs, sums
