"""Ahead-of-time C: an inference program written as one standalone C function (as MicroTVM's
AOT executor does), with its weights as ``static const float`` arrays and loops for the GEMMs,
convolutions, pools, softmaxes, sums and elementwise chains; it needs nothing beyond libm.

The program is traced by tensorix.fx in eval mode, its parameters frozen to constants and the
graph optimized (so batch norm folds into one scale and shift). Then each node is either
*virtual*, an expression read where it is used (views: reshape, permute, expand, basic
slices, im2col windows, padding; an elementwise node read once by another elementwise node),
or *materialized* in a buffer by one loop nest: inputs and outputs are the caller's arrays,
intermediates live in one float workspace placed by :func:`tensorix.fx.memory.best_fit`
(buffers reused once their last reader ran). A traced convolution (im2col, a GEMM and the
movement around it, see tensorix.onnx._fuse) is written as a direct convolution loop.
Arithmetic runs in double and is stored as float, so results are within float32 rounding of
eager's.

Example::

    prog = aot_c(model, (tensorix.randn(1, 8),), name="mlp")
    print(prog.header)                 # void mlp(const float* in0, float* out0);
    open("mlp.c", "w").write(prog.source)
    run = prog.build()                 # cc -O2 -shared, loaded by ctypes
    y = run(tensorix.randn(1, 8))      # a Tensor, equal to model(x) to float32 rounding
"""

from __future__ import annotations

import ctypes
import math
import os
import pathlib
import shutil
import subprocess
import tempfile

import numpy as np

from ..fx.graph import Node
from ..fx.memory import best_fit
from ..tensor import Tensor
from .exprs import expr, fusable

__all__ = ["aot_c", "CProgram", "CFunction", "find_c_compiler"]

_F32 = "float32"
# views whose value is an index expression into their input (no loop, no buffer)
_VIEWS = ("Reshape", "View", "Expand", "Permute", "GetItem", "Unfold", "ConstantPad", "Clone")
# ops written as their own loop nest
_COMPUTE = ("Linear", "MatMul", "Softmax", "LogSoftmax", "MaxPool", "Sum")


def find_c_compiler(cc: str | None = None) -> str | None:
    """The C compiler to use: ``cc``, else ``$CC``, else ``cc`` or ``gcc`` on the PATH (None
    when there is none)."""
    for name in (cc, os.environ.get("CC"), "cc", "gcc", "clang"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def aot_c(model, args, name: str = "model") -> CProgram:
    """Write ``model(*args)`` (an ``nn.Module`` or a function of float32 tensors) as a
    standalone C function ``void name(const float* in0, ..., float* out0, ...)``.

    Shapes are those of ``args`` (static); inputs and outputs are C-contiguous float32
    arrays. The program is traced once in eval mode, so Python control flow follows ``args``;
    a program that reads tensor data (a graph break), a dtype other than float32, or an op
    with no C form here raises ``NotImplementedError`` naming the op and the node.

    Example::

        net = tensorix.nn.Sequential(tensorix.nn.Linear(4, 8), tensorix.nn.ReLU())
        prog = aot_c(net, (tensorix.randn(2, 4),), name="net")
        y = prog.build()(x)            # shape (2, 8), equal to net(x)
    """
    from ..fx.graph_module import Interpreter, inference_trace
    from ..fx.passes import optimize

    if not (isinstance(name, str) and name.isidentifier()):
        raise ValueError(f"aot_c: name must be a C identifier, got {name!r}")
    args = (args,) if isinstance(args, Tensor) else tuple(args)
    for j, a in enumerate(args):
        if not isinstance(a, Tensor) or a.dtype.name != _F32:
            what = a.dtype if isinstance(a, Tensor) else type(a).__name__
            raise TypeError(f"aot_c: argument {j} must be a float32 Tensor, got {what}")
    gm = inference_trace(model, args, "aot_c")
    graph = gm.graph
    for node in graph.nodes:  # weights are baked in: parameters become constants
        if node.op == "get_attr":
            value = Interpreter(graph, gm.root).run_node(node, ())
            node.op, node.target = "constant", value.detach()
    optimize(graph)
    return _Writer(graph, name).program()


class CProgram:
    """The generated C: ``source`` (the whole ``.c`` file), ``header`` (its prototypes),
    ``input_shapes``/``output_shapes``, ``workspace_floats`` (the planned scratch buffer) and
    ``memory`` (the :class:`~tensorix.fx.memory.MemoryPlan`). :meth:`build` compiles it."""

    def __init__(self, name, source, header, input_shapes, output_shapes, memory):
        self.name, self.source, self.header = name, source, header
        self.input_shapes, self.output_shapes, self.memory = input_shapes, output_shapes, memory
        self.workspace_floats = sum(memory.sizes) // 4

    def __repr__(self):
        return (f"CProgram({self.name}: {len(self.input_shapes)} inputs, "
                f"{len(self.output_shapes)} outputs, {len(self.source.splitlines())} lines, "
                f"workspace {self.workspace_floats * 4} bytes)")

    def build(self, directory=None, cc: str | None = None,
              flags=("-O2", "-std=c99", "-Wall", "-Wextra", "-Werror")) -> CFunction:
        """Compile ``source`` with the system C compiler into a shared library (in
        ``directory``, a temporary one by default) and load it: returns a callable."""
        compiler = find_c_compiler(cc)
        if compiler is None:
            raise RuntimeError("aot_c: build() needs a C compiler; none found (set CC or "
                               "install cc/gcc/clang)")
        directory = pathlib.Path(directory or tempfile.mkdtemp(prefix="tensorix_aot_"))
        src, lib = directory / f"{self.name}.c", directory / f"lib{self.name}.so"
        src.write_text(self.source)
        cmd = [compiler, *flags, "-fPIC", "-shared", "-o", str(lib), str(src), "-lm"]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"aot_c: {' '.join(cmd)} failed:\n{done.stderr[-4000:]}")
        return CFunction(self, ctypes.CDLL(str(lib)))


class CFunction:
    """A built :class:`CProgram`: call it with tensors (or arrays) of the traced shapes;
    returns a Tensor (a tuple for several outputs)."""

    def __init__(self, program: CProgram, lib):
        self.program, self.lib = program, lib
        self.fn = getattr(lib, program.name)
        n = len(program.input_shapes) + len(program.output_shapes)
        self.fn.argtypes = [ctypes.POINTER(ctypes.c_float)] * n
        self.fn.restype = None

    def __call__(self, *inputs):
        p = self.program
        if len(inputs) != len(p.input_shapes):
            raise TypeError(f"{p.name}: expected {len(p.input_shapes)} inputs, got "
                            f"{len(inputs)}")
        arrays = []
        for j, (x, shape) in enumerate(zip(inputs, p.input_shapes)):
            a = x.numpy() if isinstance(x, Tensor) else np.asarray(x)
            if tuple(a.shape) != shape:
                raise ValueError(f"{p.name}: input {j} must have shape {shape} (the traced "
                                 f"shape), got {tuple(a.shape)}")
            arrays.append(np.ascontiguousarray(a, dtype=np.float32))
        outs = [np.empty(s, dtype=np.float32) for s in p.output_shapes]
        ptr = ctypes.POINTER(ctypes.c_float)
        self.fn(*[a.ctypes.data_as(ptr) for a in arrays + outs])
        result = [Tensor(o) for o in outs]
        return result[0] if len(result) == 1 else tuple(result)


def _lit(v) -> str:
    """A scalar as a C literal of its exact value (float32 values are exact in double)."""
    v = v.item() if hasattr(v, "item") else v
    if isinstance(v, (bool, np.bool_)):
        return "1" if v else "0"
    if isinstance(v, int):
        return str(v)
    v = float(v)
    if math.isnan(v):
        return "NAN"
    if math.isinf(v):
        return "INFINITY" if v > 0 else "(-INFINITY)"
    return f"({v!r})"


def _strides(shape) -> list:
    out, acc = [], 1
    for d in reversed(shape):
        out.append(acc)
        acc *= d
    return out[::-1]


def _flat(idx, shape) -> str:
    terms = [f"({i})" if s == 1 else f"({i}) * {s}" for i, s, d in
             zip(idx, _strides(shape), shape) if d != 1]
    terms = [t[:-4] if t.endswith(" * 1") else t for t in terms]
    return " + ".join(terms) or "0"


def _broadcast(idx, out_shape, in_shape) -> list:
    """The index into an input of shape ``in_shape`` broadcast to ``out_shape``."""
    lead = len(out_shape) - len(in_shape)
    return [("0" if d == 1 else idx[lead + k]) for k, d in enumerate(in_shape)]


def _shape(node) -> tuple:
    return tuple(node.meta["shape"])


class _Writer:
    """Classifies the graph's nodes, plans the workspace and writes the C source."""

    def __init__(self, graph, name):
        from ..onnx._fuse import conv_chains

        self.graph, self.name = graph, name
        self.convs = conv_chains(graph, set())
        self.inside = {m for c in self.convs.values() for m in c.members}
        self.ptr: dict = {}  # materialized node -> its C pointer
        self.literal: dict = {}  # one-element constant -> its C literal
        self.consts: list = []  # static const arrays
        self.steps: list = []  # materialized call nodes, in order
        self.tmp = 0
        result = graph.output_node.args[0]
        self.outputs = list(result) if isinstance(result, (tuple, list)) else [result]
        self._classify()

    # -- classification --------------------------------------------------------------------
    def _classify(self):
        for j, node in enumerate(self.graph.placeholders):
            self.ptr[node] = f"in{j}"
        out_of = {}
        for j, node in enumerate(self.outputs):
            if type(node) is not Node:
                raise NotImplementedError(f"aot_c: output {j} is a Python "
                                          f"{type(node).__name__}, not a tensor")
            self._check_dtype(node, f"output {j}")
            if node.is_call and node not in out_of:
                out_of[node] = f"out{j}"
        for node in self.graph.nodes:
            if node.op == "constant":
                self._constant(node)
            elif node.op in ("getitem", "data"):
                raise NotImplementedError(f"aot_c: node {node.name} ({node.op}) has no C form")
            elif not node.is_call or node in self.inside:
                continue
            elif node in out_of:
                self._virtual(node)  # raises for an op with no C form
                self.ptr[node] = out_of[node]
                self.steps.append(node)
            elif not self._virtual(node):
                self._check_dtype(node, f"node {node.name}")
                self.steps.append(node)

    def _check_dtype(self, node, what):
        dt = node.meta.get("dtype")
        if dt is not None and dt.name != _F32:
            op = node.op if isinstance(node.op, str) else node.op.__name__
            raise NotImplementedError(f"aot_c: {what} ({op}) is {dt.name}; buffers in the C "
                                      "program are float32")

    def _constant(self, node):
        value = node.target
        data = value._data if isinstance(value, Tensor) else np.asarray(value)
        data = np.asarray(data)
        if data.size == 1:
            self.literal[node] = _lit(data.reshape(()))
            return
        if data.dtype != np.float32:
            raise NotImplementedError(f"aot_c: constant {node.name} is {data.dtype}; arrays "
                                      "in the C program are float32")
        cname = f"w_{node.name}"
        body = ", ".join(_c_float(v) for v in data.ravel().tolist())
        self.consts.append(f"static const float {cname}[{data.size}] = {{{body}}};")
        self.ptr[node] = cname

    def _virtual(self, node) -> bool:
        op = node.op.__name__
        if node in self.convs or op in _COMPUTE:
            return False
        if op in _VIEWS:
            if op == "GetItem" and node.args[1].adv is not None:
                raise NotImplementedError(f"aot_c: node {node.name}: GetItem with integer or "
                                          "boolean array indices has no C form here")
            return True
        if not fusable(node):
            raise NotImplementedError(
                f"aot_c: op {op} (node {node.name}) has no C form; written are elementwise "
                f"ops ({', '.join(sorted(_elementwise_names()))}), views "
                f"({', '.join(_VIEWS)}), {', '.join(_COMPUTE)} and traced convolutions")
        reads = sum(u.inputs.count(node) for u in node.users)
        return reads == 1 and all(fusable(u) for u in node.users)

    # -- loads: a node's value at an index, as a C expression ------------------------------
    def load(self, node, idx, body) -> str:
        """``node`` at multi-index ``idx`` (C expressions): a buffer read, a literal, or its
        value computed in place (:meth:`value`)."""
        if type(node) is not Node:
            return _lit(node)
        if node in self.literal:
            return self.literal[node]
        if node in self.ptr:
            return f"{self.ptr[node]}[{_flat(idx, _shape(node))}]"
        return self.value(node, idx, body)

    def value(self, node, idx, body) -> str:
        """A view's or elementwise node's value at ``idx``, from its inputs; an elementwise
        node appends its statement to ``body`` (the loop nest being written) and is read as
        a variable, so an expression is never repeated."""
        op = node.op.__name__
        if op in _VIEWS:
            return getattr(self, f"_view_{op.lower()}", self._view_reshape)(node, idx, body)
        shape = _shape(node)
        operands = [self.load(i, _broadcast(idx, shape, _shape(i)), body) for i in node.inputs]
        if op == "Expand":
            return operands[0]
        var = f"t{self.tmp}"
        self.tmp += 1
        body.append(f"const double {var} = {expr(node, operands, 'cu')};")
        return var

    def _view_reshape(self, node, idx, body):
        src = node.args[0]
        flat = _flat(idx, _shape(node))
        if src in self.ptr:
            return f"{self.ptr[src]}[{flat}]"
        shape = _shape(src)
        return self.load(src, [f"(({flat}) / {st}) % {d}" for st, d in
                               zip(_strides(shape), shape)], body)

    def _view_clone(self, node, idx, body):
        return self.load(node.args[0], idx, body)

    def _view_expand(self, node, idx, body):
        src = node.args[0]
        return self.load(src, _broadcast(idx, _shape(node), _shape(src)), body)

    def _view_permute(self, node, idx, body):
        dims = node.args[1]
        src_idx = [None] * len(dims)
        for k, d in enumerate(dims):
            src_idx[d % len(dims)] = idx[k]
        return self.load(node.args[0], src_idx, body)

    def _view_getitem(self, node, idx, body):
        src, index = node.args
        shape = _shape(src)
        basic = list(index.basic)
        at = basic.index(Ellipsis) if Ellipsis in basic else len(basic)
        used = sum(1 for b in basic if b is not None and b is not Ellipsis)
        basic[at:at + 1] = [slice(None)] * (len(shape) - used)
        src_idx, out_k = [], 0
        for b in basic:
            if b is None:  # a new dim of size 1: its index is 0
                out_k += 1
            elif isinstance(b, slice):
                start, _stop, step = b.indices(shape[len(src_idx)])
                src_idx.append(_affine(start, idx[out_k], step))
                out_k += 1
            else:
                src_idx.append(str(int(b) % shape[len(src_idx)]))
        return self.load(src, src_idx, body)

    def _view_unfold(self, node, idx, body):
        src, kernel, stride, padding, dilation = node.args
        nd, shape = len(kernel), _shape(src)
        pos = [_affine(-padding[i], idx[2 + nd + i], stride[i], idx[2 + i], dilation[i])
               for i in range(nd)]
        value = self.load(src, [idx[0], idx[1]] + pos, body)
        # without padding every window lies inside the input: no bounds test
        return _guard(value, [(p, b) for p, b, pad in zip(pos, shape[2:], padding) if pad],
                      "0.0")

    def _view_constantpad(self, node, idx, body):
        src, pads, fill = node.args
        shape = _shape(src)
        pos = [_affine(-b, i, 1) for i, (b, _) in zip(idx, pads)]
        padded = [(p, n) for p, n, pad in zip(pos, shape, pads) if any(pad)]
        return _guard(self.load(src, pos, body), padded, self.load(fill, [], body))

    # -- loop nests ------------------------------------------------------------------------
    def write_step(self, node) -> list:
        """The C block that computes materialized ``node`` into its pointer."""
        if node in self.convs:
            return self._conv(node, self.convs[node])
        op = node.op.__name__
        if op in _COMPUTE:
            return getattr(self, f"_{op.lower()}")(node)
        return self._elementwise(node)

    def _elementwise(self, node):
        shape = _shape(node)
        idx = [f"i{k}" for k in range(len(shape))]
        body: list = []
        value = self.value(node, idx, body)
        body.append(f"{self.ptr[node]}[{_flat(idx, shape)}] = (float)({value});")
        return _nest(idx, shape, body)

    def _linear(self, node):
        x, w, b = node.args
        shape = _shape(node)
        idx = [f"i{k}" for k in range(len(shape))]
        k_len = _shape(w)[1]
        init = "0.0" if b is None else self.load(b, [idx[-1]], [])
        xk, wk = self.load(x, idx[:-1] + ["k"], []), self.load(w, [idx[-1], "k"], [])
        body = [f"double acc = {init};",
                f"for (int k = 0; k < {k_len}; ++k) acc += (double){xk} * {wk};",
                f"{self.ptr[node]}[{_flat(idx, shape)}] = (float)acc;"]
        return _nest(idx, shape, body)

    def _matmul(self, node):
        a, b = node.args
        sa, sb, shape = _shape(a), _shape(b), _shape(node)
        if len(sa) < 2 or len(sb) < 2:
            raise NotImplementedError(f"aot_c: MatMul (node {node.name}) of a 1-d operand has "
                                      "no C form here; reshape it to 2-d")
        idx = [f"i{k}" for k in range(len(shape))]
        batch = idx[:-2]
        ia = _broadcast(batch, shape[:-2], sa[:-2]) + [idx[-2], "k"]
        ib = _broadcast(batch, shape[:-2], sb[:-2]) + ["k", idx[-1]]
        body = ["double acc = 0.0;",
                f"for (int k = 0; k < {sa[-1]}; ++k) acc += (double){self.load(a, ia, [])} * "
                f"{self.load(b, ib, [])};",
                f"{self.ptr[node]}[{_flat(idx, shape)}] = (float)acc;"]
        return _nest(idx, shape, body)

    def _conv(self, node, chain):
        shape = _shape(node)  # (N, O, *out)
        nd = len(chain.kernel)
        xs = _shape(chain.x)
        groups, per_out = chain.groups, shape[1] // chain.groups
        per_in, ksize = xs[1] // groups, math.prod(chain.kernel)
        idx = [f"i{k}" for k in range(len(shape))]
        pos = [f"p{i}" for i in range(nd)]
        x_idx = [idx[0], _affine(0, "g", per_in, "c", 1)] + pos
        k_flat = _affine(0, "c", ksize, *[x for i in range(nd) for x in
                                         (f"k{i}", math.prod(chain.kernel[i + 1:]))])
        inner = [f"acc += (double){self.load(chain.x, x_idx, [])} * "
                 f"{self.load(chain.weight, ['g', 'oc', k_flat], [])};"]
        for i in reversed(range(nd)):
            p = _affine(-chain.padding[i], idx[2 + i], chain.stride[i], f"k{i}",
                        chain.dilation[i])
            inner = [f"const int p{i} = {p};",
                     f"if (p{i} < 0 || p{i} >= {xs[2 + i]}) continue;"] + inner
            inner = [f"for (int k{i} = 0; k{i} < {chain.kernel[i]}; ++k{i}) {{",
                     *_indent(inner), "}"]
        body = [f"const int g = i1 / {per_out}, oc = i1 % {per_out};" if groups > 1 else
                "const int g = 0, oc = i1;", "(void)g;", "double acc = 0.0;",
                f"for (int c = 0; c < {per_in}; ++c) {{", *_indent(inner), "}",
                f"{self.ptr[node]}[{_flat(idx, shape)}] = (float)acc;"]
        return _nest(idx, shape, body)

    def _softmax(self, node, log=False):
        x, dim = node.args[0], node.args[1]
        shape = _shape(node)
        dim %= len(shape)
        idx = [f"i{k}" for k in range(len(shape))]
        outer = [i for k, i in enumerate(idx) if k != dim]
        at = list(idx)
        at[dim] = "j"
        v = self.load(x, at, [])
        n = shape[dim]
        store = f"(float)(({v} - m) - log(s))" if log else f"(float)(exp({v} - m) / s)"
        body = ["double m = -INFINITY, s = 0.0;",
                f"for (int j = 0; j < {n}; ++j) if ({v} > m) m = {v};",
                f"for (int j = 0; j < {n}; ++j) s += exp({v} - m);",
                f"for (int j = 0; j < {n}; ++j) {self.ptr[node]}[{_flat(at, shape)}] = {store};"]
        return _nest(outer, [s for k, s in enumerate(shape) if k != dim], body)

    def _logsoftmax(self, node):
        return self._softmax(node, log=True)

    def _maxpool(self, node):
        x, kernel, stride, padding, dilation = node.args[:5]
        if len(node.args) > 6 and node.args[6]:
            raise NotImplementedError(f"aot_c: MaxPool (node {node.name}) with indices has "
                                      "no C form here")
        shape, xs, nd = _shape(node), _shape(x), len(kernel)
        idx = [f"i{k}" for k in range(len(shape))]
        pos = [f"p{i}" for i in range(nd)]
        inner = [f"const double v = {self.load(x, idx[:2] + pos, [])};",
                 "if (v > m || v != v) m = v;"]
        for i in reversed(range(nd)):
            inner = [f"for (int k{i} = 0; k{i} < {kernel[i]}; ++k{i}) {{",
                     f"    const int p{i} = "
                     f"{_affine(-padding[i], idx[2 + i], stride[i], f'k{i}', dilation[i])};",
                     f"    if (p{i} < 0 || p{i} >= {xs[2 + i]}) continue;",
                     *_indent(inner), "}"]
        body = ["double m = -INFINITY;", *inner,
                f"{self.ptr[node]}[{_flat(idx, shape)}] = (float)m;"]
        return _nest(idx, shape, body)

    def _sum(self, node):
        x, dims, keepdim = node.args[:3]
        xs, shape = _shape(x), _shape(node)
        dims = sorted(d % len(xs) for d in dims) if xs else []
        out_idx = [f"i{k}" for k in range(len(shape))]
        x_idx, it = [], iter(out_idx)
        for k in range(len(xs)):
            if k in dims:
                x_idx.append(f"r{k}")
                if keepdim:
                    next(it)
            else:
                x_idx.append(next(it))
        inner = [f"acc += {self.load(x, x_idx, [])};"]
        for k in reversed(dims):
            inner = [f"for (int r{k} = 0; r{k} < {xs[k]}; ++r{k}) {{", *_indent(inner), "}"]
        body = ["double acc = 0.0;", *inner,
                f"{self.ptr[node]}[{_flat(out_idx, shape)}] = (float)acc;"]
        return _nest(out_idx, shape, body)

    # -- the program -----------------------------------------------------------------------
    def program(self) -> CProgram:
        order = {n: i for i, n in enumerate(self.steps)}
        reads = {}  # node -> the materialized nodes its value reads (through virtual ones)
        for node in self.graph.nodes:
            if node in order or node in self.ptr or node.op == "constant":
                reads[node] = {node}
            elif node.is_call and node not in self.inside:
                reads[node] = set().union(*(reads[i] for i in self._sources(node)))
        end = {}
        for node in self.steps:
            for src in set().union(*(reads[i] for i in self._sources(node))):
                if src in order:
                    end[src] = max(end.get(src, 0), order[src] + 1, order[node])
        for node in self.outputs:  # outputs copied at the end keep their sources alive
            for src in reads.get(node, ()):
                end[src] = len(self.steps)
        scratch = [n for n in self.steps if not self.ptr.get(n, "").startswith("out")]
        memory = best_fit(scratch, lambda n: 4 * math.prod(_shape(n)),
                          {n: end.get(n, order[n]) for n in scratch}, order)
        offsets = np.cumsum([0] + [s // 4 for s in memory.sizes]).tolist()
        for n in scratch:
            self.ptr[n] = f"(ws + {offsets[memory.buffer_of[n]]})"
        blocks = []
        for node in self.steps:
            blocks.append(f"/* {self._describe(node)} */")
            blocks += self.write_step(node)
        for j, node in enumerate(self.outputs):  # outputs that are inputs, constants, repeats
            if self.ptr.get(node) == f"out{j}":
                continue
            shape = _shape(node)
            idx = [f"i{k}" for k in range(len(shape))]
            body: list = []
            body.append(f"out{j}[{_flat(idx, shape)}] = (float)({self.load(node, idx, body)});")
            blocks.append(f"/* output {j} */")
            blocks += _nest(idx, shape, body)
        return self._source(blocks, offsets[-1], memory)

    def _describe(self, node) -> str:
        if node in self.convs:
            c = self.convs[node]
            return (f"{node.name} = conv({c.x.name}, {c.weight.name}, stride={c.stride}, "
                    f"padding={c.padding}, dilation={c.dilation}, groups={c.groups})")
        return node.format()

    def _sources(self, node):
        if node in self.convs:
            return [self.convs[node].x, self.convs[node].weight]
        return [i for i in node.inputs]

    def _source(self, blocks, ws_floats, memory) -> CProgram:
        ins = [f"const float* in{j}" for j in range(len(self.graph.placeholders))]
        outs = [f"float* out{j}" for j in range(len(self.outputs))]
        params = ", ".join(ins + outs)
        call = ", ".join([f"in{j}" for j in range(len(ins))] +
                         [f"out{j}" for j in range(len(outs))])
        in_shapes = [_shape(p) for p in self.graph.placeholders]
        out_shapes = [_shape(n) for n in self.outputs]
        doc = ["/* Generated by tensorix.aot_c: standalone, float32, needs only libm.",
               *[f" * in{j}: {list(s)}" for j, s in enumerate(in_shapes)],
               *[f" * out{j}: {list(s)}" for j, s in enumerate(out_shapes)],
               f" * {self.name}_run uses the caller's workspace of {self.name.upper()}"
               f"_WORKSPACE floats; {self.name} a static one (not reentrant). */"]
        header = "\n".join(doc + [
            f"#define {self.name.upper()}_WORKSPACE {max(ws_floats, 1)}",
            f"void {self.name}_run({params}, float* ws);",
            f"void {self.name}({params});"])
        lines = ["#include <math.h>", "", header, "", *self.consts, "",
                 f"void {self.name}_run({params}, float* ws) {{",
                 "    (void)ws;", *_indent(blocks), "}", "",
                 f"static float {self.name}_ws[{self.name.upper()}_WORKSPACE];", "",
                 f"void {self.name}({params}) {{",
                 f"    {self.name}_run({call}, {self.name}_ws);", "}", ""]
        return CProgram(self.name, "\n".join(lines), header, in_shapes, out_shapes, memory)


def _c_float(v) -> str:
    if math.isnan(v):
        return "NAN"
    if math.isinf(v):
        return "INFINITY" if v > 0 else "-INFINITY"
    text = f"{v:.9g}"  # 9 significant digits round-trip a float32
    return text + ("f" if "." in text or "e" in text else ".0f")  # "0f" is no C literal


def _affine(const, *pairs) -> str:
    """``const + i * a + j * b ...`` for ``pairs`` (i, a, j, b, ...), without the zero and
    unit terms (the index arithmetic stays readable)."""
    terms = []
    for i, a in zip(pairs[::2], pairs[1::2]):
        if a:
            terms.append(i if a == 1 else f"({i}) * {a}")
    if const:
        terms.append(str(const))
    return " + ".join(terms).replace("+ -", "- ") or "0"


def _guard(value, bounded, fill) -> str:
    """``value`` where every ``(position, size)`` of ``bounded`` is inside, else ``fill``."""
    cond = " && ".join(f"({p}) >= 0 && ({p}) < {b}" for p, b in bounded)
    return f"(({cond}) ? (double){value} : (double){fill})" if cond else value


def _indent(lines) -> list:
    return ["    " + ln for ln in lines]


def _nest(idx, shape, body) -> list:
    """``body`` inside one for loop per dim (a braced block for a 0-d value)."""
    lines = list(body)
    for i, d in reversed(list(zip(idx, shape))):
        lines = [f"for (int {i} = 0; {i} < {d}; ++{i}) {{", *_indent(lines), "}"]
    return ["{", *_indent(lines), "}"]


def _elementwise_names():
    from .exprs import TEMPLATES

    return TEMPLATES.keys()

