"""Activation checkpointing: PyTorch's ``torch.utils.checkpoint``.

``checkpoint(fn, *args)`` runs ``fn`` without keeping its intermediate activations and runs it
again during backward to get them back: memory for time. Two ways, as in PyTorch:

- ``use_reentrant=False`` (recommended): ``fn`` runs with grad on, so the graph (and the
  parameters it reaches) is recorded as usual, but every tensor its ops save for backward is
  replaced by a number (autograd.graph.saved_tensors_hooks). The first time backward needs one,
  ``fn`` is run again on the same inputs and the saved tensors are collected in the same order,
  stopping as soon as the last one needed has been made. Works with ``autograd.grad`` and with
  keyword arguments.
- ``use_reentrant=True``: ``fn`` runs under no_grad inside one graph node, whose backward
  runs ``fn`` again with grad on and calls ``backward`` on it (gradients reach the parameters
  as a side effect, so ``autograd.grad`` does not see them).

With ``preserve_rng_state`` (the default) the recomputation draws the same random numbers as
the first run (dropout), from the CPU generator and those of the devices of the inputs.
"""

from __future__ import annotations

import warnings

from .. import autograd
from ..autograd.grad_mode import enable_grad, modes
from ..autograd.graph import saved_tensors_hooks
from ..ops import random as _random
from ..tensor import Tensor

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError"]


class CheckpointError(RuntimeError):
    """The recomputation did not reproduce the first run (different shapes, dtypes or number
    of saved tensors: ``fn`` depends on something other than its inputs)."""


def checkpoint(function, *args, use_reentrant=None, context_fn=None, determinism_check="default",
               debug=False, preserve_rng_state=True, **kwargs):
    """Run ``function(*args, **kwargs)`` keeping no intermediate activations; they are
    recomputed in backward (see the module docstring for the two variants).

    Outputs are ``function``'s own (a Tensor or a tuple of them), with the same values and
    gradients as a plain call. Example::

        h = tensorix.utils.checkpoint.checkpoint(block, x, use_reentrant=False)
        h.sum().backward()           # block's activations are recomputed here
    """
    if use_reentrant is None:
        warnings.warn("tensorix.utils.checkpoint: the use_reentrant parameter should be passed "
                      "explicitly; use_reentrant=False is recommended (the default here is "
                      "True, as in PyTorch)", UserWarning, stacklevel=2)
        use_reentrant = True
    if not callable(function):
        raise TypeError(f"checkpoint(): argument 'function' must be callable, not "
                        f"{type(function).__name__}")
    if determinism_check not in ("default", "none"):
        raise ValueError(f"checkpoint(): determinism_check must be 'default' or 'none', got "
                         f"{determinism_check!r}")
    if use_reentrant:
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
        if context_fn is not None:
            raise ValueError("checkpoint(): passing context_fn requires use_reentrant=False")
        if not any(isinstance(a, Tensor) and a.requires_grad for a in args) \
                and modes.state.enabled:
            warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                          UserWarning, stacklevel=2)
        return _Reentrant.apply(function, bool(preserve_rng_state), *args)
    frame = _Frame(function, args, kwargs, preserve_rng_state, determinism_check == "default")
    forward_ctx = context_fn()[0] if context_fn is not None else None
    with saved_tensors_hooks(frame.pack, frame.unpack):
        if forward_ctx is None:
            return function(*args, **kwargs)
        with forward_ctx:
            return function(*args, **kwargs)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Run a sequence of modules (an ``nn.Sequential`` or a list) in ``segments`` chunks, each
    chunk but the last checkpointed. ``input`` is one Tensor, passed from chunk to chunk.

    Example: ``y = checkpoint_sequential(model, 2, x, use_reentrant=False)``.
    """
    functions = list(functions.children()) if hasattr(functions, "children") else \
        list(functions)
    if not isinstance(segments, int) or segments < 1:
        raise ValueError(f"checkpoint_sequential(): segments must be a positive int, got "
                         f"{segments!r}")
    size = len(functions) // segments
    if size < 1:
        raise ValueError(f"checkpoint_sequential(): {segments} segments for "
                         f"{len(functions)} functions; segments must be at most their number")

    def run(start, end):
        def forward(x):
            for fn in functions[start:end + 1]:
                x = fn(x)
            return x
        return forward

    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant, **kwargs)
    return run(end + 1, len(functions) - 1)(input)


# -- random-number state ----------------------------------------------------------------------
def _rng_states(args):
    """The CPU generator's state and those of the devices the tensor arguments live on."""
    devices = {a.device for a in args if isinstance(a, Tensor) and a.device.type != "cpu"}
    return [(gen, gen.get_state()) for gen in
            [_random.default_generator] + [_random.device_generator(d) for d in devices]]


class _RestoredRng:
    """Within the block the generators are back at ``states``; after it, where they were."""

    def __init__(self, states):
        self.states = states

    def __enter__(self):
        self.now = [(gen, gen.get_state()) for gen, _ in self.states]
        for gen, state in self.states:
            gen.set_state(state)

    def __exit__(self, *exc):
        for gen, state in self.now:
            gen.set_state(state)
        return False


# -- non-reentrant: saved-tensor hooks ----------------------------------------------------------
class _StopRecompute(Exception):
    """Raised inside the recomputation once every saved tensor has been made again."""


class _Frame:
    """One checkpointed call: its inputs, RNG states, and the saved tensors (recomputed on
    first use). Each pack gets a number; the recomputation fills them in the same order."""

    def __init__(self, function, args, kwargs, preserve_rng, check):
        self.function, self.args, self.kwargs = function, args, kwargs
        self.rng = _rng_states(args) if preserve_rng else None
        self.check = check
        self.meta = []  # (shape, dtype, device) per saved tensor, for the determinism check
        self.recomputed = None

    def pack(self, t):
        self.meta.append((tuple(t.shape), t.dtype, t.device))
        return len(self.meta) - 1

    def unpack(self, index):
        if self.recomputed is None:
            self._recompute()
        return self.recomputed[index]

    def _recompute(self):
        got = []
        need = len(self.meta)

        def pack(t):
            # detached: the recomputed graph is thrown away; the node that saved the original
            # re-attaches itself to a saved output (Function._unpack)
            got.append(t.detach())
            if len(got) == need:
                raise _StopRecompute
            return None

        rng = _RestoredRng(self.rng) if self.rng is not None else None
        try:
            with enable_grad(), saved_tensors_hooks(pack, _no_unpack):
                if rng is None:
                    self.function(*self.args, **self.kwargs)
                else:
                    with rng:
                        self.function(*self.args, **self.kwargs)
        except _StopRecompute:
            pass
        if len(got) != need:
            raise CheckpointError(f"torch.utils.checkpoint: the recomputation saved {len(got)} "
                                  f"tensors for backward, the first run {need}: the checkpointed "
                                  "function must do the same ops on every call")
        if self.check:
            for i, (t, meta) in enumerate(zip(got, self.meta)):
                if (tuple(t.shape), t.dtype, t.device) != meta:
                    raise CheckpointError(
                        f"tensorix.utils.checkpoint: recomputed saved tensor {i} has shape "
                        f"{tuple(t.shape)}, dtype {t.dtype}, device {t.device}; the first run "
                        f"saved {meta[0]}, {meta[1]}, {meta[2]}")
        self.recomputed = got


def _no_unpack(_):
    raise RuntimeError("checkpoint: a saved tensor of the recomputation was used")


# -- reentrant: one graph node --------------------------------------------------------------------
class _Reentrant(autograd.Function):
    """The whole call as one node: forward without a graph, backward reruns it with one."""

    @staticmethod
    def forward(ctx, function, preserve_rng, *args):
        ctx.function = function
        ctx.rng = _rng_states(args) if preserve_rng else None
        ctx.save_for_backward(*[a if isinstance(a, Tensor) else None for a in args])
        ctx.plain = [None if isinstance(a, Tensor) else a for a in args]
        out = function(*args)
        return tuple(out) if isinstance(out, (tuple, list)) else out

    @staticmethod
    def backward(ctx, *grads):
        saved = ctx.saved_tensors
        inputs = [p if t is None else t.detach().requires_grad_(t.requires_grad)
                  for t, p in zip(saved, ctx.plain)]
        with enable_grad():
            if ctx.rng is None:
                out = ctx.function(*inputs)
            else:
                with _RestoredRng(ctx.rng):
                    out = ctx.function(*inputs)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        pairs = [(o, g) for o, g in zip(outs, grads)
                 if isinstance(o, Tensor) and o.requires_grad and g is not None]
        if not pairs:
            raise RuntimeError("checkpoint: none of the output has requires_grad=True, this "
                               "checkpoint() is not necessary")
        autograd.backward([o for o, _ in pairs], [g for _, g in pairs])
        return (None, None) + tuple(t.grad if isinstance(t, Tensor) else None for t in inputs)
