"""Learning in tensor logic: a two-layer network written as three equations, trained by
``tl.fit`` through tensorix autograd. Run: ``python examples/logic_learning.py``."""

import numpy as np

import tensorix as tx
from tensorix import logic as tl

PROGRAM = """
H[n, h] = relu(W1[h, i] X[n, i] + B1[h])
Y[n] = sig(W2[h] H[n, h] + B2)
Loss avg= -(T[n] log(Y[n]) + (1 - T[n]) log(1 - Y[n]))
"""


def main(steps=200):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((128, 2))
    t = (x[:, 0] * x[:, 1] > 0).astype(float)  # XOR of the signs: not linearly separable
    P = tl.Program(PROGRAM, dtype=tx.float64)
    init = {"W1": rng.standard_normal((8, 2)), "B1": np.zeros(8),
            "W2": rng.standard_normal(8) * 0.1, "B2": 0.0}
    r = tl.fit(P, loss="Loss", data={"X": x, "T": t}, init=init, lr=0.5, steps=steps)
    acc = ((P.value("Y").numpy(force=True) > 0.5) == t).mean()
    print(f"loss {r.losses[0]:.4f} -> {r.losses[-1]:.4f}, training accuracy {acc:.1%}")
    return acc


if __name__ == "__main__":
    main()
