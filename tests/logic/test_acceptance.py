"""The acceptance examples A1-A12 of docs/specs/tensor-logic.md section 4.4, each written in
the text form and in the embedded Python form: both must build the same statements and give the
expected values (computed independently, with NumPy or by hand, in the spec)."""

import math

import numpy as np
import pytest

import tensorix as tx
from tensorix import logic as tl

F64 = tx.float64


def _same(text, P):
    """The text program and the Python-built program have identical statements."""
    T = tl.Program(text, dtype=F64)
    assert T.statements == P.statements
    return T


def _np(t):
    return t.detach().numpy(force=True)


# -- A1 perceptron --------------------------------------------------------------------------------

A1 = """
W = [0.2, 1.9, -0.7, 3]
X = [0, 1, 1, 0]
Y = step(W[i] X[i])
Y2[i] = step(W[i] X[i])
Y?
"""


def a1_python():
    P = tl.Program(dtype=F64)
    i = tl.index("i")
    W, X = P.tensor("W", [0.2, 1.9, -0.7, 3]), P.tensor("X", [0, 1, 1, 0])
    Y, Y2 = P.tensors("Y Y2")
    Y[()] = tl.step(W[i] * X[i])
    Y2[i] = tl.step(W[i] * X[i])
    P.ask(Y)
    return P


def test_a1_perceptron():
    P = a1_python()
    for Q in (_same(A1, P), P):
        assert float(Q.value("Y")) == 1.0
        np.testing.assert_array_equal(_np(Q.value("Y2")), [0, 1, 0, 0])
        [(text, ans)] = Q.answers()
        assert float(ans) == 1.0


# -- A2 aunt -----------------------------------------------------------------------------------

A2 = """
Sister(Alice, Bob), Sister(Alice, Eve)
Parent(Bob, Charlie), Parent(Bob, Dana)
Aunt(x, z) <- Sister(x, y), Parent(y, z)
A[x, z] = step(Sister[x, y] Parent[y, z])
"""


def a2_python():
    P = tl.Program(dtype=F64)
    x, y, z = tl.indices("x y z")
    Sister, Parent, Aunt, A = (P.relation(n) for n in ("Sister", "Parent", "Aunt", "A"))
    P.fact(Sister("Alice", "Bob"), Sister("Alice", "Eve"))
    P.fact(Parent("Bob", "Charlie"), Parent("Bob", "Dana"))
    P.rule(Aunt(x, z), Sister(x, y), Parent(y, z))
    A[x, z] = tl.step(Sister[x, y] * Parent[y, z])
    return P


def test_a2_aunt():
    P = a2_python()
    expect = {("Alice", "Charlie"), ("Alice", "Dana")}
    for Q in (_same(A2, P), P):
        assert set(Q.value("Aunt").tuples()) == expect
        assert set(Q.value("A").tuples()) == expect
        assert Q.query("Aunt(Alice, Dana)") is True
        assert Q.query("Aunt(Bob, Dana)") is False


# -- A3 the paper's ancestor example ------------------------------------------------------------

A3 = """
Parent(Bob, Charlie)
Ancestor(Alice, Bob)
Ancestor(x, y) <- Parent(x, y)
Ancestor(x, z) <- Ancestor(x, y), Parent(y, z)
Ancestor(Alice, x)?
"""


def a3_python():
    P = tl.Program(dtype=F64)
    x, y, z = tl.indices("x y z")
    Parent, Ancestor = P.relation("Parent"), P.relation("Ancestor")
    P.fact(Parent("Bob", "Charlie"))
    P.fact(Ancestor("Alice", "Bob"))
    P.rule(Ancestor(x, y), Parent(x, y))
    P.rule(Ancestor(x, z), Ancestor(x, y), Parent(y, z))
    P.ask(Ancestor("Alice", x))
    return P


def test_a3_ancestor_facts_and_rules_on_one_relation():
    P = a3_python()
    for Q in (_same(A3, P), P):
        assert set(Q.value("Ancestor").tuples()) == {("Alice", "Bob"), ("Alice", "Charlie"),
                                                     ("Bob", "Charlie")}
        [(_, ans)] = Q.answers()
        assert set(ans["x"]) == {"Bob", "Charlie"}
        assert set(Q.query("Ancestor(Alice, x)", goal_directed=False)["x"]) == {"Bob",
                                                                               "Charlie"}


# -- A4 transitive closure with a cycle ---------------------------------------------------------

A4 = """
Edge(A, B), Edge(B, C), Edge(C, A), Edge(C, D), Edge(E, F)
Path(x, y) <- Edge(x, y)
Path(x, z) <- Path(x, y), Edge(y, z)
"""


def a4_python():
    P = tl.Program(dtype=F64)
    x, y, z = tl.indices("x y z")
    Edge, Path = P.relation("Edge"), P.relation("Path")
    P.fact(*(Edge(a, b) for a, b in ("AB", "BC", "CA", "CD", "EF")))
    P.rule(Path(x, y), Edge(x, y))
    P.rule(Path(x, z), Path(x, y), Edge(y, z))
    return P


def test_a4_transitive_closure_with_cycle():
    P = a4_python()
    pairs = ("AA", "AB", "AC", "AD", "BA", "BB", "BC", "BD", "CA", "CB", "CC", "CD", "EF")
    expect = {tuple(p) for p in pairs}
    for Q in (_same(A4, P), P):
        Q.run()
        assert set(Q.value("Path").tuples()) == expect
        rep = Q.report.component("Path")
        assert rep.delta_sizes == [5, 4, 4] and rep.strategy == "semi-naive fixpoint"
        semi = set(Q.value("Path").tuples())
        Q.run(datalog="naive")
        assert set(Q.value("Path").tuples()) == semi


# -- A5 two-layer MLP ----------------------------------------------------------------------------

A5 = """
X = [1, 2, 0.5]
W1 = [[0.1, 0.2, 0.3], [-0.4, 0.5, -0.6]]
B1 = [0.1, -0.1]
W2 = [[0.7, -0.8]]
B2 = [0.05]
H[h] = relu(W1[h, i] X[i] + B1[h])
Y[o] = sig(W2[o, h] H[h] + B2[o])
Loss = (Y[o] - 1)^2
"""
A5_VALUES = {"X": [1, 2, 0.5], "W1": [[0.1, 0.2, 0.3], [-0.4, 0.5, -0.6]], "B1": [0.1, -0.1],
             "W2": [[0.7, -0.8]], "B2": [0.05]}


def a5_python():
    P = tl.Program(dtype=F64)
    h, i, o = tl.indices("h i o")
    X, W1, B1, W2, B2 = (P.tensor(n, A5_VALUES[n]) for n in ("X", "W1", "B1", "W2", "B2"))
    H, Y, Loss = P.tensors("H Y Loss")
    H[h] = tl.relu(W1[h, i] * X[i] + B1[h])
    Y[o] = tl.sig(W2[o, h] * H[h] + B2[o])
    Loss[()] = (Y[o] - 1) ** 2
    return P


def test_a5_mlp_values_and_gradients():
    P = a5_python()
    for Q in (_same(A5, P), P):
        np.testing.assert_allclose(_np(Q.value("H")), [0.75, 0.2], atol=1e-12)
        np.testing.assert_allclose(_np(Q.value("Y")), [0.6022861768886306], atol=1e-12)
        v = {k: tx.tensor(np.array(a, float), dtype=F64) for k, a in A5_VALUES.items()}
        ref = tx.sigmoid(v["W2"] @ tx.relu(v["W1"] @ v["X"] + v["B1"]) + v["B2"])
        np.testing.assert_allclose(_np(Q.value("Y")), _np(ref), atol=1e-15)
        params = {k: tx.tensor(np.array(A5_VALUES[k], float), dtype=F64, requires_grad=True)
                  for k in ("W1", "W2")}
        Q.run(params=params)
        Q.value("Loss").backward()
        np.testing.assert_allclose(_np(params["W2"].grad), [[-0.14290109, -0.03810696]],
                                   atol=1e-7)
        np.testing.assert_allclose(_np(params["W1"].grad),
                                   [[-0.13337435, -0.26674869, -0.06668717],
                                    [0.15242782, 0.30485565, 0.07621391]], atol=1e-7)
        Q.params = {}


# -- A6 one-equation MLP ------------------------------------------------------------------------

A6 = """
X[0, k] = In[k]
X[i, j] = sig(W[i, j, k] X[i-1, k])
"""


def _a6_weights():
    W = np.zeros((3, 3, 3))
    W[1, :2, :3] = [[0.1, 0.2, 0.3], [-0.4, 0.5, -0.6]]
    W[2, :1, :2] = [[0.7, -0.8]]
    return W


def a6_python():
    P = tl.Program(dtype=F64)
    i, j, k = tl.indices("i j k")
    X, W, In = P.tensors("X W In")
    X[0, k] = In[k]
    X[i, j] = tl.sig(W[i, j, k] * X[i - 1, k])
    return P


def test_a6_one_equation_mlp():
    P = a6_python()
    W, x = _a6_weights(), np.array([1, 2, 0.5])
    for Q in (_same(A6, P), P):
        Q.run(data={"W": W, "In": x})
        X = _np(Q.value("X"))
        sig = lambda z: 1 / (1 + np.exp(-z))  # noqa: E731
        h1 = sig(W[1, :2, :3] @ x)
        h2 = sig(W[2, :1, :2] @ h1)
        np.testing.assert_allclose(X[0], x)
        np.testing.assert_allclose(X[1, :2], h1, atol=1e-14)
        np.testing.assert_allclose(X[2, :1], h2, atol=1e-14)
        np.testing.assert_allclose([X[1, 2], X[2, 1], X[2, 2]], 0.5)  # padded units: sig(0)
        assert Q.report.component("X").kind == "index"


# -- A7 CNN ---------------------------------------------------------------------------------------

A7 = """
Image = [[3, 1, 2, 0], [1, 0, 1, 2], [0, 2, 1, 1], [1, 0, 3, 0]]
Filter = [[1, 0], [0, 1]]
Pre[x, y] = Filter[dx, dy] Image[x+dx, y+dy]
F[x, y] = relu(Filter[dx, dy] Image[x+dx, y+dy] - 2)
Pool[x/2, y/2] = F[x, y]
M[x/2, y/2] max= F[x, y]
"""


def a7_python():
    P = tl.Program(dtype=F64)
    x, y, dx, dy = tl.indices("x y dx dy")
    Image = P.tensor("Image", [[3, 1, 2, 0], [1, 0, 1, 2], [0, 2, 1, 1], [1, 0, 3, 0]])
    Filter = P.tensor("Filter", [[1, 0], [0, 1]])
    Pre, F, Pool, M = P.tensors("Pre F Pool M")
    Pre[x, y] = Filter[dx, dy] * Image[x + dx, y + dy]
    F[x, y] = tl.relu(Filter[dx, dy] * Image[x + dx, y + dy] - 2)
    Pool[x // 2, y // 2] = F[x, y]
    M[x // 2, y // 2] = tl.max_of(F[x, y])
    return P


def test_a7_cnn_index_arithmetic_and_pooling():
    P = a7_python()
    for Q in (_same(A7, P), P):
        np.testing.assert_array_equal(_np(Q.value("Pre")), [[3, 2, 4], [3, 1, 2], [0, 5, 1]])
        np.testing.assert_array_equal(_np(Q.value("F")), [[1, 0, 2], [1, 0, 0], [0, 3, 0]])
        np.testing.assert_array_equal(_np(Q.value("Pool")), [[2, 2], [3, 0]])
        np.testing.assert_array_equal(_np(Q.value("M")), [[1, 2], [3, 0]])


# -- A8 attention -------------------------------------------------------------------------------

A8 = """
X = [[1, 0], [0, 1], [1, 1]]
WQ = [[1, 0], [0, 1]]
WK = [[1, 0], [0, 1]]
WV = [[1, 0], [0, 1]]
Dk = 2
Query[p, dk] = WQ[dk, d] X[p, d]
Key[p, dk] = WK[dk, d] X[p, d]
Val[p, dv] = WV[dv, d] X[p, d]
Comp[p, p'.] = softmax(Query[p, dk] Key[p', dk] / sqrt(Dk))
Attn[p, dv] = Comp[p, p'] Val[p', dv]
"""


def a8_python():
    P = tl.Program(dtype=F64)
    p, q, d, dk, dv = tl.indices("p p' d dk dv")
    eye = [[1, 0], [0, 1]]
    X = P.tensor("X", [[1, 0], [0, 1], [1, 1]])
    WQ, WK, WV = P.tensor("WQ", eye), P.tensor("WK", eye), P.tensor("WV", eye)
    Dk = P.const("Dk", 2)
    Query, Key, Val, Comp, Attn = P.tensors("Query Key Val Comp Attn")
    Query[p, dk] = WQ[dk, d] * X[p, d]
    Key[p, dk] = WK[dk, d] * X[p, d]
    Val[p, dv] = WV[dv, d] * X[p, d]
    Comp[p, q.normalized] = tl.softmax(Query[p, dk] * Key[q, dk] / tl.sqrt(Dk))
    Attn[p, dv] = Comp[p, q] * Val[q, dv]
    return P


def test_a8_attention_and_explain():
    P = a8_python()
    for Q in (_same(A8, P), P):
        np.testing.assert_allclose(_np(Q.value("Attn")),
                                   [[0.80222419, 0.59888791], [0.59888791, 0.80222419],
                                    [0.75174492, 0.75174492]], atol=1e-8)
        np.testing.assert_allclose(_np(Q.value("Comp")).sum(1), 1.0, atol=1e-14)
    text = P.explain()
    assert "Comp[p, p'.] = softmax(Query[p, dk] Key[p', dk] / sqrt(Dk))" in text
    assert "([p,dk] [p',dk] [] -> [p,p'])" in text and "outer softmax" in text
    assert "path [(0, 2), (0, 1)]" in text and "planned FLOPs" in text
    before = P.plans.info()
    P.run()
    after = P.plans.info()
    assert after["misses"] == before["misses"] and after["hits"] > before["hits"]


# -- A9 kernel machine ----------------------------------------------------------------------------

A9 = """
XS = [[0, 0], [1, 1]]
Lab = [-1, 1]
A = [1, 1]
B = 0
Var = 1
XQ = [[0, 0], [1, 1], [0.5, 0.5]]
K[q, i] = exp(-(XQ[q, j] - XS[i, j])^2 / Var)
Out[q] = A[i] Lab[i] K[q, i] + B
Kp[i, i'] = (XS[i, j] XS[i', j])^2
"""


def a9_python():
    P = tl.Program(dtype=F64)
    q, i, ip, j = tl.indices("q i i' j")
    XS, Lab, A = P.tensor("XS", [[0, 0], [1, 1]]), P.tensor("Lab", [-1, 1]), P.tensor("A", [1, 1])
    B, Var = P.const("B", 0), P.const("Var", 1)
    XQ = P.tensor("XQ", [[0, 0], [1, 1], [0.5, 0.5]])
    K, Out, Kp = P.tensors("K Out Kp")
    K[q, i] = tl.exp(-(XQ[q, j] - XS[i, j]) ** 2 / Var)
    Out[q] = A[i] * Lab[i] * K[q, i] + B
    Kp[i, ip] = (XS[i, j] * XS[ip, j]) ** 2
    return P


def test_a9_kernel_machine_and_projection_point():
    P = a9_python()
    e = math.exp(-2)
    for Q in (_same(A9, P), P):
        np.testing.assert_allclose(_np(Q.value("K")),
                                   [[1, e], [e, 1], [math.exp(-0.5)] * 2], atol=1e-12)
        np.testing.assert_allclose(_np(Q.value("Out")), [-(1 - e), 1 - e, 0], atol=1e-12)
        np.testing.assert_array_equal(_np(Q.value("Kp")), [[0, 0], [0, 4]])  # 2: power too soon


# -- A10 graphical models --------------------------------------------------------------------------

A10 = """
PhiA = [1, 2]
PhiB = [1, 1]
PhiC = [3, 1]
PhiD = [1, 4]
PsiAB = [[2, 1], [1, 2]]
PsiBC = [[1, 3], [2, 1]]
PsiBD = [[1, 1], [5, 1]]
MAB[b] = PhiA[a] PsiAB[a, b]
MCB[b] = PhiC[c] PsiBC[b, c]
MDB[b] = PhiD[d] EvD[d] PsiBD[b, d]
MBA[a] = PhiB[b] MCB[b] MDB[b] PsiAB[a, b]
MBC[c] = PhiB[b] MAB[b] MDB[b] PsiBC[b, c]
MBD[d] = PhiB[b] MAB[b] MCB[b] PsiBD[b, d]
BelA[a] = PhiA[a] MBA[a]
BelB[b] = PhiB[b] MAB[b] MCB[b] MDB[b]
BelC[c] = PhiC[c] MBC[c]
BelD[d] = PhiD[d] EvD[d] MBD[d]
Z = BelA[a]
J[a, b, c, d] = PhiA[a] PhiB[b] PhiC[c] PhiD[d] EvD[d] PsiAB[a, b] PsiBC[b, c] PsiBD[b, d]
JA[a] = J[a, b, c, d]
JZ = J[a, b, c, d]
"""
MESSAGES = ["MAB", "MCB", "MDB", "MBA", "MBC", "MBD"]


def a10_python():
    P = tl.Program(dtype=F64)
    a, b, c, d = tl.indices("a b c d")
    phi = {"PhiA": [1, 2], "PhiB": [1, 1], "PhiC": [3, 1], "PhiD": [1, 4]}
    psi = {"PsiAB": [[2, 1], [1, 2]], "PsiBC": [[1, 3], [2, 1]], "PsiBD": [[1, 1], [5, 1]]}
    t = {n: P.tensor(n, v) for n, v in {**phi, **psi}.items()}
    PhiA, PhiB, PhiC, PhiD = (t[n] for n in phi)
    PsiAB, PsiBC, PsiBD = (t[n] for n in psi)
    EvD = P.tensor("EvD")
    MAB, MCB, MDB, MBA, MBC, MBD = P.tensors(" ".join(MESSAGES))
    BelA, BelB, BelC, BelD, Z, J, JA, JZ = P.tensors("BelA BelB BelC BelD Z J JA JZ")
    MAB[b] = PhiA[a] * PsiAB[a, b]
    MCB[b] = PhiC[c] * PsiBC[b, c]
    MDB[b] = PhiD[d] * EvD[d] * PsiBD[b, d]
    MBA[a] = PhiB[b] * MCB[b] * MDB[b] * PsiAB[a, b]
    MBC[c] = PhiB[b] * MAB[b] * MDB[b] * PsiBC[b, c]
    MBD[d] = PhiB[b] * MAB[b] * MCB[b] * PsiBD[b, d]
    BelA[a] = PhiA[a] * MBA[a]
    BelB[b] = PhiB[b] * MAB[b] * MCB[b] * MDB[b]
    BelC[c] = PhiC[c] * MBC[c]
    BelD[d] = PhiD[d] * EvD[d] * MBD[d]
    Z[()] = BelA[a]
    J[a, b, c, d] = (PhiA[a] * PhiB[b] * PhiC[c] * PhiD[d] * EvD[d] * PsiAB[a, b]
                     * PsiBC[b, c] * PsiBD[b, d])
    JA[a] = J[a, b, c, d]
    JZ[()] = J[a, b, c, d]
    return P


def test_a10a_belief_propagation_on_a_tree():
    P = a10_python()
    for Q in (_same(A10, P), P):
        Q.run(data={"EvD": [1, 1]})
        assert float(Q.value("Z")) == 435.0 == float(Q.value("JZ"))
        z = 435.0
        for name, expect in [("BelA", [41 / 145, 104 / 145]), ("BelB", [8 / 29, 21 / 29]),
                             ("BelC", [22 / 29, 7 / 29]), ("BelD", [199 / 435, 236 / 435])]:
            np.testing.assert_allclose(_np(Q.value(name)) / z, expect, atol=1e-14)
        np.testing.assert_allclose(_np(Q.value("BelA")), _np(Q.value("JA")), atol=1e-12)
        # loopy-BP style: Jacobi sweeps over the messages from all-ones
        Q.run(jacobi=MESSAGES, init=1.0)
        rep = Q.report.component("MAB")
        assert rep.strategy == "Jacobi sweeps" and rep.converged and rep.iterations == 3
        assert float(Q.value("Z")) == 435.0
        with pytest.warns(RuntimeWarning, match="did not converge in 2 sweeps"):
            Q.run(jacobi=MESSAGES, init=1.0, max_iters=2)  # exact, but not yet known to be
        assert float(Q.value("Z")) == 435.0
        # evidence D = 1
        Q.run(data={"EvD": [0, 1]})
        ze = float(Q.value("Z"))
        np.testing.assert_allclose(_np(Q.value("BelA")) / ze, [19 / 59, 40 / 59], atol=1e-14)
        assert ze / 435.0 == pytest.approx(236 / 435)
    text = P.explain()
    assert "MBA: real, once (einsums)" in text and "MBA" in text and "FLOPs" in text


def test_a10a_jacobi_warns_when_not_converged():
    P = a10_python()
    P.set_data("EvD", [1, 1])
    with pytest.warns(RuntimeWarning, match="did not converge in 1 sweeps"):
        P.run(jacobi=MESSAGES, init=1.0, max_iters=1)
    assert not P.report.converged


A10B = """
PR = [0.8, 0.2]
PS = [0.6, 0.4]
PW[w] = CPTW[w, s, r] PS[s] PR[r]
"""


def test_a10b_bayesian_network_per_variable_equation():
    w1 = np.array([[0, 0.8], [0.9, 0.99]])        # P(W=1 | s, r), rows s
    cpt = np.stack([1 - w1, w1])                    # CPTW[w, s, r]
    P = tl.Program(A10B, dtype=F64)
    P.run(data={"CPTW": cpt})
    assert float(P.value("PW")[1]) == pytest.approx(0.4632, abs=1e-12)
    # documented limitation: exact only for polytrees; S depending on R breaks it
    Q = tl.Program("""
        PR = [0.8, 0.2]
        PS[s] = CPTS[s, r] PR[r]
        PW[w] = CPTW[w, s, r] PS[s] PR[r]
        Joint[w] = CPTW[w, s, r] CPTS[s, r] PR[r]
    """, dtype=F64)
    s1 = np.array([0.4, 0.01])
    Q.run(data={"CPTW": cpt, "CPTS": np.stack([1 - s1, s1])})
    assert float(Q.value("PW")[1]) == pytest.approx(0.404076, abs=1e-6)
    assert float(Q.value("Joint")[1]) == pytest.approx(0.44838, abs=1e-9)


# -- A11 embedding space ---------------------------------------------------------------------------

A11 = """
GP(x, z) <- Parent(x, y), Parent(y, z)
"""
PARENT = [(0, 1), (0, 2), (1, 3), (1, 4), (2, 5), (3, 6), (5, 7)]
GP = {(0, 3), (0, 4), (0, 5), (1, 6), (2, 7)}


def a11_python():
    P = tl.Program(dtype=F64)
    x, y, z = tl.indices("x y z")
    Parent, G = P.relation("Parent"), P.relation("GP")
    P.rule(G(x, z), Parent(x, y), Parent(y, z))
    return P


def _counts():
    A = np.zeros((8, 8))
    for a, b in PARENT:
        A[a, b] = 1
    return A @ A


def test_a11_embedding_orthonormal_is_exact():
    P = a11_python()
    for Q in (_same(A11, P), P):
        Q.facts("Parent", PARENT)
        assert set(Q.value("GP").tuples()) == GP
        emb = np.linalg.qr(np.random.default_rng(0).standard_normal((16, 16)))[0][:8]
        for mode in ("dense", "factored"):
            for T in (0.0, 1e-9):
                r = tl.embed(Q, emb, T=T, mode=mode)
                assert r.tuples("GP") == GP
            np.testing.assert_allclose(_np(r.scores["GP"]), _counts(), atol=1e-12)
        # the embedded tensor is the paper's EmbGP = EmbP EmbP in both modes
        d = tl.embed(Q, emb, mode="dense").embedded("GP")
        f = tl.embed(Q, emb, mode="factored").embedded("GP")
        np.testing.assert_allclose(_np(f), _np(d), atol=1e-12)
        assert tuple(d.shape) == (16, 16)


@pytest.mark.parametrize("seed", [0, 1])
def test_a11_embedding_random_large_dimension(seed):
    P = a11_python()
    P.facts("Parent", PARENT)
    e = np.random.default_rng(seed).standard_normal((8, 4096))
    e /= np.linalg.norm(e, axis=1, keepdims=True)
    r = tl.embed(P, e, T=0.0)
    assert r.tuples("GP") == GP
    assert np.abs(_np(r.scores["GP"]) - _counts()).max() < 0.25


def test_a11_gram_matrix_identity():
    P = a11_python()
    P.facts("Parent", PARENT)
    e = np.random.default_rng(3).standard_normal((8, 5))
    r = tl.embed(P, e, T=0.5)
    rd = tl.embed(P, e, T=0.5, mode="dense")
    np.testing.assert_allclose(_np(rd.scores["GP"]), _np(r.scores["GP"]), atol=1e-10)
    S = e @ e.T
    A = np.zeros((8, 8))
    for a, b in PARENT:
        A[a, b] = 1
    # D[a,b] = sum P(x,y) P(y',z) Sim[y,y'] Sim[x,a] Sim[z,b]
    expect = np.einsum("xy,wz,yw,xa,zb->ab", A, A, S, S, S)
    np.testing.assert_allclose(_np(r.scores["GP"]), expect, rtol=1e-10, atol=1e-10)


# -- A12 learning ---------------------------------------------------------------------------------

A12 = """
P[e] = sig(W[j] X[e, j] + B)
Loss avg= -(Lab[e] log(P[e]) + (1 - Lab[e]) log(1 - P[e]))
"""
A12_X = [[0, 0], [0, 1], [1, 0], [1, 1], [2, 2], [2, 3], [3, 2], [3, 3]]
A12_Y = [0, 0, 0, 0, 1, 1, 1, 1]


def a12_python():
    P = tl.Program(dtype=F64)
    e, j = tl.indices("e j")
    Pr, W, X, B, Lab, Loss = P.tensors("P W X B Lab Loss")
    Pr[e] = tl.sig(W[j] * X[e, j] + B)
    Loss[()] = tl.avg_of(-(Lab[e] * tl.log(Pr[e]) + (1 - Lab[e]) * tl.log(1 - Pr[e])))
    return P


def test_a12_logistic_regression_fit():
    P = a12_python()
    for Q in (_same(A12, P), P):
        X = tx.tensor(np.array(A12_X, float), dtype=F64)
        Y = tx.tensor(np.array(A12_Y, float), dtype=F64)
        r = tl.fit(Q, loss="Loss", data={"X": X, "Lab": Y}, init={"W": [0, 0], "B": 0.0},
                   optimizer="sgd", lr=0.5, steps=100)
        assert set(tl.parameters(Q)) == {"W", "B"} and set(r.params) == {"W", "B"}
        assert r.losses[0] == pytest.approx(math.log(2), abs=1e-12)
        assert all(a > b for a, b in zip(r.losses, r.losses[1:]))
        assert r.final_loss == pytest.approx(0.094224, abs=1e-4)
        pred = _np(Q.value("P")) > 0.5
        assert (pred == np.array(A12_Y, bool)).all()
        assert X.grad is None and Y.grad is None


def test_a12_gradient_is_product_of_other_tensors():
    rng = np.random.default_rng(0)
    P = tl.Program("Y[i, j] = M[i, k] X[k, j]\nLoss = Y[i, j] G[i, j]", dtype=F64)
    X, G = rng.standard_normal((4, 5)), rng.standard_normal((3, 5))
    M = tx.tensor(rng.standard_normal((3, 4)), dtype=F64, requires_grad=True)
    P.run(data={"X": X, "G": G}, params={"M": M})
    P.value("Loss").backward()
    np.testing.assert_allclose(_np(M.grad), G @ X.T, atol=1e-12)
