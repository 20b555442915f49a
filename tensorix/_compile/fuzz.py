"""Compiler fuzzing: random programs over the op registry's differentiable ops, compiled
against eager on values and gradients (Tzer's idea: the compiler is tested by programs no one
wrote). tests/compile/test_fuzz.py runs a fixed seed; benchmarks/bench_compile.py runs many.

The op pool comes from the registry: every differentiable entry is probed once on float64
``(4, 5)`` inputs; an op that maps one (or two) such tensors to a tensor of the same shape is
a unary (binary) elementwise-shaped op of the pool; ``sum``/``mean`` over the last dim (kept)
and ``matmul`` with a transpose are added as the reductions and contractions, and layer norm
and an RMS-style row scale (a reduction read back by the row: the compiler's row kernels).

Example::

    report = fuzz(seed=0, programs=20)
    assert report["failures"] == []
"""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["op_pool", "random_program", "check_program", "fuzz"]

_SHAPE = (4, 5)
_pool_cache: dict = {}
# ops whose values depend on more than the inputs' values or are too steep to compare after a
# few compositions (their own tests cover them)
_SKIP = {"nan_to_num", "logit", "polygamma", "mvlgamma", "erfinv", "digamma", "lgamma",
         "i0", "igamma", "igammac", "float_power", "pow", "fmod", "remainder", "floor_divide",
         "sinc", "tan", "reciprocal", "rsqrt", "log", "log2", "log10", "acosh", "atanh",
         "acos", "asin", "xlogy", "frexp", "ldexp", "sqrt", "div", "exp2", "cosh", "sinh",
         "exp", "expm1", "rsub", "hypot", "nextafter", "copysign", "heaviside"}


def op_pool() -> dict:
    """``{"unary": [(name, fn)], "binary": [(name, fn)]}`` probed from the registry."""
    if _pool_cache:
        return _pool_cache
    import tensorix as tx
    from tensorix.testing.registry import all_opinfos

    rng = np.random.default_rng(0)
    x = tx.tensor(rng.uniform(0.2, 0.9, _SHAPE))
    y = tx.tensor(rng.uniform(0.2, 0.9, _SHAPE))
    unary, binary = [], []
    for info in all_opinfos():
        if not info.grad or info.name in _SKIP or "." in info.name or "[" in info.name:
            continue
        for args, kind in (((x,), unary), ((x, y), binary)):
            if _probe(info.op, args):
                kind.append((info.name, info.op))
                break
    _pool_cache.update(unary=unary, binary=binary)
    return _pool_cache


def _probe(fn, args) -> bool:
    from tensorix import Tensor

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = fn(*args)
    except Exception:  # noqa: BLE001 - a probe: an op that refuses these inputs is not pooled
        return False
    return isinstance(out, Tensor) and tuple(out.shape) == _SHAPE and \
        out.dtype.is_floating_point and bool(np.isfinite(out.detach().numpy()).all())


def random_program(rng, n_ops: int = 8):
    """A function of two ``(4, 5)`` tensors: ``n_ops`` random pool ops (with occasional sums
    and matmuls), returning the last value and one intermediate. Also returns its listing."""
    import tensorix as tx

    pool = op_pool()
    steps = []
    for _ in range(n_ops):
        r = rng.random()
        if r < 0.1:
            steps.append(("sum", int(rng.integers(0, 2))))
        elif r < 0.17:
            steps.append(("norm", int(rng.integers(0, 2))))
        elif r < 0.25:
            steps.append(("matmul", None))
        elif r < 0.58 and pool["binary"]:
            steps.append(("binary", int(rng.integers(len(pool["binary"])))))
        else:
            steps.append(("unary", int(rng.integers(len(pool["unary"])))))
    picks = [tuple(int(v) for v in rng.integers(0, 1 << 16, 2)) for _ in steps]

    def program(a, b):
        values = [a, b]
        for (kind, k), (i, j) in zip(steps, picks):
            u, v = values[i % len(values)], values[j % len(values)]
            if kind == "sum":
                out = u.sum(-1, keepdim=True) * 0.1 + v if k else u.mean(0) * v
            elif kind == "norm":
                out = tx.nn.functional.layer_norm(u, (_SHAPE[1],), v[0], v[1]) if k else \
                    u * ((v * v).mean(-1, keepdim=True) + 0.5).rsqrt()
            elif kind == "matmul":
                out = (u @ v.T) @ v * 0.05
            elif kind == "binary":
                out = pool["binary"][k][1](u, v)
            else:
                out = pool["unary"][k][1](u)
            values.append(tx.tanh(out) if kind != "unary" else out)  # keep values bounded
        return values[-1], values[len(values) // 2]

    listing = [f"{kind}:{pool[kind][k][0] if kind in pool else k}" for kind, k in steps]
    return program, listing


def check_program(program, rng, options=None, rtol=1e-6, atol=1e-9) -> str | None:
    """None when ``tensorix.compile(program)`` equals eager on values and gradients (float64
    inputs that require grad), else a description of the first difference."""
    import tensorix as tx

    xs = [rng.uniform(0.2, 0.9, _SHAPE) for _ in range(2)]

    def run(fn):
        ts = [tx.tensor(x, requires_grad=True) for x in xs]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            outs = fn(*ts)
            loss = sum((o * (k + 1)).sum() for k, o in enumerate(outs))
            grads = tx.autograd.grad(loss, ts, allow_unused=True, materialize_grads=True)
        return [o.detach().numpy() for o in outs] + [g.numpy() for g in grads]

    ref = run(program)
    compiled = tx.compile(program, options=options or {})
    with warnings.catch_warnings():  # trace on other values: a value frozen into the graph
        warnings.simplefilter("ignore")  # (a constant that should be a node) shows up
        compiled(*[tx.tensor(rng.uniform(0.2, 0.9, _SHAPE), requires_grad=True)
                   for _ in range(2)])
    got = run(compiled)
    for k, (a, b) in enumerate(zip(got, ref)):
        if not np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True):
            what = f"output {k}" if k < 2 else f"gradient {k - 2}"
            return f"{what}: max |diff| {np.nanmax(np.abs(a - b)):.3g}"
    return None


def fuzz(seed: int = 0, programs: int = 10, n_ops: int = 8, options=None) -> dict:
    """Run ``programs`` random programs; returns the count and the failures (listing, why)."""
    rng = np.random.default_rng(seed)
    failures = []
    for _ in range(programs):
        program, listing = random_program(rng, n_ops)
        why = check_program(program, rng, options)
        if why is not None:
            failures.append((listing, why))
    return {"programs": programs, "failures": failures, "pool": {
        k: len(v) for k, v in op_pool().items()}}
