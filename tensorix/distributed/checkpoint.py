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

from .. import backend
from ..io._atomic import atomic_write
from ..io.safetensors import CheckpointError, read_safetensors, write_safetensors
from ..tensor import _make
from . import _c10d
from ._collectives import barrier
from ._objects import all_gather_object
from .fsdp._fsdp import FullyShardedDataParallel
from .fsdp._state_dict import ShardedTensor

__all__ = ["save", "async_save", "load", "consolidate"]

INDEX = "index.json"


def _check(model, op):
    if not isinstance(model, FullyShardedDataParallel):
        raise TypeError(f"distributed.checkpoint.{op}(): expected a state dict or a "
                        f"FullyShardedDataParallel model (got {type(model).__name__}); save a "
                        "plain model with tensorix.save")


def _save_group(model):
    """The ranks that write: all of them (HYBRID_SHARD's process_group is a (shard,
    replicate) pair; the replicas' pieces are written once, see ``_owned``)."""
    return None if isinstance(model.process_group, tuple) else model.process_group


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


def save(model, checkpoint_id, optimizer=None, process_group=None) -> None:
    """Write the sharded checkpoint of an FSDP ``model`` (and ``optimizer``'s state), or of
    a state dict (torch's ``dcp.save(state_dict, checkpoint_id=...)``: nested dicts whose
    leaves are ShardedTensors, tensors or plain values), to the folder ``checkpoint_id``;
    every rank must call. Returns when every rank's file and the index are written."""
    async_save(model, checkpoint_id, optimizer, process_group).result()
    barrier(process_group if isinstance(model, dict) else _save_group(model))


def async_save(model, checkpoint_id, optimizer=None, process_group=None) -> Future:
    """``save``, with the writing in a background thread: the shards are copied to host
    memory (one copy of this rank's part) and the metadata exchanged now, then training may go
    on while the files are written. ``.result()`` waits for this rank's files (and re-raises a
    write error). Until every rank's file is written, ``load`` refuses the folder as
    incomplete."""
    if isinstance(model, dict):
        return _save_state_dict(model, checkpoint_id, process_group)
    _check(model, "async_save")
    group = _save_group(model)
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
            key = f"buffer/{model.state_key(name)}"
            arrays[key] = np.array(b._data)
            index[key] = {"shape": list(b.shape), "pieces": [[fname, key, 0, int(b.numel())]]}
    everything = [None] * world
    all_gather_object(everything, (index, scalars), group=group)  # collectives stay here
    everything = [(_owned(everything, r), extra) for r, (_, extra) in enumerate(everything)]
    keep = {key for entry in everything[rank][0].values() for _, key, *_ in entry["pieces"]}
    arrays = {k: v for k, v in arrays.items() if k in keep}
    body = _index_body(everything, world) if rank == 0 else None
    return _write_in_background(checkpoint_id, fname, arrays, body)


def _owned(everything, rank):
    """Rank ``rank``'s index entries, less the pieces that a lower rank holds too (the
    replicas of HYBRID_SHARD, tensors every rank holds): each range is written once."""
    first = {}
    for r, (part, _) in enumerate(everything):
        for name, entry in part.items():
            for piece in entry["pieces"]:
                first.setdefault((name, piece[2], piece[3]), r)
    part = everything[rank][0]
    return {name: {**entry, "pieces": [p for p in entry["pieces"]
                                       if first[(name, p[2], p[3])] == rank]}
            for name, entry in part.items()}


def _write_in_background(checkpoint_id, fname, arrays, body) -> Future:
    """Write this rank's file, then (rank 0, ``body``) the index, in a thread."""
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


def _index_body(everything, world, extra_fields=None):
    merged, extras = {}, {}
    for part, extra in everything:
        extras.update(extra)
        for name, entry in part.items():
            merged.setdefault(name, {"shape": entry["shape"], "pieces": []})["pieces"] += \
                entry["pieces"]
    files = [f"shard-{r:05d}-of-{world:05d}.safetensors" for r in range(world)]
    body = {"world_size": world, "files": files, "tensors": merged, "optimizer": extras}
    return json.dumps({**body, **(extra_fields or {})}, indent=1, sort_keys=True).encode()


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


def load(model, checkpoint_id, optimizer=None, process_group=None) -> None:
    """Fill an FSDP ``model`` (any world size) and ``optimizer`` from a sharded checkpoint,
    or a state dict in place (torch's ``dcp.load(state_dict, checkpoint_id=...)``: each
    ShardedTensor gets the values of its range, whatever world size saved them); every rank
    must call."""
    if isinstance(model, dict):
        return _load_state_dict(model, checkpoint_id)
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
        entry = tensors.get(f"buffer/{model.state_key(name)}")
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
    ``{name: full tensor}`` with the plain module's names, buffers included. A checkpoint of
    a state dict gives every tensor, named by its path with dots (``model.fc.weight``)."""
    index = _read_index(checkpoint_id)
    files, out = _Files(checkpoint_id), {}
    whole = index.get("kind") == "state_dict"
    for key, entry in index["tensors"].items():
        kind, name = key.split("/", 1) if "/" in key else ("", key)
        if whole:
            name = key.replace("/", ".")
        elif kind not in ("param", "buffer"):
            continue
        if not entry["pieces"]:
            continue  # an empty tensor
        fname, first = entry["pieces"][0][:2]
        dtype = files(fname, first).dtype
        n = int(np.prod(entry["shape"], dtype=np.int64))
        out[name] = _assemble(entry, files, 0, n, dtype).reshape(entry["shape"])
    write_safetensors(path, out)


# -- state dicts (torch's dcp.save / dcp.load of {"model": ..., "optim": ...}) ---------------
def _leaves(tree, path=()):
    """(path, value) of every leaf of nested dicts, in order."""
    for key, value in tree.items():
        if isinstance(value, dict) and value:
            yield from _leaves(value, path + (str(key),))
        else:
            yield path + (str(key),), value


def _key(path):
    return "/".join(path)  # names hold dots (FQNs); "/" keeps the levels apart


def _save_state_dict(state_dict, checkpoint_id, group) -> Future:
    """Each rank writes its ShardedTensor pieces and the tensors no lower rank holds; rank 0
    writes the plain values (JSON) and the index."""
    rank, world = _c10d.get_rank(group), _c10d.get_world_size(group)
    os.makedirs(checkpoint_id, exist_ok=True)
    fname = f"shard-{rank:05d}-of-{world:05d}.safetensors"
    arrays, index, objects = {}, {}, {}
    for path, value in _leaves(state_dict):
        name = _key(path)
        if isinstance(value, ShardedTensor):
            local = np.array(backend.to_device(value.local_tensor().detach()._data,
                                               backend.cpu)).reshape(-1)
            start, shape = value.offset, value.shape
        elif hasattr(value, "_data"):
            local = np.array(backend.to_device(value.detach()._data, backend.cpu)).reshape(-1)
            start, shape = 0, tuple(value.shape)
        else:
            objects[name] = value
            continue
        entry = index.setdefault(name, {"shape": list(shape), "pieces": []})
        if local.size:
            key = f"{name}@{start}"
            arrays[key] = local  # the snapshot: training may go on
            entry["pieces"].append([fname, key, start, start + local.size])
    everything = [None] * world
    all_gather_object(everything, (index, {}), group=group)
    everything = [(_owned(everything, r), extra) for r, (_, extra) in enumerate(everything)]
    keep = {key for entry in everything[rank][0].values() for _, key, *_ in entry["pieces"]}
    arrays = {k: v for k, v in arrays.items() if k in keep}
    body = None
    if rank == 0:
        try:
            body = _index_body(everything, world, {"objects": objects, "kind": "state_dict"})
        except TypeError as e:
            raise TypeError(f"distributed.checkpoint.save(): a state dict's plain values must "
                            f"be JSON values (numbers, strings, lists, dicts): {e}") from None
    return _write_in_background(checkpoint_id, fname, arrays, body)


def _load_state_dict(state_dict, checkpoint_id) -> None:
    """Fill ``state_dict`` in place: tensors and ShardedTensors (their own range) from the
    pieces, plain values replaced (a tuple stays a tuple)."""
    index = _read_index(checkpoint_id)
    if index.get("kind") != "state_dict":
        raise CheckpointError(f"distributed.checkpoint.load(): {checkpoint_id} was saved from "
                              "a model (dcp.save(model, ...)): load it with dcp.load(model, "
                              "...)")
    tensors, objects, files = index["tensors"], index["objects"], _Files(checkpoint_id)
    for path, value in _leaves(state_dict):
        name = _key(path)
        if isinstance(value, ShardedTensor) or hasattr(value, "_data"):
            target = value.local_tensor() if isinstance(value, ShardedTensor) else value
            shape = value.shape if isinstance(value, ShardedTensor) else tuple(value.shape)
            entry = tensors.get(name)
            if entry is None or tuple(entry["shape"]) != tuple(shape):
                raise CheckpointError(f"distributed.checkpoint.load(): {name!r} of shape "
                                      f"{tuple(shape)} is not in the checkpoint (found "
                                      f"{entry and tuple(entry['shape'])})")
            data = target._data
            start = value.offset if isinstance(value, ShardedTensor) else 0
            got = _assemble(entry, files, start, start + data.size, data.dtype)
            data[...] = backend.to_device(got.reshape(data.shape), backend.get_device(data))
        elif name in objects:
            _put(state_dict, path, _like(value, objects[name]))
        else:
            raise CheckpointError(f"distributed.checkpoint.load(): {name!r} is not in the "
                                  "checkpoint")


def _put(tree, path, value):
    for key in path[:-1]:
        tree = next(v for k, v in tree.items() if str(k) == key)
    last = next(k for k in tree if str(k) == path[-1])
    tree[last] = value


def _like(template, loaded):
    """JSON gives lists for tuples and str keys for int ones: restore the template's kinds."""
    if isinstance(template, tuple) and isinstance(loaded, list):
        return tuple(_like(t, v) for t, v in zip(template, loaded))
    if isinstance(template, list) and isinstance(loaded, list) and len(template) == len(loaded):
        return [_like(t, v) for t, v in zip(template, loaded)]
    if isinstance(template, dict) and isinstance(loaded, dict):
        keys = {str(k): k for k in template}
        return {keys.get(k, k): _like(template.get(keys.get(k, k)), v)
                for k, v in loaded.items()}
    return loaded
