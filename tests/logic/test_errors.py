"""Every ill-formed program gets a clear error that names the statement and its line."""

import numpy as np
import pytest

import tensorix as tx
from tensorix import logic as tl


def _run(text, **data):
    P = tl.Program(text, dtype=tx.float64)
    return P.run(data=data)


def test_unsafe_rule():
    with pytest.raises(tl.ProgramError, match=r"unsafe rule 'H\(x, y\) <- R\(x\)' \(line 2\): "
                       r"head variable 'y' does not appear in a positive body atom"):
        _run("R(A)\nH(x, y) <- R(x)")
    with pytest.raises(tl.ProgramError, match=r"unsafe rule .*variable 'z' of the negated atom"):
        _run("R(A)\nS(A)\nH(x) <- R(x), not S(z)")
    with pytest.raises(tl.ProgramError, match=r"unsafe rule .*'H\(x\) <- not R\(x\)'.* no "
                       "positive atom"):
        _run("R(A)\nH(x) <- not R(x)")


def test_unsafe_tensor_equation():
    with pytest.raises(tl.ProgramError, match=r"index 'j' on the left side of "
                       r"'Y\[i, j\] = X\[i\]' \(line 2\) appears in no right-side tensor"):
        _run("X = [1, 2]\nY[i, j] = X[i]")


def test_unknown_tensor():
    with pytest.raises(tl.ProgramError, match=r"unknown tensor 'Foo' in 'Y\[i\] = Foo\[i\] "
                       r"X\[i\]' \(line 2\)"):
        _run("X = [1, 2]\nY[i] = Foo[i] X[i]")
    with pytest.raises(tl.ProgramError, match=r"unknown tensor 'Missing' in the query"):
        tl.Program("X = [1]").query("Missing(A, x)")


def test_index_with_two_domains():
    text = """relation Parent(Person, Person)
relation Owns(Person, Thing)
X(x) <- Parent(x, y), Owns(z, y)"""
    with pytest.raises(tl.ProgramError, match=r"index 'y' in 'X\(x\) <- Parent\(x, y\), "
                       r"Owns\(z, y\)' \(line 3\) is used with two different domains: "
                       r"'Person' .* and 'Thing'"):
        tl.Program(text).run()


def test_shape_mismatch_names_equation_and_line():
    P = tl.Program("# weights\nY[i] = W[i, j] X[j]", dtype=tx.float64)
    with pytest.raises(tl.ProgramError, match=r"shape mismatch: index 'j' in 'Y\[i\] = "
                       r"W\[i, j\] X\[j\]' \(line 2\) has size 3 from W \(axis 1\) .* but size 4 "
                       r"from X \(axis 0\)"):
        P.run(data={"W": np.ones((2, 3)), "X": np.ones(4)})


def test_arity_and_kind_conflicts():
    with pytest.raises(tl.ProgramError, match=r"tensor 'E' is used with 2 indices in .* and "
                       r"with 3 in"):
        _run("E(A, B)\nR(x) <- E(x, y, z)")
    with pytest.raises(tl.ProgramError, match=r"'X' is used as a real tensor .* and as a "
                       "Boolean relation"):
        _run("X = [1, 2]\nR(x) <- X(x)")
    with pytest.raises(tl.ProgramError, match="mixes symbols"):
        _run("E(A, 1)\nR(x) <- E(x, x)")


def test_not_stratifiable():
    with pytest.raises(tl.ProgramError, match=r"not stratifiable: P depends negatively on P"):
        _run("Q(A)\nP(x) <- Q(x), not P(x)")


def test_misplaced_constructs():
    with pytest.raises(tl.ProgramError, match=r"negation and comparisons belong in Datalog "
                       r"rules"):
        _run("R(A)\nX = [1]\nY[i] = X[i] not R(i)")
    with pytest.raises(tl.ProgramError, match=r"softmax\(\) needs the left-side index it "
                       r"normalizes over marked with '\.'"):
        _run("S = [[1, 2], [3, 4]]\nC[p, q] = softmax(S[p, q])")
    with pytest.raises(tl.ProgramError, match=r"slices on the left side are not supported"):
        _run("X = [1, 2, 3]\nY[0:2] = X[i]")
    with pytest.raises(tl.ProgramError, match=r"division 'x/2' is only allowed on the left"):
        _run("X = [1, 2, 3, 4]\nY[x] = X[x/2]")
    with pytest.raises(tl.ProgramError, match=r"softmax\(\) normalizes along a marked index, "
                       "so it must be the outermost"):
        _run("S = [1, 2]\nY[i] = 2 softmax(S[i])")
    with pytest.raises(tl.ProgramError, match=r"equations for Y mix projection operators"):
        _run("X = [1, 2]\nY[i] max= X[i]\nY[i] = X[i]")
    with pytest.raises(tl.ProgramError, match=r"'X' is used as a real tensor \(the literal "
                       r"'X = \[1\]' \(line 2\)\) and as a Boolean relation \(X\(y\) in "):
        _run("E(A, B)\nX = [1]\nR(x) <- E(x, y), X[y]")


def test_parse_errors_point_at_the_source():
    with pytest.raises(tl.ParseError, match=r"line 2, column 5: expected ',' or '\]', found "
                       "'='") as e:
        tl.Program("X = [1]\nY[i = X[i]")
    assert "Y[i = X[i]" in str(e.value) and e.value.line == 2
    with pytest.raises(tl.ParseError, match=r"line 1, column 3: unexpected character '\$'"):
        tl.Program("X $ 1")
    with pytest.raises(tl.ParseError, match=r"expected '=', '<-', '\?' or a list of facts"):
        tl.Program("Y[i] X[i]")
    with pytest.raises(tl.ParseError, match=r"expected an integer or a constant name after"):
        tl.Program("Y[x/(2)] = X[x]")
    with pytest.raises(tl.ParseError, match=r"unterminated string"):
        tl.Program('E("A, B)')


def test_api_argument_errors():
    P = tl.Program("X = [1]\nY = X[i]")
    with pytest.raises(ValueError, match=r"run\(\): datalog must be 'semi-naive' or 'naive', "
                       "got 'fast'"):
        P.run(datalog="fast")
    with pytest.raises(ValueError, match=r"equation\(\): op must be one of"):
        P.equation(P.tensor("Z")[()], P.tensor("X")[tl.index("i")], op="*=")
    with pytest.raises(ValueError, match=r"not a valid tensor name: '1x'"):
        P.tensor("1x")
    with pytest.raises(ValueError, match=r"register_function\(\): name must be a lowercase "
                       "identifier"):
        tl.register_function("Bad", lambda x: x)
    with pytest.raises(tl.ProgramError, match=r"fit\(\): the program has no parameters"):
        tl.fit(tl.Program("X = [1., 2.]\nLoss = X[i] X[i]", dtype=tx.float64), constants=["X"])
    with pytest.raises(tl.ProgramError, match=r"fit\(\): the loss 'L' must be a scalar, it has "
                       r"shape \(2,\)"):
        tl.fit(tl.Program("W = [1., 2.]\nL[i] = W[i] W[i]", dtype=tx.float64), loss="L",
               steps=1)
    with pytest.raises(ValueError, match=r"fit\(\): unknown optimizer 'lbfgs'"):
        tl.fit(tl.Program("W = [1., 2.]\nL = W[i] W[i]"), loss="L", optimizer="lbfgs")
    with pytest.raises(ValueError, match=r"embed\(\): mode must be 'factored' or 'dense'"):
        tl.embed(tl.Program("E(A, B)"), np.eye(2), mode="sparse")
    with pytest.raises(tl.ProgramError, match=r"embed\(\): the embedding for domain .* must "
                       r"have shape \(2, D\)"):
        tl.embed(tl.Program("E(A, B), E(B, A)\nR(x, y) <- E(x, y)"), np.eye(1))
