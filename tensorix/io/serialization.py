"""``tensorix.save`` / ``tensorix.load`` (also reachable as ``tensorix.serialization``, like
``torch.serialization``): state dicts, NumPy arrays and whole training checkpoints in
safetensors, with no pickle.

A flat ``{str: Tensor}`` dict is written as a plain safetensors file that any safetensors
reader can open. Anything else (an optimizer state dict, a checkpoint of model + optimizer +
scheduler + step + RNG state, a NumPy array, a tuple of numbers) is flattened: each tensor or
array gets a path name (``optim/state/0/exp_avg``) and the rest of the structure is stored as
JSON in the header metadata under ``tensorix.structure``, with every type kept: tuples stay
tuples, int keys stay ints, an OrderedDict stays one, NumPy arrays and scalars come back as
NumPy, tensors keep ``requires_grad`` and their Parameter mark, and one tensor stored twice
comes back as one tensor.

Since nothing is ever unpickled, ``weights_only`` and the safe-globals allow-list of torch
are accepted for compatibility and change nothing: loading is always as safe as
``weights_only=True`` and never needs an allow-list.
"""

from __future__ import annotations

import json
import os
from collections import Counter, OrderedDict

import numpy as np

from ..backend import Device
from ..tensor import TENSOR_KINDS, Tensor, _copy_kinds, _make
from .safetensors import CheckpointError, _label, _read, as_tensor_array, write_safetensors

__all__ = ["save", "load", "CheckpointError", "add_safe_globals", "get_safe_globals",
           "clear_safe_globals", "safe_globals"]

_KEY = "tensorix.structure"
_MAX_DEPTH = 100  # nesting levels; far beyond any real checkpoint, well within the stack
_SCALARS = (type(None), bool, int, float, str)
# Counter: MultiStepLR's state_dict keeps its milestones in one, as torch's does
_DICTS = {dict: "__dict__", OrderedDict: "__odict__", Counter: "__counter__"}
_DICT_KINDS = {kind: cls for cls, kind in _DICTS.items()}
_SEQS = {list: "__list__", tuple: "__tuple__"}


def _where(keys) -> str:
    return "".join(f"[{k!r}]" for k in keys) or "<root>"


class _Flattener:
    """Turns an object into a JSON-able structure plus ``{name: ndarray}``; each tensor or
    array is named by its path, and two paths that would give one name are refused."""

    def __init__(self):
        self.arrays, self.owner, self.memo = {}, {}, {}

    def _store(self, obj, keys, to_array) -> str:
        """The name ``obj``'s data is stored under: its path, or its first path when the
        same object comes again (stored once, loaded back as one object)."""
        if id(obj) in self.memo:
            return self.memo[id(obj)][1]
        name = "/".join(str(k) for k in keys) if keys else "tensor"
        if name in self.arrays:
            raise ValueError(f"save(): {_where(self.owner[name])} and {_where(keys)} would "
                             f"both be stored as {name!r} (a key containing '/', or an int key "
                             "beside the same number as a string); rename one of them")
        self.memo[id(obj)] = (obj, name)  # keep obj alive so its id stays unique
        self.owner[name] = list(keys)
        self.arrays[name] = to_array(obj)
        return name

    def node(self, obj, keys):
        if len(keys) > _MAX_DEPTH:
            raise ValueError(f"save(): the object is nested more than {_MAX_DEPTH} levels deep "
                             f"at {_where(keys[:5])}... (or contains itself)")
        if isinstance(obj, Tensor):
            out = {"__tensor__": self._store(obj, keys, Tensor.__array__),
                   "requires_grad": obj.requires_grad}
            kinds = [n for n, (test, _) in TENSOR_KINDS.items() if test(obj)]
            return {**out, "kinds": kinds} if kinds else out
        if isinstance(obj, (np.ndarray, np.generic)):  # before the scalars: np.float64 is a float
            out = {"__ndarray__": self._store(obj, keys, np.asarray)}
            if isinstance(obj, np.generic):
                out["scalar"] = True
            if obj.dtype.byteorder == ">":
                out["big_endian"] = True
            return out
        if type(obj) in _DICTS:
            return {_DICTS[type(obj)]: [self._item(k, v, keys) for k, v in obj.items()]}
        if type(obj) in _SEQS:
            return {_SEQS[type(obj)]: [self.node(v, keys + [i]) for i, v in enumerate(obj)]}
        if type(obj) in _SCALARS:
            return obj
        if type(obj) is complex:
            return {"__complex__": [obj.real, obj.imag]}
        raise TypeError(_unsavable(obj, keys))

    def _item(self, k, v, keys):
        if type(k) not in _SCALARS:
            raise TypeError(f"save(): dict keys must be str, int, float, bool or None, got "
                            f"{k!r} at {_where(keys)}")
        return [k, self.node(v, keys + [k])]


def _unsavable(obj, keys) -> str:
    kind = type(obj).__name__
    if callable(getattr(obj, "state_dict", None)):
        return (f"save(): cannot store a whole {kind} object at {_where(keys)}: tensorix "
                "saves no pickled objects. Save its state instead, "
                "tensorix.save(model.state_dict(), path), and restore it into a freshly built "
                "object with model.load_state_dict(tensorix.load(path))")
    return (f"save(): cannot store a {kind} at {_where(keys)} (tensors, NumPy arrays and "
            "scalars, numbers, strings, None, and lists, tuples, dicts, OrderedDicts and "
            "Counters of them; no pickle)")


def _is_flat(obj) -> bool:
    """A plain ``{str: Tensor}`` dict that a plain safetensors file holds with nothing lost."""
    return (type(obj) is dict and bool(obj)
            and all(type(k) is str and type(v) is Tensor and not v.requires_grad and
                    not any(test(v) for test, _ in TENSOR_KINDS.values())
                    for k, v in obj.items())
            and len({id(v) for v in obj.values()}) == len(obj))


def save(obj, f, pickle_module=None, pickle_protocol=None,
         _use_new_zipfile_serialization=True, _disable_byteorder_record=False) -> None:
    """Save ``obj`` to the path ``f`` (atomically) or to a binary file object, as safetensors.

    ``obj`` is a tensor, a NumPy array or scalar, a number, string or None, or any nesting of
    lists, tuples, dicts and OrderedDicts of them (dict keys: str, int, float, bool, None).
    Input that cannot be stored exactly is refused before anything is written: two keys that
    would name the same tensor (``{"a/b": t, "a": {"b": t2}}``, ``{1: t, "1": t2}``), a
    tensor named ``__metadata__``, a whole ``nn.Module`` (save its ``state_dict()``).
    torch's pickle arguments are accepted and ignored (nothing is pickled).

    Example::

        tensorix.save(model.state_dict(), "model.safetensors")
        tensorix.save({"model": model.state_dict(), "optim": opt.state_dict(), "step": 100,
                       "rng": tensorix.get_rng_state()}, "ckpt.safetensors")
    """
    if _is_flat(obj):
        write_safetensors(f, {k: v.__array__() for k, v in obj.items()})
        return
    flat = _Flattener()
    structure = flat.node(obj, [])
    write_safetensors(f, flat.arrays, {_KEY: json.dumps(structure)})


# -- loading ---------------------------------------------------------------------------------
def _placement(map_location):
    """``map_location`` as a function Tensor -> Tensor (None: stay on the CPU). Tensors load
    onto the CPU first, so a dict maps from ``"cpu"`` and a callable gets ``(tensor, "cpu")``,
    as torch calls it with ``(storage, location)``."""
    if map_location is None:
        return None
    if isinstance(map_location, dict):
        target = map_location.get("cpu")
        return None if target is None else _placement(target)
    if isinstance(map_location, (str, Device)) or hasattr(map_location, "type"):
        device = Device(str(map_location))  # also a torch.device; bad names fail here, early
        return lambda t: t if t.device == device else t.to(device)
    if callable(map_location):
        def call(t):
            out = map_location(t, "cpu")
            if out is None:
                return t
            if not isinstance(out, Tensor):
                raise TypeError(f"load(): map_location returned a {type(out).__name__}; "
                                "expected a Tensor")
            return out
        return call
    raise TypeError(f"load(): map_location must be a device, a string such as 'cpu', a dict "
                    f"or a callable, got {map_location!r}")


class _Reader:
    """Rebuilds what :class:`_Flattener` wrote, checking every node: a damaged record is a
    :class:`CheckpointError`, never a KeyError deep inside."""

    def __init__(self, arrays, path, place):
        self.arrays, self.path, self.place, self.made = arrays, path, place, {}

    def bad(self, why):
        return CheckpointError(f"load(): {self.path} has a structure record that does not "
                               f"match its tensors ({why})")

    def array(self, node, key):
        name = node.get(key)
        if not isinstance(name, str) or name not in self.arrays:
            raise self.bad(f"no tensor named {str(name)[:100]!r}")
        return name, self.arrays[name]

    def tensor(self, node):
        name, arr = self.array(node, "__tensor__")
        rg, kinds = node.get("requires_grad", False), node.get("kinds", [])
        if type(rg) is not bool or not isinstance(kinds, list) or not all(
                isinstance(k, str) and k.startswith("tensorix.") for k in kinds):
            raise self.bad(f"bad flags for tensor {name!r}")
        if ("t", name) not in self.made:
            t = _make(as_tensor_array(arr, name, self.path))
            t = self.place(t) if self.place else t
            if rg:
                t.requires_grad_()
            try:  # marks such as nn.Parameter, by name; only tensorix's own modules are imported
                _copy_kinds(None, t, kinds)
            except (ImportError, KeyError, ValueError):
                raise self.bad(f"unknown tensor kind in {kinds}") from None
            self.made["t", name] = t
        return self.made["t", name]

    def ndarray(self, node):
        name, arr = self.array(node, "__ndarray__")
        scalar, big = node.get("scalar", False), node.get("big_endian", False)
        if type(scalar) is not bool or type(big) is not bool or (scalar and arr.ndim):
            raise self.bad(f"bad flags for array {name!r}")
        if big:
            arr = arr.astype(arr.dtype.newbyteorder(">"))
        return arr[()] if scalar else arr

    def node(self, node, depth=0):
        if type(node) in _SCALARS:
            return node
        if depth > _MAX_DEPTH or type(node) is not dict or len(node) > 4:
            raise self.bad(f"unexpected {type(node).__name__} node at depth {depth}")
        if "__tensor__" in node:
            return self.tensor(node)
        if "__ndarray__" in node:
            return self.ndarray(node)
        if len(node) != 1:
            raise self.bad(f"unknown node {str(node)[:100]}")
        (kind, body), = node.items()
        if not isinstance(body, list):
            raise self.bad(f"{kind} holds a {type(body).__name__}")
        if kind in _DICT_KINDS:
            if not all(isinstance(i, list) and len(i) == 2 and type(i[0]) in _SCALARS
                       for i in body):
                raise self.bad(f"malformed {kind} items")
            made = _DICT_KINDS[kind]({k: self.node(v, depth + 1) for k, v in body})
            if len(made) != len(body):
                raise self.bad(f"repeated keys in a {kind}")
            return made
        if kind in ("__list__", "__tuple__"):
            items = [self.node(v, depth + 1) for v in body]
            return items if kind == "__list__" else tuple(items)
        if kind == "__complex__" and len(body) == 2 and all(
                type(v) in (int, float) for v in body):
            return complex(*body)
        raise self.bad(f"unknown node {str(node)[:100]}")


_PICKLE_ARGS = {"encoding", "errors", "fix_imports", "buffers"}


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None,
         **pickle_load_args):
    """Load what :func:`save` wrote, or any safetensors file as ``{name: Tensor}``, from a
    path or a binary file object.

    Tensors load onto the CPU, or where ``map_location`` says: ``"cpu"``, ``"cuda:0"``, a
    device (tensorix's or torch's), a dict ``{"cpu": target}``, or a callable
    ``(tensor, "cpu") -> tensor``. ``weights_only`` (True or False), ``mmap``,
    ``pickle_module`` and pickle's keyword arguments are accepted as torch's programs pass
    them and change nothing: no pickle is ever read, so every load is weights-only safe.
    Raises :class:`CheckpointError` naming the file for anything truncated or corrupted.

    Example::

        state = tensorix.load("model.safetensors", map_location="cpu")
        model.load_state_dict(state)
    """
    unknown = set(pickle_load_args) - _PICKLE_ARGS
    if unknown:
        raise TypeError(f"load() got an unexpected keyword argument {sorted(unknown)[0]!r}")
    for arg, value in (("weights_only", weights_only), ("mmap", mmap)):
        if value is not None and type(value) is not bool:
            raise TypeError(f"load(): {arg} must be True, False or None, got {value!r}")
    place = _placement(map_location)
    if not hasattr(f, "read") and not os.path.exists(os.fspath(f)):
        raise FileNotFoundError(f"load(): no such file: {f}")
    arrays, metadata = _read(f)
    path = _label(f)
    if _KEY not in metadata:
        out = {k: _make(as_tensor_array(a, k, path)) for k, a in arrays.items()}
        return {k: place(v) for k, v in out.items()} if place else out
    try:
        structure = json.loads(metadata[_KEY])
    except (ValueError, RecursionError) as e:
        raise CheckpointError(f"load(): {path} has a corrupted structure record "
                              f"({type(e).__name__})") from None
    return _Reader(arrays, path, place).node(structure)


# -- torch.serialization's allow-list, for programs written for torch --------------------------
_SAFE_GLOBALS: list = []


def add_safe_globals(safe_globals: list) -> None:
    """Record ``safe_globals`` (classes or functions, or ``(obj, name)`` pairs) as torch's
    ``torch.serialization.add_safe_globals`` does. tensorix never unpickles, so no load needs
    them: they are kept only so that :func:`get_safe_globals` answers as torch's does.

    Example::

        tensorix.serialization.add_safe_globals([MyConfig])
    """
    if not isinstance(safe_globals, (list, tuple)):
        raise TypeError(f"add_safe_globals(): expected a list, got "
                        f"{type(safe_globals).__name__}")
    _SAFE_GLOBALS.extend(safe_globals)


def get_safe_globals() -> list:
    """The entries recorded by :func:`add_safe_globals` (a copy)."""
    return list(_SAFE_GLOBALS)


def clear_safe_globals() -> None:
    """Forget every entry recorded by :func:`add_safe_globals`."""
    _SAFE_GLOBALS.clear()


class safe_globals:
    """Context manager adding ``safe_globals`` to the allow-list for its block, as torch's
    ``torch.serialization.safe_globals``; with tensorix it changes no load (nothing is
    unpickled).

    Example::

        with tensorix.serialization.safe_globals([MyConfig]):
            state = tensorix.load("ckpt.safetensors", weights_only=True)
    """

    def __init__(self, safe_globals: list):
        if not isinstance(safe_globals, (list, tuple)):
            raise TypeError(f"safe_globals(): expected a list, got "
                            f"{type(safe_globals).__name__}")
        self.safe_globals = list(safe_globals)

    def __enter__(self):
        self._before = list(_SAFE_GLOBALS)
        _SAFE_GLOBALS.extend(self.safe_globals)
        return self

    def __exit__(self, *exc):
        _SAFE_GLOBALS[:] = self._before
        return False
