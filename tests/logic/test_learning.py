"""The paper's models written as tensor-logic programs train exactly like the same models built
from tensorix ops and nn.functional: same initial values, same optimizer, same losses."""

import numpy as np
import pytest

import tensorix as tx
import tensorix.nn.functional as F
from tensorix import logic as tl

F64 = tx.float64
STEPS = 12


def _t(a, grad=False):
    return tx.tensor(np.asarray(a, dtype=np.float64), dtype=F64, requires_grad=grad)


def _train_reference(params, loss_fn, optimizer="sgd", lr=0.1, steps=STEPS):
    ps = {k: _t(v, True) for k, v in params.items()}
    cls = {"sgd": tx.optim.SGD, "adam": tx.optim.Adam}[optimizer]
    opt = cls(list(ps.values()), lr=lr)
    losses = []
    for step in range(steps + 1):
        loss = loss_fn(ps)
        losses.append(float(loss.detach().item()))
        if step == steps:
            break
        opt.zero_grad()
        loss.backward()
        opt.step()
    return losses


def _compare(text, data, init, loss_fn, optimizer="sgd", lr=0.1, loss="Loss"):
    P = tl.Program(text, dtype=F64)
    r = tl.fit(P, loss=loss, data=data, init=init, optimizer=optimizer, lr=lr, steps=STEPS)
    ref = _train_reference(init, loss_fn, optimizer, lr)
    np.testing.assert_allclose(r.losses, ref, rtol=1e-9, atol=1e-12)
    assert r.losses[-1] < r.losses[0]
    assert set(r.params) == set(init)
    return P, r


MLP = """
H[n, h] = relu(W1[h, i] X[n, i] + B1[h])
Y[n, o] = W2[o, h] H[n, h] + B2[o]
E[n, o] = Y[n, o] - T[n, o]
Loss avg= E[n, o] E[n, o]
"""


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_mlp_matches_functional(optimizer):
    rng = np.random.default_rng(0)
    X, T = rng.standard_normal((16, 3)), rng.standard_normal((16, 2))
    init = {"W1": rng.standard_normal((5, 3)) * 0.5, "B1": rng.standard_normal(5) * 0.1,
            "W2": rng.standard_normal((2, 5)) * 0.5, "B2": np.zeros(2)}

    def loss_fn(p):
        h = tx.relu(F.linear(_t(X), p["W1"], p["B1"]))
        return ((F.linear(h, p["W2"], p["B2"]) - _t(T)) ** 2).mean()

    _compare(MLP, {"X": X, "T": T}, init, loss_fn, optimizer, lr=0.05)


CNN = """
C[n, c, x, y] = relu(K[c, ch, dx, dy] Img[n, ch, x+dx, y+dy] + Bc[c])
Pool[n, c, x/2, y/2] max= C[n, c, x, y]
Out[n, o] = Wo[o, c, x, y] Pool[n, c, x, y] + Bo[o]
E[n, o] = Out[n, o] - T[n, o]
Loss avg= E[n, o] E[n, o]
"""


def test_cnn_matches_conv2d_and_max_pool():
    rng = np.random.default_rng(1)
    img, T = rng.standard_normal((4, 2, 6, 6)), rng.standard_normal((4, 2))
    init = {"K": rng.standard_normal((3, 2, 3, 3)) * 0.3, "Bc": rng.standard_normal(3) * 0.1,
            "Wo": rng.standard_normal((2, 3, 2, 2)) * 0.3, "Bo": np.zeros(2)}

    def loss_fn(p):
        c = tx.relu(F.conv2d(_t(img), p["K"], p["Bc"]))
        pooled = F.max_pool2d(c, 2)
        out = F.linear(pooled.flatten(1), p["Wo"].reshape(2, -1), p["Bo"])
        return ((out - _t(T)) ** 2).mean()

    P, _ = _compare(CNN, {"Img": img, "T": T}, init, loss_fn, lr=0.05)
    assert tuple(P.value("C").shape) == (4, 3, 4, 4) and tuple(P.value("Pool").shape) == (4, 3,
                                                                                         2, 2)


ATTENTION = """
Dk = 3
Query[n, p, k] = WQ[k, d] X[n, p, d]
Key[n, p, k] = WK[k, d] X[n, p, d]
Val[n, p, v] = WV[v, d] X[n, p, d]
Comp[n, p, p'.] = softmax(Query[n, p, k] Key[n, p', k] / sqrt(Dk))
Attn[n, p, v] = Comp[n, p, p'] Val[n, p', v]
E[n, p, v] = Attn[n, p, v] - T[n, p, v]
Loss avg= E[n, p, v] E[n, p, v]
"""


def test_attention_matches_matmul_softmax():
    rng = np.random.default_rng(2)
    X, T = rng.standard_normal((2, 5, 4)), rng.standard_normal((2, 5, 3))
    init = {k: rng.standard_normal((3, 4)) * 0.5 for k in ("WQ", "WK", "WV")}

    def loss_fn(p):
        x = _t(X)
        q, k, v = x @ p["WQ"].t(), x @ p["WK"].t(), x @ p["WV"].t()
        s = F.softmax(q @ k.transpose(1, 2) / np.sqrt(3.0), dim=-1)
        return ((s @ v - _t(T)) ** 2).mean()

    _compare(ATTENTION, {"X": X, "T": T}, init, loss_fn, lr=0.2)


KERNEL = """
Var = 0.5
K[q, i] = exp(-(XQ[q, j] - XS[i, j])^2 / Var)
Out[q] = sig(A[i] Lab[i] K[q, i] + B)
Loss avg= -(Y[q] log(Out[q]) + (1 - Y[q]) log(1 - Out[q]))
"""


def test_kernel_machine_matches_explicit_ops():
    rng = np.random.default_rng(3)
    XS, XQ = rng.standard_normal((6, 2)), rng.standard_normal((10, 2))
    lab, y = np.sign(rng.standard_normal(6)), (rng.random(10) > 0.5).astype(float)
    init = {"A": np.full(6, 0.1), "B": 0.0}

    def loss_fn(p):
        d = ((_t(XQ)[:, None, :] - _t(XS)[None, :, :]) ** 2).sum(-1)
        out = tx.sigmoid(tx.exp(-d / 0.5) @ (p["A"] * _t(lab)) + p["B"])
        yt = _t(y)
        return -(yt * tx.log(out) + (1 - yt) * tx.log(1 - out)).mean()

    _compare(KERNEL, {"XS": XS, "XQ": XQ, "Lab": lab, "Y": y}, init, loss_fn, lr=0.5)


LOGREG = """
P[e] = sig(W[j] X[e, j] + B)
Loss avg= -(Lab[e] log(P[e]) + (1 - Lab[e]) log(1 - P[e]))
"""


def test_logistic_regression_matches_explicit_ops():
    rng = np.random.default_rng(4)
    X = rng.standard_normal((20, 3))
    y = (X @ np.array([1.0, -2.0, 0.5]) > 0).astype(float)
    init = {"W": rng.standard_normal(3) * 0.1, "B": 0.0}

    def loss_fn(p):
        pr = tx.sigmoid(_t(X) @ p["W"] + p["B"])
        return -(_t(y) * tx.log(pr) + (1 - _t(y)) * tx.log(1 - pr)).mean()

    _compare(LOGREG, {"X": X, "Lab": y}, init, loss_fn, lr=1.0)


def test_default_init_is_seeded_and_literals_are_initial_values():
    rng = np.random.default_rng(5)
    X, T = rng.standard_normal((8, 3)), rng.standard_normal((8, 2))
    decl = "tensor W1[5, 3]\ntensor W2[2, 5]\n"
    runs = [tl.fit(tl.Program(decl + MLP, dtype=F64), data={"X": X, "T": T}, steps=3,
                   seed=7).losses for _ in range(2)]
    assert runs[0] == runs[1]
    P = tl.Program("W = [0.5, -0.5]\nE[n] = W[j] X[n, j] - T[n]\nLoss avg= E[n] E[n]",
                   dtype=F64)
    r = tl.fit(P, data={"X": X[:, :2], "T": T[:, 0]}, steps=0)
    e = X[:, :2] @ np.array([0.5, -0.5]) - T[:, 0]
    assert r.losses == [pytest.approx(float((e * e).mean()), rel=1e-12)]
    r = tl.fit(P, data={"X": X[:, :2], "T": T[:, 0]}, steps=50, lr=0.3)
    w = r.params["W"].detach().numpy(force=True)
    np.testing.assert_allclose(w, np.linalg.lstsq(X[:, :2], T[:, 0], rcond=None)[0], atol=1e-3)
    assert set(P.run().params) == {"W"}   # the program keeps the trained values


def test_learning_through_sparse_relations():
    """A GNN-style aggregation over a Boolean relation (sparse gather/scatter) trains."""
    P = tl.Program("""
        Neig(0, 1), Neig(1, 2), Neig(2, 0), Neig(2, 3)
        Agg[n, d] = Neig(n, m) Emb[m, d]
        Y[n] = sig(W[d] Agg[n, d] + U[d] Emb[n, d])
        Loss avg= -(Lab[n] log(Y[n]) + (1 - Lab[n]) log(1 - Y[n]))
    """, dtype=F64)
    rng = np.random.default_rng(6)
    emb = rng.standard_normal((4, 3))
    r = tl.fit(P, data={"Emb": emb, "Lab": [1, 0, 1, 0]}, init={"W": np.zeros(3),
                                                                "U": np.zeros(3)}, lr=0.5)
    adj = np.zeros((4, 4))
    for a, b in [(0, 1), (1, 2), (2, 0), (2, 3)]:
        adj[a, b] = 1
    np.testing.assert_allclose(P.value("Agg").detach().numpy(force=True), adj @ emb, atol=1e-12)
    assert r.losses[-1] < r.losses[0] and r.losses[0] == pytest.approx(np.log(2))
