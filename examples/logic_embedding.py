"""Reasoning in embedding space: the grandparent rule run on random object embeddings, at
temperature 0 (Datalog's answer) and at a higher temperature (soft, analogical scores).
Run: ``python examples/logic_embedding.py``."""

import numpy as np

import tensorix as tx
from tensorix import logic as tl


def main(dim=1024):
    P = tl.Program("GP(x, z) <- Parent(x, y), Parent(y, z)", dtype=tx.float64)
    P.facts("Parent", [(0, 1), (0, 2), (1, 3), (1, 4), (2, 5), (3, 6), (5, 7)])
    truth = set(P.value("GP").tuples())
    emb = np.random.default_rng(0).standard_normal((8, dim))
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    for T in (0.0, 0.1):
        r = tl.embed(P, emb, T=T)
        same = r.tuples("GP") == truth
        print(f"T={T}: read-out equals Datalog: {same}")
        print(r.relation("GP").numpy(force=True).round(2))
    return same


if __name__ == "__main__":
    main()
