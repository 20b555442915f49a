"""Run a PyTorch program unmodified on torch or on tensorix.

A program is executed from its source with one change of environment only: on tensorix its
``import torch`` / ``import torch.x.y`` / ``from torch.x import y`` statements resolve to
``tensorix`` / ``tensorix.x.y``, through an ``__import__`` placed in the program's own
builtins. Nothing else in the process is patched, so real torch and tensorix run side by side.

Each program defines ``make_model()``, ``make_data()`` and ``train(model, data, steps)``
(returning the per-step losses), and trains when run as a script.
"""

from __future__ import annotations

import builtins
import pathlib
import types

import numpy as np

PROGRAMS = pathlib.Path(__file__).parent / "programs"


def _tensorix_import(name, globals=None, locals=None, fromlist=(), level=0):
    # `import torch.nn as nn` asks for "torch.nn" and reads the attributes off the top module
    # it gets back; returning tensorix (or tensorix.nn for a fromlist) keeps those lookups.
    if level == 0 and (name == "torch" or name.startswith("torch.")):
        name = "tensorix" + name[len("torch"):]
    return builtins.__import__(name, globals, locals, fromlist, level)


def load(name: str, backend: str) -> types.ModuleType:
    """Execute ``programs/<name>.py`` as a module on ``backend`` ('torch' or 'tensorix')."""
    path = PROGRAMS / f"{name}.py"
    module = types.ModuleType(f"compat_{name}_{backend}")
    module.__file__ = str(path)
    if backend == "tensorix":
        module.__dict__["__builtins__"] = dict(vars(builtins), __import__=_tensorix_import)
    exec(compile(path.read_text(), str(path), "exec"), module.__dict__)
    return module


def program_names() -> list[str]:
    return sorted(p.stem for p in PROGRAMS.glob("*.py") if not p.stem.startswith("_"))


def state_as_numpy(model) -> dict:
    """A torch model's state_dict as NumPy arrays (the weights both runs start from)."""
    return {k: v.detach().cpu().numpy().copy() for k, v in model.state_dict().items()}


def load_numpy_state(model, state: dict, tensorix) -> None:
    model.load_state_dict({k: tensorix.tensor(v) for k, v in state.items()})


def run_pair(name: str, steps: int):
    """Train ``name`` for ``steps`` on torch and on tensorix from the same weights and data.

    Returns ``(torch_losses, tensorix_losses, torch_seconds, tensorix_seconds)``; the times are
    wall-clock seconds per step.
    """
    import time

    import torch

    import tensorix

    prog_t, prog_x = load(name, "torch"), load(name, "tensorix")
    model_t, model_x = prog_t.make_model(), prog_x.make_model()
    load_numpy_state(model_x, state_as_numpy(model_t), tensorix)
    data_t, data_x = prog_t.make_data(), prog_x.make_data()
    torch.manual_seed(0)
    tensorix.manual_seed(0)
    t0 = time.perf_counter()
    losses_t = prog_t.train(model_t, data_t, steps)
    t1 = time.perf_counter()
    losses_x = prog_x.train(model_x, data_x, steps)
    t2 = time.perf_counter()
    return (np.asarray(losses_t, dtype=np.float64), np.asarray(losses_x, dtype=np.float64),
            (t1 - t0) / steps, (t2 - t1) / steps)
