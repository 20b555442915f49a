"""FSDP's state-dict types (torch.distributed.fsdp.StateDictType and its configs).

- FULL_STATE_DICT: every parameter whole, with the plain module's names (all ranks gather).
- SHARDED_STATE_DICT: the plain module's names, each value a :class:`ShardedTensor` holding
  only this rank's piece of the parameter: a range of its flattened values, since a unit's
  shard is a range of its flat buffer (torch's DTensor shards dim 0; here no communication is
  needed to make or load it, and the pieces of all ranks tile each parameter exactly).
- LOCAL_STATE_DICT: each unit's flat shard, under ``<unit path>._flat_param``, as a
  ShardedTensor of the unit's unpadded flat parameter (torch's).
"""

from __future__ import annotations

import dataclasses
import enum

from ... import backend
from ...tensor import _make

FLAT_PARAM = "_flat_param"


class StateDictType(enum.Enum):
    """Which state dict ``FullyShardedDataParallel.state_dict`` makes (see the module doc)."""
    FULL_STATE_DICT = 1
    LOCAL_STATE_DICT = 2
    SHARDED_STATE_DICT = 3


@dataclasses.dataclass
class StateDictConfig:
    """``offload_to_cpu``: the values are host tensors (device parameters are copied)."""
    offload_to_cpu: bool = False


@dataclasses.dataclass
class FullStateDictConfig(StateDictConfig):
    """``rank0_only``: the other ranks get an empty dict (they still take part in the
    gathers)."""
    rank0_only: bool = False


@dataclasses.dataclass
class ShardedStateDictConfig(StateDictConfig):
    pass


@dataclasses.dataclass
class LocalStateDictConfig(StateDictConfig):
    pass


@dataclasses.dataclass
class StateDictSettings:
    state_dict_type: StateDictType
    state_dict_config: StateDictConfig
    optim_state_dict_config: object = None


DEFAULT_CONFIGS = {StateDictType.FULL_STATE_DICT: FullStateDictConfig,
                   StateDictType.SHARDED_STATE_DICT: ShardedStateDictConfig,
                   StateDictType.LOCAL_STATE_DICT: LocalStateDictConfig}


class ShardedTensor:
    """This rank's piece of one parameter in a SHARDED_STATE_DICT: the values
    ``flatten()[offset:offset + local_tensor().numel()]`` of a tensor of ``shape``.

    Example: a (4, 3) weight on 2 ranks whose flat buffer splits after 7 values gives rank 0
    ``ShardedTensor(shape=(4, 3), offset=0, local 7 values)`` and rank 1 ``offset=7``, 5 values.
    """

    def __init__(self, local, offset, shape):
        self._local, self.offset, self.shape = local, int(offset), tuple(shape)

    def local_tensor(self):
        """The piece (a 1-D tensor; may be empty)."""
        return self._local

    def size(self):
        return self.shape

    def __repr__(self):
        return (f"ShardedTensor(shape={self.shape}, offset={self.offset}, "
                f"local={self._local.numel()})")


def _out(array, dtype, config):
    return _make(backend.to_device(array, backend.cpu) if config.offload_to_cpu else array,
                 dtype)


def sharded_state_dict(root, config) -> dict:
    """{original name: ShardedTensor} for the parameters, buffers whole."""
    out = {}
    for unit, name, shape, o, n in root._specs():
        lo, hi = unit._handle.range
        a, b = max(o, lo), min(o + n, hi)
        flat = unit._flat_param
        piece = flat._data[a - lo:b - lo].copy() if a < b else flat._data[:0].copy()
        out[name] = ShardedTensor(_out(piece, flat.dtype, config), min(a, b) - o if a < b
                                  else 0, shape)
    return out


def load_sharded(root, state_dict, strict):
    """Copy each ShardedTensor's piece into the shard that holds it (same world size and
    wrapping as the saver: the pieces must line up with this rank's ranges)."""
    for unit, name, _shape, o, n in root._specs():
        if name not in state_dict:
            continue
        st = state_dict[name]
        if not isinstance(st, ShardedTensor):
            raise TypeError(f"FullyShardedDataParallel.load_state_dict(): SHARDED_STATE_DICT "
                            f"expects a ShardedTensor for {name!r} (got {type(st).__name__})")
        lo, hi = unit._handle.range
        a, b = max(o, lo), min(o + n, hi)
        want = (a - o, b - o) if a < b else (0, 0)
        got = (st.offset, st.offset + st.local_tensor().numel())
        if want != got and (b - a) > 0:
            raise ValueError(f"FullyShardedDataParallel.load_state_dict(): {name!r}: this rank "
                             f"holds values [{want[0]}, {want[1]}) but the ShardedTensor has "
                             f"[{got[0]}, {got[1]}) (saved at another world size or wrapping: "
                             f"use tensorix.distributed.checkpoint for that)")
        if b > a:
            data = unit._flat_param._data
            data[a - lo:b - lo] = backend.to_device(
                st.local_tensor().detach()._data.reshape(-1), backend.get_device(data))


def local_state_dict(root, config) -> dict:
    """{unit path + "._flat_param": ShardedTensor} of each unit's flat shard, as torch's: its
    range of the unpadded flat parameter (so distributed.checkpoint re-shards it for another
    world size, with the same wrapping)."""
    out = {}
    for prefix, unit in root.named_modules():
        if unit is not None and hasattr(unit, "_handle") and unit._handle.specs:
            key = root.state_key(f"{prefix}.{FLAT_PARAM}")
            h, flat = unit._handle, unit._flat_param
            lo, hi = h.range
            valid = max(0, min(hi, h.numel) - lo)
            out[key] = ShardedTensor(_out(flat._data[:valid].copy(), flat.dtype, config),
                                     lo if valid else 0, (h.numel,))
    return out


def load_local(root, state_dict, strict):
    for prefix, unit in root.named_modules():
        if unit is None or not hasattr(unit, "_handle") or not unit._handle.specs:
            continue
        key = root.state_key(f"{prefix}.{FLAT_PARAM}")
        if key not in state_dict:
            if strict:
                raise RuntimeError(f"FullyShardedDataParallel.load_state_dict(): missing key "
                                   f"{key!r} (LOCAL_STATE_DICT)")
            continue
        h, value = unit._handle, state_dict[key]
        if not isinstance(value, ShardedTensor):
            raise TypeError(f"FullyShardedDataParallel.load_state_dict(): LOCAL_STATE_DICT "
                            f"expects a ShardedTensor for {key!r} (got {type(value).__name__})")
        lo, hi = h.range
        want = (lo, min(hi, h.numel)) if lo < h.numel else (0, 0)
        local = value.local_tensor().detach()._data.reshape(-1)
        got = (value.offset, value.offset + local.size)
        if tuple(value.shape) != (h.numel,) or (want[1] > want[0] and got != want):
            raise ValueError(f"FullyShardedDataParallel.load_state_dict(): {key!r} holds "
                             f"values [{got[0]}, {got[1]}) of {value.shape}, this rank's shard "
                             f"[{want[0]}, {want[1]}) of {(h.numel,)} (saved at another world "
                             f"size: load it through tensorix.distributed.checkpoint; the "
                             f"wrapping must be the same)")
        data = unit._flat_param._data
        data[...] = 0  # the padding
        data[:want[1] - want[0]] = backend.to_device(local, backend.get_device(data))


def full_parameters_to_host(params: dict, config) -> dict:
    if config.offload_to_cpu:
        return {k: _make(backend.to_device(v._data, backend.cpu), v.dtype)
                for k, v in params.items()}
    return params


__all__ = ["StateDictType", "StateDictConfig", "FullStateDictConfig", "ShardedStateDictConfig",
           "LocalStateDictConfig", "StateDictSettings", "ShardedTensor"]
