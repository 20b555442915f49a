"""Evidence for 16-bit-only training (spec 3; Zamirai et al. 2020): with bf16 weights, bf16
gradients and bf16 optimizer state, round-to-nearest weight updates stall once the updates fall
below half an ulp of the weights, while stochastic rounding and Kahan-compensated updates keep
up with float32 training.

Two small problems written with raw tensorix ops and autograd: linear regression and a 2-layer
tanh MLP regression. Everything in the bf16 runs is bf16 (tensorix bf16 ops compute in float32
and round once per op); the weight update uses SGD16/AdamW16 with update_rounding rn / sr /
kahan. The float32 run uses the same loop in float32.
Run: ``python examples/numerics_bf16_training.py``.
"""

import numpy as np

import tensorix as tx
from tensorix import numerics as nx


def regression_data(seed=0, n=512, d=32):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)).astype(np.float32)
    w = (1 + rng.random((d, 1))).astype(np.float32)  # weights near 1-2: bf16 ulp 2^-7..2^-6
    return X, X @ w, w


def bf16_floor(X, y, w):
    """The loss of the true weights rounded to bf16, in the bf16 forward: the best any bf16
    weight vector can be expected to reach."""
    Xt, yt = tx.tensor(X).to(tx.bfloat16), tx.tensor(y).to(tx.bfloat16)
    r = Xt @ tx.tensor(w).to(tx.bfloat16) - yt
    return float((r * r).mean().to(tx.float32).item())


def linreg(X, y, dtype, mode, steps=600, lr=0.02):
    Xt, yt = tx.tensor(X).to(dtype), tx.tensor(y).to(dtype)
    w = tx.zeros(X.shape[1], 1, dtype=dtype, requires_grad=True)
    if dtype is tx.float32:
        opt = tx.optim.SGD([w], lr=lr)
    else:
        opt = nx.SGD16([w], lr=lr, update_rounding=mode, seed=1)
    losses = []
    for _ in range(steps):
        r = Xt @ w - yt
        loss = (r * r).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.to(tx.float32).item()))
    return losses


def mlp_data(seed=1, n=256, d=8, h=32):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)).astype(np.float32)
    W1 = rng.standard_normal((d, h)).astype(np.float32) / np.sqrt(d)
    W2 = rng.standard_normal((h, 1)).astype(np.float32) / np.sqrt(h)
    return X, np.tanh(X @ W1) @ W2


def mlp(X, y, dtype, mode, steps=400, lr=3e-3, seed=2):
    rng = np.random.default_rng(seed)
    d, h = X.shape[1], 32
    W1 = tx.tensor(rng.standard_normal((d, h)).astype(np.float32) / np.sqrt(d)).to(dtype)
    W2 = tx.tensor(rng.standard_normal((h, 1)).astype(np.float32) / np.sqrt(h)).to(dtype)
    params = [W1.requires_grad_(), W2.requires_grad_()]
    Xt, yt = tx.tensor(X).to(dtype), tx.tensor(y).to(dtype)
    if dtype is tx.float32:
        opt = tx.optim.AdamW(params, lr=lr, weight_decay=0.0)
    else:
        opt = nx.AdamW16(params, lr=lr, weight_decay=0.0, update_rounding=mode, seed=3)
    losses = []
    for _ in range(steps):
        r = tx.tanh(Xt @ params[0]) @ params[1] - yt
        loss = (r * r).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.to(tx.float32).item()))
    return losses


RUNS = [("float32", tx.float32, None), ("bf16 + RN update", tx.bfloat16, "rn"),
        ("bf16 + SR update", tx.bfloat16, "sr"), ("bf16 + Kahan update", tx.bfloat16, "kahan")]


def table(name, fn, data, checkpoints):
    X, y = data[:2]
    print(f"\n{name}: loss at step\n")
    print("| run | " + " | ".join(str(c) for c in checkpoints) + " |\n|---|" +
          "---|" * len(checkpoints))
    out = {}
    for label, dtype, mode in RUNS:
        losses = fn(X, y, dtype, mode)
        out[label] = losses
        print(f"| {label} | " + " | ".join(f"{losses[c - 1]:.2e}" for c in checkpoints) + " |")
    return out


def main():
    data = regression_data()
    table("Linear regression (SGD16, lr 0.02, 32 features)", linreg, data,
          [50, 100, 200, 400, 600])
    print(f"\nloss of the true weights rounded to bf16 (bf16 forward): {bf16_floor(*data):.2e}")
    table("2-layer tanh MLP regression (AdamW16, lr 3e-3)", mlp, mlp_data(),
          [50, 100, 200, 300, 400])


if __name__ == "__main__":
    main()
