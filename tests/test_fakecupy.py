"""The CuPy stand-in (tensorix/fakecupy/): the CuPy rules it enforces, its counters,
its runtime, and the backend hook that puts it under the device "cuda"."""

import os
import subprocess
import sys

import numpy as np
import pytest

import tensorix as tx
from tensorix import backend, fakecupy, kernels
from tensorix.fakecupy import api as fakecupy_api
from tensorix.fakecupy import cupy as cp

IMPLICIT = "Implicit conversion to a NumPy array is not allowed"
REFUSED = "called on a device array"
UNSUPPORTED = "Unsupported type <class 'numpy.ndarray'>"


@pytest.fixture
def d():
    fakecupy.reset_counts()
    return cp.asarray(np.arange(6.0).reshape(2, 3))


def test_device_arrays_are_their_own_type(d):
    assert isinstance(d, cp.ndarray) and not isinstance(d, np.ndarray)
    assert d.shape == (2, 3) and d.dtype == np.float64 and d.ndim == 2 and d.size == 6
    assert d.strides == (24, 8) and d.nbytes == 48 and d.device.id == 0
    assert d.flags.c_contiguous and d.flags["C_CONTIGUOUS"]
    with pytest.raises(AttributeError):
        d.flags.writeable  # noqa: B018 - CuPy's flags have no writeable
    assert cp.get_array_module(d) is cp and cp.get_array_module(np.ones(1)) is np


@pytest.mark.parametrize("convert", [np.asarray, np.array, lambda a: np.zeros(3) + a.T[0],
                                     lambda a: np.float64(1.0) * np.ones(2) + a[0]])
def test_implicit_conversion_to_numpy_raises(d, convert):
    with pytest.raises(TypeError, match=IMPLICIT + "|" + UNSUPPORTED + "|" + REFUSED):
        convert(d)


@pytest.mark.parametrize("call", [lambda a: np.exp(a), lambda a: np.sum(a),
                                  lambda a: np.concatenate([a, a]), lambda a: np.add.at(a, 0, 1),
                                  lambda a: np.linalg.norm(a), lambda a: np.where(a > 1, a, 0)])
def test_numpy_functions_on_device_arrays_raise(d, call):
    with pytest.raises(TypeError, match=REFUSED):
        call(d)


@pytest.mark.parametrize("call", [lambda a, h: a + h, lambda a, h: h * a, lambda a, h: a @ h.T,
                                  lambda a, h: cp.add(a, h), lambda a, h: cp.maximum(h, a),
                                  lambda a, h: cp.concatenate([a, h]),
                                  lambda a, h: cp.where(a > 1, a, h), lambda a, h: a + [1, 2, 3]])
def test_host_arrays_mixed_with_device_arrays_raise(d, call):
    with pytest.raises(TypeError, match="Unsupported type"):
        call(d, np.ones((2, 3)))


def test_scalars_mix_freely(d):
    for r in (d * 2, 2.5 + d, d / np.float32(2), np.int64(1) << cp.ones(3, dtype=np.int64),
              cp.maximum(d, 1), d > np.float64(2)):
        assert isinstance(r, cp.ndarray)
    assert np.array_equal((np.float64(2) * d).get(), np.arange(6.0).reshape(2, 3) * 2)


def test_only_what_cupy_has(d):
    for name in ("errstate", "seterr", "geomspace", "block", "spacing", "vecdot"):
        assert hasattr(np, name) and not hasattr(cp, name), name
    assert [n for n in fakecupy_api.FUNCTIONS if not hasattr(cp, n)] == []
    assert all(hasattr(cp.linalg, n) for n, v in fakecupy_api.LINALG.items() if v != "value")
    with pytest.raises(NotImplementedError, match="reduce for cupy_maximum"):
        cp.maximum.reduce(d)
    with pytest.raises(NotImplementedError, match="at for cupy_multiply"):
        cp.multiply.at(d, 0, 2.0)
    assert float(cp.add.reduce(d, axis=None)) == 15.0
    with pytest.raises(TypeError, match="unexpected keyword argument 'initial'"):
        cp.max(d, initial=0.0)
    with pytest.raises(TypeError, match="unexpected keyword argument 'initial'"):
        d.max(initial=0.0)
    with pytest.raises(TypeError, match="CuPy ufuncs take only out, dtype and casting"):
        cp.exp(d, where=d > 1)
    with pytest.raises(TypeError, match="unexpected keyword argument 'writeable'"):
        cp.lib.stride_tricks.as_strided(d, (2,), (8,), writeable=False)
    bf = cp.ones(2, dtype="bfloat16")
    assert cp.exp(bf).dtype == bf.dtype
    with pytest.raises(TypeError, match="Wrong type.*bfloat16.*cupy_logical_not"):
        cp.logical_not(bf)
    with pytest.raises(TypeError, match="'ndarray' object cannot be interpreted as an integer"):
        range(cp.asarray(3))  # CuPy arrays have no __index__


def test_reductions_and_items_are_0d_device_arrays(d):
    for r in (d.sum(), cp.max(d), d[1, 2], d.argmax(), cp.linalg.norm(d), cp.allclose(d, d),
              next(iter(d[0]))):
        assert isinstance(r, cp.ndarray) and r.shape == (), type(r)
    assert fakecupy.counts() == {"h2d": 1, "d2h": 0, "sync": 0}


def test_transfers_are_counted(d):
    fakecupy.reset_counts()
    cp.zeros(3), cp.full((), 0.5), cp.arange(4), cp.ones_like(d), d * 0.5
    assert fakecupy.counts() == {"h2d": 0, "d2h": 0, "sync": 0}  # made on the device
    cp.asarray([1.0]), cp.array(np.ones(2)), d[np.array([0, 1])], d.set(np.ones((2, 3)))
    d[[0, 1], 0] = np.zeros(2)
    assert fakecupy.counts()["h2d"] == 6  # index list + host value: CuPy copies both
    float(d[0, 0]), int(d[0, 0]), bool(d[0, 0]), d.item(0), d.get(), cp.asnumpy(d)
    d.tolist(), f"{d[0, 0]:.2f}", repr(d)
    assert fakecupy.counts()["d2h"] == 9
    cp.nonzero(d), d[d > 0.5], cp.unique(d), d.nonzero()
    assert fakecupy.counts()["sync"] == 4
    assert np.array_equal(cp.asnumpy(d), d.get()) and cp.asnumpy(np.ones(1)).shape == (1,)


def test_where_notes_the_callers_line(d):
    notes = fakecupy.where()
    try:
        float(d.sum())
    finally:
        fakecupy.where(False)
    ((kind, line), n), = notes.items()
    assert kind == "d2h" and "test_fakecupy.py" in line and n == 1


def test_no_cuda_c_and_no_kernels():
    assert fakecupy.RUNS_CUDA_C is False
    for name in ("ElementwiseKernel", "RawKernel", "ReductionKernel", "RawModule"):
        with pytest.raises(NotImplementedError, match="cannot compile or run CUDA C"):
            getattr(cp, name)("T x", "T y", "y = x", "k")
    with backend.fake_cuda():
        assert not backend.cuda_kernels_available()
        assert kernels.select((kernels.cuda.gelu,), tx.device("cuda"), tx.float32) is None
    assert cp.fuse(lambda x: x * 2)(cp.ones(2)).get().tolist() == [2.0, 2.0]


def test_linalg_failures_are_silent_like_cupy():
    for r in (cp.linalg.inv(cp.zeros((2, 2))), cp.linalg.solve(cp.zeros((2, 2)), cp.ones(2)),
              cp.linalg.cholesky(-cp.eye(2))):
        assert not bool(cp.isfinite(r).any())
    assert cp.linalg.LinAlgError is np.linalg.LinAlgError


def test_no_floating_point_warnings(d):
    r = (d - d) / (d - d)  # a GPU computes nan silently; warnings are errors in these tests
    assert bool(cp.isnan(r).all())


def test_runtime_memory_streams_events():
    cuda = cp.cuda
    assert cuda.runtime.getDeviceCount() == 1 and cuda.runtime.getDevice() == 0
    assert cuda.runtime.getDeviceProperties(0)["major"] == 9
    with pytest.raises(cuda.runtime.CUDARuntimeError, match="invalid device ordinal"):
        cuda.Device(1).use()
    with cuda.Device(0):
        pass
    pool = cp.get_default_memory_pool()
    used = pool.used_bytes()
    a = cp.zeros(1000)
    assert pool.used_bytes() == used + 8000
    del a
    assert pool.used_bytes() == used and pool.total_bytes() >= used + 8000
    pool.free_all_blocks()
    assert pool.total_bytes() == used
    calls = []
    cuda.set_allocator(lambda n: calls.append(n) or pool.malloc(n))
    try:
        b = cp.empty(3, dtype=np.float32)
    finally:
        cuda.set_allocator(None)
    assert calls == [12] and b.shape == (3,)
    s = cuda.Stream(non_blocking=True)
    with s:
        assert cuda.get_current_stream() is s
        e1, e2 = cuda.Event(), cuda.Event()
        e1.record(s)
        e2.record(s)
    assert cuda.get_current_stream() is cuda.Stream.null and s.done
    assert cuda.get_elapsed_time(e1, e2) >= 0
    with pytest.raises(cuda.runtime.CUDARuntimeError):
        cuda.get_elapsed_time(cuda.Event(disable_timing=True), e2)


def test_dlpack_stays_inside_the_stand_in(d):
    assert d.__dlpack_device__() == (2, 0)
    assert cp.from_dlpack(d)._a is d._a
    with pytest.raises(BufferError):
        d.__dlpack__()
    with pytest.raises(TypeError, match="CuPy imports CUDA memory only"):
        cp.from_dlpack(np.ones(2))


@pytest.mark.skipif(backend.fake_cuda_active(), reason="TENSORIX_FAKE_CUDA is set")
def test_backend_hook_is_scoped():
    assert not backend.fake_cuda_active()
    with backend.fake_cuda():
        assert backend.fake_cuda_active() and tx.cuda.is_available()
        x = tx.ones(2, device="cuda")
        assert isinstance(x._data, cp.ndarray) and x.device == tx.device("cuda:0")
        with backend.fake_cuda(False):
            assert not backend.fake_cuda_active()
    assert not backend.fake_cuda_active()


def test_environment_switch_runs_cuda_on_the_stand_in():
    code = ("import tensorix as tx; x = tx.ones(2, device='cuda') * 2; "
            "print(type(x._data).__module__, x.device, tx.backend.cuda_kernels_available())")
    env = dict(os.environ, TENSORIX_FAKE_CUDA="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120, cwd=os.path.dirname(os.path.dirname(__file__)))
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["tensorix.fakecupy", "cuda:0", "False"]


STORAGE_ONLY = ("float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu", "float6_e3m2fn",
                "float6_e2m3fn", "float4_e2m1fn")


@pytest.mark.parametrize("name", STORAGE_ONLY)
def test_storage_only_dtypes_are_refused_like_cupy(name):
    # CuPy 14.2 has no fp8/fp6/fp4/E8M0 arrays (docs/specs/numerics.md, R8): every way of making one
    # raises, so tensorix must keep those formats as uint8 codes on the device
    ml_dtypes = pytest.importorskip("ml_dtypes")
    fmt = np.dtype(getattr(ml_dtypes, name))
    host = np.zeros(3, dtype=fmt)
    codes = cp.zeros(3, dtype=np.uint8)
    for make in (lambda: cp.zeros(3, dtype=fmt), lambda: cp.empty((2, 2), fmt),
                 lambda: cp.full((2,), 1.0, dtype=fmt), lambda: cp.asarray(host),
                 lambda: cp.array(host), lambda: cp.array([1.0], dtype=fmt),
                 lambda: cp.asarray(cp.ones(3), dtype=fmt), lambda: codes.view(fmt),
                 lambda: cp.ones(3).astype(fmt), lambda: cp.ndarray((2,), fmt),
                 lambda: cp.add(cp.ones(2), 1.0, dtype=fmt)):
        with pytest.raises(ValueError, match=f"Unsupported dtype {name}"):
            make()


def test_bfloat16_and_uint8_codes_stay_supported():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    b = cp.asarray(np.ones(3, dtype=ml_dtypes.bfloat16))
    assert b.dtype == ml_dtypes.bfloat16 and (b + b).dtype == ml_dtypes.bfloat16
    codes = cp.asarray(np.array([1.0, -2.0], ml_dtypes.float8_e4m3fn).view(np.uint8))
    assert codes.dtype == np.uint8 and codes.get().tolist() == [0x38, 0xC0]
