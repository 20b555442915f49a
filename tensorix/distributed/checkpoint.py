"""Sharded checkpoints of FSDP models: one safetensors file per rank and an index.

``save(model, checkpoint_id, optimizer=None)`` has every rank write the part of each parameter
that its flat shard holds (and the same part of the optimizer's per-element state) to
``shard-RRRRR-of-NNNNN.safetensors`` in the folder ``checkpoint_id``; rank 0 writes the buffers
and ``index.json``, which maps every parameter to its pieces: ``[file, key, start, end]`` over
its flattened values, and names every rank's file. Each file is written atomically; a reader
refuses a folder whose index names a file that is not there yet.

``async_save`` is ``save`` with the writing in a background thread: the shards are copied to
host memory and the metadata exchanged at the call, and a Future says when the files are down.

``load(model, checkpoint_id, optimizer=None)`` fills an FSDP model of ANY world size (and
wrap policy) from those pieces: each rank reads only the files that hold its range.
``consolidate(checkpoint_id, path)`` writes the whole model as one safetensors file, loadable
by a plain module (``tensorix.load`` + ``load_state_dict``), without MPI.

Example::

    dcp.save(fsdp_model, "ckpt/step100", optimizer=opt)      # every rank calls
    dcp.load(fsdp_model_on_8_ranks, "ckpt/step100", optimizer=opt8)
    dcp.consolidate("ckpt/step100", "model.safetensors")
"""

from __future__ import annotations

import json
import os
import threading
from concurrent.futures import Future

import numpy as np

from ..io._atomic import atomic_write
from ..io.safetensors import CheckpointError, read_safetensors, write_safetensors
from ..tensor import _make
from . import _c10d
from ._collectives import barrier
from ._objects import all_gather_object
from .fsdp._fsdp import FullyShardedDataParallel, _clean

__all__ = ["save", "async_save", "load", "consolidate"]

INDEX = "index.json"


def _check(model, op):
    if not isinstance(model, FullyShardedDataParallel):
        raise TypeError(f"distributed.checkpoint.{op}(): expected a FullyShardedDataParallel "
                        f"model (got {type(model).__name__}); save a plain model with "
                        "tensorix.save")


def _pieces(model):
    """Per parameter of ``model``'s units: (unit, its names (a tied one has several), shape,
    [lo, hi) of its flattened values that this rank's shard holds or None, the shard offset
    of lo)."""
    names = {}
    for unit, name, shape, o, n in model._specs():
        names.setdefault((id(unit), o), (unit, [], shape, o, n))[1].append(name)
    for unit, aliases, shape, o, n in names.values():
        lo, hi = unit._handle.range
        a, b = max(o, lo), min(o + n, hi)
        yield unit, aliases, shape, (a - o, b - o) if a < b else None, a - lo


def _flat_state(optimizer, unit):
    """The optimizer's per-element state tensors of ``unit``'s shard, and its other values."""
    if optimizer is None:
        return {}, {}
    st = optimizer.state.get(unit._flat_param, {})
    arrays = {k: np.asarray(v._data) for k, v in st.items()
              if hasattr(v, "_data") and tuple(v.shape) == tuple(unit._flat_param.shape)}
    scalars = {k: (v.item() if hasattr(v, "item") else v) for k, v in st.items()
               if k not in arrays}
    return arrays, scalars


def save(model, checkpoint_id, optimizer=None) -> None:
    """Write the sharded checkpoint of an FSDP ``model`` (and ``optimizer``'s state) to the
    folder ``checkpoint_id``; every rank must call. Returns when every rank's file and the
    index are written."""
    async_save(model, checkpoint_id, optimizer).result()
    barrier(model.process_group)


def async_save(model, checkpoint_id, optimizer=None) -> Future:
    """``save``, with the writing in a background thread: the shards are copied to host
    memory (one copy of this rank's part) and the metadata exchanged now, then training may go
    on while the files are written. ``.result()`` waits for this rank's files (and re-raises a
    write error). Until every rank's file is written, ``load`` refuses the folder as
    incomplete."""
    _check(model, "async_save")
    group = model.process_group
    rank, world = _c10d.get_rank(group), _c10d.get_world_size(group)
    os.makedirs(checkpoint_id, exist_ok=True)
    fname = f"shard-{rank:05d}-of-{world:05d}.safetensors"
    arrays, index, scalars = {}, {}, {}
    for unit, names, shape, span, at in _pieces(model):
        name = names[0]
        state, extra = _flat_state(optimizer, unit)
        if extra:
            scalars[name] = extra
        if span is None:
            continue
        size = span[1] - span[0]
        for kind, flat in [("param", np.asarray(unit._flat_param._data))] + \
                [(f"optim.{k}", v) for k, v in state.items()]:
            key = f"{kind}/{name}@{span[0]}"
            arrays[key] = flat[at:at + size].copy()  # the snapshot: training may go on
            for alias in names if kind == "param" else [name]:
                index.setdefault(f"{kind}/{alias}", {"shape": list(shape), "pieces": []})[
                    "pieces"].append([fname, key, *span])
    if rank == 0:
        for name, b in model.named_buffers():
            arrays[f"buffer/{_clean(name)}"] = np.array(b._data)
            index[f"buffer/{_clean(name)}"] = {"shape": list(b.shape),
                                                "pieces": [[fname, f"buffer/{_clean(name)}", 0,
                                                            int(b.numel())]]}
    everything = [None] * world
    all_gather_object(everything, (index, scalars), group=group)  # collectives stay here
    body = _index_body(everything, world) if rank == 0 else None

    def write():
        write_safetensors(os.path.join(checkpoint_id, fname), arrays)
        if body is not None:  # the index last: it names every rank's file
            atomic_write(os.path.join(checkpoint_id, INDEX), [body],
                         "distributed.checkpoint.save")

    future = Future()

    def run():
        try:
            write()
        except BaseException as e:  # noqa: BLE001 - handed to whoever waits on the future
            future.set_exception(e)
        else:
            future.set_result(None)

    threading.Thread(target=run, name="tensorix-async-save", daemon=False).start()
    return future


def _index_body(everything, world):
    merged, extras = {}, {}
    for part, extra in everything:
        extras.update(extra)
        for name, entry in part.items():
            merged.setdefault(name, {"shape": entry["shape"], "pieces": []})["pieces"] += \
                entry["pieces"]
    files = [f"shard-{r:05d}-of-{world:05d}.safetensors" for r in range(world)]
    return json.dumps({"world_size": world, "files": files, "tensors": merged,
                       "optimizer": extras}, indent=1, sort_keys=True).encode()


def _read_index(checkpoint_id):
    path = os.path.join(checkpoint_id, INDEX)
    if not os.path.exists(path):
        raise CheckpointError(f"distributed.checkpoint: {path} not found (an interrupted save "
                              "leaves no index: the folder is not a complete checkpoint)")
    with open(path) as fh:
        index = json.load(fh)
    missing = [f for f in index.get("files", []) if not os.path.exists(
        os.path.join(checkpoint_id, f))]
    if missing:
        raise CheckpointError(f"distributed.checkpoint: {checkpoint_id} is incomplete: "
                              f"{missing} not written yet (an async_save still running, or a "
                              "rank that died while writing)")
    return index


class _Files:
    """Read each shard file at most once."""

    def __init__(self, folder):
        self.folder, self.cache = folder, {}

    def __call__(self, fname, key):
        if fname not in self.cache:
            self.cache[fname] = read_safetensors(os.path.join(self.folder, fname))[0]
        return self.cache[fname][key]


def _assemble(entry, files, lo, hi, dtype):
    """Values [lo, hi) of a tensor's flattened values, from the pieces that cover them."""
    out = np.zeros(hi - lo, dtype)
    covered = 0
    for fname, key, a, b in entry["pieces"]:
        s, e = max(a, lo), min(b, hi)
        if s < e:
            out[s - lo:e - lo] = files(fname, key)[s - a:e - a]
            covered += e - s
    if covered != hi - lo:
        raise CheckpointError(f"distributed.checkpoint: the pieces cover {covered} of the "
                              f"{hi - lo} values needed")
    return out


def load(model, checkpoint_id, optimizer=None) -> None:
    """Fill an FSDP ``model`` (any world size) and ``optimizer`` from a sharded checkpoint;
    every rank must call."""
    _check(model, "load")
    index = _read_index(checkpoint_id)
    tensors, files = index["tensors"], _Files(checkpoint_id)
    for unit, names, shape, span, at in _pieces(model):
        name = names[0]
        entry = tensors.get(f"param/{name}")
        if entry is None or tuple(entry["shape"]) != tuple(shape):
            raise CheckpointError(f"distributed.checkpoint.load(): parameter {name} of shape "
                                  f"{tuple(shape)} is not in the checkpoint "
                                  f"(found {entry and tuple(entry['shape'])})")
        flat = np.asarray(unit._flat_param._data)
        if span is not None:
            flat[at:at + span[1] - span[0]] = _assemble(entry, files, *span, flat.dtype)
        if optimizer is not None:
            _load_state(optimizer, unit, name, span, at, tensors, files, index["optimizer"])
    for name, b in model.named_buffers():
        entry = tensors.get(f"buffer/{_clean(name)}")
        if entry is not None:
            b._data[...] = _assemble(entry, files, 0, int(b.numel()), b._data.dtype).reshape(
                b._data.shape)


def _load_state(optimizer, unit, name, span, at, tensors, files, scalars):
    p = unit._flat_param
    st = optimizer.state[p]
    for key, value in scalars.get(name, {}).items():
        st[key] = value
    for full_key, entry in tensors.items():
        prefix = "optim."
        if not full_key.startswith(prefix) or not full_key.endswith(f"/{name}"):
            continue
        k = full_key[len(prefix):-len(name) - 1]
        if k not in st:
            st[k] = _make(np.zeros(p._data.shape, p._data.dtype))
        if span is not None:
            st[k]._data[at:at + span[1] - span[0]] = _assemble(entry, files, *span,
                                                               p._data.dtype)


def consolidate(checkpoint_id, path) -> None:
    """Write the model of a sharded checkpoint as one safetensors file (no MPI needed):
    ``{name: full tensor}`` with the plain module's names, buffers included."""
    index = _read_index(checkpoint_id)
    files, out = _Files(checkpoint_id), {}
    for key, entry in index["tensors"].items():
        kind, name = key.split("/", 1)
        if kind not in ("param", "buffer"):
            continue
        fname, first = entry["pieces"][0][:2]
        dtype = files(fname, first).dtype
        n = int(np.prod(entry["shape"], dtype=np.int64))
        out[name] = _assemble(entry, files, 0, n, dtype).reshape(entry["shape"])
    write_safetensors(path, out)
