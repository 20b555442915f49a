"""FullyShardedDataParallel: parameters, gradients and optimizer state sharded over ranks.

A unit (the wrapped module, and each submodule the ``auto_wrap_policy`` picks, itself an FSDP
unit) keeps its parameters as one flat shard per rank (``_flat.FlatHandle``): 1/N of them.
Its forward all-gathers the full parameters, runs the module with them, and lets them go:

- ``FULL_SHARD`` (ZeRO-3): the full parameters are freed after the unit's forward; the tensors
  that backward needs from them are kept as positions (autograd.graph.saved_tensors_hooks) and
  gathered again when the unit's backward starts, then freed once it ends.
- ``SHARD_GRAD_OP`` (ZeRO-2): the full parameters stay alive from forward to backward.
- ``NO_SHARD``: every rank keeps everything; gradients are all-reduced (like DDP).
- ``HYBRID_SHARD`` / ``_HYBRID_SHARD_ZERO2``: FULL_SHARD / SHARD_GRAD_OP within a shard group
  (a node), replicated across the groups: the reduce-scattered gradient shard is then
  all-reduced over the ranks that hold the same shard.

Prefetch (torch's): ``forward_prefetch=True`` issues the next unit's all-gather (non-blocking)
as soon as this unit's parameters are gathered, so it runs during this unit's forward;
``backward_prefetch`` BACKWARD_PRE issues the next unit's backward gather when this unit's
backward starts, BACKWARD_POST when it ends (before its reduce-scatter). The order is the one
the first iteration ran (forward: the order of the units' forwards; backward: the order their
backward gathers happened). ``CPUOffload(offload_params=True)`` keeps the shards, their
gradients and so the optimizer's state and update in host memory; the gathered parameters go
to the compute device for forward and backward.

In every strategy the unit's backward ends with one reduce-scatter (all-reduce for NO_SHARD)
of its flat gradient, averaged over ranks, into the shard's ``.grad``; the optimizer updates
the shards. Per-element updates are the single-process ones, so weights equal a one-process
run on the whole batch (float64: to rounding of the reduction).
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import os

import numpy as np

from ... import backend
from ...autograd.grad_mode import is_grad_enabled, no_grad
from ...autograd.graph import saved_tensors_hooks
from ...nn.module import Module
from ...nn.parameter import Parameter
from ...tensor import Tensor, _make
from .. import _collectives
from .._c10d import GroupMember, ReduceOp, _group, new_group
from . import _optim_state
from . import _state_dict as sd
from ._flat import FlatHandle, Unshard
from ._state_dict import StateDictSettings, StateDictType

_WRAPPED = "_fsdp_wrapped_module"


class ShardingStrategy(enum.Enum):
    """What is sharded: FULL_SHARD (params, grads, optimizer state: ZeRO-3), SHARD_GRAD_OP
    (grads and optimizer state; params gathered forward to backward: ZeRO-2), NO_SHARD."""
    FULL_SHARD = 1
    SHARD_GRAD_OP = 2
    NO_SHARD = 3
    HYBRID_SHARD = 4
    _HYBRID_SHARD_ZERO2 = 5


_HYBRID = (ShardingStrategy.HYBRID_SHARD, ShardingStrategy._HYBRID_SHARD_ZERO2)
_RESHARD = (ShardingStrategy.FULL_SHARD, ShardingStrategy.HYBRID_SHARD)


class BackwardPrefetch(enum.Enum):
    """When a unit's backward issues the next unit's all-gather: at its start (PRE: more
    overlap, two units' parameters alive) or at its end (POST)."""
    BACKWARD_PRE = 1
    BACKWARD_POST = 2


@dataclasses.dataclass
class CPUOffload:
    """``offload_params=True``: shards, gradients and optimizer state stay in host memory."""
    offload_params: bool = False


@dataclasses.dataclass
class MixedPrecision:
    """Dtypes of the gathered parameters (forward and backward compute), of the gradient
    reduction, and of the buffers; None keeps the parameters' own. The shards, and so the
    optimizer, stay in the parameters' dtype."""
    param_dtype: object = None
    reduce_dtype: object = None
    buffer_dtype: object = None
    cast_forward_inputs: bool = True


class ModuleWrapPolicy:
    """Wrap every submodule that is an instance of one of ``module_classes`` in its own unit."""

    def __init__(self, module_classes):
        self.classes = tuple(module_classes)

    def __call__(self, module, recurse, nonwrapped_numel):
        return True if recurse else isinstance(module, self.classes)


def lambda_auto_wrap_policy(module, recurse, nonwrapped_numel, lambda_fn):
    """Wrap the submodules for which ``lambda_fn(module)`` is true (bind with partial)."""
    return True if recurse else bool(lambda_fn(module))


def size_based_auto_wrap_policy(module, recurse, nonwrapped_numel, min_num_params=int(1e8)):
    """Wrap a submodule once it holds at least ``min_num_params`` parameters not yet wrapped."""
    return True if recurse else nonwrapped_numel >= min_num_params


class FullyShardedDataParallel(Module):
    """Shard ``module``'s parameters over the ranks of ``process_group`` (see the module
    docstring for the strategies). ``parameters()`` gives the flat shards (with
    ``use_orig_params=True``: the original parameters, each a 1-D view of its part of this
    rank's shard, so param groups may differ per parameter): build the optimizer on the FSDP
    module. ``state_dict()`` gives the full, unsharded state with the original
    names; ``load_state_dict`` takes one.

    Example (``tensorix run -n 4 train.py``)::

        model = FullyShardedDataParallel(gpt, auto_wrap_policy=ModuleWrapPolicy({Block}))
        opt = tensorix.optim.AdamW(model.parameters(), lr=3e-4)
        model(x).sum().backward(); opt.step()      # each rank holds about 1/4 of the state
    """

    # names (state dicts, named_parameters) leave the wrapper's attribute out: Module.state_key
    _wrapped_attr = _WRAPPED

    def __init__(self, module, process_group=None, sharding_strategy=None, cpu_offload=None,
                 auto_wrap_policy=None, backward_prefetch=BackwardPrefetch.BACKWARD_PRE,
                 mixed_precision=None,
                 ignored_modules=None, param_init_fn=None, device_id=None,
                 sync_module_states=False, forward_prefetch=False, limit_all_gathers=True,
                 use_orig_params=False):
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"FullyShardedDataParallel(): expected module to be an nn.Module "
                            f"(got {type(module).__name__})")
        strategy = ShardingStrategy.FULL_SHARD if sharding_strategy is None else \
            sharding_strategy
        if not isinstance(strategy, ShardingStrategy):
            raise TypeError(f"FullyShardedDataParallel(): sharding_strategy must be a "
                            f"ShardingStrategy (got {sharding_strategy!r})")
        if backward_prefetch is not None and not isinstance(backward_prefetch,
                                                            BackwardPrefetch):
            raise TypeError(f"FullyShardedDataParallel(): backward_prefetch must be a "
                            f"BackwardPrefetch or None (got {backward_prefetch!r})")
        offload = cpu_offload if cpu_offload is not None else CPUOffload()
        if not isinstance(offload, CPUOffload):
            raise TypeError(f"FullyShardedDataParallel(): cpu_offload must be a CPUOffload "
                            f"(got {type(cpu_offload).__name__})")
        mp = mixed_precision or MixedPrecision()
        self.process_group, self.sharding_strategy, self.mixed_precision = \
            process_group, strategy, mp
        self.cpu_offload, self.backward_prefetch = offload, backward_prefetch
        self.forward_prefetch = bool(forward_prefetch)
        shard_group, replicate_group = _groups(process_group, strategy)
        self._orig_keys = list(module.state_dict().keys())
        if sync_module_states:
            with no_grad():
                for t in list(module.parameters()) + list(module.buffers()):
                    _collectives.broadcast(t, 0, None if replicate_group else shard_group)
        if auto_wrap_policy is not None:
            _wrap_children(module, auto_wrap_policy, dict(
                process_group=(shard_group, replicate_group) if replicate_group is not None
                else process_group, sharding_strategy=strategy,
                mixed_precision=mixed_precision, cpu_offload=offload,
                backward_prefetch=backward_prefetch, forward_prefetch=forward_prefetch,
                use_orig_params=use_orig_params))
        if mp.buffer_dtype is not None:
            for m in _own_modules(module):
                for name, b in m._buffers.items():
                    if b is not None and b.dtype.is_floating_point:
                        m._buffers[name] = b.to(mp.buffer_dtype)
        named = _take_parameters(module)
        h = self._handle = FlatHandle(named, shard_group,
                                      strategy is not ShardingStrategy.NO_SHARD,
                                      mp.param_dtype, mp.reduce_dtype, replicate_group,
                                      offload.offload_params)
        h.forward_prefetch = self.forward_prefetch
        h.backward_prefetch = {BackwardPrefetch.BACKWARD_PRE: "pre",
                               BackwardPrefetch.BACKWARD_POST: "post"}.get(backward_prefetch)
        h.reshard_after_forward = strategy in _RESHARD
        self.add_module(_WRAPPED, module)
        flat = Parameter(_make(h.shard), requires_grad=any(p.requires_grad for *_, p in named))
        self.use_orig_params = bool(use_orig_params)
        if self.use_orig_params:
            self._keep_orig_params(flat, [p for *_, p in named])
        else:
            self._flat_param = flat
        h.flat_param = flat
        self._unbind()
        # plain attributes (not submodules): the root unit, found at the first forward
        object.__setattr__(self, "_fsdp_root", None)
        object.__setattr__(self, "_order", None)
        object.__setattr__(self, "_sd_settings", StateDictSettings(
            StateDictType.FULL_STATE_DICT, sd.FullStateDictConfig()))

    def _keep_orig_params(self, flat, params):
        """use_orig_params: the original parameters stay the module's, as 1-D views of their
        part of the shard (empty where another rank holds them), so the optimizer updates the
        shard through them and may give each its own group; the flat parameter is internal."""
        object.__setattr__(self, "_flat_param", flat)
        flat.requires_grad_(False)
        h = self._handle
        h.orig = params
        for (owners, *_), (a, b), p in zip(h.specs, h.pieces(), params):
            p._data, p.grad = flat._data[a:b], None
            for mod, name in owners:
                mod._parameters[name] = p

    @property
    def module(self) -> Module:
        """The wrapped module."""
        return self._modules[_WRAPPED]

    # -- forward -------------------------------------------------------------------------------
    def forward(self, *args, **kwargs):
        h, mp = self._handle, self.mixed_precision
        if mp.param_dtype is not None and mp.cast_forward_inputs:
            args, kwargs = _cast(args, mp.param_dtype), _cast(kwargs, mp.param_dtype)
        root = self._root()
        if root is self:
            self._order.begin()
        if not h.specs:
            return self._finish_root(root, self.module, args, kwargs)
        self._order.saw(h, "forward")
        h.order = self._order
        h.backward_pending = is_grad_enabled() and (
            self._flat_param.requires_grad or any(p.requires_grad for p in h.orig))
        params = Unshard.apply(self._flat_param, h, *h.orig)
        self._bind(params)
        free = h.reshard_after_forward and is_grad_enabled()
        try:
            if free:
                with saved_tensors_hooks(h.pack, h.unpack):
                    return self._finish_root(root, self.module, args, kwargs)
            return self._finish_root(root, self.module, args, kwargs)
        finally:
            self._unbind()
            h.full = None  # FULL_SHARD: nothing else holds the gathered buffer now

    def _finish_root(self, root, fn, args, kwargs):
        try:
            return fn(*args, **kwargs)
        finally:
            if root is self:  # a forward prefetch that no unit took (the order changed)
                for unit in self._units():
                    unit._handle.drop_prefetch()

    def _units(self):
        return [m for m in self.modules() if isinstance(m, FullyShardedDataParallel)]

    def _root(self):
        """The outermost unit (the first one called); it records the execution order."""
        if self._fsdp_root is None:
            order = _Order()
            for unit in self._units():
                if unit._fsdp_root is None:
                    object.__setattr__(unit, "_fsdp_root", self)
                    object.__setattr__(unit, "_order", order)
        return self._fsdp_root

    def _bind(self, params):
        for (owners, *_), p in zip(self._handle.specs, params):
            for mod, name in owners:
                object.__setattr__(mod, name, p)

    def _unbind(self):
        orig = bool(self._handle.orig)
        for owners, *_ in self._handle.specs:
            for mod, name in owners:
                if orig:  # outside forward the module's attribute is the shard view
                    mod.__dict__.pop(name, None)
                else:
                    object.__setattr__(mod, name, None)

    # -- state dicts ------------------------------------------------------------------------------
    def _specs(self):
        """(unit, original name, shape, offset, numel) of every parameter in this tree."""
        for prefix, unit in self.named_modules():
            if isinstance(unit, FullyShardedDataParallel):
                for _, paths, shape, o, n in unit._handle.specs:
                    for path in paths:
                        yield unit, self.state_key(f"{prefix}.{_WRAPPED}.{path}"), shape, o, n

    def full_parameters(self) -> dict:
        """{original name: full parameter} (gathered from every rank: all ranks must call)."""
        out, gathered = {}, {}
        for unit, name, shape, o, n in self._specs():
            h = unit._handle
            if id(unit) not in gathered:
                gathered[id(unit)] = h.gather(unit._flat_param._data).astype(
                    h.dtype, copy=False)
            out[name] = _make(gathered[id(unit)][o:o + n].reshape(shape).copy())
        return out

    # -- state-dict types -------------------------------------------------------------------
    @staticmethod
    def set_state_dict_type(module, state_dict_type, state_dict_config=None,
                            optim_state_dict_config=None):
        """Set the state-dict type of every FSDP unit in ``module``; returns the previous
        ``StateDictSettings``."""
        if not isinstance(state_dict_type, StateDictType):
            raise TypeError(f"FullyShardedDataParallel.set_state_dict_type(): expected a "
                            f"StateDictType (got {state_dict_type!r})")
        config = state_dict_config or sd.DEFAULT_CONFIGS[state_dict_type]()
        units = [m for m in module.modules() if isinstance(m, FullyShardedDataParallel)]
        if not units:
            raise TypeError("FullyShardedDataParallel.set_state_dict_type(): module holds no "
                            "FullyShardedDataParallel unit")
        previous = units[0]._sd_settings
        for unit in units:
            object.__setattr__(unit, "_sd_settings", StateDictSettings(
                state_dict_type, config, optim_state_dict_config))
        return previous

    @staticmethod
    @contextlib.contextmanager
    def state_dict_type(module, state_dict_type, state_dict_config=None,
                        optim_state_dict_config=None):
        """Within the block, ``state_dict``/``load_state_dict`` of ``module``'s units use
        ``state_dict_type``. Example::

            with FSDP.state_dict_type(model, StateDictType.SHARDED_STATE_DICT):
                pieces = model.state_dict()       # {name: ShardedTensor}, no communication
        """
        previous = FullyShardedDataParallel.set_state_dict_type(
            module, state_dict_type, state_dict_config, optim_state_dict_config)
        try:
            yield
        finally:
            FullyShardedDataParallel.set_state_dict_type(
                module, previous.state_dict_type, previous.state_dict_config,
                previous.optim_state_dict_config)

    @staticmethod
    def optim_state_dict(model, optim, optim_state_dict=None, group=None) -> dict:
        """``optim``'s state keyed by ``model``'s original parameter names, whole
        (FULL_STATE_DICT) or this rank's pieces (SHARDED_STATE_DICT); see
        ``fsdp._optim_state``. Every rank must call."""
        return _optim_state.optim_state_dict(model, optim, optim_state_dict, group)

    @staticmethod
    def optim_state_dict_to_load(model, optim, optim_state_dict, is_named_optimizer=False,
                                 load_directly=False, group=None) -> dict:
        """``optim_state_dict``'s result (made at any world size) as ``optim``'s own state
        dict for this rank's shards; ``load_directly=True`` loads it too."""
        return _optim_state.optim_state_dict_to_load(model, optim, optim_state_dict,
                                                     is_named_optimizer, load_directly, group)

    def state_dict(self, *args, **kwargs) -> dict:
        """The state dict of the current ``state_dict_type`` (FULL_STATE_DICT by default: the
        wrapped module's own names and full values; all ranks must call)."""
        kind, config = self._sd_settings.state_dict_type, self._sd_settings.state_dict_config
        if kind is StateDictType.LOCAL_STATE_DICT:
            out = sd.local_state_dict(self, config)
        elif kind is StateDictType.SHARDED_STATE_DICT:
            out = sd.sharded_state_dict(self, config)
        else:
            out = sd.full_parameters_to_host(self.full_parameters(), config)
            if getattr(config, "rank0_only", False) and not self._handle.first:
                return {}
        for name, b in self.named_buffers():
            out[self.state_key(name)] = b
        order = {k: i for i, k in enumerate(self._orig_keys)}
        return dict(sorted(out.items(), key=lambda kv: order.get(kv[0], len(order))))

    def load_state_dict(self, state_dict, strict: bool = True):
        """Load a state dict of the current ``state_dict_type`` (FULL: as ``state_dict``
        gives, or the plain module's)."""
        kind = self._sd_settings.state_dict_type
        if kind is not StateDictType.FULL_STATE_DICT:
            with no_grad():
                (sd.load_local if kind is StateDictType.LOCAL_STATE_DICT else
                 sd.load_sharded)(self, state_dict, strict)
                self._load_buffers(state_dict)
            return
        missing = [k for k in self._orig_keys if k not in state_dict]
        unexpected = [k for k in state_dict if k not in self._orig_keys]
        if strict and (missing or unexpected):
            raise RuntimeError(f"FullyShardedDataParallel.load_state_dict(): missing keys "
                               f"{missing}, unexpected keys {unexpected}")
        with no_grad():
            flats = {}
            for unit, name, _, o, n in self._specs():
                h = unit._handle
                flat = flats.setdefault(id(unit), (unit, np.zeros(h.padded, h.dtype)))[1]
                if name in state_dict:
                    flat[o:o + n] = backend.to_device(state_dict[name].detach()._data,
                                                      backend.cpu).reshape(-1)
            for unit, flat in flats.values():
                lo, hi = unit._handle.range
                data = unit._flat_param._data
                data[...] = backend.to_device(flat[lo:hi], backend.get_device(data))
            self._load_buffers(state_dict)

    def _load_buffers(self, state_dict):
        for name, b in self.named_buffers():
            key = self.state_key(name)
            if key in state_dict:
                b._data[...] = backend.to_device(state_dict[key].detach()._data,
                                                 backend.get_device(b._data))

    def clip_grad_norm_(self, max_norm, norm_type=2.0):
        """Clip the gradients of all shards by their global norm (all ranks must call);
        returns the total norm, as nn.utils.clip_grad_norm_ on the unsharded model would."""
        norm_type = float(norm_type)
        grads = [backend.to_device(p.grad._data, backend.cpu) for p in self.parameters()
                 if p.grad is not None]
        if norm_type == float("inf"):
            local = max((float(np.abs(g).max()) for g in grads if g.size), default=0.0)
            t = _make(np.array([local]))
            _collectives.all_reduce(t, op=ReduceOp.MAX, group=self._handle.group)
            total = float(t._data[0])
        else:
            local = sum(float((np.abs(g).astype(np.float64) ** norm_type).sum()) for g in grads)
            t = _make(np.array([local]))
            if self.sharding_strategy is not ShardingStrategy.NO_SHARD:
                _collectives.all_reduce(t, group=self._handle.group)
            total = float(t._data[0]) ** (1.0 / norm_type)
        coef = float(max_norm) / (total + 1e-6)
        if coef < 1:
            for p in self.parameters():
                if p.grad is not None:
                    p.grad._data *= coef
        return _make(np.array(total))

    def extra_repr(self) -> str:
        h = self._handle
        return (f"strategy={self.sharding_strategy.name}, params={h.numel}, "
                f"shard={h.shard_size} (rank {h.rank} of {h.world})")


class _Order:
    """The units' execution order, recorded in the first iteration (forward: the order their
    forwards start; backward: the order their backward gathers start) and then frozen; each
    unit then knows which unit to prefetch next."""

    def __init__(self):
        self.seen = {"forward": [], "backward": []}
        self.frozen = {"forward": False, "backward": False}

    def saw(self, handle, kind):
        if not self.frozen[kind] and handle not in self.seen[kind]:
            self.seen[kind].append(handle)

    def begin(self):
        """At the root's forward: freeze what the last iteration recorded, and drop stale
        prefetches."""
        for kind, attr in (("forward", "next_forward"), ("backward", "next_backward")):
            seen = self.seen[kind]
            if seen and not self.frozen[kind]:
                self.frozen[kind] = True
                for a, b in zip(seen, seen[1:] + [None]):
                    setattr(a, attr, b)
        for h in self.seen["forward"]:
            h.drop_prefetch()


def _groups(process_group, strategy):
    """(shard group, replicate group or None). HYBRID_SHARD takes a (shard, replicate) pair
    of groups, or makes them: shard within each node (LOCAL_WORLD_SIZE consecutive ranks, as
    ``tensorix run`` sets it), replicate across nodes."""
    if strategy not in _HYBRID:
        if isinstance(process_group, tuple):
            raise TypeError(f"FullyShardedDataParallel(): a (shard, replicate) pair of groups "
                            f"needs HYBRID_SHARD (got {strategy.name})")
        _group(process_group, "FullyShardedDataParallel")  # fails clearly before any work
        return process_group, None
    if isinstance(process_group, tuple):
        if len(process_group) != 2:
            raise ValueError("FullyShardedDataParallel(): HYBRID_SHARD expects process_group "
                             "= (shard_group, replicate_group)")
        for g in process_group:
            _group(g, "FullyShardedDataParallel")
        return process_group
    if process_group is not None:
        raise TypeError("FullyShardedDataParallel(): HYBRID_SHARD expects process_group None "
                        "or a (shard_group, replicate_group) pair")
    world = _group(None, "FullyShardedDataParallel").size()
    node = int(os.environ.get("LOCAL_WORLD_SIZE", world))
    if node < 1 or world % node:
        raise ValueError(f"FullyShardedDataParallel(): HYBRID_SHARD needs the world size "
                         f"({world}) to be a multiple of LOCAL_WORLD_SIZE ({node})")
    mine = []  # every rank makes every group, in the same order (new_group's rule)
    for k in range(world // node):
        mine.append(new_group(list(range(k * node, (k + 1) * node))))
    for j in range(node):
        mine.append(new_group(list(range(j, world, node))))
    shard, replicate = [g for g in mine if g is not GroupMember.NON_GROUP_MEMBER]
    return shard, replicate


def _cast(obj, dtype):
    if isinstance(obj, Tensor):
        return obj.to(dtype) if obj.dtype.is_floating_point else obj
    if isinstance(obj, (list, tuple)):
        return type(obj)(_cast(o, dtype) for o in obj)
    if isinstance(obj, dict):
        return {k: _cast(v, dtype) for k, v in obj.items()}
    return obj


def _own_modules(module):
    """``module`` and its submodules, not descending into nested FSDP units."""
    stack, out = [module], []
    while stack:
        m = stack.pop()
        out.append(m)
        stack.extend(c for c in m._modules.values()
                     if c is not None and not isinstance(c, FullyShardedDataParallel))
    return out


def _take_parameters(module):
    """Remove the parameters of ``module`` (outside nested units) from their modules; returns
    ``[(owners, paths, parameter)]`` in registration order, a tied parameter once."""
    paths = {}
    for prefix, m in _named_own(module, ""):
        for name, p in list(m._parameters.items()):
            if p is None:
                continue
            path = f"{prefix}{name}"
            if id(p) in paths:
                paths[id(p)][0].append((m, name))
                paths[id(p)][1].append(path)
            else:
                paths[id(p)] = ([(m, name)], [path], p)
            del m._parameters[name]
    return list(paths.values())


def _named_own(module, prefix):
    yield prefix, module
    for name, c in module._modules.items():
        if c is not None and not isinstance(c, FullyShardedDataParallel):
            yield from _named_own(c, f"{prefix}{name}.")


def _wrap_children(module, policy, kwargs):
    """Replace each submodule the policy picks by an FSDP unit, deepest first."""
    for name, child in list(module._modules.items()):
        if child is None or isinstance(child, FullyShardedDataParallel):
            continue
        _wrap_children(child, policy, kwargs)
        numel = sum(p.numel() for _, m in _named_own(child, "") for p in m._parameters.values()
                    if p is not None)
        if policy(module=child, recurse=False, nonwrapped_numel=numel):
            module._modules[name] = FullyShardedDataParallel(child, **kwargs)
