"""The Tensor facade: storage, autograd metadata and thin methods.

A Tensor wraps one backend array (``numpy.ndarray`` or ``cupy.ndarray``); views are backend
views, so they share memory exactly as NumPy does, and they share a version counter with the
tensor they view. Math methods are one-line delegations installed from the op families
(``ops/*.py`` each exports ``TENSOR_METHODS``); this file holds only what is about the tensor
itself: metadata, conversion, interop, autograd entry points and the repr.
"""

from __future__ import annotations

import numpy as np

from . import backend
from . import dtypes as _dt
from ._repr import tensor_repr
from .autograd.grad_mode import modes as _modes

__all__ = ["Tensor", "Size"]

# Turning Python data (nested lists, scalars, foreign arrays) into storage is the creation ops'
# work, a layer up; ops/creation.py hands its converter and unpickler down with
# register_creation() as it loads (``import tensorix`` loads it), so the facade imports nothing
# above itself.
_CREATION: dict = {}


def _sizes(t) -> tuple:
    """The sizes Python sees: the array's shape, or symbolic ints (int subclasses that record
    the comparisons Python makes as guards) while ``tensorix.export`` traces dynamic dims."""
    state = _modes.state
    if state.hooked:
        sizes = getattr(state.tracer, "sizes", None)
        if sizes is not None:
            return sizes(t)
    return t._data.shape


def register_creation(to_array, rebuild) -> None:
    """Install the converter ``to_array(data, dtype) -> array`` behind ``Tensor(data)`` and the
    unpickler ``rebuild`` that ``Tensor.__reduce__`` names (both from ops/creation.py)."""
    _CREATION.update(to_array=to_array, rebuild=rebuild)


class Size(tuple):
    """The shape of a tensor: a tuple with ``numel()`` (like ``torch.Size``)."""

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n

    def __repr__(self):
        return f"tensorix.Size({list(self)})"


class Tensor:
    """An n-d array with autograd. Make one with :func:`tensorix.tensor` and friends.

    Example::

        >>> x = tensorix.tensor([1.0, 2.0], requires_grad=True)
        >>> (x * x).sum().backward(); x.grad
        tensor([2., 4.])
    """

    # every Tensor sets all of these in _init (the per-op cost): keep the list short. The one
    # exception, _base_fn (the base's grad_fn when a view's own grad_fn was made), is set with
    # _base, only on views, and read only where _base is not None; likewise _post_acc_hooks
    # (register_post_accumulate_grad_hook) exists only once set, read with getattr.
    __slots__ = ("_data", "_dtype", "_rg", "grad", "grad_fn", "_output_nr", "_version", "_base",
                 "_base_fn", "_hooks", "_retains_grad", "_post_acc_hooks", "__weakref__")
    __array_priority__ = 1000  # make numpy defer to our reflected operators

    def __init__(self, data, dtype=None, requires_grad=False):
        arr = _CREATION["to_array"](data, dtype)
        _init(self, arr, _dt.from_numpy_dtype(arr.dtype))
        if requires_grad:
            self.requires_grad_(True)

    # -- metadata ------------------------------------------------------------------------------
    @property
    def shape(self) -> Size:
        return Size(_sizes(self))

    def size(self, dim=None):
        """The shape, or the length of dimension ``dim``."""
        if dim is None:
            return Size(_sizes(self))
        return _sizes(self)[_dim(dim, self._data.ndim, "size")]

    @property
    def dtype(self) -> _dt.dtype:
        return self._dtype

    @property
    def device(self) -> backend.Device:
        return backend.get_device(self._data)

    @property
    def xp(self):
        """The array module of this tensor's storage: ``numpy``, or ``cupy`` for a CUDA tensor.

        Example: ``x.xp.exp(x._data)`` computes on the tensor's own device."""
        data = self._data
        return np if type(data) is np.ndarray else backend.array_module(data)

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def dim(self) -> int:
        return self._data.ndim

    ndimension = dim

    def numel(self) -> int:
        if _modes.state.hooked:  # symbolic sizes under export: the product stays symbolic
            return Size(_sizes(self)).numel()
        return int(self._data.size)

    nelement = numel

    def element_size(self) -> int:
        return self._dtype.itemsize

    @property
    def itemsize(self) -> int:
        return self._dtype.itemsize

    @property
    def nbytes(self) -> int:
        return int(self._data.nbytes)

    def stride(self, dim=None):
        """Strides in elements, like PyTorch (NumPy's are in bytes)."""
        st = tuple(s // self._dtype.itemsize for s in self._data.strides)
        return st if dim is None else st[_dim(dim, self._data.ndim, "stride")]

    def storage_offset(self) -> int:
        base, kind = self._data, type(self._data)  # numpy or cupy: both keep .base chains
        while isinstance(base.base, kind):
            base = base.base
        if base is self._data:
            return 0
        return (backend.data_ptr(self._data) - backend.data_ptr(base)) // self._dtype.itemsize

    def is_contiguous(self, memory_format=None) -> bool:
        return bool(self._data.flags.c_contiguous)

    def is_floating_point(self) -> bool:
        return self._dtype.is_floating_point

    def is_complex(self) -> bool:
        return self._dtype.is_complex

    @property
    def _version_value(self) -> int:
        return self._version[0]

    # -- autograd ------------------------------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        return self._rg

    @requires_grad.setter
    def requires_grad(self, value):
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Set ``requires_grad`` in place (leaves only; floating and complex dtypes only)."""
        if requires_grad and self._dtype.category < 2:
            raise RuntimeError(f"requires_grad_: only floating point and complex tensors can "
                               f"require gradients, got dtype {self._dtype.name}")
        if not requires_grad and self.grad_fn is not None:
            raise RuntimeError("requires_grad_: you can only change requires_grad of leaf "
                               "tensors; use detach() for a non-leaf")
        self._rg = bool(requires_grad)
        return self

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def data(self) -> Tensor:
        """A detached alias of this tensor (same memory, no history)."""
        return _make(self._data, self._dtype)

    @data.setter
    def data(self, value):
        if not isinstance(value, Tensor):
            raise TypeError(f"Tensor.data: expected a Tensor, got {type(value).__name__}")
        self._data, self._dtype = value._data, value._dtype

    @property
    def retains_grad(self) -> bool:
        return bool(self._retains_grad)

    def detach(self) -> Tensor:
        """A new tensor sharing memory (and the version counter), outside the graph."""
        t = _make(self._data, self._dtype)
        t._version = self._version
        return t

    def detach_(self) -> Tensor:
        """Detach this tensor from the graph in place (it becomes a leaf)."""
        if self._base is not None and self.grad_fn is not None:
            raise RuntimeError("detach_: can't detach views in-place; use detach() instead")
        self.grad_fn, self._rg, self._output_nr = None, False, 0
        return self

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Accumulate d(self)/d(leaf) into each leaf's ``.grad`` (see autograd.backward)."""
        from .autograd.engine import backward

        backward([self], None if gradient is None else [gradient], retain_graph, create_graph,
                 inputs=inputs)

    def register_hook(self, hook):
        """Call ``hook(grad)`` on this tensor's gradient; a returned Tensor replaces it."""
        if not self._rg:
            raise RuntimeError("register_hook: cannot register a hook on a tensor that "
                               "doesn't require gradient")
        if self.grad_fn is not None:
            return self.grad_fn._register_tensor_hook(self._output_nr, hook)
        if self._hooks is None:
            self._hooks = []
        self._hooks.append(hook)
        return _Handle(self._hooks, hook)

    def retain_grad(self) -> None:
        """Keep ``.grad`` on a non-leaf after backward (leaves always keep theirs)."""
        if self.grad_fn is None:
            if not self._rg:
                raise RuntimeError("retain_grad: can't retain_grad on a tensor that has "
                                   "requires_grad=False")
            return
        if self._retains_grad:
            return
        import weakref

        ref = weakref.ref(self)

        def _retain(g):
            t = ref()
            if t is not None:
                # a copy: g may be the very array another tensor's gradient holds
                g = _make(g._data.copy(), g._dtype)
                t.grad = g if t.grad is None else t.grad.detach() + g

        _retain._retains_grad = True  # the engine runs it after the user's hooks
        self.grad_fn._register_tensor_hook(self._output_nr, _retain, last=True)
        self._retains_grad = True

    # -- conversion and interop ----------------------------------------------------------------
    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The data as a NumPy array, sharing memory on the CPU."""
        if _modes.state.tracer is not None:  # graph capture: Python reads data (tensorix.fx)
            _modes.state.tracer.read(self, "numpy()")
        if self._rg and not force:
            raise RuntimeError("numpy: can't call numpy() on a tensor that requires grad; use "
                               "tensor.detach().numpy()")
        if self.device.type != "cpu":
            if not force:
                raise TypeError(f"numpy: can't convert {self.device} tensor to numpy; use "
                                ".cpu() first")
            return _to_host(self)
        return self._data

    def __array__(self, dtype=None, copy=None):
        """NumPy's conversion hook: shares memory on the CPU unless ``dtype`` or ``copy=True``
        needs a copy (``copy=False`` raises when one is needed, as NumPy 2 asks)."""
        if _modes.state.tracer is not None:  # graph capture: Python reads data (tensorix.fx)
            _modes.state.tracer.read(self, "__array__")
        host = type(self._data) is np.ndarray
        convert = dtype is not None and np.dtype(dtype) != self._data.dtype
        if copy is False and (convert or not host):
            raise ValueError(f"__array__: copy=False but converting this {self.device} "
                             f"{self._dtype.name} tensor needs a copy")
        arr = self._data if host else _to_host(self)
        if convert:
            return arr.astype(dtype)
        return arr.copy() if copy and host else arr

    def item(self):
        """The value of a one-element tensor as a Python number."""
        if _modes.state.tracer is not None:  # graph capture: Python reads data (tensorix.fx)
            _modes.state.tracer.read(self, "item()/bool()")
        if self._data.size != 1:
            raise RuntimeError(f"item: a Tensor with {self._data.size} elements cannot be "
                               "converted to a Python scalar")
        data = self._data if type(self._data) is np.ndarray or not self._dtype.storage_only \
            else _to_host(self)  # CUDA codes (uint8): decode on the host
        v = data.reshape(()).item() if self._dtype.np.kind in "biufc" else \
            float(data.reshape(()).astype(np.float32))
        return v

    def tolist(self):
        arr = self.__array__()
        if self._dtype.low_precision:
            arr = arr.astype(np.float32)
        return arr.tolist()

    def __dlpack__(self, stream=None, **kwargs):
        """Export for ``from_dlpack`` consumers (NumPy, torch, CuPy, JAX), sharing memory;
        ``max_version``/``dl_device``/``copy`` are passed on to the array module."""
        if self._rg:
            raise RuntimeError("__dlpack__: can't export a tensor that requires grad; use "
                               "tensor.detach()")
        if self._dtype.low_precision:
            raise BufferError(f"__dlpack__: dtype {self._dtype.name} has no DLPack code in "
                              "NumPy; cast it first")
        kwargs = {k: v for k, v in kwargs.items() if v is not None}
        if stream is not None:
            kwargs["stream"] = stream
        try:
            return self._data.__dlpack__(**kwargs)
        except TypeError:  # an array module without the versioned (max_version) protocol
            return self._data.__dlpack__(**({"stream": stream} if stream is not None else {}))

    def __dlpack_device__(self):
        return self._data.__dlpack_device__()

    def data_ptr(self) -> int:
        """The address of the first element (equal for tensors viewing the same memory)."""
        return backend.data_ptr(self._data)

    def __deepcopy__(self, memo):
        """A leaf copy keeping dtype, device, ``requires_grad`` and a copy of ``.grad``."""
        if self.grad_fn is not None:
            raise RuntimeError("deepcopy: only tensors created explicitly by the user (graph "
                               "leaves) support the deepcopy protocol; detach() it first")
        if id(self) in memo:
            return memo[id(self)]
        new = _make(self._data.copy(), self._dtype)
        new._rg = self._rg
        _copy_kinds(self, new)
        memo[id(self)] = new
        if self.grad is not None:
            new.grad = self.grad.__deepcopy__(memo)
        return new

    def __reduce__(self):
        kinds = tuple(name for name, (test, _) in TENSOR_KINDS.items() if test(self))
        return (_CREATION["rebuild"], (self.__array__().copy(), self._dtype.name, self._rg,
                           str(self.device), kinds))

    def __len__(self):
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        # len() must return a plain int: a symbolic size is fixed by an equality guard
        return int(_sizes(self)[0])

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._data.shape[0]))

    def __bool__(self):
        if self._data.size != 1:
            raise RuntimeError(f"bool: boolean value of Tensor with {self._data.size} values "
                               "is ambiguous")
        return bool(self.item())

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __complex__(self):
        return complex(self.item())

    def __index__(self):
        if self._dtype.category != 1 or self._data.size != 1:
            raise TypeError("__index__: only integer tensors of a single element can be "
                            "converted to an index")
        return int(self.item())

    def __hash__(self):
        return id(self)

    def __repr__(self):
        return tensor_repr(self)

    def __format__(self, spec):
        if self._data.ndim == 0:
            return format(self.item(), spec)
        return repr(self)


class _Handle:
    """Returned by register_hook; ``remove()`` takes the hook off."""

    def __init__(self, hooks, hook):
        self._hooks, self._hook = hooks, hook

    def remove(self):
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)


# Marks that upper layers put on plain tensors (nn.Parameter is one), by name: (test(t),
# "module:function" that marks a tensor). deepcopy and pickle carry them over; the marker is
# named by path so that unpickling in a fresh process can import it.
TENSOR_KINDS: dict = {}


def _copy_kinds(src, dst, kinds=None):
    import importlib

    for name in (kinds if kinds is not None else
                 [n for n, (test, _) in TENSOR_KINDS.items() if test(src)]):
        if name not in TENSOR_KINDS:  # a fresh process: the marker's module registers on import
            importlib.import_module(name.rpartition(".")[0])
        mod, _, fn = TENSOR_KINDS[name][1].partition(":")
        getattr(importlib.import_module(mod), fn)(dst)


def _to_host(t):
    """t's data copied to the host, the storage-only formats' CUDA codes (uint8) viewed as
    their ml_dtypes dtype again."""
    arr = backend.to_device(t._data, backend.cpu)
    return arr.view(t._dtype.np) if t._dtype.storage_only else arr


def _init(t, data, dtype):
    t._data = data
    t._dtype = dtype
    t._rg = False
    t.grad = None
    t.grad_fn = None
    t._output_nr = 0
    t._version = [0]
    t._base = None
    t._hooks = None
    t._retains_grad = False


_ndarray = np.ndarray
_by_np = _dt._BY_NP


# set once the process makes a tensor of uint8 codes on a device (a storage-only dtype there):
# until then Function.apply skips the storage-code check (autograd/dispatch.py)
_codes_seen = [False]


def _note_codes():
    # imported here: autograd imports this module, and this runs once per process at most
    from .autograd.grad_mode import codes_exist

    _codes_seen[0] = True
    codes_exist()


def _make(data, dtype=None) -> Tensor:
    """Wrap a backend array without copying (the fast path every op output takes)."""
    if type(data) is not _ndarray:
        data = backend.array_module(data).asarray(data)
        if dtype is not None and dtype.storage_only and not _codes_seen[0]:
            _note_codes()
    t = Tensor.__new__(Tensor)
    _init(t, data, dtype if dtype is not None else _by_np[data.dtype])
    return t


def _wrap(raw) -> Tensor:
    """An op's forward result as a fresh Tensor (a Tensor result is aliased, never reused)."""
    if type(raw) is Tensor:
        t = _make(raw._data, raw._dtype)
        t._version = raw._version
        return t
    return _make(raw)


def _dim(dim, ndim, op):
    """Normalise a possibly negative ``dim`` for an op, with PyTorch's error message."""
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"{op}: dimension out of range (expected to be in range of "
                         f"[{-n}, {n - 1}], but got {dim})")
    return dim % n
