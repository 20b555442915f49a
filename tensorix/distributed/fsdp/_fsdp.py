"""FullyShardedDataParallel: parameters, gradients and optimizer state sharded over ranks.

A unit (the wrapped module, and each submodule the ``auto_wrap_policy`` picks, itself an FSDP
unit) keeps its parameters as one flat shard per rank (``_flat.FlatHandle``): 1/N of them.
Its forward all-gathers the full parameters, runs the module with them, and lets them go:

- ``FULL_SHARD`` (ZeRO-3): the full parameters are freed after the unit's forward; the tensors
  that backward needs from them are kept as positions (autograd.graph.saved_tensors_hooks) and
  gathered again when the unit's backward starts, then freed once it ends.
- ``SHARD_GRAD_OP`` (ZeRO-2): the full parameters stay alive from forward to backward.
- ``NO_SHARD``: every rank keeps everything; gradients are all-reduced (like DDP).

In every strategy the unit's backward ends with one reduce-scatter (all-reduce for NO_SHARD)
of its flat gradient, averaged over ranks, into the shard's ``.grad``; the optimizer updates
the shards. Per-element updates are the single-process ones, so weights equal a one-process
run on the whole batch (float64: to rounding of the reduction).
"""

from __future__ import annotations

import dataclasses
import enum

import numpy as np

from ...autograd.grad_mode import is_grad_enabled, no_grad
from ...autograd.graph import saved_tensors_hooks
from ...nn.module import Module
from ...nn.parameter import Parameter
from ...tensor import Tensor, _make
from .. import _collectives
from .._c10d import ReduceOp, _group
from ._flat import FlatHandle, Unshard

_WRAPPED = "_fsdp_wrapped_module"


class ShardingStrategy(enum.Enum):
    """What is sharded: FULL_SHARD (params, grads, optimizer state: ZeRO-3), SHARD_GRAD_OP
    (grads and optimizer state; params gathered forward to backward: ZeRO-2), NO_SHARD."""
    FULL_SHARD = 1
    SHARD_GRAD_OP = 2
    NO_SHARD = 3


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
    docstring for the strategies). ``parameters()`` gives the flat shards: build the optimizer
    on the FSDP module. ``state_dict()`` gives the full, unsharded state with the original
    names; ``load_state_dict`` takes one.

    Example (``tensorix run -n 4 train.py``)::

        model = FullyShardedDataParallel(gpt, auto_wrap_policy=ModuleWrapPolicy({Block}))
        opt = tensorix.optim.AdamW(model.parameters(), lr=3e-4)
        model(x).sum().backward(); opt.step()      # each rank holds about 1/4 of the state
    """

    def __init__(self, module, process_group=None, sharding_strategy=None, cpu_offload=None,
                 auto_wrap_policy=None, backward_prefetch=None, mixed_precision=None,
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
        mp = mixed_precision or MixedPrecision()
        self.process_group, self.sharding_strategy, self.mixed_precision = \
            process_group, strategy, mp
        _group(process_group, "FullyShardedDataParallel")  # fails clearly before any work
        self._orig_keys = list(module.state_dict().keys())
        if sync_module_states:
            with no_grad():
                for t in list(module.parameters()) + list(module.buffers()):
                    _collectives.broadcast(t, 0, process_group)
        if auto_wrap_policy is not None:
            _wrap_children(module, auto_wrap_policy, dict(
                process_group=process_group, sharding_strategy=strategy,
                mixed_precision=mixed_precision))
        if mp.buffer_dtype is not None:
            for m in _own_modules(module):
                for name, b in m._buffers.items():
                    if b is not None and b.dtype.is_floating_point:
                        m._buffers[name] = b.to(mp.buffer_dtype)
        named = _take_parameters(module)
        self._handle = FlatHandle(named, process_group,
                                  strategy is not ShardingStrategy.NO_SHARD,
                                  mp.param_dtype, mp.reduce_dtype)
        self.add_module(_WRAPPED, module)
        self._flat_param = Parameter(_make(self._handle.shard),
                                     requires_grad=any(p.requires_grad for *_, p in named))
        self._handle.flat_param = self._flat_param
        self._unbind()

    @property
    def module(self) -> Module:
        """The wrapped module."""
        return self._modules[_WRAPPED]

    # -- forward -------------------------------------------------------------------------------
    def forward(self, *args, **kwargs):
        h, mp = self._handle, self.mixed_precision
        if mp.param_dtype is not None and mp.cast_forward_inputs:
            args, kwargs = _cast(args, mp.param_dtype), _cast(kwargs, mp.param_dtype)
        if not h.specs:
            return self.module(*args, **kwargs)
        params = Unshard.apply(self._flat_param, h)
        self._bind(params)
        free = self.sharding_strategy is ShardingStrategy.FULL_SHARD and is_grad_enabled()
        try:
            if free:
                with saved_tensors_hooks(h.pack, h.unpack):
                    return self.module(*args, **kwargs)
            return self.module(*args, **kwargs)
        finally:
            self._unbind()
            h.full = None  # FULL_SHARD: nothing else holds the gathered buffer now

    def _bind(self, params):
        for (owners, *_), p in zip(self._handle.specs, params):
            for mod, name in owners:
                object.__setattr__(mod, name, p)

    def _unbind(self):
        for owners, *_ in self._handle.specs:
            for mod, name in owners:
                object.__setattr__(mod, name, None)

    # -- state dicts ------------------------------------------------------------------------------
    def _specs(self):
        """(unit, original name, shape, offset, numel) of every parameter in this tree."""
        for prefix, unit in self.named_modules():
            if isinstance(unit, FullyShardedDataParallel):
                for _, paths, shape, o, n in unit._handle.specs:
                    for path in paths:
                        yield unit, _clean(f"{prefix}.{_WRAPPED}.{path}"), shape, o, n

    def full_parameters(self) -> dict:
        """{original name: full parameter} (gathered from every rank: all ranks must call)."""
        out, gathered = {}, {}
        for unit, name, shape, o, n in self._specs():
            h = unit._handle
            if id(unit) not in gathered:
                gathered[id(unit)] = h.gather(np.asarray(unit._flat_param._data)).astype(
                    h.dtype, copy=False)
            out[name] = _make(gathered[id(unit)][o:o + n].reshape(shape).copy())
        return out

    def state_dict(self, *args, **kwargs) -> dict:
        """The full state dict, with the wrapped module's own names (all ranks must call)."""
        full = self.full_parameters()
        for name, b in self.named_buffers():
            full[_clean(name)] = b
        order = {k: i for i, k in enumerate(self._orig_keys)}
        return dict(sorted(full.items(), key=lambda kv: order.get(kv[0], len(order))))

    def load_state_dict(self, state_dict, strict: bool = True):
        """Load a full state dict (as ``state_dict`` gives, or the plain module's)."""
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
                    flat[o:o + n] = np.asarray(state_dict[name].detach()._data).reshape(-1)
            for unit, flat in flats.values():
                lo, hi = unit._handle.range
                unit._flat_param._data[...] = flat[lo:hi]
            for name, b in self.named_buffers():
                if _clean(name) in state_dict:
                    b._data[...] = np.asarray(state_dict[_clean(name)]._data)

    def clip_grad_norm_(self, max_norm, norm_type=2.0):
        """Clip the gradients of all shards by their global norm (all ranks must call);
        returns the total norm, as nn.utils.clip_grad_norm_ on the unsharded model would."""
        norm_type = float(norm_type)
        grads = [np.asarray(p.grad._data) for p in self.parameters() if p.grad is not None]
        if norm_type == float("inf"):
            local = max((float(np.abs(g).max()) for g in grads if g.size), default=0.0)
            t = _make(np.array([local]))
            _collectives.all_reduce(t, op=ReduceOp.MAX, group=self.process_group)
            total = float(t._data[0])
        else:
            local = sum(float((np.abs(g).astype(np.float64) ** norm_type).sum()) for g in grads)
            t = _make(np.array([local]))
            if self.sharding_strategy is not ShardingStrategy.NO_SHARD:
                _collectives.all_reduce(t, group=self.process_group)
            total = float(t._data[0]) ** (1.0 / norm_type)
        coef = float(max_norm) / (total + 1e-6)
        if coef < 1:
            for p in self.parameters():
                if p.grad is not None:
                    p.grad._data *= p.grad._data.dtype.type(coef)
        return _make(np.array(total))

    def extra_repr(self) -> str:
        h = self._handle
        return (f"strategy={self.sharding_strategy.name}, params={h.numel}, "
                f"shard={h.shard_size} (rank {h.rank} of {h.world})")


def _clean(name: str) -> str:
    """The original module's name for a name inside FSDP wrappers."""
    return ".".join(part for part in name.split(".") if part and part != _WRAPPED)


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
