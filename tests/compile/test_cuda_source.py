"""The fused groups' CUDA source (cupy.ElementwiseKernel arguments): the operation is wrapped in
a host C++ loop (as tensorix.kernels._standalone does for the hand-written kernels), compiled
with the system C++ compiler and run against eager. The CuPy wrapper itself runs on a GPU
only; on the stand-in the same plan runs in its NumPy form (tests/compile/test_compile.py)."""

import ctypes
import shutil
import subprocess

import numpy as np
import pytest

import tensorix as tx
import tensorix.nn.functional as F
from tensorix._compile.codegen import KernelPlan, cuda_source
from tensorix._compile.fusion import partition
from tensorix.fx import symbolic_trace
from tensorix.fx.passes import optimize

_C = {"float32": ("float", np.float32), "float64": ("double", np.float64),
      "bool": ("bool", np.bool_)}
_PRE = ("#include <cmath>\nusing namespace std;\n"
        "inline float rsqrt(float x) { return 1.0f / sqrt(x); }\n"
        "inline double rsqrt(double x) { return 1.0 / sqrt(x); }\n")


def _params(spec):
    return [p.split() for p in spec.split(",")] if spec else []


def _host_unit(src):
    args, pro = ["long long _n"], []
    for typ, name in _params(src["in_params"]):
        c = _C[typ][0]
        args.append(f"const {c}* _p_{name}")
        pro.append(f"const {c} {name} = _p_{name}[i];")
    for typ, name in _params(src["out_params"]):
        c = _C[typ][0]
        args.append(f"{c}* _p_{name}")
        pro.append(f"{c} &{name} = _p_{name}[i];")
    body = "\n".join(pro) + "\n{" + src["operation"] + "}"
    return (_PRE + f'extern "C" void {src["name"]}({", ".join(args)}) {{\n'
            f"for (long long i = 0; i < _n; ++i) {{\n{body}\n}}\n}}\n")


@pytest.fixture(scope="module")
def cxx():
    path = shutil.which("g++") or shutil.which("c++")
    if path is None:
        pytest.skip("needs a C++ compiler")
    return path


def _groups(fn, *xs):
    gm = symbolic_trace(fn, *xs)
    optimize(gm.graph)
    return gm, partition(gm.graph)


def _run_host(cxx, tmp_path, plan, arrays):
    src = cuda_source(plan)
    (tmp_path / "k.cpp").write_text(_host_unit(src))
    out = subprocess.run([cxx, "-O1", "-shared", "-fPIC", "-o", str(tmp_path / "k.so"),
                          str(tmp_path / "k.cpp")], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    fn = getattr(ctypes.CDLL(str(tmp_path / "k.so")), src["name"])
    ins = [np.ascontiguousarray(np.broadcast_to(a, plan.shape)) for a in arrays]
    outs = [np.empty(plan.shape, _C[t][1]) for t, _ in _params(src["out_params"])]
    fn(ctypes.c_longlong(int(np.prod(plan.shape))),
       *[ctypes.c_void_p(a.ctypes.data) for a in ins + outs])
    return outs


@pytest.mark.parametrize("dtype", [tx.float32, tx.float64])
@pytest.mark.parametrize("case", ["gelu_backward", "select", "bias_act"])
def test_generated_cuda_operation_computes_the_group(cxx, tmp_path, dtype, case):
    x = tx.randn(8, 16, dtype=dtype) * 3
    b = tx.randn(16, dtype=dtype)
    if case == "gelu_backward":
        xr = x.detach().requires_grad_(True)

        def fn(x, g):
            (d,) = tx.autograd.grad(F.gelu(x), [x], g, create_graph=True)
            return d

        args = (xr, tx.randn(8, 16, dtype=dtype))
    elif case == "select":
        def fn(x, b):
            return tx.where(x > b, x.sigmoid(), (-x).exp()) * x.relu()

        args = (x, b)
    else:
        def fn(x, b):
            return ((x + b) * 0.5).tanh() - x.abs().sqrt()

        args = (x.abs(), b)
    gm, groups = _groups(fn, *args)
    assert groups, gm.code
    group = max(groups, key=lambda g: len(g.nodes))
    plan = KernelPlan(group)
    src = cuda_source(plan)
    assert src["operation"].count(";") >= len(plan.body)
    # the group's inputs, evaluated by running the graph's nodes eagerly
    from tensorix.fx import Interpreter

    env = {}
    interp = Interpreter(gm.graph)
    inputs = list(args)
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            env[node] = inputs.pop(0)
        elif node.op != "output":
            from tensorix.fx.graph import map_args

            env[node] = interp.run_node(node, map_args(node.args, env.__getitem__))
    arrays = [env[i].detach().numpy() for i in group.inputs]
    outs = _run_host(cxx, tmp_path, plan, arrays)
    tol = dict(rtol=2e-5, atol=2e-6) if dtype is tx.float32 else dict(rtol=1e-12, atol=1e-13)
    for o, node in zip(outs, plan.full_outputs):
        np.testing.assert_allclose(o, env[node].detach().numpy(), **tol)
