"""FSDP's optimizer state dicts (torch's ``FSDP.optim_state_dict`` / ``optim_state_dict_to_load``).

The optimizer of an FSDP model steps the flat shards, so its own ``state_dict()`` is keyed by
shard and only loads at the same world size and wrapping. ``optim_state_dict`` re-keys it by
the original parameters' names (torch's format)::

    {"state": {"blocks.0.fc.weight": {"step": 3, "exp_avg": ..., ...}, ...},
     "param_groups": [{"lr": ..., "params": ["emb.weight", ...]}, ...]}

with the per-element state (a tensor of the shard's shape) either whole per parameter
(FULL_STATE_DICT: gathered over the shard group) or this rank's piece of it as a
:class:`ShardedTensor` (SHARDED_STATE_DICT: no communication; saved and loaded at any world
size through ``tensorix.distributed.checkpoint``). ``optim_state_dict_to_load`` turns either
back into the optimizer's own state dict for this rank's shards, at any world size (FULL) or
where the pieces cover this rank's range (SHARDED, as dcp.load leaves them).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ... import backend
from ...autograd.grad_mode import no_grad
from ...tensor import _make
from ._state_dict import ShardedTensor, StateDictConfig, StateDictType


@dataclasses.dataclass
class OptimStateDictConfig:
    """``offload_to_cpu``: the state values are host tensors."""
    offload_to_cpu: bool = True


@dataclasses.dataclass
class FullOptimStateDictConfig(OptimStateDictConfig):
    """``rank0_only``: the other ranks get an empty dict (they still take part in the
    gathers)."""
    rank0_only: bool = False


@dataclasses.dataclass
class ShardedOptimStateDictConfig(OptimStateDictConfig):
    offload_to_cpu: bool = False


DEFAULT_OPTIM_CONFIGS = {StateDictType.FULL_STATE_DICT: FullOptimStateDictConfig,
                         StateDictType.SHARDED_STATE_DICT: ShardedOptimStateDictConfig}


def _owners(model, op):
    """{id(optimizer parameter): (unit, [(name, shape, offset, numel)], (a, b))} and
    {id(unit): [(name, shape, offset, numel)]}: a flat
    parameter stands for all of its unit's parameters and covers its whole shard; with
    use_orig_params each original parameter for itself, covering shard[a:b]."""
    out, specs = {}, {}
    for unit, names, shape, o, n in _params(model):
        h = unit._handle
        spec = (names[0], shape, o, n)
        specs.setdefault(id(unit), []).append(spec)
        if h.orig:
            k = [s[3] for s in h.specs].index(o)
            out[id(h.orig[k])] = (unit, [spec], h.pieces()[k])
        else:
            out.setdefault(id(unit._flat_param), (unit, [], (0, h.shard_size)))[1].append(spec)
    if not out:
        raise TypeError(f"FullyShardedDataParallel.{op}(): model holds no "
                        "FullyShardedDataParallel unit with parameters")
    return out, specs


def _params(model):
    """(unit, all names, shape, offset, numel) per parameter (a tied one once, all names)."""
    seen = {}
    for unit, name, shape, o, n in model._specs():
        seen.setdefault((id(unit), o), (unit, [], shape, o, n))[1].append(name)
    return list(seen.values())


def _settings(model, op):
    settings = model._sd_settings
    kind = settings.state_dict_type
    if kind is StateDictType.LOCAL_STATE_DICT:
        raise NotImplementedError(f"FullyShardedDataParallel.{op}(): LOCAL_STATE_DICT has no "
                                  "optimizer state dict (as in torch): use FULL_STATE_DICT or "
                                  "SHARDED_STATE_DICT")
    config = settings.optim_state_dict_config
    if config is None or isinstance(config, StateDictConfig):
        config = DEFAULT_OPTIM_CONFIGS[kind]()
    return kind, config


def _array(value):
    """A state value's array (a Tensor's data, or the NumPy array that Shampoo, SOAP and Muon
    keep), or None for a plain value."""
    if hasattr(value, "_data"):
        return value._data
    return value if isinstance(value, np.ndarray) else None


def _state_arrays(value, p, key, optim):
    """The per-element array of one state value (the shard's shape), None for a scalar
    (``step``); any other array (a matrix preconditioner) cannot be re-keyed by name: a
    flat shard is a range of several parameters, so it raises, naming the state."""
    array = _array(value)
    if array is None or array.ndim == 0:
        return None
    if tuple(array.shape) == tuple(p.shape) and p.dim() == 1:
        return array
    raise ValueError(
        f"FullyShardedDataParallel.optim_state_dict(): {type(optim).__name__}'s state "
        f"{key!r} has shape {tuple(array.shape)}, not one value per element of its flat "
        f"shard {tuple(p.shape)}; only per-element state can be split by parameter name (a "
        "matrix preconditioner of a flat shard has no such split). Keep matrix optimizers "
        "on whole parameters: DistributedMatrixOptimizer or ZeroRedundancyOptimizer under "
        "DistributedDataParallel")


def _init_optim_state(optim):
    """Give an optimizer that has not stepped its state, as torch's checkpoint helpers do:
    one step with zero gradients and learning rate 0 (the parameters do not move), so that a
    state dict made from it is a template that a checkpoint can fill."""
    if any(optim.state.get(p) for g in optim.param_groups for p in g["params"]):
        return
    saved = [(g, g["lr"]) for g in optim.param_groups]
    grads = {}
    with no_grad():
        for g in optim.param_groups:
            for p in g["params"]:
                grads[id(p)] = p.grad
                p.grad = _make(p.xp.zeros_like(p._data), p.dtype)
            g["lr"] = 0.0
        try:
            optim.step()
        finally:
            for g, lr in saved:
                g["lr"] = lr
            for g in optim.param_groups:
                for p in g["params"]:
                    p.grad = grads[id(p)]


def optim_state_dict(model, optim, optim_state_dict=None, group=None) -> dict:
    """The optimizer state of an FSDP ``model`` keyed by original parameter names (see the
    module doc); every rank must call (FULL gathers). An optimizer that has not stepped is
    first given zero state (torch's ``_init_optim_state``), so the result is a template for
    ``distributed.checkpoint.load``.

    Example (4 ranks)::

        with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT):
            osd = FSDP.optim_state_dict(model, opt)   # osd["state"]["fc.weight"]["exp_avg"]
    """
    kind, config = _settings(model, "optim_state_dict")
    owners, unit_specs = _owners(model, "optim_state_dict")
    params = [p for g in optim.param_groups for p in g["params"]]
    if any(id(p) not in owners for p in params):
        raise ValueError("FullyShardedDataParallel.optim_state_dict(): optim holds a "
                         "parameter that is not a parameter of model (build the optimizer on "
                         "the FSDP model's parameters())")
    _init_optim_state(optim)
    sd = optim.state_dict() if optim_state_dict is None else optim_state_dict
    # a named optimizer's dict (torch's NamedOptimizer) is keyed by the FSDP model's
    # parameter names instead of positions
    keys = _param_names(model, params)
    units = {}  # id(unit): [unit, {key: flat shard state (host)}, {key: scalar}]
    for index, p in enumerate(params):
        unit, _, (a, b) = owners[id(p)]
        h = unit._handle
        slot = units.setdefault(id(unit), [unit, {}, {}])
        for key, value in _entry(sd["state"], index, keys).items():
            array = _state_arrays(value, p, key, optim)
            if array is not None:
                buf = slot[1].setdefault(key, np.zeros(h.shard_size, h.dtype))
                buf[a:b] = backend.to_device(array, backend.cpu)
            else:
                slot[2][key] = value.item() if hasattr(value, "item") else value
    state = {}
    for unit, arrays, scalars in units.values():
        h, flat = unit._handle, unit._flat_param
        if kind is StateDictType.FULL_STATE_DICT:
            arrays = {k: backend.to_device(h.gather(v, cast=False), backend.cpu)
                      for k, v in arrays.items()}
        for name, shape, o, n in unit_specs[id(unit)]:
            entry = dict(scalars)
            for key, buf in arrays.items():
                entry[key] = _host(buf[o:o + n].reshape(shape).copy(), flat, config) \
                    if kind is StateDictType.FULL_STATE_DICT else \
                    _piece(buf, flat, h, o, n, shape, config)
            if entry:
                state[name] = entry
    groups = []
    for g_sd, g in zip(sd["param_groups"], optim.param_groups):
        names = [name for p in g["params"] for name, *_ in owners[id(p)][1]]
        groups.append({**{k: v for k, v in g_sd.items() if k != "params"}, "params": names})
    if getattr(config, "rank0_only", False) and not model._handle.first:
        return {}
    return {"state": state, "param_groups": groups}


def _param_names(model, params):
    """Position -> name in ``model.named_parameters()`` of the optimizer's parameters (the
    keys of a named optimizer's state dict)."""
    names = {id(p): n for n, p in model.named_parameters()}
    return [names.get(id(p)) for p in params]


def _entry(state, index, keys):
    """One parameter's entry of an optimizer state dict keyed by position (int or str, as a
    JSON round trip leaves it) or by name."""
    for key in (index, str(index), keys[index]):
        if key in state:
            return state[key]
    return {}


def _host(array, like, config):
    array = backend.to_device(array, backend.cpu) if config.offload_to_cpu else \
        backend.to_device(array, backend.get_device(like._data))
    return _make(array, like.dtype)


def _piece(buf, flat, h, o, n, shape, config):
    lo, hi = h.range
    a, b = max(o, lo), min(o + n, hi)
    local = buf[a - lo:b - lo].copy() if a < b else buf[:0].copy()
    return ShardedTensor(_host(local, flat, config), a - o if a < b else 0, shape)


def optim_state_dict_to_load(model, optim, optim_state_dict, is_named_optimizer=False,
                             load_directly=False, group=None) -> dict:
    """The optimizer's own state dict for this rank's shards from an ``optim_state_dict``
    result (FULL: made at any world size; SHARDED: pieces that cover this rank's range, as
    ``distributed.checkpoint.load`` fills them). ``load_directly=True`` also loads it.

    Example::

        osd = FSDP.optim_state_dict_to_load(model, opt, torch_style_osd)
        opt.load_state_dict(osd)
    """
    owners, unit_specs = _owners(model, "optim_state_dict_to_load")
    theirs = optim_state_dict.get("state") if isinstance(optim_state_dict, dict) else None
    if theirs is None or "param_groups" not in optim_state_dict:
        raise TypeError("FullyShardedDataParallel.optim_state_dict_to_load(): expected the "
                        "{'state': ..., 'param_groups': ...} dict that optim_state_dict gives")
    loaded_groups = optim_state_dict["param_groups"]
    if len(loaded_groups) != len(optim.param_groups):
        raise ValueError(f"FullyShardedDataParallel.optim_state_dict_to_load(): the state dict "
                         f"has {len(loaded_groups)} parameter groups, optim "
                         f"{len(optim.param_groups)}")
    _init_optim_state(optim)
    host = _host_keys(optim)
    state, groups, index, flats = {}, [], 0, {}
    for g_sd, g in zip(loaded_groups, optim.param_groups):
        ids = []
        for p in g["params"]:
            if id(p) not in owners:
                raise ValueError("FullyShardedDataParallel.optim_state_dict_to_load(): optim "
                                 "holds a parameter that is not a parameter of model")
            unit, _, (a, b) = owners[id(p)]
            if id(unit) not in flats:
                flats[id(unit)] = _flat_state(unit, unit_specs[id(unit)], theirs)
            st = {k: _as_state(v[a:b], p, k in host) if isinstance(v, np.ndarray) else v
                  for k, v in flats[id(unit)].items()}
            if st:
                state[index] = st
            ids.append(index)
            index += 1
        groups.append({**{k: v for k, v in g_sd.items() if k != "params"}, "params": ids})
    out = {"state": state, "param_groups": groups}
    if is_named_optimizer:
        out = _by_name(out, _param_names(model, [p for g in optim.param_groups
                                                 for p in g["params"]]))
    if load_directly:
        optim.load_state_dict(out)
    return out


def _host_keys(optim):
    """The state keys that ``optim`` keeps as NumPy arrays (Shampoo, SOAP, Muon compute on
    host arrays), so that a loaded state gives them back in that form."""
    return {k for st in optim.state.values() for k, v in st.items()
            if isinstance(v, np.ndarray)}


def _as_state(values, p, host):
    if host:
        return values.copy()
    return _make(backend.to_device(values.copy(), backend.get_device(p._data)), p.dtype)


def _by_name(osd, names):
    """``is_named_optimizer=True`` (torch's NamedOptimizer and KeyedOptimizer): the state dict
    keyed by the FSDP model's parameter names instead of positions."""
    if None in names:
        raise ValueError("FullyShardedDataParallel.optim_state_dict_to_load(): "
                         "is_named_optimizer=True needs every optimizer parameter to be one of "
                         "model.named_parameters()")
    return {"state": {names[i]: st for i, st in osd["state"].items()},
            "param_groups": [{**g, "params": [names[i] for i in g["params"]]}
                             for g in osd["param_groups"]]}


def _flat_state(unit, specs, theirs):
    """This rank's flat state of one unit from the per-name entries: {key: host array of
    the shard's size, or a scalar}."""
    h = unit._handle
    lo, hi = h.range
    host = np.dtype(h.dtype)
    out, arrays = {}, {}
    for name, shape, o, n in specs:
        entry = theirs.get(name)
        if entry is None:
            continue
        for key, value in entry.items():
            if not isinstance(value, ShardedTensor) and not hasattr(value, "_data"):
                out.setdefault(key, value)  # a scalar (step): the same for every parameter
                continue
            buf = arrays.setdefault(key, np.zeros(h.shard_size, host))
            a, b = max(o, lo), min(o + n, hi)
            if a >= b:
                continue
            buf[a - lo:b - lo] = _range(value, name, key, shape, a - o, b - o)
    return {**out, **arrays}


def _range(value, name, key, shape, start, stop):
    """Values [start, stop) of a parameter's flattened state from a whole tensor or a
    ShardedTensor piece."""
    where = f"FullyShardedDataParallel.optim_state_dict_to_load(): state {key!r} of {name!r}"
    if isinstance(value, ShardedTensor):
        if tuple(value.shape) != tuple(shape):
            raise ValueError(f"{where} has shape {value.shape}, the parameter {tuple(shape)}")
        local = backend.to_device(value.local_tensor().detach()._data, backend.cpu).reshape(-1)
        if value.offset > start or value.offset + local.size < stop:
            raise ValueError(f"{where}: this rank needs values [{start}, {stop}) but the "
                             f"ShardedTensor holds [{value.offset}, {value.offset + local.size})"
                             f" (made at another world size: load it with "
                             f"tensorix.distributed.checkpoint.load first)")
        return local[start - value.offset:stop - value.offset]
    if tuple(value.shape) != tuple(shape):
        raise ValueError(f"{where} has shape {tuple(value.shape)}, the parameter "
                         f"{tuple(shape)}")
    return backend.to_device(value.detach()._data, backend.cpu).reshape(-1)[start:stop]
