"""A CuPy stand-in that runs on the CPU, for testing the device "cuda" without a GPU.

``fakecupy.cupy`` is a module object with real CuPy's names (``api.py``, generated
from CuPy 14 by ``gen.py``) whose arrays live in host memory but obey the rules of
device arrays that CPU code breaks most often:

- ``fakecupy.ndarray`` is its own type, not a ``numpy.ndarray``: ``numpy.asarray(d)``,
  ``numpy.array(d)`` and any implicit conversion raise CuPy's TypeError; a NumPy function or
  ufunc called on a device array raises (stricter than CuPy, which forwards some of them to
  itself: tensorix's rule is ``xp``, never ``np``, on data); a NumPy array mixed with device
  arrays in a ufunc, an operator or a namespace function raises CuPy's "Unsupported type";
  Python and NumPy scalars are fine, as in CuPy.
- only what CuPy has: a name CuPy lacks (``cupy.errstate``, ``maximum.reduce``, ``initial=``
  on ``max``, ``where=`` on ufuncs, a bfloat16 loop of ``logical_not``, ...) raises
  AttributeError / NotImplementedError / TypeError as CuPy does.
- reductions and ``x[i]`` give 0-d device arrays, never NumPy scalars; ``float``, ``int``,
  ``bool``, ``.item()``, ``.get()``, ``.tolist()``, ``asnumpy`` and ``repr`` are
  device-to-host copies, ``asarray``/``array`` of host data and host index arrays are
  host-to-device copies, and ``nonzero``-like calls (data-dependent shapes) synchronise:
  all three are counted (:func:`counts`, :func:`reset_counts`).
- it cannot run CUDA C: ``ElementwiseKernel``, ``RawKernel``, ``ReductionKernel`` and
  ``RawModule`` raise NotImplementedError (:data:`RUNS_CUDA_C` is False), so the kernel layer
  keeps its generic ``xp`` paths on it.
- ``linalg.inv/solve/cholesky`` of a singular input give non-finite values instead of raising
  (CuPy's default ``linalg='ignore'``), and nothing warns about inf/nan (a GPU does not).

What it cannot check: real kernels (compilation, launch geometry), performance, cuBLAS /
cuSOLVER numerics (TF32, reduction order), asynchrony and streams (everything here is
synchronous). The runtime part (``cupy.cuda``: devices, streams, events, memory pools) is in
``runtime.py``. tensorix reaches it only through ``tensorix.backend`` (env
``TENSORIX_FAKE_CUDA=1`` or ``backend.fake_cuda()``); it imports nothing from tensorix.
"""

from __future__ import annotations

import traceback
import types

import numpy as np

from . import api as _api
from . import runtime as _cuda

__all__ = ["cupy", "ndarray", "counts", "reset_counts", "where", "RUNS_CUDA_C"]

RUNS_CUDA_C = False  # the kernel layer asks this (through backend) and keeps its xp paths
_COUNTS = {"h2d": 0, "d2h": 0, "sync": 0}


def _count(kind):
    _COUNTS[kind] += 1
    if _WHERE is not None:  # where(): note the caller outside the stand-in
        frame = traceback.extract_stack(limit=12)[:-2]
        outer = [f for f in frame if "tensorix/fakecupy/" not in f.filename.replace("\\", "/")]
        f = outer[-1] if outer else frame[-1]
        key = (kind, f"{f.filename.rsplit('tensorix/', 1)[-1]}:{f.lineno} {f.name}")
        _WHERE[key] = _WHERE.get(key, 0) + 1


_WHERE = None


def where(enabled: bool = True) -> dict | None:
    """Start noting which line of the caller each counted transfer comes from (the dict it
    returns fills as they happen: {(kind, 'file:line function'): count}); ``False`` stops."""
    global _WHERE
    _WHERE = {} if enabled else None
    return _WHERE


def counts() -> dict:
    """Host-to-device copies, device-to-host copies and data-dependent synchronisations since
    the last :func:`reset_counts`."""
    return dict(_COUNTS)


def reset_counts() -> None:
    for k in _COUNTS:
        _COUNTS[k] = 0


def _unsupported(x, where):
    return TypeError(f"Unsupported type {type(x)} (CuPy stand-in: a host {type(x).__name__} "
                     f"reached {where} with device arrays; move it with xp.asarray or keep "
                     "the computation on one device)")


def _numpy_refused(what):
    return TypeError(f"{what} called on a device array: NumPy cannot compute on CuPy arrays "
                     "(CuPy stand-in: ask the array's module, xp = backend.array_module(a))")


_IMPLICIT = ("Implicit conversion to a NumPy array is not allowed. Please use `.get()` to "
             "construct a NumPy array explicitly.")


def _new(a):
    """Wrap a host array as a device array (no copy); new storage is taken from the pool."""
    if _refused(a.dtype):
        raise _unsupported_dtype(a.dtype)
    out = object.__new__(ndarray)
    out._a = a
    if a.base is None:
        _cuda.allocate(a)
    return out


def _refused(dtype):
    # user-defined NumPy dtypes (numbers >= 256: all of ml_dtypes; float8_e5m2 even has kind
    # "f"), object and void: none is a CuPy dtype but ml_dtypes' bfloat16
    return (dtype.num >= 256 or dtype.kind in "OV") and dtype != _BF16


def _unsupported_dtype(dtype):
    """CuPy 14 has no float8/float6/float4/E8M0 (nor object, nor other ml_dtypes) arrays: every
    way of making one (creation, asarray of such a host array, astype, view) raises this. Only
    bfloat16 of ml_dtypes is a CuPy dtype (docs/specs/numerics.md, R8 and section 8)."""
    return ValueError(f"Unsupported dtype {dtype}")


def _wrap(r):
    t = type(r)
    if t is np.ndarray:
        return _new(r)
    if isinstance(r, np.generic):  # CuPy gives 0-d arrays where NumPy gives scalars
        return _new(np.asarray(r))
    if isinstance(r, (tuple, list)):
        return (tuple if isinstance(r, tuple) else list)(_wrap(e) for e in r)
    return r


def _unwrap(x, where, host_ok=False):
    """Device arrays -> their storage; host arrays refused (or, where CuPy copies them, e.g.
    index arrays, counted as a host-to-device copy); lists and tuples walked."""
    t = type(x)
    if t is ndarray:
        return x._a
    if t is np.ndarray:
        if not host_ok:
            raise _unsupported(x, where)
        _count("h2d")
        return x
    if t is list or t is tuple:
        return t(_unwrap(e, where, host_ok) for e in x)
    return x


def _scalar_operand(x, where):
    """A ufunc or operator operand: a device array or a scalar (CuPy refuses the rest)."""
    t = type(x)
    if t is ndarray:
        return x._a
    if t in (int, float, bool, complex) or isinstance(x, np.generic) or x is None:
        return x
    raise _unsupported(x, where)


def _check_call(name, params, args, kwargs):
    """Refuse what CuPy's signature refuses (unknown keywords, too many positionals)."""
    if params is None or "**" in params:
        return
    if "*" not in params and len(args) > len(params):
        raise TypeError(f"{name}() takes at most {len(params)} positional arguments "
                        f"({len(args)} given) in CuPy")
    for k in kwargs:
        if k not in params:
            raise TypeError(f"{name}() got an unexpected keyword argument '{k}' (CuPy's "
                            f"{name} takes {', '.join(p for p in params if p[0] != '*')})")


def _call(fn, args, kwargs):
    with np.errstate(all="ignore"):  # a GPU computes inf and nan silently
        return fn(*args, **kwargs)


# -- ufuncs ----------------------------------------------------------------------------------

_NO_BF16 = frozenset(_api.NO_BF16_UFUNCS)
try:
    import ml_dtypes

    _BF16 = np.dtype(ml_dtypes.bfloat16)
except ImportError:  # no bfloat16 arrays at all then
    _BF16 = None

class ufunc:
    """A CuPy ufunc over NumPy's: scalars and device arrays only; ``out``, ``dtype`` and
    ``casting`` keywords only; the methods CuPy implements for it only."""

    _KW = frozenset(("out", "dtype", "casting"))

    def __init__(self, name, nin, nout, methods):
        self._np, self.__name__, self.name = getattr(np, name), name, f"cupy_{name}"
        self.nin, self.nout, self._methods = nin, nout, frozenset(methods)

    @property
    def types(self):
        return self._np.types

    def __repr__(self):
        return f"<ufunc '{self.name}'>"

    def __call__(self, *args, **kwargs):
        for k in kwargs:
            if k not in self._KW:
                raise TypeError(f"Wrong arguments {kwargs} ({self.__name__}: CuPy ufuncs take "
                                "only out, dtype and casting)")
        a = [_scalar_operand(x, f"cupy.{self.__name__}") for x in args]
        if self.__name__ in _NO_BF16 and any(getattr(x, "dtype", None) == _BF16 for x in a):
            raise TypeError(f"Wrong type ((dtype('bfloat16'),)) of arguments for {self.name} "
                            "(CuPy has no bfloat16 loop for it)")
        if "out" in kwargs:
            kwargs = dict(kwargs, out=_unwrap(kwargs["out"], self.__name__))
        return _wrap(_call(self._np, a, kwargs))

    def _method(self, method, args, kwargs):
        if method not in self._methods:
            raise NotImplementedError(f"{method} for {self.name} is not supported (CuPy)")
        a = _unwrap(list(args), f"cupy.{self.__name__}.{method}")
        k = {key: _unwrap(v, self.__name__) for key, v in kwargs.items()}
        return _wrap(_call(getattr(self._np, method), a, k))

    def reduce(self, *args, **kwargs):
        return self._method("reduce", args, kwargs)

    def accumulate(self, *args, **kwargs):
        return self._method("accumulate", args, kwargs)

    def reduceat(self, *args, **kwargs):
        return self._method("reduceat", args, kwargs)

    def outer(self, *args, **kwargs):
        return self._method("outer", args, kwargs)

    def at(self, a, indices, b=None):
        if "at" not in self._methods:
            raise NotImplementedError(f"at for {self.name} is not supported (CuPy)")
        if type(a) is not ndarray:
            raise _unsupported(a, f"cupy.{self.__name__}.at")
        idx = _unwrap(indices, f"cupy.{self.__name__}.at", host_ok=True)
        args = (a._a, idx) if b is None else (a._a, idx, _scalar_operand(b, self.__name__))
        _call(self._np.at, args, {})


# -- the array -------------------------------------------------------------------------------

class _Flags:
    """CuPy's flags: contiguity and ownership only (no ``writeable``: device arrays are)."""

    __slots__ = ("c_contiguous", "f_contiguous", "owndata")

    def __init__(self, a):
        f = a.flags
        self.c_contiguous, self.f_contiguous, self.owndata = (f.c_contiguous, f.f_contiguous,
                                                              f.owndata)

    def __getitem__(self, key):
        return {"C_CONTIGUOUS": self.c_contiguous, "F_CONTIGUOUS": self.f_contiguous,
                "OWNDATA": self.owndata}[key]


class ndarray:
    """A device array of the stand-in: host storage (``_a``) behind CuPy's interface."""

    __slots__ = ("_a", "__weakref__")
    __array_priority__ = 100  # as CuPy: operands with a higher priority get the reflected op
    __hash__ = None

    def __init__(self, shape, dtype=float, memptr=None, strides=None, order="C"):
        if memptr is not None or strides is not None:
            raise NotImplementedError("ndarray(memptr=, strides=) is not emulated")
        if _refused(np.dtype(dtype)):
            raise _unsupported_dtype(np.dtype(dtype))
        self._a = np.empty(shape, dtype, order=order)
        _cuda.allocate(self._a)

    # the conversions CuPy refuses
    def __array__(self, *args, **kwargs):
        raise TypeError(_IMPLICIT)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        host = [x for x in inputs if type(x) is np.ndarray]
        if method == "__call__" and host:  # ``host_array * d``: CuPy refuses the host array
            raise _unsupported(host[0], f"numpy.{ufunc.__name__}")
        if method == "__call__" and any(isinstance(x, np.generic) for x in inputs):
            # ``np.int64(1) << d``: a NumPy scalar's operator lands here; CuPy computes it
            return getattr(cupy, ufunc.__name__)(*inputs, **kwargs)
        raise _numpy_refused(f"numpy.{ufunc.__name__}" + ("" if method == "__call__"
                                                           else f".{method}"))

    def __array_function__(self, func, types, args, kwargs):
        raise _numpy_refused(f"numpy.{func.__name__}")

    # device -> host (counted)
    def get(self, stream=None, order="C", out=None, blocking=True):
        """A NumPy copy of the data (a device-to-host transfer)."""
        _count("d2h")
        host = np.array(self._a, order=order)
        if out is not None:
            out[...] = host
            return out
        return host

    def set(self, arr, stream=None):
        """Copy the NumPy array ``arr`` into this array (a host-to-device transfer)."""
        if type(arr) is not np.ndarray:
            raise TypeError(f"Only numpy.ndarray can be set to cupy.ndarray, got {type(arr)}")
        _count("h2d")
        self._a[...] = arr

    def item(self, *args):
        _count("d2h")
        return self._a.item(*args)

    def tolist(self):
        _count("d2h")
        return self._a.tolist()

    def tobytes(self, order="C"):
        _count("d2h")
        return self._a.tobytes(order)

    def _host_scalar(self, conv):
        _count("d2h")
        return conv(self._a)

    def __bool__(self):
        return self._host_scalar(bool)

    def __float__(self):
        return self._host_scalar(float)

    def __int__(self):
        return self._host_scalar(int)

    def __complex__(self):
        return self._host_scalar(complex)

    def __format__(self, spec):
        return self._host_scalar(lambda a: (a.item() if a.ndim == 0 else a).__format__(spec))

    def __repr__(self):
        return self._host_scalar(repr)

    def __str__(self):
        return self._host_scalar(str)

    def __reduce__(self):
        return (_from_host, (self.get(),))

    def __copy__(self):
        return _new(self._a.copy())

    def __deepcopy__(self, memo):
        return _new(self._a.copy())

    # metadata (no transfer)
    shape = property(lambda self: self._a.shape)
    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    strides = property(lambda self: self._a.strides)
    itemsize = property(lambda self: self._a.itemsize)
    nbytes = property(lambda self: self._a.nbytes)
    T = property(lambda self: _new(self._a.T))
    mT = property(lambda self: _new(self._a.mT))
    real = property(lambda self: _new(self._a.real))
    imag = property(lambda self: _new(self._a.imag))
    flags = property(lambda self: _Flags(self._a))
    device = property(lambda self: _cuda.Device(0))
    data = property(lambda self: _cuda.MemoryPointer(self._a))

    @property
    def base(self):
        b = self._a.base
        return _new(b) if type(b) is np.ndarray else None

    @property
    def __cuda_array_interface__(self):
        return {"shape": self._a.shape, "typestr": self._a.dtype.str, "version": 3,
                "strides": None if self._a.flags.c_contiguous else self._a.strides,
                "data": (self._a.ctypes.data, False), "descr": self._a.dtype.descr}

    def __dlpack_device__(self):
        return (2, 0)  # kDLCUDA, device 0

    def __dlpack__(self, stream=None, **kwargs):
        raise BufferError("the CuPy stand-in's device arrays can only be exchanged with "
                          "cupy.from_dlpack of the stand-in itself")

    def toDlpack(self):  # noqa: N802 - CuPy's name
        return self.__dlpack__()

    def __len__(self):
        if self._a.ndim == 0:
            raise TypeError("len() of unsized object")
        return len(self._a)

    def __iter__(self):
        if self._a.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self._a.shape[0]))

    def __getitem__(self, key):
        k = _index(key)
        return _wrap(self._a[k])

    def __setitem__(self, key, value):
        k = _index(key)
        v = _unwrap(value, "__setitem__", host_ok=True)
        with np.errstate(all="ignore"):
            self._a[k] = v

    def astype(self, dtype, order="K", casting=None, subok=None, copy=True):
        r = self._a.astype(dtype, order=order, copy=copy)
        return self if r is self._a else _new(r)


def _index(key):
    """An index for the host storage: device arrays unwrapped, host index arrays and lists
    copied to the device (counted), boolean masks synchronise (the result size)."""
    items = key if type(key) is tuple else (key,)
    for k in items:
        if type(k) is ndarray and k._a.dtype == np.bool_ and k._a.ndim:
            _count("sync")
        elif type(k) in (np.ndarray, list):
            _count("h2d")
    if type(key) is tuple:
        return tuple(k._a if type(k) is ndarray else k for k in key)
    return key._a if type(key) is ndarray else key


def _from_host(arr):
    _count("h2d")
    return _new(np.array(arr))


_OPS = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor",
        "lshift", "rshift", "divmod")
_CMP = ("lt", "le", "gt", "ge", "eq", "ne")
_UNARY = ("neg", "pos", "abs", "invert")


def _operand(self, other, name):
    """``other`` for an operator, or None where CuPy defers to its reflected operator."""
    if type(other) is ndarray:
        return other._a
    if type(other) in (int, float, bool, complex) or isinstance(other, np.generic):
        return other
    if type(other) is not np.ndarray and getattr(other, "__array_priority__", 0) > 100:
        return None  # e.g. a tensorix Tensor: its reflected operator runs
    raise _unsupported(other, f"the {name} operator")


def _binary(name, fn, reflected=False, inplace=False):
    def op(self, other):
        o = _operand(self, other, name)
        if o is None:
            return NotImplemented
        with np.errstate(all="ignore"):
            if inplace:
                self._a = fn(self._a, o)  # numpy's in-place operator returns its operand
                return self
            return _wrap(fn(o, self._a) if reflected else fn(self._a, o))
    return op


def _install_operators():
    import operator as opmod

    for short in _OPS:
        fn = divmod if short == "divmod" else getattr(opmod, short if short not in (
            "and", "or") else short + "_")
        setattr(ndarray, f"__{short}__", _binary(short, fn))
        setattr(ndarray, f"__r{short}__", _binary(short, fn, reflected=True))
        if short not in ("matmul", "divmod"):  # CuPy has no __imatmul__
            ifn = getattr(opmod, "i" + short)
            setattr(ndarray, f"__i{short}__", _binary(short, ifn, inplace=True))
    for short in _CMP:
        setattr(ndarray, f"__{short}__", _binary(short, getattr(opmod, short)))
    for short in _UNARY:
        fn = getattr(opmod, short)
        setattr(ndarray, f"__{short}__", lambda self, fn=fn: _wrap(_call(fn, (self._a,), {})))


def _method(name, params):
    def meth(self, *args, **kwargs):
        _check_call(f"ndarray.{name}", params, args, kwargs)
        a = _unwrap(args, f"ndarray.{name}")
        k = {key: _unwrap(v, f"ndarray.{name}") for key, v in kwargs.items()}
        r = _call(getattr(self._a, name), a, k)
        if name == "nonzero":
            _count("sync")
        return _wrap(r)
    meth.__name__ = name
    return meth


def _install_methods():
    for name, params in _api.NDARRAY.items():
        if name in ndarray.__dict__ or params == "attribute":
            continue
        if hasattr(np.ndarray, name):
            setattr(ndarray, name, _method(name, params))
        else:
            setattr(ndarray, name, _cuda.unemulated(f"ndarray.{name}"))


_install_operators()
_install_methods()


# -- the namespace ---------------------------------------------------------------------------

_SYNCS = frozenset(("nonzero", "argwhere", "flatnonzero", "unique", "extract", "compress"))
_TO_ARRAY = frozenset(("array_equal", "array_equiv", "allclose"))  # CuPy: 0-d arrays


def _function(name, fn, params, qual=None):
    qual = qual or f"cupy.{name}"

    def f(*args, **kwargs):
        _check_call(qual, params, args, kwargs)
        a = _unwrap(args, qual)
        k = {key: _unwrap(v, qual) for key, v in kwargs.items()}
        r = _call(fn, a, k)
        if name in _SYNCS or name == "where" and len(args) == 1:
            _count("sync")
        if name in _TO_ARRAY:
            r = np.asarray(r)
        return _wrap(r)
    f.__name__ = f.__qualname__ = name
    return f


def asarray(a, dtype=None, order=None, *, copy=None, blocking=False):
    """Device arrays pass through (cast where asked); anything else is copied to the device."""
    if type(a) is ndarray:
        if dtype is None or np.dtype(dtype) == a._a.dtype:
            return a if not copy else _new(a._a.copy())
        return _new(a._a.astype(dtype))
    return _to_device(a, dtype, order, True if copy else None)


def array(obj, dtype=None, copy=True, order="K", subok=False, ndmin=0, *, blocking=False):
    if type(obj) is ndarray:
        return _new(np.array(obj._a, dtype=dtype, copy=copy, order=order, ndmin=ndmin))
    return _to_device(obj, dtype, order, copy, ndmin)


def _to_device(obj, dtype, order, copy, ndmin=0):
    if isinstance(obj, (list, tuple)) and _has_device(obj):
        host = np.array(_unwrap(obj, "cupy.array"), dtype=dtype, ndmin=ndmin)
        return _new(host)  # stacking device arrays: no transfer
    _count("h2d")
    host = np.array(obj, dtype=dtype, order=order or "K", ndmin=ndmin)
    return _new(host)


def _has_device(obj):
    return any(type(e) is ndarray or isinstance(e, (list, tuple)) and _has_device(e)
               for e in obj)


def asnumpy(a, stream=None, order="C", out=None, *, blocking=True):
    """A NumPy array of ``a``: a device-to-host copy for device arrays."""
    if type(a) is ndarray:
        return a.get(order=order, out=out)
    return np.asarray(a, order=order)


def ascontiguousarray(a, dtype=None):
    if type(a) is not ndarray:
        raise _unsupported(a, "cupy.ascontiguousarray")
    r = np.ascontiguousarray(a._a, dtype=dtype)
    return a if r is a._a else _new(r)


def from_dlpack(x, *, device=None, copy=None):
    if type(x) is ndarray:
        return _new(x._a) if not copy else _new(x._a.copy())
    if getattr(x, "__dlpack_device__", None) is not None and x.__dlpack_device__()[0] == 2:
        raise BufferError("CuPy stand-in: a real CUDA DLPack capsule cannot be read here")
    raise TypeError(f"CuPy stand-in: from_dlpack of a host object ({type(x).__name__}); "
                    "CuPy imports CUDA memory only")


def get_array_module(*args):
    return cupy if any(type(a) is ndarray for a in args) else np


def fuse(*args, **kwargs):
    """CuPy compiles the function into one kernel; here it simply runs (eagerly)."""
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return args[0]
    return lambda fn: fn


def _no_cuda_c(name):
    class Kernel:
        def __init__(self, *args, **kwargs):
            raise NotImplementedError(f"cupy.{name}: the CuPy stand-in cannot compile or run "
                                      "CUDA C; the generic xp path must be used on it")
    Kernel.__name__ = Kernel.__qualname__ = name
    return Kernel


def _linalg_nan(name, fn):
    """CuPy's inv/solve/cholesky do not raise on singular input (cupyx.errstate's default
    linalg='ignore'): the result is non-finite."""
    def f(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except np.linalg.LinAlgError:
            a = _unwrap(args[-1], f"cupy.linalg.{name}")  # solve: the result has b's shape
            return _new(np.full(a.shape, np.nan, dtype=np.result_type(a.dtype, np.float32)))
    f.__name__ = name
    return f


_SPECIAL = {"asarray": asarray, "asanyarray": asarray, "array": array, "asnumpy": asnumpy,
            "ascontiguousarray": ascontiguousarray, "from_dlpack": from_dlpack,
            "fromDlpack": from_dlpack, "get_array_module": get_array_module, "fuse": fuse,
            "ndarray": ndarray, "ufunc": ufunc, "is_available": lambda: True,
            "get_default_memory_pool": _cuda.get_default_memory_pool,
            "get_default_pinned_memory_pool": _cuda.get_default_pinned_memory_pool}
_MODULES = {"linalg": np.linalg, "fft": np.fft}


def _submodule(qual, names, source):
    mod = types.ModuleType(qual)
    for name, params in names.items():
        fn = getattr(source, name, None)
        if params in ("value", "module") or isinstance(fn, type):
            if fn is not None:
                setattr(mod, name, fn)
        elif fn is None:
            setattr(mod, name, _cuda.unemulated(f"{qual}.{name}"))
        else:
            setattr(mod, name, _function(name, fn, params, f"{qual}.{name}"))
    return mod


def _random_module():
    mod = _submodule("cupy.random", {n: p for n, p in _api.RANDOM.items()
                                     if n not in ("RandomState", "default_rng")}, np.random)

    def wrap_rng(rng, qual):
        obj = types.SimpleNamespace()
        for n in dir(rng):
            if not n.startswith("_") and callable(getattr(rng, n)):
                setattr(obj, n, _function(n, getattr(rng, n), None, f"{qual}.{n}"))
        return obj

    mod.RandomState = lambda seed=None: wrap_rng(np.random.RandomState(seed), "RandomState")
    mod.default_rng = lambda seed=None: wrap_rng(np.random.default_rng(seed), "Generator")
    return mod


def _build():
    ns = types.ModuleType("cupy", "The CuPy stand-in (tensorix.fakecupy).")
    for name, (nin, nout, methods) in _api.UFUNCS.items():
        setattr(ns, name, ufunc(name, nin, nout, methods))
    for name, params in _api.FUNCTIONS.items():
        if name in _SPECIAL:
            setattr(ns, name, _SPECIAL[name])
        elif name in ("ElementwiseKernel", "RawKernel", "ReductionKernel", "RawModule"):
            setattr(ns, name, _no_cuda_c(name))
        elif params in ("type", "value"):
            obj = getattr(np, name, None)
            setattr(ns, name, obj if obj is not None else _cuda.unemulated(f"cupy.{name}"))
        elif params != "module":
            fn = getattr(np, name, None)
            setattr(ns, name, _cuda.unemulated(f"cupy.{name}") if fn is None
                    else _function(name, fn, params))
    ns.linalg = _submodule("cupy.linalg", _api.LINALG, np.linalg)
    for name in ("inv", "solve", "cholesky"):
        setattr(ns.linalg, name, _linalg_nan(name, getattr(ns.linalg, name)))
    ns.fft = _submodule("cupy.fft", _api.FFT, np.fft)
    ns.random = _random_module()
    ns.lib = types.ModuleType("cupy.lib")
    ns.lib.stride_tricks = _submodule("cupy.lib.stride_tricks", _api.STRIDE_TRICKS,
                                      np.lib.stride_tricks)
    ns.cuda = _cuda.module(_api.CUDA)
    ns._core = _cuda.core_module()
    for name in ("exceptions", "polynomial", "testing", "typing"):
        setattr(ns, name, _cuda.unemulated_module(f"cupy.{name}"))
    ns.__version__ = f"{_api.CUPY_VERSION}+tensorix-stand-in"
    return ns


cupy = _build()
