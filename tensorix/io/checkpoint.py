"""Whole training checkpoints: model, optimizer, scheduler, data-loader position, step, user
extras and the random-number generator states, in one safetensors file (via
:func:`tensorix.save`), so that a run resumed in a new process follows the bit-identical
trajectory of an uninterrupted one."""

from __future__ import annotations

from ..ops.random import Generator, get_rng_state, set_rng_state
from .safetensors import CheckpointError
from .serialization import load, save

__all__ = ["save_checkpoint", "load_checkpoint"]

_FORMAT = "tensorix.checkpoint/1"
_PARTS = ("model", "optimizer", "scheduler", "loader")


def _state_of(obj):
    """``obj.state_dict()``, or a dict of them for a ``{name: obj}`` mapping (several
    optimizers or schedulers)."""
    if obj is None:
        return None
    if isinstance(obj, dict):
        return {str(k): v.state_dict() for k, v in obj.items()}
    return obj.state_dict()


def _check_record(record, path):
    """The parts every checkpoint has, checked before anything is restored, so that a
    damaged file leaves the given objects untouched."""
    if not isinstance(record, dict) or record.get("format") != _FORMAT:
        raise CheckpointError(f"load_checkpoint(): {path} is not a tensorix training "
                              "checkpoint (written by save_checkpoint)")
    rng = record.get("rng")
    if not (isinstance(rng, dict) and isinstance(rng.get("generators"), dict)
            and "default" in rng and "step" in record and "extra" in record):
        raise CheckpointError(f"load_checkpoint(): {path} is a damaged training checkpoint "
                              "(its rng, step or extra record is missing or malformed)")
    for name, state in [("default", rng["default"]), *rng["generators"].items()]:
        try:  # a scratch generator validates the state without touching the real one
            Generator().set_state(state)
        except RuntimeError as e:
            raise CheckpointError(f"load_checkpoint(): {path} holds a damaged state for "
                                  f"generator {name!r} ({e})") from None
    return rng


def _restore(obj, state, part, path, strict):
    if state is None:
        raise CheckpointError(f"load_checkpoint(): {path} holds no {part} state to restore "
                              f"into the given {part}")
    if isinstance(obj, dict):
        missing = [k for k in obj if str(k) not in state]
        if missing:
            raise CheckpointError(f"load_checkpoint(): {path} has no {part} state named "
                                  f"{missing}; it has {sorted(state)}")
        for k, v in obj.items():
            _restore(v, state[str(k)], f"{part} {k!r}", path, strict)
        return
    if part == "model":
        obj.load_state_dict(state, strict=strict)
    else:
        obj.load_state_dict(state)


def save_checkpoint(path, *, model=None, optimizer=None, scheduler=None, loader=None,
                    step=None, extra=None, generators=None) -> None:
    """Write a full training checkpoint to ``path`` (atomically; no pickle).

    Captured: ``model.state_dict()``, ``optimizer.state_dict()``, ``scheduler.state_dict()``
    (each may also be a ``{name: object}`` dict), the DataLoader's position inside its epoch
    (``loader``), ``step``, ``extra`` (numbers, strings, lists, dicts and tensors), the
    default generator's state (``tensorix.get_rng_state()``) and the states of any other
    ``generators`` (``{name: tensorix.Generator}``, e.g. the one given to a DataLoader).

    Example::

        save_checkpoint("run.safetensors", model=model, optimizer=opt, scheduler=sched,
                        loader=loader, step=step, extra={"best_loss": best})
    """
    gens = {str(k): g.get_state() for k, g in (generators or {}).items()}
    record = {"format": _FORMAT, "step": step, "extra": extra,
              "rng": {"default": get_rng_state(), "generators": gens}}
    for part, obj in zip(_PARTS, (model, optimizer, scheduler, loader)):
        record[part] = _state_of(obj)
    save(record, path)


def load_checkpoint(path, *, model=None, optimizer=None, scheduler=None, loader=None,
                    generators=None, restore_rng=True, strict=True, map_location=None) -> dict:
    """Restore what :func:`save_checkpoint` wrote into the given objects, in place.

    Pass objects built the same way as the saved ones (the optimizer over the model's
    parameters, the scheduler over that optimizer): their states are overwritten. The default
    generator's state is restored unless ``restore_rng=False``; ``generators`` named at save
    time are restored by name. ``strict`` applies to the model's keys.
    Returns ``{"step": ..., "extra": ...}``.

    Raises :class:`CheckpointError` for a corrupted file, a file that is not a checkpoint, or
    a part requested here that the file does not hold.

    Example::

        info = load_checkpoint("run.safetensors", model=model, optimizer=opt,
                               scheduler=sched, loader=loader)
        start = info["step"] + 1
    """
    record = load(path, map_location=map_location)
    rng = _check_record(record, path)
    for name in generators or {}:
        if str(name) not in rng["generators"]:
            raise CheckpointError(f"load_checkpoint(): {path} has no state for generator "
                                  f"{name!r}; it has {sorted(rng['generators'])}")
    for part, obj in zip(_PARTS, (model, optimizer, scheduler, loader)):
        if obj is not None:
            _restore(obj, record.get(part), part, path, strict)
    if restore_rng:
        set_rng_state(rng["default"])
    for name, gen in (generators or {}).items():
        gen.set_state(rng["generators"][str(name)])
    return {"step": record["step"], "extra": record["extra"]}
