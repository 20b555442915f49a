"""Function transforms built on the engine: vjp, jvp, jacobian, hessian, hvp
(filled in by the autograd change)."""

from __future__ import annotations

__all__: list = []
