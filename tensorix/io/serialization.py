"""``tensorix.save`` / ``tensorix.load``: state dicts and whole training checkpoints in
safetensors, with no pickle.

A flat ``{str: Tensor}`` mapping is written as a plain safetensors file that any safetensors
reader can open. Anything nested (an optimizer state dict, a checkpoint of model + optimizer
+ scheduler + step + RNG state) is flattened: each tensor gets a path name (``optim/state/0/
exp_avg``) and the rest of the structure (numbers, strings, lists, dicts, None) is stored as
JSON in the header metadata under ``tensorix.structure``.
"""

from __future__ import annotations

import json
import os

from ..tensor import Tensor, _make
from .safetensors import CheckpointError, read_safetensors, write_safetensors

__all__ = ["save", "load", "CheckpointError"]

_KEY = "tensorix.structure"


def _flatten(obj, path, arrays):
    """Replace tensors by references into ``arrays``; return a JSON-able structure."""
    if isinstance(obj, Tensor):
        name = "/".join(path) or "tensor"
        arrays[name] = obj.__array__()
        return {"__tensor__": name, "requires_grad": obj.requires_grad}
    if isinstance(obj, dict):
        items = []
        for k, v in obj.items():
            if not isinstance(k, (str, int)) or isinstance(k, bool):
                raise TypeError(f"save(): dict keys must be str or int, got {k!r} at "
                                f"{'/'.join(path) or '<root>'}")
            items.append([k, _flatten(v, path + [str(k)], arrays)])
        return {"__dict__": items}
    if isinstance(obj, (list, tuple)):
        kind = "__list__" if isinstance(obj, list) else "__tuple__"
        return {kind: [_flatten(v, path + [str(i)], arrays) for i, v in enumerate(obj)]}
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    raise TypeError(f"save(): cannot store a {type(obj).__name__} at "
                    f"{'/'.join(path) or '<root>'} (tensors, numbers, strings, None, lists, "
                    "tuples and dicts only; no pickle)")


def _unflatten(node, arrays, device):
    if isinstance(node, dict):
        if "__tensor__" in node:
            t = _make(arrays[node["__tensor__"]])
            if device is not None:
                t = t.to(device)
            return t.requires_grad_() if node.get("requires_grad") else t
        if "__dict__" in node:
            return {k: _unflatten(v, arrays, device) for k, v in node["__dict__"]}
        if "__list__" in node:
            return [_unflatten(v, arrays, device) for v in node["__list__"]]
        if "__tuple__" in node:
            return tuple(_unflatten(v, arrays, device) for v in node["__tuple__"])
    return node


def save(obj, f) -> None:
    """Save a state dict or a nested checkpoint to the path ``f`` (atomically).

    Example::

        tensorix.save(model.state_dict(), "model.safetensors")
        tensorix.save({"model": model.state_dict(), "optim": opt.state_dict(), "step": 100,
                       "rng": tensorix.get_rng_state()}, "ckpt.safetensors")
    """
    if isinstance(obj, dict) and obj and all(isinstance(k, str) and isinstance(v, Tensor)
                                             for k, v in obj.items()):
        write_safetensors(f, {k: v.__array__() for k, v in obj.items()})
        return
    arrays: dict = {}
    structure = _flatten(obj, [], arrays)
    write_safetensors(f, arrays, {_KEY: json.dumps(structure)})


def load(f, map_location=None, weights_only=True):
    """Load what :func:`save` wrote (or any safetensors file, as ``{name: Tensor}``).

    Raises :class:`CheckpointError` for a truncated or corrupted file, naming it.
    """
    if not os.path.exists(os.fspath(f)):
        raise FileNotFoundError(f"load(): no such file: {f}")
    arrays, metadata = read_safetensors(f)
    if _KEY not in metadata:
        out = {k: _make(a) for k, a in arrays.items()}
        return {k: v.to(map_location) for k, v in out.items()} if map_location else out
    try:
        structure = json.loads(metadata[_KEY])
    except json.JSONDecodeError as e:
        raise CheckpointError(f"load(): {f} has a corrupted structure record ({e})") from None
    try:
        return _unflatten(structure, arrays, map_location)
    except (KeyError, TypeError, ValueError) as e:
        raise CheckpointError(f"load(): {f} has a structure record that does not match its "
                              f"tensors ({type(e).__name__}: {e})") from None
