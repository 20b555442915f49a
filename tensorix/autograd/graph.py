"""Hooks on what the graph saves for backward: PyTorch's ``torch.autograd.graph``.

Inside ``saved_tensors_hooks(pack, unpack)``, every tensor an op saves for backward is handed
to ``pack`` when the op is recorded, and the graph keeps only what ``pack`` returns; backward
gets the tensor back from ``unpack``. Activation checkpointing (tensorix.utils.checkpoint)
is built on it: ``pack`` keeps a number instead of the activation, ``unpack`` recomputes. The
hooks are per thread, as grad mode is; the innermost ``with`` block wins.
"""

from __future__ import annotations

from .grad_mode import modes

__all__ = ["saved_tensors_hooks", "disable_saved_tensors_hooks", "save_on_cpu"]


class _Packed:
    """A saved tensor as its pack hook made it, with the unpack hook that restores it."""

    __slots__ = ("obj", "unpack")

    def __init__(self, obj, unpack):
        self.obj, self.unpack = obj, unpack


class saved_tensors_hooks:  # noqa: N801 - PyTorch's name
    """Pack/unpack hooks for the tensors that ops save for backward (in this thread).

    ``pack_hook(tensor) -> object`` runs when an op is recorded, once per saved tensor;
    ``unpack_hook(object) -> Tensor`` runs when backward reads it and must give a tensor of
    the same shape and dtype. The hooks apply to ops recorded inside the block; a graph built
    inside still unpacks through them after the block ends.

    Example (keep saved activations as float16)::

        with tensorix.autograd.graph.saved_tensors_hooks(lambda t: t.half(),
                                                         lambda t: t.float()):
            y = (x * w).sum()
        y.backward()
    """

    def __init__(self, pack_hook, unpack_hook):
        if not callable(pack_hook) or not callable(unpack_hook):
            raise TypeError("saved_tensors_hooks(): pack_hook and unpack_hook must be callable")
        self.hooks = (pack_hook, unpack_hook)

    def __enter__(self):
        state = modes.state
        if isinstance(state.saved_hooks, str):
            raise RuntimeError(state.saved_hooks)  # inside disable_saved_tensors_hooks
        self._prev = state.saved_hooks
        state.saved_hooks = self.hooks
        return self

    def __exit__(self, *exc):
        modes.state.saved_hooks = self._prev
        return False


class disable_saved_tensors_hooks:  # noqa: N801
    """Inside this block, entering ``saved_tensors_hooks`` raises RuntimeError(error_message)
    and the hooks of enclosing blocks are off."""

    def __init__(self, error_message: str):
        self.message = str(error_message)

    def __enter__(self):
        state = modes.state
        self._prev = state.saved_hooks
        state.saved_hooks = self.message
        return self

    def __exit__(self, *exc):
        modes.state.saved_hooks = self._prev
        return False


class save_on_cpu(saved_tensors_hooks):  # noqa: N801
    """Saved tensors of device tensors go to host memory and come back on use (PyTorch's
    ``save_on_cpu``; ``pin_memory`` is accepted for the signature, host memory is pageable)."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda"):
        def pack(t):
            return (t.device, t.cpu())

        def unpack(packed):
            device, t = packed
            return t.to(device)

        super().__init__(pack, unpack)


def pack_saved(ctx, hooks):
    """Replace what node ``ctx`` saved by what ``hooks``' pack makes of it (Function.apply
    calls this after the outputs are attached, so a saved output is packed as an output)."""
    pack, unpack = hooks
    saved = ctx._saved
    for i, item in enumerate(saved):
        if item is not None:
            saved[i] = (_Packed(pack(item[0]), unpack), item[1], item[2])
