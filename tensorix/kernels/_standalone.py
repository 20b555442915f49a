"""Whole translation units of the kernels, for checks on machines without a GPU.

CuPy wraps an ElementwiseKernel's operation in generated code at run time; here the same
operation is wrapped in a plain loop, once as a CUDA ``__global__`` function (so ``nvcc`` can
compile every kernel for the H100/H200's sm_90) and once as a host C++ function (so a C++
compiler can run the arithmetic against the NumPy path). Used by tests/test_devices.py; the
real CuPy wrappers only run on a GPU.
"""

from __future__ import annotations

from ._cuda_src import ELEMENTWISE, PREAMBLE, ROWS_SOURCE

__all__ = ["params", "cuda_elementwise_unit", "cuda_rows_unit", "host_elementwise_unit"]

_CTYPES = {"float64": "double", "float32": "float", "int64": "long long",
           "uint64": "unsigned long long", "int32": "int", "bool": "bool"}


def params(spec: str, scalars=()):
    """``'raw int64 t, T x'`` -> [(name, ctype or 'T', raw, scalar), ...]."""
    out = []
    for part in spec.split(","):
        words = part.split()
        raw = words[0] == "raw"
        typ, name = words[-2], words[-1]
        out.append((name, _CTYPES.get(typ, typ), raw, name in scalars))
    return out


def _signature_and_body(name, t):
    """Argument list and per-element prologue of kernel ``name`` with T spelled ``t``."""
    in_params, out_params, operation, scalars = ELEMENTWISE[name]
    args, pro = ["long long _n"], []
    for is_out, plist in ((False, params(in_params, scalars)), (True, params(out_params))):
        for pname, ctype, raw, scalar in plist:
            ctype = t if ctype == "T" else ctype
            if scalar:
                args.append(f"{ctype} {pname}")
            elif raw:
                args.append(f"{'' if is_out else 'const '}{ctype}* {pname}")
            elif is_out:
                args.append(f"{ctype}* _p_{pname}")
                pro.append(f"{ctype} &{pname} = _p_{pname}[i];")
            else:
                args.append(f"const {ctype}* _p_{pname}")
                pro.append(f"const {ctype} {pname} = _p_{pname}[i];")
    body = f"typedef {t} T;\n" + "\n".join(pro) + "\n{" + operation + "}"
    return ", ".join(args), body


def cuda_elementwise_unit() -> str:
    """One .cu file holding every elementwise kernel for float and double."""
    parts = [PREAMBLE]
    for name in ELEMENTWISE:
        for t, sfx in (("float", "f32"), ("double", "f64")):
            sig, body = _signature_and_body(name, t)
            parts.append(f'extern "C" __global__ void {name}_{sfx}({sig}) {{\n'
                         f"for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;"
                         f" i < _n; i += (long long)gridDim.x * blockDim.x) {{\n{body}\n}}\n}}")
    return "\n".join(parts)


def cuda_rows_unit() -> str:
    """The warp-per-row kernels' source, as CuPy compiles it."""
    return ROWS_SOURCE


def host_elementwise_unit() -> str:
    """The elementwise kernels as host C++ (``extern "C"`` functions ``<name>_f32/_f64``)."""
    parts = ["#include <cmath>", "using namespace std;", "#define __device__",
             "#define __forceinline__ inline", PREAMBLE]
    for name in ELEMENTWISE:
        for t, sfx in (("float", "f32"), ("double", "f64")):
            sig, body = _signature_and_body(name, t)
            parts.append(f'extern "C" void {name}_{sfx}({sig}) {{\n'
                         f"for (long long i = 0; i < _n; ++i) {{\n{body}\n}}\n}}")
    return "\n".join(parts)
