"""The rematerialization planner for any module: which submodules to recompute under a budget.

``remat`` plans a chain of layers. Here the model is any ``Module`` whose ``forward`` wires its
submodules as it likes (residual branches, several inputs, shared tensors): the planner works at
the granularity of its *candidates*, by default the outermost submodules that have a forward
of their own (ModuleList and ModuleDict, which have none, are looked through), or the
non-nested modules given. ``profile_module(model, *inputs)`` runs the model (twice: the second
run counts, warm) and attributes every tensor its ops save for backward (each counted once;
parameters not counted) to the candidate running at the time, or to the rest of the model; it
records each candidate's input bytes and forward time.

If a set C of candidates is checkpointed, the end of forward holds what the rest saves, what
the other candidates save and the inputs of those in C (an input that something else keeps
anyway costs nothing); while backward recomputes one of C it holds that one's saved tensors as
well; the parameter gradients come on top. ``plan_module`` chooses the C with the least
recomputation time whose estimated peak fits the budget, exactly under this model (for each
candidate as the largest recomputed one, a knapsack over the rest by Pareto fronts), in the
spirit of Moccasin's retention intervals at module granularity; ``apply`` wraps the chosen
submodules in ``CheckpointWrapper`` (torch's name) in place.

Example::

    prof = profile_module(model, x)
    p = plan_module(prof, budget=prof.end_of_forward // 2)
    apply(model, p)                      # then train as usual: the chosen blocks recompute
"""

from __future__ import annotations

import dataclasses
import math
import time

from ..autograd.graph import saved_tensors_hooks
from ..nn.container import ModuleDict, ModuleList
from ..nn.module import Module
from .checkpoint import checkpoint

__all__ = ["ModuleProfile", "ModulePlan", "CheckpointWrapper", "profile_module",
           "plan_module", "apply"]

_CONTAINERS = (ModuleList, ModuleDict)  # no forward: their members are called one by one


@dataclasses.dataclass
class ModuleProfile:
    """Per candidate (``names``): bytes saved for backward while it ran, bytes its input
    adds if it is checkpointed, forward seconds; the bytes saved outside every candidate, and
    of the parameters' gradients."""
    names: list
    saved: list
    input_cost: list
    seconds: list
    other: int
    grads: int

    @property
    def end_of_forward(self) -> int:
        """Estimated bytes held from the end of forward to backward with nothing recomputed."""
        return self.other + sum(self.saved)


@dataclasses.dataclass
class ModulePlan:
    """The candidates to checkpoint, with the estimated peak and recomputation seconds."""
    checkpointed: list
    peak: int
    recompute_seconds: float

    def __str__(self):
        return (f"recompute {self.checkpointed or 'nothing'} (estimated peak "
                f"{self.peak / 2**20:.2f} MiB, recompute {self.recompute_seconds * 1e3:.1f} ms)")


def _candidates(model):
    """The outermost submodules with a forward, looking through ModuleList/ModuleDict."""
    out = []
    stack = [(name, c) for name, c in reversed(list(model._modules.items())) if c is not None]
    while stack:  # depth first, in registration order
        path, m = stack.pop()
        if isinstance(m, _CONTAINERS):
            stack.extend((f"{path}.{name}", c) for name, c in reversed(list(m._modules.items()))
                         if c is not None)
        else:
            out.append((path, m))
    return out


def _bytes(t):
    return t.numel() * t.element_size()


def profile_module(model, *inputs, candidates=None, grads_allocated=False) -> ModuleProfile:
    """Run ``model(*inputs)`` with grad on and measure (see the module doc). ``candidates``:
    a list of ``(name, submodule)`` that do not nest (default: the outermost submodules with
    a forward of their own)."""
    cands = list(candidates) if candidates is not None else _candidates(model)
    if not cands:
        raise ValueError("remat.profile_module(): the model has no submodule to checkpoint")
    index = {id(m): i for i, (_, m) in enumerate(cands)}
    for _ in range(2):  # the first run warms up (first calls are slow); the second counts
        running, saved, owners, other = [], [0] * len(cands), {}, [0]
        inputs_of, seconds, started = [[] for _ in cands], [0.0] * len(cands), {}
        _run(model, inputs, cands, index, running, saved, owners, other, inputs_of, seconds,
             started)
    held = {a.data_ptr() for a in inputs if hasattr(a, "data_ptr")}
    cost = []
    for i, args in enumerate(inputs_of):
        # an input the caller holds, or that another part saves anyway, adds nothing
        cost.append(sum(_bytes(a) for a in args if a.data_ptr() not in held and
                        owners.get(a.data_ptr(), i) == i))
    grads = 0 if grads_allocated else sum(_bytes(p) for p in model.parameters()
                                          if p.requires_grad)
    return ModuleProfile([n for n, _ in cands], saved, cost, seconds, other[0], grads)


def _run(model, inputs, cands, index, running, saved, owners, other, inputs_of, seconds,
         started):
    """One forward with the hooks that attribute saved tensors and time to candidates."""
    def pre(m, args):
        i = index[id(m)]
        running.append(i)
        inputs_of[i] = [a for a in args if hasattr(a, "data_ptr")]
        started[i] = time.perf_counter()

    def post(m, args, out):
        i = running.pop()
        seconds[i] += time.perf_counter() - started[i]

    def pack(t):
        key = t.data_ptr()
        if not (t.is_leaf and t.requires_grad) and key not in owners:
            owner = running[-1] if running else -1
            owners[key] = owner
            if owner >= 0:
                saved[owner] += _bytes(t)
            else:
                other[0] += _bytes(t)
        return t

    handles = [m.register_forward_pre_hook(pre) for _, m in cands] + \
        [m.register_forward_hook(post) for _, m in cands]
    try:
        with saved_tensors_hooks(pack, lambda t: t):
            model(*inputs)
    finally:
        for h in handles:
            h.remove()


def _estimate(prof, chosen):
    kept = prof.other + sum(prof.input_cost[i] if i in chosen else prof.saved[i]
                            for i in range(len(prof.saved)))
    transient = max((prof.saved[i] for i in chosen), default=0)
    return kept + transient + prof.grads


def plan_module(prof: ModuleProfile, budget: int) -> ModulePlan:
    """The set of candidates to checkpoint with the least recomputation time whose estimated
    peak fits ``budget`` (ValueError if none does)."""
    n = len(prof.saved)
    best = None
    if _estimate(prof, set()) <= budget:
        best = (0.0, set())
    order = sorted(range(n), key=lambda i: (prof.saved[i], i))
    for rank, m in enumerate(order):  # m: the largest candidate recomputed
        # kept(C) = end_of_forward - sum over C of (saved - input_cost): items below m
        need = _estimate(prof, {m}) - budget  # bytes still to free with items other than m
        front = [(0, 0.0, frozenset())]  # (-bytes freed, seconds, items): Pareto
        for i in order[:rank]:
            gain = prof.saved[i] - prof.input_cost[i]
            if gain <= 0:
                continue
            front = _pareto(front + [(f - gain, s + prof.seconds[i], c | {i})
                                     for f, s, c in front])
        for freed, sec, chosen in front:
            if -freed >= need:
                total = sec + prof.seconds[m]
                if best is None or total < best[0]:
                    best = (total, set(chosen) | {m})
    if best is None:
        raise ValueError(f"remat.plan_module(): no plan fits {budget} bytes (checkpointing "
                         f"every candidate needs about {_estimate(prof, set(range(n)))})")
    chosen = sorted(best[1])
    return ModulePlan([prof.names[i] for i in chosen], _estimate(prof, set(chosen)), best[0])


def _pareto(options):
    """The (cost, seconds, ...) options no other beats on both counts (least first); shared
    with the chain planner."""
    options.sort(key=lambda o: (o[0], o[1]))
    out, best_sec = [], math.inf
    for o in options:
        if o[1] < best_sec:
            out.append(o)
            best_sec = o[1]
    return out


class CheckpointWrapper(Module):
    """A module whose forward is ``checkpoint(module, ...)`` (torch's
    ``checkpoint_wrapper``): its activations are recomputed in backward. Its parameters are
    the wrapped module's; as in torch, state-dict keys (and the wrapper's own
    ``named_parameters``) leave ``_checkpoint_wrapped_module.`` out, so a state dict moves
    between the wrapped and the plain model (``Module.state_key``).

    Example::

        block = CheckpointWrapper(nn.Linear(4, 4))
        list(block.state_dict())         # ['weight', 'bias']
    """

    _wrapped_attr = "_checkpoint_wrapped_module"

    def __init__(self, module):
        super().__init__()
        self._checkpoint_wrapped_module = module

    def forward(self, *args, **kwargs):
        return checkpoint(self._checkpoint_wrapped_module, *args, use_reentrant=False,
                          **kwargs)


def apply(model, plan: ModulePlan):
    """Wrap each submodule that ``plan`` checkpoints in a CheckpointWrapper, in place;
    returns ``model``."""
    for name in plan.checkpointed:
        parent, _, leaf = name.rpartition(".")
        owner = model.get_submodule(parent) if parent else model
        child = owner._modules[leaf]
        if not isinstance(child, CheckpointWrapper):
            owner._modules[leaf] = CheckpointWrapper(child)
    return model
