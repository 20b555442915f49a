"""The declarative op registry that drives the test matrix.

Each public op has one :class:`OpInfo`: how to call it, a NumPy reference, the torch
counterpart, a sample-input generator, the dtypes it supports and whether it is differentiable.
Entries live in ``tensorix/testing/opinfo/<family>.py``, one module per op family; the
completeness test fails for a public op with no entry (or an explicit exemption with a reason).

A sample is plain data: NumPy arrays (which the harness turns into tensorix or torch tensors)
and Python values, so one sample feeds every oracle.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .. import dtypes as dt

__all__ = ["OpInfo", "Sample", "REGISTRY", "EXEMPT", "register", "exempt", "all_opinfos"]


@dataclass
class Sample:
    """Positional and keyword arguments; ndarrays become tensors, other values pass as is.
    ``grad`` lists the positions of arguments to differentiate (default: float arrays)."""

    args: tuple
    kwargs: dict = field(default_factory=dict)
    grad: tuple | None = None
    name: str = ""

    def __repr__(self):
        shapes = [a.shape if isinstance(a, np.ndarray) else a for a in self.args]
        return f"Sample({self.name or ''}{shapes}, {self.kwargs})"


@dataclass
class OpInfo:
    """One op's test entry.

    ``op``        the tensorix callable (default ``getattr(tensorix, name)``);
    ``ref``       NumPy reference on arrays (None: torch is the only value oracle);
    ``torch``     torch callable or dotted name (default ``torch.<name>``; False: none);
    ``samples``   ``samples(rng, dtype) -> list[Sample]``;
    ``dtypes``    dtypes the op supports and is tested in;
    ``grad``      differentiable (values and grads checked against torch, gradcheck in fp64);
    ``gradgrad``  include in the second-order check;
    ``aliases``   other public names this entry covers;
    ``atol/rtol`` overrides of the dtype tolerance table, as {dtype_name: (rtol, atol)};
    ``output``    post-process outputs before comparison (e.g. pick values from (values,
                  indices)); applied to tensorix, torch and reference outputs alike;
    ``devices``   the device types the op serves (a CPU-only op raises a clear error on others);
    ``bits16``    its float16/bfloat16 forward and backward give torch's CPU bits (torch computes
                  in float32 and rounds once: tensorix's ``_widen16`` / ``widened``).
    """

    name: str
    samples: Callable
    ref: Callable | None = None
    op: Callable | None = None
    torch: Callable | str | bool | None = None
    dtypes: tuple = (dt.float32, dt.float64)
    grad: bool = True
    gradgrad: bool = False
    aliases: tuple = ()
    tol: dict = field(default_factory=dict)
    output: Callable | None = None
    skip_torch_grad: bool = False
    devices: tuple = ("cpu", "cuda")
    bits16: bool = False

    def __post_init__(self):
        if self.op is None:
            import tensorix

            self.op = _resolve(tensorix, self.name)

    def torch_fn(self):
        if self.torch is False:
            return None
        import torch

        if self.torch is None:
            return _resolve(torch, self.name)
        if isinstance(self.torch, str):
            return _resolve(torch, self.torch)
        return self.torch


def _resolve(mod, dotted):
    obj = mod
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


REGISTRY: dict[str, OpInfo] = {}
EXEMPT: dict[str, str] = {}


def register(*infos: OpInfo) -> None:
    for info in infos:
        if info.name in REGISTRY:
            raise ValueError(f"register: duplicate OpInfo for {info.name!r}")
        REGISTRY[info.name] = info


def exempt(reason: str, *names: str) -> None:
    """Declare public names that are not ops of the matrix (tested elsewhere), with why."""
    for n in names:
        EXEMPT[n] = reason


def all_opinfos() -> list[OpInfo]:
    """Import every family's entries and return them sorted by name."""
    from . import opinfo

    for mod in pkgutil.iter_modules(opinfo.__path__):
        importlib.import_module(f"{opinfo.__name__}.{mod.name}")
    return sorted(REGISTRY.values(), key=lambda i: i.name)
