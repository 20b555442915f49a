"""Evidence for unit scaling (spec 6): output and gradient standard deviations of unit-scaled
ops against their plain counterparts, for unit-variance inputs and incoming gradients (the
spec's vectors U1-U4). Run: ``python examples/numerics_unit_scaling.py``.
"""

import numpy as np

import tensorix as tx
from tensorix import numerics as nx


def t(rng, shape, rg=True):
    return tx.tensor(rng.standard_normal(shape).astype(np.float32), requires_grad=rg)


def std(v):
    return float(np.std(v.detach().numpy()))


def linear_stds(rng, fn):
    x, w = t(rng, (4096, 1024)), t(rng, (256, 1024))
    y = fn(x, w)
    y.backward(t(rng, (4096, 256), False))
    return std(y), std(x.grad), std(w.grad)


def main():
    rng = np.random.default_rng(0)
    print("U1 linear, b=4096, fan_in=1024, fan_out=256: std(Y), std(dX), std(dW)\n")
    rows = [("plain x @ w.T", lambda x, w: x @ w.mT)]
    for c in (None, "to_output_scale", "gmean"):
        rows.append((f"unit_linear constraint={c}",
                     lambda x, w, c=c: nx.unit_linear(x, w, constraint=c)))
    for name, fn in rows:
        print(f"  {name:40s} " + "  ".join(f"{v:8.4f}" for v in linear_stds(rng, fn)))
    a, b = t(rng, (512, 768)), t(rng, (768, 128))
    y = nx.unit_matmul(a, b, None)
    y.backward(t(rng, (512, 128), False))
    print(f"\nU2 unit_matmul(512x768, 768x128, None): {std(y):.4f} {std(a.grad):.4f} "
          f"{std(b.grad):.4f}")
    p, q = t(rng, (100000,), False), t(rng, (100000,), False)
    print(f"U3 unit_add {std(nx.unit_add(p, q)):.4f}  residual_add(tau=0.5) "
          f"{std(nx.residual_add(p, q, 0.5)):.4f}  unit_dropout(0.5) "
          f"{std(nx.unit_dropout(p, 0.5)):.4f}  unit_gelu {std(nx.unit_gelu(p)):.4f} "
          f"(plain gelu {std(p * 0.5 * (1 + tx.erf(p * 2 ** -0.5))):.4f})")
    logits = t(rng, (64, 1000))
    nx.unit_cross_entropy(logits, tx.tensor(rng.integers(0, 1000, 64))).backward()
    print(f"U4 unit_cross_entropy 64x1000: logit-grad std {std(logits.grad):.4f}")


if __name__ == "__main__":
    main()
