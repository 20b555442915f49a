"""``tensorix.backends.mps``: Apple's Metal backend, which tensorix does not have."""

__all__ = ["is_available", "is_built"]


def is_available() -> bool:
    """False: tensorix runs on NumPy (CPU) and CuPy (CUDA) only."""
    return False


def is_built() -> bool:
    """False: there is no MPS build of tensorix."""
    return False
