"""Ops whose results were computed outside the dispatcher and wrapped as new tensors: a trace
saw a constant, so a compiled call silently replayed the example's result. As primitives, a
compiled call recomputes them (frexp) or breaks the graph where the output shape depends on
the data (unique, unique_consecutive), and equals eager on new inputs either way."""

import numpy as np
import pytest

import tensorix as tx

NUMPY = {"kernels": "numpy"}
CASES = {
    "frexp": (lambda x: tx.frexp(x).mantissa * 2.0 + tx.frexp(x).exponent, False),
    "unique": (lambda x: tx.unique(x, return_counts=True)[1] * 2, True),
    "unique-dim": (lambda x: tx.unique(x, dim=0) + 1.0, True),
    "unique_consecutive": (lambda x: tx.unique_consecutive(x, return_inverse=True)[1] + 1, True),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_compiled_call_recomputes_or_breaks(case):
    fn, breaks = CASES[case]
    compiled = tx.compile(fn, options=NUMPY)
    compiled(tx.tensor([[3.0, 1.0, 3.0], [2.0, 4.0, 2.0]]))
    x = tx.tensor([[5.0, 5.0, -7.0], [0.25, -2.0, 0.25]])
    np.testing.assert_array_equal(compiled(x).numpy(), fn(x).numpy())
    reasons = compiled.stats["breaks"]
    assert bool(reasons) == breaks, reasons
    if breaks:
        assert "output shape depends on data" in reasons[0]


def test_frexp_and_unique_equal_torch():
    torch = pytest.importorskip("torch")
    x = np.array([[8.0, -3.0, 0.0, 1e-40], [np.inf, 0.75, -0.0, 3.0]], np.float32)
    m, e = tx.frexp(tx.tensor(x))
    tm, te = torch.frexp(torch.tensor(x))
    np.testing.assert_array_equal(m.numpy(), tm.numpy())
    np.testing.assert_array_equal(e.numpy(), te.numpy())
    v = np.array([3, 1, 3, 2, 1, 1])
    got = tx.unique(tx.tensor(v), return_inverse=True, return_counts=True)
    ref = torch.unique(torch.tensor(v), return_inverse=True, return_counts=True)
    for g, r in zip(got, ref, strict=True):
        np.testing.assert_array_equal(g.numpy(), r.numpy())
