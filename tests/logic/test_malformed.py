"""Regression tests for the internal errors that outside testing found (issue 11): each
malformed program gets the language's own error, with line and column, and inline facts cost
linear work."""

import cProfile
import pstats

import numpy as np
import pytest

import tensorix as tx
from tensorix import logic as tl


def _fails(text, error=tl.TensorLogicError):
    with pytest.raises(error) as e:
        tl.Program(text, dtype=tx.float64).run()
    assert isinstance(e.value.line, int) and isinstance(e.value.col, int), str(e.value)
    return e.value


def test_deep_nesting_is_a_parse_error_not_recursion():
    e = _fails("X = [1, 2]\nY = " + "(" * 3000 + "X[i]" + ")" * 3000, tl.ParseError)
    assert "nested more than 64 deep" in str(e) and (e.line, e.col) == (2, 69)
    e = _fails("X = " + "[" * 100 + "1" + "]" * 100, tl.ParseError)
    assert e.line == 1
    chain = tl.Program("X = [3]\nY = " + "- " * 5001 + "X[i]", dtype=tx.float64)
    assert chain.value("Y").item() == -3.0  # a long unary chain parses: a loop, no recursion
    ok = tl.Program("X = [2]\nY = " + "(" * 60 + "X[i]" + ")" * 60, dtype=tx.float64)
    assert ok.value("Y").item() == 2.0


def test_unicode_identifiers():
    P = tl.Program("X = [1, 2]\nY[é] = X[é] X[é]\nÉté = [3, 4]\nZ = Été[i]", dtype=tx.float64)
    assert P.value("Y").tolist() == [1.0, 4.0] and P.value("Z").item() == 7.0
    e = _fails("X = [1, 2]\nY = X[i, é]", tl.ProgramError)  # parses; wrong arity is the error
    assert e.line == 2 and "used with 1 indices" in str(e)
    e = _fails("X = [1]\nY = 变[i]", tl.ParseError)  # a caseless initial is neither kind
    assert (e.line, e.col) == (2, 5) and "has no case" in str(e)


@pytest.mark.parametrize("text, col, what", [
    ("X = [1, 2]\nY[i] = X[i] / 0", 13, "division by 0"),
    ("X = [1, 2]\nY[i] = X[i] / 1e-320", 13, "division by 1e-320"),
    ("X = [1, 2]\nY[i] = X[i] 0 ^ -1", 18, "division by zero"),
    ("X = [1, 2]\nY[i] = X[i] (-8) ^ 0.5", 20, "no finite real value"),
    ("X = [1, 2]\nY[x] = X[x/1e-400]", 12, "expected an integer"),
    ("X = [1, 2]\nY[x/0] = X[x]", 5, "division by zero in an index"),
    ("X = [1, 2]\nE(1" + "0" * 30 + ", 2)", 3, "too large"),
    ("X = [1, 2]\nY = X[i + " + "9" * 5000 + "]", 11, "too large"),
    ("X = [1, 2]\ndomain D = 1" + "0" * 20, 12, "too large"),
    ("X = [1, 2]\nZ = [[1, 2], [3]]", 14, "ragged literal"),
    ("X = [1, 2]\nZ = [1, [3]]", 9, "ragged literal"),
    ("X = [1, 2]\n/* not closed", 1, "unterminated /* comment"),
])
def test_parse_errors_instead_of_python_errors(text, col, what):
    e = _fails(text, tl.ParseError)
    assert (e.line, e.col) == (2, col) and what in str(e)


def test_tiny_and_huge_floats_are_values():
    P = tl.Program("Y = 1e-400\nX = [1e400, 2]", dtype=tx.float64)
    assert P.value("Y").item() == 0.0  # underflows to zero, as in Python
    assert P.value("X").tolist()[0] == float("inf")


def test_more_than_52_indices_names_the_statement():
    n = 53
    idx = ", ".join(f"i{k}" for k in range(n))
    e = _fails(f"A = {'[' * n}1{']' * n}\nY = A[{idx}]", tl.ProgramError)
    assert (e.line, e.col) == (2, 1) and "53 distinct indices" in str(e)
    assert str(e).endswith("(at line 2, column 1)")


def test_program_errors_carry_the_statement_position():
    e = _fails("X = [1, 2]\n  Y[i] = Foo[i] X[i]", tl.ProgramError)
    assert (e.line, e.col) == (2, 3)
    e = _fails("R(A)\nS(A)\nH(x) <- R(x), not S(z)", tl.ProgramError)
    assert e.line == 3
    e = _fails("Q(A)\nP(x) <- Q(x), not P(x)", tl.ProgramError)  # found by the stratifier
    assert e.line == 2
    e = _fails("E(A, B)\nR(x) <- E(x, y, z)", tl.ProgramError)  # found by the typing
    assert e.line == 2
    # a program built in Python has no text positions
    P = tl.Program()
    i = tl.index("i")
    P.tensor("Y")[i] = P.tensor("Foo")[i]
    with pytest.raises(tl.ProgramError) as err:
        P.run()
    assert err.value.line is None and "(line" not in str(err.value)


def test_named_constants_in_facts():
    P = tl.Program("E(N, 1)\nN = 0\nR(x) <- E(x, y)")  # the constant may come after the fact
    assert set(P.value("R").tuples()) == {(0,)}


def _calls(fn):
    """Function calls (builtins included) made by ``fn()``: a measure of work that does not
    depend on the machine's speed or load."""
    prof = cProfile.Profile()
    prof.runcall(fn)
    return pstats.Stats(prof).total_calls


def _inline(n):
    rng = np.random.default_rng(0)
    edges = rng.integers(0, 400, size=(n, 2))
    return "".join(f"Edge(N{a}, N{b})\n" for a, b in edges) + "R(x, y) <- Edge(x, y)\n"


def test_inline_facts_cost_linear_work():
    """Four times the facts must cost about four times the calls (a scan of the statements
    per fact made it sixteen)."""
    small, large = _inline(300), _inline(1200)
    c_small = _calls(lambda: tl.Program(small).run())
    c_large = _calls(lambda: tl.Program(large).run())
    assert c_large / c_small < 4.6, (c_small, c_large)


class _Symbol(str):
    """A symbol whose comparisons are Python calls, so that ``_calls`` counts them (a list
    membership test compares in C and would go unseen)."""

    __hash__ = str.__hash__

    def __eq__(self, other):
        return str.__eq__(self, other)


def test_api_facts_cost_linear_work():
    """The same for symbols given through ``Program.facts()`` (the symbol table was built by a
    list membership test per constant)."""
    def run(n):
        rows = [tuple(_Symbol(c) for c in line[5:-1].split(", "))
                for line in _inline(n).splitlines() if line.startswith("Edge")]
        P = tl.Program("R(x, y) <- Edge(x, y)")
        P.facts("Edge", rows)
        return lambda: P.run()

    c_small, c_large = _calls(run(300)), _calls(run(1200))
    assert c_large / c_small < 4.6, (c_small, c_large)
