"""Optimizer-state offload (ZeRO-Offload / ZeRO-Infinity style): the state of an optimizer
lives in host memory or in memory-mapped files on disk between steps, and comes to the
parameters' device only for its own update.

``OffloadOptimizer(optimizer, to="cpu" | "disk", path=None, overlap=True)`` wraps any optimizer
whose update treats parameters one at a time (Adam(W), SGD, Lion, RMSprop, ..., Muon, Shampoo,
SOAP; not LBFGS). A step walks the parameters that have gradients in order; with ``overlap``
one background thread stages parameter i+1's state (disk -> host -> device) while parameter
i's update runs, and writes i's state back (device -> host -> disk) while i+1's runs. The
updates themselves are the wrapped optimizer's: the weights equal the plain optimizer's
exactly.

What it saves: between steps the device holds no optimizer state (``to="cpu"``), or neither
device nor host RAM does (``to="disk"``: the state is in files, read page by page); at most
two parameters' state are staged at a time. ``tensorix.memory`` measures both (see
docs/distributed.md).

Example::

    opt = OffloadOptimizer(tensorix.optim.AdamW(model.parameters(), lr=1e-3), to="disk",
                           path="/scratch/opt_state")
    loss.backward(); opt.step(); opt.zero_grad()
"""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

from .. import backend
from ..autograd.grad_mode import no_grad
from ..tensor import Tensor, _make
from .optimizer import Optimizer, replayed

__all__ = ["OffloadOptimizer"]


def _done(value) -> Future:
    f = Future()
    f.set_result(value)
    return f


class OffloadOptimizer:
    """Keep ``optimizer``'s state in host memory (``to="cpu"``) or memory-mapped files in
    ``path`` (``to="disk"``; a temporary folder when None) between steps; see the module
    docstring. ``param_groups``, ``zero_grad``, ``step``, ``state_dict`` and
    ``load_state_dict`` behave as the wrapped optimizer's."""

    def __init__(self, optimizer, to="cpu", path=None, overlap=True):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"OffloadOptimizer(): expected optimizer to be a "
                            f"tensorix.optim.Optimizer (got {type(optimizer).__name__})")
        if to not in ("cpu", "disk"):
            raise ValueError(f"OffloadOptimizer(): expected to='cpu' or 'disk' (got {to!r})")
        if type(optimizer).__name__ == "LBFGS":
            raise TypeError("OffloadOptimizer(): LBFGS updates all parameters together; "
                            "offload needs an optimizer that updates them one at a time")
        self.optimizer, self.to, self.overlap = optimizer, to, bool(overlap)
        if to == "disk":
            if path is None:  # ours: removed with this object (the files go with it)
                self.path = tempfile.mkdtemp(prefix="tensorix-offload-")
                weakref.finalize(self, shutil.rmtree, self.path, True)
            else:
                self.path = os.fspath(path)
                os.makedirs(self.path, exist_ok=True)
        self._store = {}  # id(p) -> {name: ("array", host array or memmap, dtype) | value}
        self._index = {}  # id(p) -> a stable number for the file names
        self._pool = ThreadPoolExecutor(1, "tensorix-offload") if overlap else None
        if self._pool is not None:  # no idle thread outlives the optimizer
            weakref.finalize(self, self._pool.shutdown, False)

    @property
    def param_groups(self):
        return self.optimizer.param_groups

    @property
    def defaults(self):
        return self.optimizer.defaults

    def zero_grad(self, set_to_none: bool = True) -> None:
        self.optimizer.zero_grad(set_to_none)

    def host_bytes(self) -> int:
        """Bytes of optimizer state held in host RAM now (0 for ``to="disk"``)."""
        return sum(v[1].nbytes for st in self._store.values() for v in st.values()
                   if isinstance(v, tuple) and type(v[1]) is not np.memmap)

    # -- moving one parameter's state ----------------------------------------------------------
    def _stage(self, p):
        """Parameter ``p``'s state as the optimizer keeps it: tensors on ``p``'s device."""
        dev = backend.get_device(p._data)
        out = {}
        for name, v in self._store.get(id(p), {}).items():
            if isinstance(v, tuple):
                arr = np.array(v[1]) if type(v[1]) is np.memmap else v[1]  # read the file
                # a raw host array (Shampoo's and SOAP's matrices) comes back as one
                out[name] = arr if v[2] is None else _make(backend.to_device(arr, dev), v[2])
            else:
                out[name] = v
        return out

    def _write(self, p, state):
        """Store ``state`` (just updated on the device) on the host or in files."""
        stored = self._store.setdefault(id(p), {})
        for name, v in state.items():
            if not isinstance(v, (Tensor, np.ndarray)):
                stored[name] = v
                continue
            host = v if isinstance(v, np.ndarray) else backend.to_device(v._data, backend.cpu)
            dtype = v._dtype if isinstance(v, Tensor) else None
            if self.to == "cpu":
                stored[name] = ("array", host, dtype)
                continue
            old = stored.get(name)
            if old is None or old[1].shape != host.shape or old[1].dtype != host.dtype:
                i = self._index.setdefault(id(p), len(self._index))
                file = os.path.join(self.path, f"p{i}.{name}.bin")
                old = ("array", np.memmap(file, host.dtype, "w+", shape=host.shape), dtype)
                stored[name] = old
            old[1][...] = host

    def _submit(self, fn, *args) -> Future:
        return self._pool.submit(fn, *args) if self._pool is not None else _done(fn(*args))

    # -- the step --------------------------------------------------------------------------------
    @replayed
    @no_grad()
    def step(self, closure=None):
        """The wrapped optimizer's step, one parameter at a time, each parameter's state
        staged in ahead of its update and written back behind it."""
        loss = None
        if closure is not None:
            from ..autograd.grad_mode import enable_grad

            with enable_grad():
                loss = closure()
        opt = self.optimizer
        work = [(g, p) for g in opt.param_groups for p in g["params"] if p.grad is not None]
        writes = []
        staged = self._submit(self._stage, work[0][1]) if work else None
        for i, (group, p) in enumerate(work):
            state = staged.result()
            if i + 1 < len(work):  # i+1's state comes in while i updates
                staged = self._submit(self._stage, work[i + 1][1])
            opt.state[p] = state
            opt._update(group, [p])
            writes.append(self._submit(self._write, p, opt.state.pop(p)))
        for w in writes:
            w.result()  # re-raises a failed write
        return loss

    # -- state dicts -----------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """The wrapped optimizer's state dict (its state read back from host or disk)."""
        opt = self.optimizer
        params = [p for g in opt.param_groups for p in g["params"] if id(p) in self._store]
        try:
            for p in params:
                opt.state[p] = self._stage(p)
            return opt.state_dict()
        finally:
            for p in params:
                opt.state.pop(p, None)

    def load_state_dict(self, state_dict: dict) -> None:
        opt = self.optimizer
        opt.load_state_dict(state_dict)
        for p in list(opt.state):
            self._write(p, opt.state.pop(p))

    def __repr__(self):
        return f"OffloadOptimizer(to={self.to!r}, overlap={self.overlap}, {self.optimizer!r})"
