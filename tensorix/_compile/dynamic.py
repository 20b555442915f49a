"""``tensorix.compile(fn, dynamic=True)``: one graph with symbolic dims serves other sizes.

The guard key leaves sizes out (rank, dtype, device and requires_grad stay in it); the
entry is a list of :func:`tensorix.export` programs with every dim of size >= 2 of every
tensor argument symbolic (each its own symbol; where a probe size cannot run, dims of equal
size share one; torch's dynamic=True also keeps sizes 0 and 1 static: they broadcast).
Export's guards say which sizes a program stands for: Python's decisions on sizes while it
traced (``if x.shape[0] > 4``), the dims it specialised (``range`` of a size, ``len``), each
symbol's bindings. A call whose sizes fail every program's guards exports a new program at
its sizes (a recompile, counted in ``stats["recompiles"]``), never running a program outside
its guards; after ``RECOMPILE_LIMIT`` programs the key compiles per shape. A program runs
through the interpreter (autograd as eager's; the fused kernels are per shape).
"""

from __future__ import annotations

import warnings

from ..fx.export import SpecializationWarning, export
from ..fx.tracer import GraphBreak
from ..tensor import Tensor
from .segments import RECOMPILE_LIMIT

__all__ = ["DynamicEntry", "dynamic_key", "STATIC"]

STATIC = object()  # "compile this call per shape": the key cannot be (or no longer is) dynamic


def dynamic_key(a):
    """A tensor's guard without its sizes (its rank instead)."""
    return ("D", a._data.ndim, a._dtype.name, str(a.device), a.requires_grad)


class DynamicEntry:
    """The programs of one size-free guard key; ``None`` from :meth:`make` where the
    function cannot be exported (it reads data, its ops change with a size, its arguments
    nest tensors): the caller compiles per shape instead."""

    def __init__(self, fn, stats):
        self.fn, self.stats, self.programs = fn, stats, []

    @classmethod
    def make(cls, fn, flat, call, stats):
        if not all(isinstance(a, Tensor) or type(a) in (int, float, bool, str, type(None))
                   for a in flat):
            return None
        entry = cls(call, stats)
        return entry if entry._export(flat) else None

    def _export(self, flat) -> bool:
        """Export at these sizes with every dim of size >= 2 symbolic (see :func:`_spec` for
        the plans tried in turn)."""
        for plan in ("apart", "batch apart", "tied", "leading"):
            specs = [_spec(a, k, plan) if isinstance(a, Tensor) else None
                     for k, a in enumerate(flat)]
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", SpecializationWarning)  # .specialized
                    ep = export(self.fn, flat, dynamic_shapes=specs)
            except (GraphBreak, NotImplementedError, ValueError, TypeError, RuntimeError,
                    IndexError):
                continue  # a probe size the program cannot run, or it reads data
            self.programs.append(ep)
            return True
        return False

    def __call__(self, flat, call):
        tensors = [a for a in flat if isinstance(a, Tensor)]
        for ep in self.programs:
            try:
                ep._bind(tensors)  # the dims, the symbols' ranges and the guards
            except RuntimeError:
                continue
            return ep(*tensors)
        # no program stands for these sizes: export one for them (a recompile)
        self.stats["recompiles"] += 1
        if len(self.programs) >= RECOMPILE_LIMIT or not self._export(flat):
            return STATIC
        return self.programs[-1](*tensors)


def _spec(a, k, plan):
    """Argument ``k``'s symbolic dims under ``plan``: "apart", each dim its own symbol;
    where a probe size cannot run (a matmul's inner dims must move together), dims of one
    size share a symbol, with the first argument's leading dim apart ("batch apart", as a
    batch dim rarely equals another by more than chance) or not ("tied"); "leading": the
    leading dims only, tied by size. A call where tied dims differ fails the binding and
    exports again: never wrong, a recompile at worst."""
    out = {}
    for d, n in enumerate(a.shape):
        if n < 2 or plan == "leading" and d:
            continue
        apart = plan == "apart" or plan == "batch apart" and k == 0 and d == 0
        out[d] = f"s{k}_{d}" if apart else f"s{n}"
    return out
