"""More of the language: belief propagation on random trees against brute force, recurrences
along an index (RNN), gradients through a real fixpoint, sparse relations joined with dense
tensors, slices, constants as indices, projections, registered functions and the text form's
syntax."""

import itertools

import numpy as np
import pytest

import tensorix as tx
from tensorix import logic as tl

F64 = tx.float64


def _np(t):
    return t.detach().numpy(force=True)


# -- belief propagation on a random tree ----------------------------------------------------------

def _bp_program(n, parent, card):
    """Sum-product messages on a tree as equations, one per directed edge, plus beliefs."""
    nb = {v: [] for v in range(n)}
    for v in range(1, n):
        nb[v].append(parent[v])
        nb[parent[v]].append(v)
    var = [f"x{v}" for v in range(n)]
    lines = []
    for a in range(n):
        for b in nb[a]:
            psi = f"Psi{min(a, b)}_{max(a, b)}[{var[min(a, b)]}, {var[max(a, b)]}]"
            inc = " ".join(f"M{c}_{a}[{var[a]}]" for c in nb[a] if c != b)
            lines.append(f"M{a}_{b}[{var[b]}] = Phi{a}[{var[a]}] {inc} {psi}")
    for a in range(n):
        inc = " ".join(f"M{c}_{a}[{var[a]}]" for c in nb[a])
        lines.append(f"Bel{a}[{var[a]}] = Phi{a}[{var[a]}] {inc}")
    lines.append(f"Z = Bel0[{var[0]}]")
    return "\n".join(lines), nb


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_belief_propagation_on_random_trees_equals_brute_force(seed):
    rng = np.random.default_rng(seed)
    n = 6
    parent = {v: int(rng.integers(0, v)) for v in range(1, n)}
    card = rng.integers(2, 4, size=n)
    text, nb = _bp_program(n, parent, card)
    P = tl.Program(text, dtype=F64)
    data = {f"Phi{v}": rng.random(card[v]) + 0.1 for v in range(n)}
    for v in range(1, n):
        a, b = sorted((v, parent[v]))
        data[f"Psi{a}_{b}"] = rng.random((card[a], card[b])) + 0.1
    P.run(data=data)
    # brute force: the joint over all assignments
    joint = np.ones(tuple(card))
    for idx in itertools.product(*(range(c) for c in card)):
        p = np.prod([data[f"Phi{v}"][idx[v]] for v in range(n)])
        for v in range(1, n):
            a, b = sorted((v, parent[v]))
            p *= data[f"Psi{a}_{b}"][idx[a], idx[b]]
        joint[idx] = p
    z = joint.sum()
    assert float(P.value("Z")) == pytest.approx(z, rel=1e-12)
    for v in range(n):
        marg = joint.sum(axis=tuple(k for k in range(n) if k != v))
        np.testing.assert_allclose(_np(P.value(f"Bel{v}")) / z, marg / z, rtol=1e-12)
    # loopy-BP style: all messages swept jointly from all-ones reach the same fixpoint
    msgs = [f"M{a}_{b}" for a in range(n) for b in nb[a]]
    P.run(jacobi=msgs, init=1.0)
    rep = P.report.component(msgs[0])
    assert rep.converged and rep.iterations <= n + 1
    assert float(P.value("Z")) == pytest.approx(z, rel=1e-12)


# -- recurrences and fixpoints --------------------------------------------------------------------

RNN = """
H[i, 0] = H0[i]
H[i, t+1] = tanh(W[i, j] H[j, t] + U[i, k] X[k, t])
"""


def test_rnn_recurrence_along_time():
    rng = np.random.default_rng(0)
    W, U = rng.standard_normal((4, 4)) * 0.5, rng.standard_normal((4, 3))
    X, h0 = rng.standard_normal((3, 6)), rng.standard_normal(4)
    P = tl.Program(RNN, dtype=F64)
    P.run(data={"W": W, "U": U, "X": X, "H0": h0})
    H = _np(P.value("H"))
    assert H.shape == (4, 7)
    h = h0
    np.testing.assert_allclose(H[:, 0], h0)
    for t in range(6):
        h = np.tanh(W @ h + U @ X[:, t])
        np.testing.assert_allclose(H[:, t + 1], h, atol=1e-14)
    assert P.report.component("H").kind == "index"
    # the Python form builds the same statements (virtual index parses as a plain one)
    Q = tl.Program(dtype=F64)
    i, j, k, t = tl.indices("i j k t")
    Hh, H0, Wh, Uh, Xh = Q.tensors("H H0 W U X")
    Hh[i, 0] = H0[i]
    Hh[i, t + 1] = tl.tanh(Wh[i, j] * Hh[j, t] + Uh[i, k] * Xh[k, t])
    assert Q.statements == P.statements


def test_gradient_through_a_real_fixpoint():
    rng = np.random.default_rng(1)
    A = rng.random((5, 5))
    A *= 0.5 / np.abs(np.linalg.eigvals(A)).max()
    G = rng.standard_normal(5)
    P = tl.Program("X[i] = A[i, j] X[j] + B[i]\nLoss = X[i] G[i]", dtype=F64)
    B = tx.tensor(rng.standard_normal(5), dtype=F64, requires_grad=True)
    P.run(data={"A": A, "G": G}, params={"B": B}, tol=1e-13)
    rep = P.report.component("X")
    assert rep.recursive and rep.converged and rep.strategy == "Jacobi sweeps"
    np.testing.assert_allclose(_np(P.value("X")), np.linalg.solve(np.eye(5) - A, _np(B)),
                               atol=1e-11)
    P.value("Loss").backward()
    np.testing.assert_allclose(_np(B.grad), np.linalg.solve((np.eye(5) - A).T, G), atol=1e-10)


# -- sparse relations with dense tensors ----------------------------------------------------------

def test_relations_join_dense_tensors_by_gather_and_scatter():
    rng = np.random.default_rng(2)
    emb = rng.standard_normal((5, 3))
    P = tl.Program("""
        Tok(0, 2), Tok(1, 4), Tok(2, 2)
        EmbX[p, d] = Tok(p, t) Emb[t, d]
        Deg[t] = Tok(p, t)
        Mx[t] max= Tok(p, t) Pos[p]
        Pair[p, q] = Tok(p, t) Tok(q, t)
    """, dtype=F64)
    P.run(data={"Emb": emb, "Pos": [1.0, 5.0, 3.0]})
    onehot = np.zeros((3, 5))
    onehot[[0, 1, 2], [2, 4, 2]] = 1
    np.testing.assert_allclose(_np(P.value("EmbX")), onehot @ emb, atol=1e-14)
    np.testing.assert_array_equal(_np(P.value("Deg")), [0, 0, 2, 0, 1])
    np.testing.assert_array_equal(_np(P.value("Mx")), [0, 0, 3, 0, 5])
    np.testing.assert_array_equal(_np(P.value("Pair")), onehot @ onehot.T)


# -- smaller features ------------------------------------------------------------------------------

def test_slices_constants_and_projections():
    X = np.arange(12.0).reshape(3, 4)
    P = tl.Program("""
        Cols[i, j] = X[i, 1:3]
        Sq[i, j] = X[i, 0:3]
        S = X[0, 1:3]
        Row[j] = X[2, j]
        M[0, Alice] = 1
        M[1, Bob] = 2
        Av[x/2] avg= V[x]
        Mn[x/2] min= V[x]
        Mean avg= X[i, j]
        Two[i] = X[i, j]
        Two[i] = 2 X[i, 0]
    """, dtype=F64)
    P.run(data={"X": X, "V": [4.0, 2.0, 6.0, 8.0, 5.0]})
    np.testing.assert_array_equal(_np(P.value("Cols")), X[:, 1:3])
    assert float(P.value("S")) == 3.0
    np.testing.assert_array_equal(_np(P.value("Row")), X[2])
    np.testing.assert_array_equal(_np(P.value("M")), [[1, 0], [0, 2]])
    np.testing.assert_array_equal(_np(P.value("Av")), [3, 7, 5])
    np.testing.assert_array_equal(_np(P.value("Mn")), [2, 6, 5])
    assert float(P.value("Mean")) == X.mean()
    np.testing.assert_array_equal(_np(P.value("Two")), X.sum(1) + 2 * X[:, 0])
    np.testing.assert_array_equal(_np(P.query("X[1, j]")), X[1])
    np.testing.assert_array_equal(_np(P.query("Sq[i, i]")), np.diag(X[:, :3]))
    with pytest.raises(tl.ProgramError, match=r"query 'X\[i, i\]': index 'i' is used on axes "
                       r"of sizes \[3, 4\]"):
        P.query("X[i, i]")


def test_registered_functions():
    tl.register_function("cube", lambda x: x * x * x)
    tl.register_function("sharpen", lambda x, axis, p=2.0: x ** p / (x ** p).sum(axis,
                                                                               keepdim=True),
                         normalizer=True)
    P = tl.Program("X = [1, 2, 3]\nY[i] = cube(X[i]) + 1\nZ[i.] = sharpen(X[i], p=3)",
                   dtype=F64)
    np.testing.assert_array_equal(_np(P.value("Y")), [2, 9, 28])
    np.testing.assert_allclose(_np(P.value("Z")), np.array([1, 8, 27]) / 36)


def test_text_syntax_features(tmp_path):
    text = """
    # a comment
    domain Person = {Ann, Bob, "Cy D"}   // declared symbols first
    relation Parent(Person, Person)
    Parent(Ann, Bob). Parent(Bob, "Cy D").
    Anc(x, y) :- Parent(x, y).
    Anc(x, z) ← Anc(x, y),
                Parent(y, z)
    Bob2(x) <- Anc(x, Bob), x != Bob
    W = [1., 2.]
    Y |= W[i]
    Y2[*t] = W[*t] /* block
    comment */
    """
    f = tmp_path / "prog.tl"
    f.write_text(text)
    P = tl.load(str(f))
    assert set(P.value("Anc").tuples()) == {("Ann", "Bob"), ("Bob", "Cy D"), ("Ann", "Cy D")}
    assert P.value("Anc").domains[0].symbols == ["Ann", "Bob", "Cy D"]
    assert set(P.value("Bob2").tuples()) == {("Ann",)}
    assert float(P.value("Y")) == 1.0
    np.testing.assert_array_equal(_np(P.value("Y2")), [1, 2])
    toks = [t.value for t in tl._parser.tokenize("M[x/2, p'.] max= F[x] avg= 1")]
    assert toks[:11] == ["M", "[", "x", "/", "2", ",", "p'", ".", "]", "max=", "F"]


def test_explain_shows_rules_as_boolean_einsums_and_join_plans():
    P = tl.Program("E(A, B), E(B, C)\nR(x, y) <- E(x, y)\nR(x, z) <- R(x, y), E(y, z)")
    text = P.explain()
    assert "R: bool, semi-naive fixpoint" in text
    assert "means  step(einsum(ab,bc->ac)) over {x=3, y=3, z=3}" in text
    assert "joins by hash (CSR)" in text and "delta sizes [2, 1]" in text


def test_declarations_in_both_forms():
    text = """domain Person = {Ann, Bob}
domain Hidden = 4
relation Parent(Person, Person)
tensor W[Hidden, 3]
Parent(Ann, Bob)
H[h] = W[h, i] X[i]"""
    P = tl.Program(dtype=F64)
    h, i = tl.indices("h i")
    P.domain("Person", ["Ann", "Bob"])
    P.domain("Hidden", 4)
    Parent = P.relation("Parent", "Person", "Person")
    W = P.tensor("W", domains=("Hidden", 3))
    P.fact(Parent("Ann", "Bob"))
    H, X = P.tensors("H X")
    H[h] = W[h, i] * X[i]
    assert tl.Program(text).statements == P.statements
    P.run(data={"X": [1.0, 2.0, 3.0]}, params={"W": tx.ones(4, 3, dtype=F64)})
    np.testing.assert_array_equal(_np(P.value("H")), [6, 6, 6, 6])
    assert P.value("Parent").domains[0].symbols == ["Ann", "Bob"]
    with pytest.raises(tl.ProgramError, match=r"shape mismatch: the value given for 'W' has "
                       r"shape \(5, 3\) but the program needs \(4, 3\)"):
        P.run(params={"W": tx.ones(5, 3, dtype=F64)})
