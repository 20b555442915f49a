"""The GPUs' default random generators (``torch.cuda.manual_seed`` and friends).

tensorix draws random numbers on the host with a PCG64 stream per :class:`tensorix.Generator`
and copies them to the device (see ``ops/random.py``); each GPU has its own default generator,
made on first use and seeded from the CPU generator's seed, so ``tensorix.manual_seed(s)``
seeds every device and a seeded run gives the same numbers on CPU and GPU. The fused dropout
kernel on the GPU takes one 64-bit seed per call from the same generator.

As in PyTorch, the seeding functions are silently ignored where there is no GPU.
"""

from __future__ import annotations

from ..ops import random as _random
from ._device import device_count, device_index

__all__ = ["manual_seed", "manual_seed_all", "seed", "seed_all", "initial_seed",
           "get_rng_state", "set_rng_state", "get_rng_state_all", "set_rng_state_all",
           "default_generators"]


def _generator(device, op):
    return _random.device_generator(f"cuda:{device_index(device, op)}")


def default_generators() -> tuple:
    """The default :class:`tensorix.Generator` of each GPU (empty without a GPU)."""
    return tuple(_random.device_generator(f"cuda:{i}") for i in range(device_count()))


def manual_seed(seed) -> None:
    """Seed the current GPU's default generator (ignored without a GPU)."""
    if device_count():
        _generator(None, "manual_seed").manual_seed(seed)


def manual_seed_all(seed) -> None:
    """Seed the default generator of every GPU (ignored without a GPU)."""
    for gen in default_generators():
        gen.manual_seed(seed)


def seed() -> None:
    """Seed the current GPU's generator from OS entropy (ignored without a GPU)."""
    if device_count():
        _generator(None, "seed").seed()


def seed_all() -> None:
    """Seed every GPU's generator from OS entropy, one draw for all (as PyTorch)."""
    gens = default_generators()
    if gens:
        new = gens[0].seed()
        for gen in gens[1:]:
            gen.manual_seed(new)


def initial_seed() -> int:
    """The current GPU generator's last seed."""
    return _generator(None, "initial_seed").initial_seed()


def get_rng_state(device="cuda"):
    """The state of a GPU's default generator, a uint8 tensor (save it with a checkpoint)."""
    return _generator(device, "get_rng_state").get_state()


def set_rng_state(new_state, device="cuda") -> None:
    """Restore a GPU generator's state from :func:`get_rng_state`."""
    _generator(device, "set_rng_state").set_state(new_state)


def get_rng_state_all() -> list:
    """Every GPU generator's state."""
    return [gen.get_state() for gen in default_generators()]


def set_rng_state_all(new_states) -> None:
    """Restore every GPU generator's state from :func:`get_rng_state_all`."""
    gens = default_generators()
    if len(new_states) != len(gens):
        raise ValueError(f"set_rng_state_all(): expected {len(gens)} states (one per GPU), "
                         f"got {len(new_states)}")
    for gen, st in zip(gens, new_states):
        gen.set_state(st)
