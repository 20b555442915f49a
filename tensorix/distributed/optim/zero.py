"""ZeRO stage 1: the optimizer state is sharded over the ranks (torch's ZeroRedundancyOptimizer).

Every rank holds all parameters and (after DDP's all-reduce) the averaged gradients, but each
parameter is owned by one rank, the only one that keeps its optimizer state and updates it; the
owner then broadcasts the new values. Parameters are given to ranks greedily, largest first,
each to the rank with the fewest elements so far (torch's partition), so optimizer memory per
rank is about 1/N of the whole. The update of each parameter is the wrapped optimizer's own, so
the weights equal a single-process run's.
"""

from __future__ import annotations

from ...autograd.grad_mode import enable_grad, no_grad
from ...tensor import Tensor
from .. import _c10d, _collectives
from .._objects import gather_object

__all__ = ["ZeroRedundancyOptimizer"]


class ZeroRedundancyOptimizer:
    """Wrap ``optimizer_class`` so each rank keeps state for, and updates, its share only.

    ``params``: the model's parameters (or param-group dicts), the same on every rank;
    ``**defaults``: the wrapped optimizer's options. Use after DDP (gradients already averaged).

    Example::

        model = DistributedDataParallel(net)
        opt = ZeroRedundancyOptimizer(model.parameters(), tensorix.optim.Adam, lr=1e-3)
        loss.backward(); opt.step()        # each rank steps 1/N of the parameters
    """

    def __init__(self, params, optimizer_class, process_group=None,
                 parameters_as_bucket_view=False, overlap_with_ddp=False, **defaults):
        if overlap_with_ddp:
            raise NotImplementedError("ZeroRedundancyOptimizer(): overlap_with_ddp=True is not "
                                      "supported; step after backward")
        if isinstance(params, Tensor):
            raise TypeError("ZeroRedundancyOptimizer(): params must be an iterable of Tensors "
                            "or dicts, got a Tensor")
        groups = list(params)
        if not groups:
            raise ValueError("ZeroRedundancyOptimizer(): optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        self.process_group = process_group
        g = _c10d._group(process_group, "ZeroRedundancyOptimizer")
        self.world, self.rank = g.size(), g.rank()
        self._ranks = g.ranks  # group rank -> global rank (broadcast's src)
        self.optimizer_class, self.defaults = optimizer_class, defaults
        self.param_groups = [dict(gr, params=list(gr["params"])) for gr in groups]
        self._owner = self._partition([p for gr in self.param_groups for p in gr["params"]])
        mine = [dict(gr, params=[p for p in gr["params"] if self._owner[id(p)] == self.rank])
                for gr in self.param_groups]
        mine = [gr for gr in mine if gr["params"]]
        # a rank that owns nothing still needs an optimizer object for state_dict's shape
        self.optim = optimizer_class(mine, **defaults) if mine else None
        if self.optim is not None:
            _fill_defaults(self.param_groups, self.optim.defaults)

    def _partition(self, params):
        sizes, owner = [0] * self.world, {}
        for p in sorted(params, key=lambda p: -p.numel()):
            r = min(range(self.world), key=sizes.__getitem__)
            owner[id(p)] = r
            sizes[r] += p.numel()
        return owner

    @property
    def state(self):
        """This rank's optimizer state (for the parameters it owns)."""
        return self.optim.state if self.optim is not None else {}

    def zero_grad(self, set_to_none: bool = True) -> None:
        for gr in self.param_groups:
            for p in gr["params"]:
                if p.grad is not None:
                    if set_to_none:
                        p.grad = None
                    else:
                        p.grad._data[...] = 0

    def step(self, closure=None):
        """Step the owned parameters, then broadcast every parameter from its owner."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        if self.optim is not None:
            self._sync_options()
            self.optim.step()
        with no_grad():
            self._share()
        return loss

    def _share(self):
        # every parameter from its owner (subclasses share their results another way)
        for gr in self.param_groups:
            for p in gr["params"]:
                _collectives.broadcast(p, self._ranks[self._owner[id(p)]], self.process_group)

    def _sync_options(self):
        """Copy options changed on ``param_groups`` (an LR scheduler) to the local groups."""
        local = iter(self.optim.param_groups)
        for gr in self.param_groups:
            if any(self._owner[id(p)] == self.rank for p in gr["params"]):
                mine = next(local)
                for k, v in gr.items():
                    if k != "params":
                        mine[k] = v

    def consolidate_state_dict(self, to: int = 0) -> None:
        """Gather the whole optimizer state on rank ``to`` (then call ``state_dict`` there)."""
        local = self.optim.state_dict() if self.optim is not None else {"state": {}}
        order = {id(p): i for i, p in enumerate(p for gr in self.param_groups
                                                 for p in gr["params"])}
        mine = [p for gr in self.param_groups for p in gr["params"]
                if self._owner[id(p)] == self.rank]
        # re-key the local state by the parameter's position among all parameters
        state = {order[id(mine[int(i)])]: v for i, v in local["state"].items()}
        everything = [None] * self.world if self._ranks[self.rank] == to else None
        gather_object(state, everything, dst=to, group=self.process_group)
        self._consolidated = None
        if everything is not None:
            merged = {}
            for part in everything:
                merged.update(part)
            self._consolidated = merged

    def state_dict(self) -> dict:
        """The whole state, as the wrapped optimizer's state_dict on one process would give it;
        only on the rank given to ``consolidate_state_dict``, after calling it."""
        if getattr(self, "_consolidated", None) is None:
            raise RuntimeError("ZeroRedundancyOptimizer.state_dict(): call "
                               "consolidate_state_dict(to) first, and state_dict() on rank to")
        groups, i = [], 0
        for gr in self.param_groups:
            n = len(gr["params"])
            groups.append({**{k: v for k, v in gr.items() if k != "params"},
                           "params": list(range(i, i + n))})
            i += n
        return {"state": dict(sorted(self._consolidated.items())), "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
        """Load a whole state (from ``state_dict`` or from a single-process optimizer): each
        rank keeps the part of the parameters it owns."""
        flat = [p for gr in self.param_groups for p in gr["params"]]
        for mine, theirs in zip(self.param_groups, state_dict["param_groups"]):
            for k, v in theirs.items():
                if k != "params":
                    mine[k] = v
        if self.optim is None:
            return
        owned = [i for i, p in enumerate(flat) if self._owner[id(p)] == self.rank]
        local_index = {i: j for j, i in enumerate(owned)}
        local = self.optim.state_dict()
        local["state"] = {local_index[int(i)]: v for i, v in state_dict["state"].items()
                          if int(i) in local_index}
        self._sync_options()
        for lg, gr in zip(local["param_groups"], self.optim.param_groups):
            lg.update({k: v for k, v in gr.items() if k != "params"})
        self.optim.load_state_dict(local)

    def __repr__(self):
        return (f"ZeroRedundancyOptimizer(rank={self.rank}/{self.world}, "
                f"{self.optimizer_class.__name__})")


def _fill_defaults(groups, defaults):
    for gr in groups:
        for k, v in defaults.items():
            gr.setdefault(k, v)
