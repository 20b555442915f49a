"""Evidence for L-Mul (spec 4): mean/max relative error of 3-bit and 4-bit-mantissa L-Mul (both
variants) against exact products, next to RNE multiplication in fp8 e4m3 / e5m2 and bf16.

Setting 1: all pairs of on-grid m-bit mantissas in [1, 2). Setting 2: x, y ~ U[1, 2) in float64,
inputs quantized (RNE) to the format first, errors against the exact x*y. Also attention with
L-Mul matmuls against float32 attention. Run: ``python examples/numerics_lmul.py``.
"""

import numpy as np

from tensorix import numerics as nx

LMUL_FORMATS = [("L-Mul m=3 (e4m3)", "fp8_e4m3"), ("L-Mul m=4 (e4m4)", "e4m4"),
                ("L-Mul m=7 (bf16)", "bf16")]
RNE_FORMATS = [("RNE e4m3", "fp8_e4m3"), ("RNE e5m2", "fp8_e5m2"), ("RNE bf16", "bf16")]


def rel(got, exact):
    e = np.abs(np.asarray(got, np.float64) - exact) / np.abs(exact)
    return 100 * e.mean(), 100 * e.max()


def rne_product(x, y, fmt):
    q = lambda v: nx.decode(nx.encode(v, fmt), fmt, np.float64)  # noqa: E731
    return q(q(x) * q(y))


def setting1():
    rows = []
    for name, fmt in LMUL_FORMATS + RNE_FORMATS:
        m = nx.get_format(fmt).mbits
        g = 1 + np.arange(2**m) / 2**m
        x, y = (a.ravel() for a in np.meshgrid(g, g))
        ex = x * y
        if name.startswith("L-Mul"):
            rows.append((name, *rel(nx.lmul(x, y, fmt, "formula"), ex),
                         *rel(nx.lmul(x, y, fmt, "bitadd"), ex)))
        else:
            rows.append((name, *rel(rne_product(x, y, fmt), ex), float("nan"), float("nan")))
    return rows


def setting2(n=200_000, seed=0):
    rng = np.random.default_rng(seed)
    x, y = rng.uniform(1, 2, n), rng.uniform(1, 2, n)
    ex = x * y
    rows = []
    for name, fmt in LMUL_FORMATS:
        rows.append((name, rel(nx.lmul(x, y, fmt, "formula"), ex)[0],
                     rel(nx.lmul(x, y, fmt, "bitadd"), ex)[0]))
    for name, fmt in RNE_FORMATS:
        rows.append((name, rel(rne_product(x, y, fmt), ex)[0], float("nan")))
    return rows


def attention(seed=0):
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal((4, 16, 32)).astype(np.float32) for _ in range(3))
    s = q @ k.transpose(0, 2, 1) / np.sqrt(32)
    p = np.exp(s - s.max(-1, keepdims=True))
    ref = (p / p.sum(-1, keepdims=True)) @ v
    out = {}
    for name, fmt in (("bf16 L-Mul", "bf16"), ("e4m3 L-Mul", "fp8_e4m3")):
        got = nx.lmul_attention(q, k, v, fmt)
        out[name] = float(np.linalg.norm(got - ref) / np.linalg.norm(ref))
    return out


def main():
    print("Setting 1: all on-grid mantissa pairs in [1, 2) (mean % / max %)\n")
    print("| | formula mean | formula max | bit-add mean | bit-add max |\n|---|---|---|---|---|")
    for r in setting1():
        print(f"| {r[0]} | " + " | ".join("-" if v != v else f"{v:.2f}" for v in r[1:]) + " |")
    print("\nSetting 2: x, y ~ U[1,2), inputs quantized first (mean relative error %)\n")
    print("| | formula / RNE | bit-add |\n|---|---|---|")
    for r in setting2():
        print(f"| {r[0]} | {r[1]:.2f} | " + ("-" if r[2] != r[2] else f"{r[2]:.2f}") + " |")
    print("\nAttention with L-Mul matmuls, relative Frobenius error vs float32:")
    for k, v in attention().items():
        print(f"  {k}: {v:.3e}")


if __name__ == "__main__":
    main()
