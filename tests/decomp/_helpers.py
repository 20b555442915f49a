"""Random low-rank test tensors for the decomposition tests (NumPy arrays, float64)."""

import numpy as np


def cp_tensor(rng, shape, rank):
    factors = [rng.standard_normal((s, rank)) for s in shape]
    letters = "abcdefgh"[:len(shape)]
    spec = ",".join(f"{c}r" for c in letters) + "->" + letters
    return np.einsum(spec, *factors), factors


def tucker_tensor(rng, shape, rank):
    core = rng.standard_normal(rank)
    factors = [rng.standard_normal((s, r)) for s, r in zip(shape, rank)]
    full = core
    for mode, f in enumerate(factors):
        full = np.moveaxis(np.tensordot(f, full, axes=([1], [mode])), 0, mode)
    return full, core, factors


def chain(cores, ring=False):
    """Contract TT (or, with ``ring``, TR) cores ``(r_k, I_k, r_k+1)`` into the full tensor."""
    full = cores[0]
    for c in cores[1:]:
        full = np.tensordot(full, c, axes=([-1], [0]))
    full = np.trace(full, axis1=0, axis2=-1) if ring else full[0, ..., 0]
    return full


def rel_err(approx, exact):
    approx = approx.detach().numpy() if hasattr(approx, "detach") else approx
    return np.linalg.norm(approx - exact) / np.linalg.norm(exact)
