"""CUDA form of the row kernels: a phased :class:`~tensorix._compile.codegen.KernelPlan` (members
read the group's own per-row reductions: layer norm, softmax, log-softmax, cross-entropy) as
one ``cupy.RawKernel``.

One block per row (a grid-stride loop over the rows), its threads striding over the row's
columns. Each pass of the plan (one per reduction level, :meth:`KernelPlan.phases`) is one
loop over the row; after it, every reduction of the pass is combined across the block (a
warp-shuffle butterfly, then the warps' partials through shared memory), and every thread
computes the row values (row members, the reductions as their dtype) that the next pass and
the epilogue read. Reductions accumulate in double (as the numba form's float64
accumulators), max/min with NaN winning (as NumPy's). Full values a later pass needs are
computed again from the inputs rather than kept (the numba form's scratch row): a register
recompute is cheaper than a round trip through global memory. Column sums (side "outer")
cannot be finished by one block: their operands are written out and summed by the caller,
as the elementwise CUDA form does.

The source is plain CUDA C++ with no ``#include`` (CuPy compiles RawKernels with NVRTC,
which has no C library headers): only ``__shfl_xor_sync``, ``__syncthreads``,
``__longlong_as_double`` and the CUDA math functions. A block has a multiple of 32 threads.

Example::

    src = cuda_row_source(plan)          # {"code", "kernel", "name"}
    blocks, threads = launch_shape(plan)
    backend.raw_kernel(src["code"], src["name"])((blocks,), (threads,), args)
"""

from __future__ import annotations

__all__ = ["ROW_PREAMBLE", "cuda_row_source", "launch_shape", "reduction_buffers"]

_CTYPE = {"float32": "float", "float64": "double", "bool": "bool", "int64": "long long",
          "int32": "int"}
_KIND = {"sum": 0, "max": 1, "min": 2}

ROW_PREAMBLE = r"""
/* row kernels of tensorix.compile (no include: NVRTC has no C library headers) */
__device__ __forceinline__ double tx_row_inf() {
    return __longlong_as_double(0x7ff0000000000000LL);
}
/* kind 0: sum; 1: max, 2: min, NaN winning as in NumPy (kind is a constant at each call) */
__device__ __forceinline__ double tx_row_combine(double a, double b, int kind) {
    if (kind == 0) return a + b;
    if (kind == 1) return (b > a || b != b) ? b : a;
    return (b < a || b != b) ? b : a;
}
/* every thread of the block gets the same value (the butterfly gives each lane the warp's,
   then all read the warps' partials in one order); sh: 32 doubles of shared memory; called
   by every thread of the block */
__device__ __forceinline__ double tx_row_reduce(double v, int kind, double* sh) {
    for (int o = 16; o > 0; o >>= 1)
        v = tx_row_combine(v, __shfl_xor_sync(0xffffffffu, v, o), kind);
    __syncthreads();  /* the previous reduction's readers are done with sh */
    if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;
    __syncthreads();
    v = sh[0];
    for (int w = 1; w < (int)(blockDim.x >> 5); ++w) v = tx_row_combine(v, sh[w], kind);
    return v;
}
"""


def _ctype(node):
    return _CTYPE[node.meta["dtype"].name]


def _check(plan):
    for _, _, kind, side, readable in plan.reductions:
        if side != "inner" and (kind != "sum" or readable):
            raise NotImplementedError(f"cuda_row_source: {plan.key} has a {kind} over the "
                                      "leading dims (a block sees one row: only a column "
                                      "sum that no member reads is finished by the caller)")
    for name in plan.in_dtypes:
        if name not in _CTYPE:
            raise NotImplementedError(f"cuda_row_source: {plan.key} reads a {name} input")


def _params(plan):
    """The kernel's parameters: inputs, full outputs, row outputs, :func:`reduction_buffers`,
    then the row count and length."""
    ps = [f"const {_CTYPE[t]}* __restrict__ x{j}" for j, t in enumerate(plan.in_dtypes)]
    ps += [f"{_ctype(n)}* o{j}" for j, n in enumerate(plan.full_outputs)]
    ps += [f"{_ctype(n)}* q{j}" for j, n in enumerate(plan.row_outputs)]
    for j, (r, _, _, side, _) in enumerate(plan.reductions):
        # a row's reduction in double (as the numba form), a column sum's operand in its type
        ps.append(f"double* r{j}" if side == "inner" else f"{_ctype(r.args[0])}* r{j}")
    return ps + ["long long outer", "long long inner"]


def _load(kind, j):
    return {"full": f"x{j}[a * inner + b]", "mat": f"x{j}[a * inner + b]", "row": f"x{j}[b]",
            "col": f"x{j}[a]", "scalar": f"x{j}[0]"}[kind]


class _Writer:
    def __init__(self, plan):
        self.plan, self.lines = plan, []
        self.full = [(v, n, e["cu"]) for v, n, r, e in plan.steps if r == "full"]
        self.exprs = {n: e["cu"] for _, n, _, e in plan.steps if e is not None}
        self.out = {n: f"o{j}" for j, n in enumerate(plan.full_outputs)}
        self.out.update({n: f"q{j}" for j, n in enumerate(plan.row_outputs)})
        self.red = {r: j for j, (r, *_) in enumerate(plan.reductions)}

    def emit(self, depth, line):
        self.lines.append("    " * depth + line)

    def members(self, roots):
        """The full members ``roots`` need, in program order: a pass computes everything it
        reads from the inputs and the row values (nothing is kept from an earlier pass)."""
        members = {n for _, n, _ in self.full}
        need, todo = set(), list(roots)
        while todo:
            n = todo.pop()
            if n in need or n not in members:
                continue
            need.add(n)
            todo.extend(n.inputs)
        return [(v, n, e) for v, n, e in self.full if n in need]

    def row_values(self, ready):
        """Row members and finished reductions: per thread (every thread reads them), stored
        by thread 0."""
        for var, n, role in ready:
            if role == "reduce":
                j = self.red[n]
                if self.plan.reductions[j][3] != "inner":
                    continue  # a column sum: finished by the caller
                self.emit(2, f"{var} = tx_row_reduce({var}, {_KIND[self.plan.reductions[j][2]]},"
                          " tx_sh);")
                self.emit(2, f"if (threadIdx.x == 0) r{j}[a] = {var};")
                self.emit(2, f"const {_ctype(n)} s{j} = ({_ctype(n)}){var};")
            else:
                self.emit(2, f"const {_ctype(n)} {var} = {self.exprs[n]};")
                if n in self.out:
                    self.emit(2, f"if (threadIdx.x == 0) {self.out[n]}[a] = {var};")

    def one_pass(self, outs, reds):
        plan = self.plan
        for r, _, kind, side, _ in reds:
            if side == "inner":
                init = {"sum": "0.0", "max": "-tx_row_inf()", "min": "tx_row_inf()"}[kind]
                self.emit(2, f"double acc{self.red[r]} = {init};")
        self.emit(2, "for (long long b = threadIdx.x; b < inner; b += blockDim.x) {")
        members = self.members(list(outs) + [r.args[0] for r, *_ in reds])
        read = {plan.names[i] for _, n, _ in members for i in n.inputs}
        read |= {src for _, src, *_ in reds}
        for j, kind in enumerate(plan.kinds):
            if kind not in ("scalar", "col") and f"v{j}" in read:
                self.emit(3, f"const {_CTYPE[plan.in_dtypes[j]]} v{j} = {_load(kind, j)};")
        for var, n, e in members:
            self.emit(3, f"const {_ctype(n)} {var} = {e};")
        for n in outs:
            self.emit(3, f"{self.out[n]}[a * inner + b] = {plan.names[n]};")
        for r, src, kind, side, _ in reds:
            j = self.red[r]
            if side != "inner":
                self.emit(3, f"r{j}[a * inner + b] = {src};")
            elif kind == "sum":
                self.emit(3, f"acc{j} += (double){src};")
            else:
                self.emit(3, f"acc{j} = tx_row_combine(acc{j}, (double){src}, {_KIND[kind]});")
        self.emit(2, "}")


def cuda_row_source(plan) -> dict:
    """``plan`` (phased) as a CUDA ``__global__`` function ``name``: ``kernel`` is its text,
    ``code`` the whole unit (:data:`ROW_PREAMBLE` and the kernel) for ``cupy.RawKernel``.
    Arguments: see :func:`_params`. NotImplementedError for a plan it cannot write (a
    max/min or a read reduction over the leading dims; an input of another dtype)."""
    _check(plan)
    w = _Writer(plan)
    phases, _ = plan.phases()
    for j, kind in enumerate(plan.kinds):
        if kind == "scalar":
            w.emit(1, f"const {_CTYPE[plan.in_dtypes[j]]} v{j} = x{j}[0];")
    w.emit(1, "for (long long a = blockIdx.x; a < outer; a += gridDim.x) {")
    for j, kind in enumerate(plan.kinds):
        if kind == "col":
            w.emit(2, f"const {_CTYPE[plan.in_dtypes[j]]} v{j} = x{j}[a];")
    w.row_values([(v, n, r) for v, n, r, _ in plan.steps if r == "row" and plan.level[n] == 0])
    for p, (_, _, outs, reds, after) in enumerate(phases):
        w.emit(2, f"/* pass {p} */")
        w.one_pass(outs, reds)
        w.row_values([(f"acc{w.red[n]}" if r == "reduce" else v, n, r) for v, n, r in after])
    w.emit(1, "}")
    name = f"{plan.key}_rows"
    kernel = (f'extern "C" __global__ void {name}({", ".join(_params(plan))}) {{\n'
              "    __shared__ double tx_sh[32];\n" + "\n".join(w.lines) + "\n}\n")
    return {"code": ROW_PREAMBLE + kernel, "kernel": kernel, "name": name}


def launch_shape(plan) -> tuple:
    """``(blocks, threads)``: a block per row (grid-stride beyond 2**20 rows), a warp per 32
    columns up to 512 threads (a thread then loops over ``inner / 512`` columns)."""
    threads = min(512, 32 * max(1, -(-plan.inner // 32)))
    return max(1, min(plan.outer, 1 << 20)), threads


def reduction_buffers(plan, xp) -> list:
    """The kernel's arguments after the inputs and the outputs (:func:`codegen.allocate`'s
    full and row outputs), one per reduction: its rows in double (side "inner", one per row),
    or its operand, (outer, inner) in its dtype (a column sum: the caller sums it)."""
    bufs = []
    for r, _, _, side, _ in plan.reductions:
        if side == "inner":
            bufs.append(xp.empty(plan.outer, dtype="float64"))
        else:
            bufs.append(xp.empty((plan.outer, plan.inner), dtype=r.args[0].meta["dtype"].np))
    return bufs
