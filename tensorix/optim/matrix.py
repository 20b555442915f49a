"""Optimizers that precondition whole weight matrices: Muon (torch.optim.Muon), Shampoo and
SOAP. Each keeps its state per matrix, so ``distributed.optim.ZeroRedundancyOptimizer`` shards
them over ranks by giving each matrix one owner.

- **Muon** (Jordan et al. 2024): SGD momentum (Nesterov by default) whose update is replaced by
  its orthogonal polar factor, approximated by 5 quintic Newton-Schulz steps in bfloat16, as
  torch does; 2-D parameters only.
- **Shampoo** (Gupta et al. 2018): accumulate ``L += G G^T`` and ``R += G^T G``, step along
  ``L^{-1/4} G R^{-1/4}`` (roots by eigendecomposition every ``precondition_frequency`` steps);
  vectors get the diagonal (AdaGrad) form.
- **SOAP** (Vyas et al. 2024): Adam run in the eigenbasis of Shampoo's (exponentially averaged)
  ``L`` and ``R``, the basis refreshed every ``precondition_frequency`` steps (it starts as the
  identity: the first steps are Adam's); vectors get plain Adam. With a basis never refreshed it
  is exactly Adam.

All three compute on host (NumPy) arrays: parameters on a GPU are refused for now.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from .optimizer import Optimizer, check_betas, check_nonneg, decayed_grad, zero_state


class _Host(Optimizer):
    """Refuses parameters that are not on the CPU (the math below is NumPy)."""

    def add_param_group(self, group):
        super().add_param_group(group)
        for p in self.param_groups[-1]["params"]:
            if p.device.type != "cpu":
                raise TypeError(f"{type(self).__name__}: parameters must be on the CPU for "
                                f"now (got one on {p.device})")

__all__ = ["Muon", "Shampoo", "SOAP", "newton_schulz"]

_BF16 = ml_dtypes.bfloat16


def _bf16(x):
    """Round a float32 array to bfloat16 and back (torch's bfloat16 ops round each result)."""
    return x.astype(_BF16).astype(np.float32)


def newton_schulz(g, coefficients=(3.4445, -4.775, 2.0315), steps=5, eps=1e-7):
    """The orthogonal polar factor of the matrix ``g`` (approximately: singular values end in
    about [0.7, 1.2]) by quintic Newton-Schulz iterations in bfloat16, as torch.optim.Muon:
    ``(m, n) -> (m, n)``. Example: ``newton_schulz(np.random.randn(4, 3))``."""
    if g.ndim != 2:
        raise ValueError(f"newton_schulz(): expected a 2-D matrix, got shape {g.shape}")
    a, b, c = coefficients
    x = _bf16(np.asarray(g, np.float32))
    tall = x.shape[0] > x.shape[1]
    if tall:
        x = x.T
    x = _bf16(x / max(float(_bf16(np.array(np.linalg.norm(x)))), eps))
    for _ in range(steps):
        gram = _bf16(x @ x.T)
        # addmm: the product and the sum in float32, one rounding
        update = _bf16(b * gram + c * (gram @ gram))
        x = _bf16(a * x + update @ x)
    return x.T if tall else x


class Muon(_Host):
    """torch.optim.Muon: momentum, then the update orthogonalised (``newton_schulz``), scaled
    by ``sqrt(max(1, rows/cols))`` (``adjust_lr_fn="original"``) or ``0.2 sqrt(max(rows,
    cols))`` (``"match_rms_adamw"``), with decoupled weight decay. 2-D parameters only.

    Example: ``Muon([layer.weight], lr=0.02)`` (use AdamW for biases and embeddings).
    """

    def __init__(self, params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
                 ns_coefficients=(3.4445, -4.775, 2.0315), eps=1e-7, ns_steps=5,
                 adjust_lr_fn=None):
        check_nonneg("Muon", lr=lr, momentum=momentum, weight_decay=weight_decay)
        if adjust_lr_fn not in (None, "original", "match_rms_adamw"):
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        if ns_steps >= 100:
            raise ValueError("Number of steps must be less than 100 for computational "
                             "efficiency")
        super().__init__(params, dict(lr=lr, weight_decay=weight_decay, momentum=momentum,
                                      nesterov=nesterov, ns_coefficients=ns_coefficients,
                                      eps=eps, ns_steps=ns_steps, adjust_lr_fn=adjust_lr_fn))
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError(f"Muon only supports 2D parameters whereas we found a "
                                     f"parameter with size: {tuple(p.shape)}")

    def _update(self, group, params):
        mu = group["momentum"]
        for p in params:
            st = zero_state(self.state[p], p, ("momentum_buffer",))
            g, buf = p.grad._data, st["momentum_buffer"]._data
            buf += (1 - mu) * (g - buf)  # lerp towards the gradient
            update = g + mu * (buf - g) if group["nesterov"] else buf
            ortho = newton_schulz(update, group["ns_coefficients"], group["ns_steps"],
                                  group["eps"])
            rows, cols = p.shape
            fn = group["adjust_lr_fn"]
            ratio = 0.2 * math.sqrt(max(rows, cols)) if fn == "match_rms_adamw" else \
                math.sqrt(max(1, rows / cols))
            p._data *= 1 - group["lr"] * group["weight_decay"]
            p._data -= (group["lr"] * ratio * ortho).astype(p._data.dtype)
            st["step"] += 1
            p._version[0] += 1


def _inverse_root(m, root, eps):
    """``(m + eps I)^(-1/root)`` of a symmetric PSD matrix, by eigendecomposition in float64."""
    w, q = np.linalg.eigh(m.astype(np.float64) + eps * np.eye(m.shape[0]))
    return (q * np.maximum(w, eps) ** (-1.0 / root)) @ q.T


class Shampoo(_Host):
    """Shampoo for matrices (``L^{-1/4} G R^{-1/4}``; the roots recomputed every
    ``precondition_frequency`` steps), AdaGrad for other shapes; optional heavy-ball momentum
    and L2 weight decay. ``epsilon`` is added to L and R before the root: a gradient outside
    the span of the earlier ones is amplified by at most ``epsilon^(-1/4)`` while the roots are
    stale. Example: ``Shampoo(model.parameters(), lr=0.1)``."""

    def __init__(self, params, lr=0.1, momentum=0.0, weight_decay=0.0, epsilon=1e-4,
                 precondition_frequency=1):
        check_nonneg("Shampoo", lr=lr, momentum=momentum, weight_decay=weight_decay,
                     epsilon=epsilon)
        super().__init__(params, dict(lr=lr, momentum=momentum, weight_decay=weight_decay,
                                      epsilon=epsilon,
                                      precondition_frequency=int(precondition_frequency)))

    def _update(self, group, params):
        eps = group["epsilon"]
        for p in params:
            st = self.state[p]
            g = decayed_grad(p._data, p.grad._data, lr=group["lr"],
                             weight_decay=group["weight_decay"], maximize=False)
            if not st:
                st["step"] = 0
                if p.ndim == 2:
                    st["L"], st["R"] = np.zeros((p.shape[0],) * 2), np.zeros((p.shape[1],) * 2)
                else:
                    st["sum_sq"] = np.zeros(p.shape)
                st["momentum"] = np.zeros(p.shape)
            if p.ndim == 2:
                st["L"] += g @ g.T
                st["R"] += g.T @ g
                if st["step"] % group["precondition_frequency"] == 0:
                    st["L_root"] = _inverse_root(st["L"], 4, eps)
                    st["R_root"] = _inverse_root(st["R"], 4, eps)
                direction = st["L_root"] @ g @ st["R_root"]
            else:
                st["sum_sq"] += g * g
                direction = g / (np.sqrt(st["sum_sq"]) + eps)
            if group["momentum"]:
                st["momentum"] = group["momentum"] * st["momentum"] + direction
                direction = st["momentum"]
            p._data -= (group["lr"] * direction).astype(p._data.dtype)
            st["step"] += 1
            p._version[0] += 1


class SOAP(_Host):
    """SOAP: Adam in the eigenbasis of Shampoo's preconditioners (EMA with ``shampoo_beta``,
    basis refreshed every ``precondition_frequency`` steps), decoupled weight decay; plain Adam
    for non-matrices. Example: ``SOAP(model.parameters(), lr=3e-3)``."""

    def __init__(self, params, lr=3e-3, betas=(0.95, 0.95), shampoo_beta=None, eps=1e-8,
                 weight_decay=0.01, precondition_frequency=10):
        check_nonneg("SOAP", lr=lr, eps=eps, weight_decay=weight_decay)
        betas = check_betas("SOAP", betas)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      shampoo_beta=betas[1] if shampoo_beta is None else
                                      shampoo_beta,
                                      precondition_frequency=int(precondition_frequency)))

    def _update(self, group, params):
        beta1, beta2 = group["betas"]
        for p in params:
            st = self.state[p]
            g = p.grad._data.astype(np.float64)
            matrix = p.ndim == 2
            if not st:
                st["step"] = 0
                st["exp_avg"], st["exp_avg_sq"] = np.zeros(p.shape), np.zeros(p.shape)
                if matrix:
                    st["L"], st["R"] = np.zeros((p.shape[0],) * 2), np.zeros((p.shape[1],) * 2)
                    st["QL"], st["QR"] = np.eye(p.shape[0]), np.eye(p.shape[1])
            st["step"] += 1
            t = st["step"]
            rot = st["QL"].T @ g @ st["QR"] if matrix else g
            st["exp_avg"] = beta1 * st["exp_avg"] + (1 - beta1) * rot
            st["exp_avg_sq"] = beta2 * st["exp_avg_sq"] + (1 - beta2) * rot * rot
            m_hat = st["exp_avg"] / (1 - beta1 ** t)
            v_hat = st["exp_avg_sq"] / (1 - beta2 ** t)
            step = m_hat / (np.sqrt(v_hat) + group["eps"])
            if matrix:
                step = st["QL"] @ step @ st["QR"].T
                sb = group["shampoo_beta"]
                st["L"] = sb * st["L"] + (1 - sb) * (g @ g.T)
                st["R"] = sb * st["R"] + (1 - sb) * (g.T @ g)
                if t % group["precondition_frequency"] == 0:
                    # the first moment moves to the new basis; the second stays, as in the
                    # authors' implementation
                    ql, qr = np.linalg.eigh(st["L"])[1], np.linalg.eigh(st["R"])[1]
                    st["exp_avg"] = (ql.T @ st["QL"]) @ st["exp_avg"] @ (st["QR"].T @ qr)
                    st["QL"], st["QR"] = ql, qr
            p._data *= 1 - group["lr"] * group["weight_decay"]
            p._data -= (group["lr"] * step).astype(p._data.dtype)
            p._version[0] += 1
