"""Pipeline parallelism (torch.distributed.pipelining's names): a model cut into stages over
ranks, micro-batches, and the GPipe, 1F1B and interleaved 1F1B schedules.

A schedule is a list of actions per rank, ``("F", microbatch, stage)`` and ``("B", ...)``,
made by ``gpipe_actions`` / ``one_f_one_b_actions`` / ``interleaved_actions``, printed by
``format_schedule`` and timed by ``simulate`` (unit forward, ``backward_cost`` backward, no
communication cost), which measures the bubble: GPipe and 1F1B idle a fraction
(p-1)/(m+p-1) of the time, interleaving with v stages per rank about (p-1)/(v m + p-1).

``Schedule*.step(x, target=t)`` runs one training step: the first stage splits ``x`` into
micro-batches along dim 0, each rank runs its actions in order (activations go forward with
non-blocking sends, gradients come back the same way; one message tag per micro-batch, stage
and direction), the last stage computes ``loss_fn(output, target_mb) / m``, and gradients
accumulate in every stage's parameters: the full batch's mean-loss gradient, as one process
computes it.

Example (2 ranks, each holding half the layers)::

    stage = PipelineStage(half_of_model, stage_index=rank, num_stages=2)
    sched = Schedule1F1B(stage, n_microbatches=4, loss_fn=F.mse_loss)
    losses = []
    sched.step(x if rank == 0 else None, target=y, losses=losses); opt.step()
"""

from __future__ import annotations

import numpy as np

from ..autograd import engine
from ..ops.shape import stack
from ..tensor import Tensor, _make
from . import _c10d, _collectives
from ._objects import broadcast_object_list

__all__ = ["PipelineStage", "ScheduleGPipe", "Schedule1F1B", "ScheduleInterleaved1F1B",
           "gpipe_actions", "one_f_one_b_actions", "interleaved_actions", "format_schedule",
           "simulate"]


# -- the schedules as action lists -------------------------------------------------------------
def gpipe_actions(p, m):
    """Per rank: every micro-batch forward, then every backward."""
    return [[("F", i, r) for i in range(m)] + [("B", i, r) for i in range(m)]
            for r in range(p)]


def one_f_one_b_actions(p, m):
    """Per rank: p-r-1 warm-up forwards, then one forward one backward, then the rest of the
    backwards (at most p-r micro-batches in flight on rank r, not m)."""
    out = []
    for r in range(p):
        w = min(p - r - 1, m)
        acts = [("F", i, r) for i in range(w)]
        for i in range(m - w):
            acts += [("F", w + i, r), ("B", i, r)]
        acts += [("B", i, r) for i in range(m - w, m)]
        out.append(acts)
    return out


def interleaved_actions(p, m, v):
    """Interleaved 1F1B (Megatron): rank r holds stages r, r+p, ..., r+(v-1)p; micro-batches
    go through in groups of p. Needs m divisible by p."""
    if m % p:
        raise ValueError(f"interleaved_actions(): n_microbatches {m} must be a multiple of the "
                         f"number of ranks {p}")
    total = m * v

    def forward(k, r):
        chunk = (k // p) % v
        return ("F", (k // (p * v)) * p + k % p, chunk * p + r)

    def backward(k, r):
        chunk = v - 1 - (k // p) % v
        return ("B", (k // (p * v)) * p + k % p, chunk * p + r)

    out = []
    for r in range(p):
        w = min((p - r - 1) * 2 + (v - 1) * p, total)
        acts = [forward(k, r) for k in range(w)]
        for k in range(total - w):
            acts += [forward(w + k, r), backward(k, r)]
        acts += [backward(k, r) for k in range(total - w, total)]
        out.append(acts)
    return out


def simulate(actions, num_stages, backward_cost=2.0, forward_cost=1.0):
    """Run the schedule on a clock: each action starts when its rank is free and its inputs
    exist. Returns (makespan, bubble fraction, {action: (rank, start, end)})."""
    done, timeline, busy = {}, {}, [0.0] * len(actions)
    free = [0.0] * len(actions)
    pending = [list(a) for a in actions]
    last = num_stages - 1
    progress = True
    while any(pending) and progress:
        progress = False
        for r, acts in enumerate(pending):
            while acts:
                kind, mb, s = acts[0]
                if kind == "F":
                    need = [("F", mb, s - 1)] if s > 0 else []
                else:
                    need = [("B", mb, s + 1)] if s < last else [("F", mb, s)]
                    need.append(("F", mb, s))
                if any(n not in done for n in need):
                    break
                cost = (forward_cost if kind == "F" else backward_cost) * len(actions) / \
                    num_stages
                start = max([free[r]] + [done[n] for n in need])
                done[acts[0]] = free[r] = start + cost
                busy[r] += cost
                timeline[acts[0]] = (r, start, start + cost)
                acts.pop(0)
                progress = True
    if any(pending):
        raise RuntimeError(f"simulate(): the schedule deadlocks at {[a[0] for a in pending if a]}")
    makespan = max(free)
    return makespan, 1.0 - sum(busy) / (len(actions) * makespan), timeline


def format_schedule(actions, num_stages, backward_cost=2.0):
    """The schedule as text, one row per rank and one column per forward-time unit:
    ``F3`` a forward of micro-batch 3, ``b3`` its backward, ``.`` idle."""
    makespan, bubble, timeline = simulate(actions, num_stages, backward_cost)
    unit = len(actions) / num_stages  # a forward's duration
    cols = int(round(makespan / unit))
    rows = [["  ."] * cols for _ in actions]
    for (kind, mb, _), (r, start, end) in timeline.items():
        for c in range(int(round(start / unit)), int(round(end / unit))):
            rows[r][c] = f"{'F' if kind == 'F' else 'b'}{mb:<2d}"[:3].rjust(3)
    lines = [f"rank {r}: " + "".join(row) for r, row in enumerate(rows)]
    return "\n".join(lines + [f"bubble fraction {bubble:.3f}"])


# -- running a schedule ---------------------------------------------------------------------------
class PipelineStage:
    """``submodule``: stage ``stage_index`` of ``num_stages`` (this rank's part of the model).
    Stage s lives on group rank ``s % group size``."""

    def __init__(self, submodule, stage_index, num_stages, device=None, group=None):
        if not 0 <= stage_index < num_stages:
            raise ValueError(f"PipelineStage(): stage_index {stage_index} not in "
                             f"[0, {num_stages})")
        self.submod, self.stage_index, self.num_stages = submodule, stage_index, num_stages
        self.group = group
        g = _c10d._group(group, "PipelineStage")
        self.ranks, self.world = g.ranks, g.size()

    def rank_of(self, stage):
        return self.ranks[stage % self.world]

    @property
    def is_first(self):
        return self.stage_index == 0

    @property
    def is_last(self):
        return self.stage_index == self.num_stages - 1


class _Runner:
    """Executes one rank's actions for a step."""

    def __init__(self, stages, m, loss_fn, actions):
        self.stages = {s.stage_index: s for s in stages}
        self.m, self.loss_fn, self.actions = m, loss_fn, actions
        self.kept, self.sends = {}, []

    def tag(self, kind, mb, stage):
        return (mb * 2 + (kind == "B")) * self.stages[next(iter(self.stages))].num_stages + stage

    def run(self, inputs, targets, losses):
        for kind, mb, s in self.actions:
            stage = self.stages[s]
            if kind == "F":
                self.forward(stage, mb, inputs, targets, losses)
            else:
                self.backward(stage, mb)
        for w in self.sends:
            w.wait()

    def forward(self, stage, mb, inputs, targets, losses):
        if stage.is_first:
            x = inputs[mb]
        else:
            x = self.recv(("F", mb, stage.stage_index), stage.rank_of(stage.stage_index - 1))
            x.requires_grad_(True)
        y = stage.submod(x)
        if stage.is_last:
            loss = self.loss_fn(y, targets[mb]) / self.m
            losses.append(loss.detach() * self.m)
            self.kept[(mb, stage.stage_index)] = (x, loss)
        else:
            self.send(y.detach(), ("F", mb, stage.stage_index + 1),
                      stage.rank_of(stage.stage_index + 1))
            self.kept[(mb, stage.stage_index)] = (x, y)

    def backward(self, stage, mb):
        x, y = self.kept.pop((mb, stage.stage_index))
        if stage.is_last:
            engine.backward([y])
        else:
            g = self.recv(("B", mb, stage.stage_index), stage.rank_of(stage.stage_index + 1))
            engine.backward([y], [g])
        if not stage.is_first:
            self.send(x.grad, ("B", mb, stage.stage_index - 1),
                      stage.rank_of(stage.stage_index - 1))

    def send(self, t, key, dst):
        # the shape goes first, so the receiver can allocate (stages may change shapes)
        meta = _make(np.array(list(t.shape) + [-1] * (8 - t.dim()), np.int64))
        self.sends.append(_collectives.isend(meta, dst, self.group, 2 * self.tag(*key)))
        self.sends.append(_collectives.isend(_make(np.ascontiguousarray(t._data)), dst,
                                             self.group, 2 * self.tag(*key) + 1))

    def recv(self, key, src):
        meta = _make(np.empty(8, np.int64))
        _collectives.recv(meta, src, self.group, 2 * self.tag(*key))
        shape = [int(d) for d in meta._data if d >= 0]
        out = _make(np.empty(shape, self.dtype))
        _collectives.recv(out, src, self.group, 2 * self.tag(*key) + 1)
        return out


class _Schedule:
    _kind = None

    def __init__(self, stages, n_microbatches, loss_fn=None):
        self.stages = list(stages) if isinstance(stages, (list, tuple)) else [stages]
        self.m, self.loss_fn = n_microbatches, loss_fn
        first = self.stages[0]
        self.group, self.world = first.group, first.world
        self.p = self.world
        self.v = first.num_stages // self.world
        if first.num_stages != self.v * self.world or len(self.stages) != self.v:
            raise ValueError(f"{type(self).__name__}(): {first.num_stages} stages over "
                             f"{self.world} ranks with {len(self.stages)} stages on this rank")

    def actions(self):
        """Every rank's action list."""
        raise NotImplementedError

    def print_schedule(self):
        """The schedule as text (see ``format_schedule``)."""
        return format_schedule(self.actions(), self.v * self.p)

    def step(self, *args, target=None, losses=None):
        """One forward and backward over ``n_microbatches`` micro-batches. ``args[0]`` is the
        batch on the rank of stage 0 (ignored elsewhere), ``target`` on the last stage's."""
        rank = _c10d._group(self.group, "pipeline").rank()
        mine = self.actions()[rank]
        runner = _Runner(self.stages, self.m, self.loss_fn, mine)
        runner.group = self.group
        inputs = _split(args[0], self.m) if args and args[0] is not None else None
        targets = _split(target, self.m) if target is not None else None
        dtype = [np.asarray(inputs[0]._data).dtype.str if inputs else None]
        broadcast_object_list(dtype, src=self.stages[0].rank_of(0), group=self.group)
        runner.dtype = np.dtype(dtype[0])
        out = []
        runner.run(inputs, targets, out)
        if losses is not None:
            losses.extend(out)
        # the last stage: the step's mean loss over the micro-batches (None elsewhere)
        return stack(out).mean() if out else None


def _split(t, m):
    if not isinstance(t, Tensor) or t.shape[0] % m:
        raise ValueError(f"pipeline: the batch ({getattr(t, 'shape', t)}) must split into "
                         f"{m} equal micro-batches along dim 0")
    n = t.shape[0] // m
    return [t[i * n:(i + 1) * n] for i in range(m)]


class ScheduleGPipe(_Schedule):
    """All forwards, then all backwards (memory: m micro-batches in flight)."""

    def actions(self):
        return gpipe_actions(self.p, self.m)


class Schedule1F1B(_Schedule):
    """One forward, one backward (memory: at most p micro-batches in flight)."""

    def actions(self):
        return one_f_one_b_actions(self.p, self.m)


class ScheduleInterleaved1F1B(_Schedule):
    """1F1B over v stages per rank (``stages``: this rank's list, stage r, r+p, ...)."""

    def actions(self):
        return interleaved_actions(self.p, self.m, self.v)
