"""``tensorix.backends.opt_einsum``: the contraction-path planner tensorix's einsum uses.

``enabled`` and ``strategy`` are recorded with torch's names and defaults; tensorix's einsum
plans its own paths (``tensorix.ops.einsum``), with opt_einsum where it is installed.
"""

from __future__ import annotations

import importlib.util

__all__ = ["is_available", "get_opt_einsum", "enabled", "strategy"]


def is_available() -> bool:
    """Whether the opt_einsum package is installed."""
    return importlib.util.find_spec("opt_einsum") is not None


def get_opt_einsum():
    """The opt_einsum module, or None where it is not installed."""
    if not is_available():
        return None
    import opt_einsum

    return opt_einsum


enabled = True
strategy = "auto"
