"""The compiler's CUDA kernels run on the host, so the CuPy stand-in (which cannot run CUDA C)
runs a compiled step through them: ``HostCuda`` stands in for ``tensorix.backend`` in
tensorix._compile.kernels only (the eager ops keep their stand-in paths), saying CUDA C runs
and compiling each ``RawKernel`` / ``ElementwiseKernel`` with the system C++ compiler.

A RawKernel's source is compiled unchanged, under a shim that gives CUDA's names host
meanings: a block is ``blockDim.x`` host threads (``threadIdx`` thread-local),
``__syncthreads`` a ``std::barrier``, ``__shfl_xor_sync`` an exchange through a per-thread
slot between two barriers (valid where every thread of the block calls it, as the row
kernels' reductions do), ``__shared__`` a static (the blocks of a launch run one after
another). It checks the kernel's logic (indexing, passes, reductions across warps and
threads, the launch shape it is given), not the GPU's compiler: the sources are compiled
for sm_90 with nvcc elsewhere (test_cuda_rows.py).
"""

from __future__ import annotations

import ctypes
import hashlib
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

_SHIM = r"""
#include <barrier>
#include <cmath>
#include <cstring>
#include <thread>
#include <vector>
using namespace std;
struct tx_dim3 { unsigned x = 0, y = 1, z = 1; };
static thread_local tx_dim3 threadIdx;
static tx_dim3 blockIdx, blockDim, gridDim;
static barrier<>* tx_block_barrier;
static unsigned long long tx_lanes[1024];
#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
inline void __syncthreads() { tx_block_barrier->arrive_and_wait(); }
template <typename T> T __shfl_xor_sync(unsigned, T v, int o) {
    static_assert(sizeof(T) <= 8, "a lane holds 8 bytes");
    memcpy(&tx_lanes[threadIdx.x], &v, sizeof(T));
    __syncthreads();
    T u;
    memcpy(&u, &tx_lanes[threadIdx.x ^ o], sizeof(T));
    __syncthreads();
    return u;
}
inline double __longlong_as_double(long long v) { double d; memcpy(&d, &v, 8); return d; }
inline float rsqrt(float x) { return 1.0f / sqrt(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
"""

_LAUNCH = """
extern "C" void tx_host_launch(unsigned grid, unsigned block, void** args) {{
    gridDim.x = grid;
    blockDim.x = block;
    barrier<> bar(block);
    tx_block_barrier = &bar;
    for (unsigned g = 0; g < grid; ++g) {{
        blockIdx.x = g;
        vector<thread> threads;
        for (unsigned t = 0; t < block; ++t)
            threads.emplace_back([=] {{ threadIdx.x = t; {name}({args}); }});
        for (auto& th : threads) th.join();
    }}
}}
"""

_ELEMENTWISE = """
extern "C" void tx_host_elementwise(long long n, void** args) {{
    for (long long i = 0; i < n; ++i) {{
{loads}
        {{ {operation} }}
    }}
}}
"""

_C = {"float32": ("float", np.float32), "float64": ("double", np.float64),
      "bool": ("bool", np.bool_), "int64": ("long long", np.int64)}
_libs: dict = {}
_dir: list = []


def _compile(code: str):
    """The shared library of ``code`` (compiled once per source in this process)."""
    key = hashlib.sha1(code.encode()).hexdigest()[:16]
    if key not in _libs:
        if not _dir:
            _dir.append(Path(tempfile.mkdtemp(prefix="tx-host-cuda-")))
        cxx = shutil.which("g++") or shutil.which("c++")
        src, lib = _dir[0] / f"{key}.cpp", _dir[0] / f"{key}.so"
        src.write_text(code)
        out = subprocess.run([cxx, "-std=c++20", "-O1", "-shared", "-fPIC", "-pthread", "-o",
                              str(lib), str(src)], capture_output=True, text=True, timeout=600)
        if out.returncode:
            raise RuntimeError(f"host CUDA compile failed:\n{out.stderr[-4000:]}")
        _libs[key] = ctypes.CDLL(str(lib))
    return _libs[key]


def _host(a):
    """The stand-in array's host storage (written in place for outputs)."""
    host = a._a
    assert host.flags.c_contiguous, "a kernel argument must be C-contiguous"
    return host


class RawKernel:
    """``cupy.RawKernel(code, name)`` run on the host: ``kernel(grid, block, args)``."""

    def __init__(self, code, name, options=()):
        m = re.search(r'extern "C" __global__ void ' + re.escape(name) + r"\((.*?)\)\s*\{",
                      code, re.S)
        assert m, f"no kernel {name} in the source"
        self.params = [p.strip().rsplit(None, 1)[0] for p in m.group(1).split(",")]
        args = ", ".join(f"*({t}*)args[{j}]" for j, t in enumerate(self.params))
        self.lib = _compile(_SHIM + code + _LAUNCH.format(name=name, args=args))
        self.launches = []

    def __call__(self, grid, block, args):
        assert len(args) == len(self.params), (len(args), self.params)
        assert block[0] % 32 == 0 and 0 < block[0] <= 1024, block
        slots = []
        for t, a in zip(self.params, args):
            if "*" in t:
                slots.append(ctypes.c_void_p(_host(a).ctypes.data))
            elif t == "long long":
                assert isinstance(a, np.int64), (t, type(a))
                slots.append(ctypes.c_longlong(int(a)))
            elif t == "double":
                slots.append(ctypes.c_double(float(a)))
            else:
                raise TypeError(f"no host form of a {t} argument")
        ptrs = (ctypes.c_void_p * len(slots))(*[ctypes.cast(ctypes.pointer(s), ctypes.c_void_p)
                                               for s in slots])
        self.launches.append((tuple(grid), tuple(block)))
        self.lib.tx_host_launch(ctypes.c_uint(grid[0]), ctypes.c_uint(block[0]), ptrs)


class ElementwiseKernel:
    """``cupy.ElementwiseKernel`` run on the host: the inputs broadcast to the outputs' shape
    (the callers pass every output), the operation per element."""

    def __init__(self, in_params, out_params, operation, name, preamble=""):
        def parse(spec):
            return [p.split() for p in spec.split(",")] if spec else []

        self.ins, self.outs = parse(in_params), parse(out_params)
        loads = [f"        const {_C[t][0]} {n} = ((const {_C[t][0]}*)args[{j}])[i];"
                 for j, (t, n) in enumerate(self.ins)]
        loads += [f"        {_C[t][0]} &{n} = (({_C[t][0]}*)args[{j + len(self.ins)}])[i];"
                  for j, (t, n) in enumerate(self.outs)]
        self.lib = _compile(_SHIM + preamble + _ELEMENTWISE.format(
            loads="\n".join(loads), operation=operation))

    def __call__(self, *args):
        ins, outs = args[:len(self.ins)], args[len(self.ins):]
        assert len(outs) == len(self.outs), "the callers pass every output"
        shape = outs[0].shape
        hosts = [np.ascontiguousarray(np.broadcast_to(
            a._a if hasattr(a, "_a") else np.asarray(a), shape), dtype=_C[t][1])
            for a, (t, _) in zip(ins, self.ins)]
        hosts += [_host(o) for o in outs]
        ptrs = (ctypes.c_void_p * len(hosts))(*[h.ctypes.data for h in hosts])
        self.lib.tx_host_elementwise(ctypes.c_longlong(int(np.prod(shape))), ptrs)


class HostCuda:
    """``tensorix.backend`` for tensorix._compile.kernels, with CUDA C run on the host;
    ``raw`` lists the RawKernels it made."""

    def __init__(self, backend):
        self._backend, self.raw, self.elementwise = backend, [], []

    def __getattr__(self, name):
        return getattr(self._backend, name)

    def cuda_kernels_available(self):
        return True

    def raw_kernel(self, code, name, options=("--std=c++17",)):
        self.raw.append(RawKernel(code, name, options))
        return self.raw[-1]

    def elementwise_kernel(self, in_params, out_params, operation, name, preamble=""):
        self.elementwise.append(ElementwiseKernel(in_params, out_params, operation, name,
                                                  preamble))
        return self.elementwise[-1]
