"""Turning a :class:`~tensorix._compile.codegen.KernelPlan` into a callable, per device:
numba on the CPU when it is installed (the ``jit`` extra), the NumPy form otherwise (and on
the GPU stand-in, through its ``xp``), a CuPy ElementwiseKernel where CUDA C can run (a
RawKernel, one block per row, for a row kernel: tensorix._compile.cuda_rows).

``run(arrays) -> [array per group output]`` takes the inputs as backend arrays of the shapes
the plan was made for and returns the outputs in their node shapes and dtypes.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
import sys

import numpy as np

from .. import backend
from . import _precompile, cuda_rows
from .codegen import (
    KernelPlan,
    allocate,
    cache_dir,
    cuda_source,
    numba_source,
    numpy_source,
    output_buffers,
    run_prepare,
)

__all__ = ["numba_available", "numba_loaded", "build", "DEFAULT_CHUNK", "load_numba",
           "run_arguments", "numba_file", "argument_types", "row_kernels_on"]

DEFAULT_CHUNK = 1 << 14  # elements per block of the NumPy form (autotuned per kernel)
_loaded: dict = {}  # (key, dialect) -> kernel function, for this process


@functools.cache
def _numba():
    try:
        import numba
    except ImportError:
        return None
    return numba


def numba_available() -> bool:
    """Whether numba is installed (the ``jit`` extra), without importing it (seconds) until a
    kernel needs it; tests force the fallback by patching this."""
    return "numba" in sys.modules or importlib.util.find_spec("numba") is not None


def numba_loaded(plan) -> bool:
    """Whether ``plan``'s numba kernel is already loaded in this process."""
    return (plan.key, "numba") in _loaded


def _erf(x):
    from ..ops._erf import erf_kernel

    return erf_kernel(x.astype(np.float64)).astype(x.dtype, copy=False)


def numba_file(plan) -> tuple:
    """The file of ``plan``'s numba kernel, written if missing or stale, and the module name
    it is imported under (numba's disk cache needs a file, and names its entries by both:
    equal groups in any process share them)."""
    path = cache_dir() / f"{plan.key}.py"
    src = numba_source(plan)
    if not path.exists() or path.read_text() != src:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(src)
        tmp.replace(path)  # atomic: parallel processes never import half a file
    return path, f"tensorix_kernels.{plan.key}"


def load_numba(plan):
    """The numba kernel, loaded once per process (compiled at its first call, or read from
    numba's disk cache)."""
    fn = _loaded.get((plan.key, "numba"))
    if fn is None:
        fn = _loaded[(plan.key, "numba")] = _precompile.import_kernel(*numba_file(plan))
    return fn


def _load_numpy(plan, xp):
    fn = _loaded.get((plan.key, xp.__name__))
    if fn is None:
        namespace = {"_erf": _erf, "xp": xp}
        exec(compile(numpy_source(plan), f"<{plan.key}>", "exec"), namespace)  # noqa: S102
        fn = _loaded[(plan.key, xp.__name__)] = namespace["kernel"]
    return fn


def _finish(plan, outs, sums, xp):
    """The arrays of ``plan.outputs``: the kernel's outputs reshaped, and the reductions read
    outside cast to their dtype."""
    result = [o.reshape(n.meta["shape"]) for o, n in
              zip(outs, plan.full_outputs + plan.row_outputs)]
    result += [s.astype(r.meta["dtype"].np).reshape(r.meta["shape"])
               for s, (r, *_) in zip(sums, plan.reductions) if r in plan.group.outputs]
    return result


def row_kernels_on(device) -> bool:
    """Whether the fused row kernels run as code of their own on ``device``: the CPU's
    (numba, NumPy), a GPU's where CUDA C runs (cuda_rows.py); not on the CuPy stand-in,
    where they would be their NumPy form through its ``xp``. The decomposition of layer norm
    and softmax into them asks this (decompose.py)."""
    kind = getattr(device, "type", None)
    return kind == "cpu" or (kind == "cuda" and backend.cuda_kernels_available())


def build(plan: KernelPlan, device, prefer: str = "auto", chunk: int | None = None):
    """A ``run(arrays)`` for ``plan`` on ``device``. ``prefer``: "auto" (numba if available
    on the CPU), "numba", "numpy"."""
    xp = device.xp
    if device.type == "cuda":
        if backend.cuda_kernels_available():
            if not plan.phased:
                return _build_cuda(plan, xp)
            with contextlib.suppress(NotImplementedError):  # a plan it cannot write: NumPy
                return _build_cuda_rows(plan, xp)
        return _build_numpy(plan, xp, chunk)  # the stand-in: CuPy's rules, no CUDA C
    if prefer in ("auto", "numba") and numba_available():
        return _build_numba(plan)
    return _build_numpy(plan, np, chunk)


def run_arguments(plan, arrays) -> list:
    """The numba kernel's arguments for ``arrays`` (inputs laid out, outputs allocated): what
    its compile is typed on."""
    outs, sums = allocate(plan, np)
    return [plan.outer, plan.inner, *run_prepare(plan, arrays, np), *outs, *sums]


def argument_types(args) -> list:
    """What ``numba.typeof`` says of each of ``args`` (ints, NumPy arrays), as JSON-able data,
    found without importing numba: an int as itself, an array as [dtype, ndim, layout,
    readonly] (numba's ``map_layout``: "C", else "F", else "A")."""
    out = []
    for a in args:
        if isinstance(a, (int, np.integer)):
            out.append(int(a))
        elif isinstance(a, np.ndarray):
            layout = "C" if a.flags.c_contiguous else "F" if a.flags.f_contiguous else "A"
            out.append([a.dtype.str, a.ndim, layout, not a.flags.writeable])
        else:
            raise TypeError(f"argument_types: expected an int or a NumPy array, got "
                            f"{type(a).__name__}")
    return out


def _build_numba(plan):
    fn = load_numba(plan)
    # Everything run_prepare, allocate and _finish look up per call (the inputs' 2-d shapes,
    # the outputs' shapes and dtypes, which reductions are read outside) worked out once: a
    # GPT training step calls ~20 kernels, each a few us of Python this way (the same arrays,
    # the same reshapes, so the same numba signatures as those functions give).
    o, i = plan.outer, plan.inner
    views = {"scalar": (1, 1), "row": (1, i), "col": (o, 1), "full": (o, i)}
    prep = [views.get(k) for k in plan.kinds]  # None: a "mat" input (run_prepare copies it)
    simple = all(s is not None for s in prep)
    outs_spec = [((o, i), n.meta["dtype"].np) for n in plan.full_outputs] + \
        [((o, 1), n.meta["dtype"].np) for n in plan.row_outputs]
    shapes = [n.meta["shape"] for n in plan.full_outputs + plan.row_outputs]
    sums_len = [o if side == "inner" else i for _, _, _, side, _ in plan.reductions]
    read = [(j, r.meta["dtype"].np, r.meta["shape"]) for j, (r, *_) in
            enumerate(plan.reductions) if r in plan.group.outputs]
    empty, zeros, f64 = np.empty, np.zeros, np.float64
    # A "mat" input is copied broadcast to the kernel's shape; one that is a constant of the
    # graph (attention's causal mask, 16x its size in a GPT's scores) is the same array at
    # every call: its copy is kept (with the array, so the identity test cannot be fooled).
    const = {j for j, (s, n) in enumerate(zip(prep, plan.group.inputs))
             if s is None and getattr(n, "op", None) == "constant"}
    kept = {}

    def mat(j, x):
        hit = kept.get(j)
        if hit is not None and hit[0] is x:
            return hit[1]
        y = np.ascontiguousarray(np.broadcast_to(x, plan.shape)).reshape(o, i)
        if j in const:
            kept[j] = (x, y)
        return y

    def run(arrays):
        if simple:
            ins = [x.reshape(s) for x, s in zip(arrays, prep)]
        else:
            ins = [x.reshape(s) if s is not None else mat(j, x)
                   for j, (x, s) in enumerate(zip(arrays, prep))]
        outs = [empty(s, d) for s, d in outs_spec]
        sums = [zeros(n, f64) for n in sums_len]
        fn(o, i, *ins, *outs, *sums)
        res = [b.reshape(s) for b, s in zip(outs, shapes)]
        for j, d, s in read:
            res.append(sums[j].astype(d).reshape(s))
        return res

    run.kind, run.kept = "numba", kept  # kept: the constants' broadcast copies (tests)
    return run


def _build_numpy(plan, xp, chunk):
    fn = _load_numpy(plan, xp)
    # rows per block, or columns per block when the view is one long row
    rows = (chunk or DEFAULT_CHUNK) if plan.outer == 1 else \
        max(1, (chunk or DEFAULT_CHUNK) // max(plan.inner, 1))
    quiet = backend.quiet

    def run(arrays):
        ins = run_prepare(plan, arrays, xp)
        outs, sums = allocate(plan, xp)
        with quiet():
            fn(plan.outer, plan.inner, rows, *ins, *outs, *sums)
        return _finish(plan, outs, sums, xp)

    run.kind = "numpy"
    run.chunk = rows if plan.outer == 1 else rows * max(plan.inner, 1)
    return run


def _build_cuda(plan, xp):  # pragma: no cover - needs a GPU
    src = cuda_source(plan)
    kernel = backend.elementwise_kernel(src["in_params"], src["out_params"], src["operation"],
                                        src["name"])
    n_full = len(plan.full_outputs)
    dtypes = [n.meta["dtype"].np for n in plan.full_outputs] + \
        [r.meta["dtype"].np for r, *_ in plan.reductions]

    def run(arrays):
        res = [xp.empty(plan.shape, dtype=d) for d in dtypes]  # CuPy broadcasts the inputs
        kernel(*arrays, *res)
        out = [r.reshape(n.meta["shape"]) for r, n in zip(res[:n_full], plan.full_outputs)]
        for s, (r, _, _, side, _) in zip(res[n_full:], plan.reductions):
            if r not in plan.group.outputs:
                continue
            s = s.reshape(plan.outer, plan.inner)
            red = s.sum(axis=1 if side == "inner" else 0, dtype=np.float64)
            out.append(red.astype(r.meta["dtype"].np).reshape(r.meta["shape"]))
        return out

    run.kind = "cuda"
    return run


def _build_cuda_rows(plan, xp):
    """A phased plan as one RawKernel (cuda_rows.py); the column sums' operands it writes
    are summed here, in float64 (as the elementwise CUDA form's)."""
    src = cuda_rows.cuda_row_source(plan)  # NotImplementedError before anything compiles
    kernel = backend.raw_kernel(src["code"], src["name"])
    blocks, threads = cuda_rows.launch_shape(plan)
    sizes = np.int64(plan.outer), np.int64(plan.inner)

    def run(arrays):
        ins = [xp.ascontiguousarray(a) for a in run_prepare(plan, arrays, xp)]
        outs = output_buffers(plan, xp)
        bufs = cuda_rows.reduction_buffers(plan, xp)
        if plan.outer:
            kernel((blocks,), (threads,), (*ins, *outs, *bufs, *sizes))
        sums = [b if side == "inner" else b.sum(axis=0, dtype=np.float64)
                for b, (_, _, _, side, _) in zip(bufs, plan.reductions)]
        return _finish(plan, outs, sums, xp)

    run.kind = "cuda"
    return run
