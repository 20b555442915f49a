"""tensorix.compile(dynamic=True): one program with symbolic sizes serves other sizes, guarded
by tensorix.export's guards; a size on the other side of a guard exports again (counted),
never running the traced branch (the re-tracing version removed earlier returned the
traced branch at 6 for ``if x.shape[0] > 4`` traced at 3)."""

import numpy as np
import pytest

import tensorix as tx

NUMPY = {"kernels": "numpy"}


def _np(t):
    return t.detach().cpu().numpy()


def _grow(x, w):
    y = (x @ w).tanh()
    return y * 2.0 if x.shape[0] > 4 else y + 1.0


def test_one_program_serves_sizes_on_its_side_of_a_guard():
    cf = tx.compile(_grow, dynamic=True, options=NUMPY)
    w = tx.randn(3, 2)
    for n in (3, 2, 4, 6, 9, 3, 7, 5, 2):
        x = tx.randn(n, 3)
        np.testing.assert_allclose(_np(cf(x, w)), _np(_grow(x, w)), rtol=1e-6)
    assert cf.stats["compiles"] == 1 and cf.stats["hits"] == 8
    programs = next(iter(cf.entries.values())).programs
    guards = [[str(g) for g in ep.guards] for ep in programs]
    assert any(any("<= 4" in g for g in gs) for gs in guards)
    assert any(any("> 4" in g for g in gs) for gs in guards)
    assert cf.stats["recompiles"] == len(programs) - 1 == 1  # one program per side
    assert "dynamic:" in str(cf.explain())


def test_a_size_branch_never_takes_the_traced_side():
    f = lambda x: (x * 2.0).exp().sum(-1) if x.shape[0] > 4 else x.sin().sum(-1)  # noqa
    cf = tx.compile(f, dynamic=True, options=NUMPY)
    for n in (3, 4, 6, 2, 9):  # 3 and 4 trace alike: only the guard tells 6 apart
        x = tx.randn(n, 5)
        np.testing.assert_allclose(_np(cf(x)), _np(f(x)), rtol=1e-6)
    assert cf.stats["compiles"] == 1 and cf.stats["recompiles"] == 1


def test_a_size_python_loops_over_is_specialised_and_recompiles():
    def running(x):
        out = x[0]
        for i in range(1, x.shape[0]):
            out = out + x[i]
        return out

    cf = tx.compile(running, dynamic=True, options=NUMPY)
    for n in (3, 5, 3, 4):
        x = tx.randn(n, 2)
        np.testing.assert_allclose(_np(cf(x)), _np(running(x)), rtol=1e-6)
    assert cf.stats["recompiles"] == 2  # sizes 5 and 4; 3 again hits its program


def test_gradients_through_a_dynamic_program_equal_eager():
    cf = tx.compile(_grow, dynamic=True, options=NUMPY)
    w = tx.randn(3, 2, dtype=tx.float64, requires_grad=True)
    for n in (3, 7, 4):
        x = tx.randn(n, 3, dtype=tx.float64)
        (g,) = tx.autograd.grad(cf(x, w).sum(), [w])
        (g_ref,) = tx.autograd.grad(_grow(x, w).sum(), [w])
        np.testing.assert_allclose(_np(g), _np(g_ref), rtol=1e-12)


def test_dynamic_falls_back_to_per_shape_where_the_program_reads_data():
    def f(x):
        return x * 2.0 if x.sum() > 0 else x - 1.0

    cf = tx.compile(f, dynamic=True, options=NUMPY)
    for x in (tx.ones(3), -tx.ones(5), tx.ones(5)):
        np.testing.assert_array_equal(_np(cf(x)), _np(f(x)))
    assert cf.stats["compiles"] == 2  # per shape, with pieces around the read


@pytest.mark.parametrize("change", ["dtype", "requires_grad", "rank"])
def test_dynamic_guards_on_what_is_not_a_size(change):
    cf = tx.compile(lambda x: (x * 3.0).tanh(), dynamic=True, options=NUMPY)
    cf(tx.randn(4, 3))
    other = {"dtype": tx.randn(4, 3, dtype=tx.float64),
             "requires_grad": tx.randn(4, 3, requires_grad=True),
             "rank": tx.randn(4, 3, 2)}[change]
    out = cf(other)
    assert out.dtype == other.dtype and tuple(out.shape) == tuple(other.shape)
    assert out.requires_grad == other.requires_grad
    assert cf.stats["compiles"] == 2
