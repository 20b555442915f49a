"""Evidence for precision-policy training with fp32 master weights (docs/specs/numerics.md
R6, issue 5):

1. fp16 mixed precision without loss scaling: the output gradients of a small-loss regression
   underflow in fp16 (below 2^-24 they flush to zero), so the weights barely move; dynamic loss
   scaling (GradScaler) recovers float32 training.
2. The same model trained under every autocast preset (bf16, fp16 + GradScaler, fp8, MXFP8,
   MXFP4, NVFP4): operands rounded to the format, products exact, fp32 accumulation,
   straight-through gradients rounded to the policy's gradient format.

The model is ``y = linear(x, W, b)`` on synthetic data written with tensorix ops and autograd;
the optimizer is tensorix.optim.SGD on float32 weights. Run:
``python examples/numerics_fp16_loss_scaling.py``.
"""

import numpy as np

import tensorix as tx
from tensorix import numerics as nx


def data(seed=0, n=2048, d=64, out=16, scale=1e-4):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)).astype(np.float32)
    W = (rng.standard_normal((out, d)) * scale / np.sqrt(d)).astype(np.float32)
    return X, X @ W.T  # small targets: small residuals, tiny output gradients


def train(X, Y, policy, scaler=None, steps=150, lr=0.5, seed=1):
    rng = np.random.default_rng(seed)
    d, out = X.shape[1], Y.shape[1]
    W = tx.tensor((rng.standard_normal((out, d)) * 1e-4 / np.sqrt(d)).astype(np.float32),
                  requires_grad=True)
    b = tx.zeros(out, requires_grad=True)
    opt = tx.optim.SGD([W, b], lr=lr)
    Xt, Yt = tx.tensor(X), tx.tensor(Y)
    scaler = scaler or nx.GradScaler(enabled=False)  # disabled: a plain backward and step
    losses = []
    for _ in range(steps):
        with nx.autocast(policy):
            pred = nx.linear(Xt, W, b)
        r = pred - Yt
        loss = (r * r).mean()
        opt.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        losses.append(float(loss.item()))
    return losses, W


def main():
    X, Y = data()
    base = float((tx.tensor(Y) ** 2).mean().item())
    print(f"target mean square {base:.2e} (the loss of predicting 0)\n")
    runs = [("float32", "fp32", None), ("fp16, no loss scaling", "fp16", None),
            ("fp16 + GradScaler", "fp16", nx.GradScaler(init_scale=2.0**16)),
            ("bf16", "bf16", None),
            ("fp8 (per-tensor scaled e4m3 fwd / e5m2 grads)", "fp8", None),
            ("MXFP8 + GradScaler", "mxfp8", nx.GradScaler(init_scale=2.0**16)),
            ("MXFP4 (bf16 grads)", "mxfp4", None), ("NVFP4 (bf16 grads)", "nvfp4", None)]
    print("| policy | loss @1 | loss @50 | loss @150 | loss @1 / final | skipped steps |")
    print("|---|---|---|---|---|---|")
    for label, pol, scaler in runs:
        losses, _ = train(X, Y, pol, scaler)
        skipped = str(scaler.skipped_steps) if scaler else "-"
        print(f"| {label} | {losses[0]:.2e} | {losses[49]:.2e} | {losses[-1]:.2e} | "
              f"{losses[0] / losses[-1]:.1e} | {skipped} |")


if __name__ == "__main__":
    main()
