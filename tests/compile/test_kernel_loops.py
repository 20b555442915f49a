"""The numba kernels' loop forms (tensorix._compile.codegen): a column sum summed in a loop of
its own after each pass, with the bits of a float64 sum in row order; the float32 exp's
subnormal range and the entries below it (a causal mask's -inf) exact."""

import numpy as np
import pytest

import tensorix as tx
from tensorix._compile.codegen import numba_source

pytest.importorskip("numba")


def _entry(cf):
    (entry,) = cf.entries.values()
    return entry


def _row_order(v):
    """float32 ``v``'s column sums as the kernel makes them: widened, added in row order in
    float64, rounded once."""
    acc = np.zeros(v.shape[1])
    for row in v:
        acc += row.astype(np.float64)
    return acc.astype(np.float32)


def test_a_column_sum_is_a_loop_of_its_own_with_row_order_bits():
    r = np.random.default_rng(0)
    x = r.standard_normal((300, 37)).astype(np.float32)
    y = r.standard_normal((300, 37)).astype(np.float32)
    # operands: a value stored nowhere (its own scratch row), an input (its row read back),
    # a group output (read back from it)
    cf = tx.compile(lambda a, b: ((a * b).sum(0), a.sum(0), a + b, (a + b).sum(0), a - b),
                    options={"kernels": "numba", "tier_up": 0})
    s_prod, s_in, _, s_out, _ = cf(tx.from_numpy(x), tx.from_numpy(y))
    graph = _entry(cf).graph
    assert graph.kernel_kinds() == ["numba"]
    src = numba_source(graph.plans[0])
    assert "[b] += c" in src and "[b] += x0[a, b]" in src and "[b] += o" in src
    assert "[b] += t" not in src  # no sum inside a pass
    assert np.array_equal(s_prod.numpy(), _row_order(x * y))
    assert np.array_equal(s_in.numpy(), _row_order(x))
    assert np.array_equal(s_out.numpy(), _row_order(x + y))


def test_float32_exp_subnormal_results_and_masked_entries():
    # x in [-104, -87.3]: exp(x) is subnormal, rounded once (within 1 ulp of subnormal
    # spacing); below -104 and -inf: exactly 0; a whole row of -inf but one entry (a causal
    # mask's first row) softmaxes to exactly [1, 0, ...]
    # exp(x / 2) * 2: both scalings exact (a subnormal doubled too), as in test_row_kernels
    x = np.concatenate([np.linspace(-208, -175, 20_001, dtype=np.float32),
                        np.array([-209.0, -1e30, -np.inf, np.nan], np.float32)])
    cf = tx.compile(lambda t: (t * 0.5).exp() * 2.0, options={"kernels": "numba",
                                                              "tier_up": 0})
    got = cf(tx.from_numpy(x)).numpy()
    assert _entry(cf).graph.kernel_kinds() == ["numba"]
    ref = np.exp(x[:-4].astype(np.float64) * 0.5) * 2
    spacing = float(np.finfo(np.float32).smallest_subnormal)
    assert np.abs(got[:-4] - ref).max() <= 2 * spacing
    assert (got[:-4] > 0).sum() > 10_000  # the subnormal range was reached
    assert np.array_equal(got[-4:-1], np.zeros(3, np.float32)) and np.isnan(got[-1])
    mask = np.tril(np.ones((6, 6), bool))
    scores = tx.from_numpy(np.random.default_rng(1).standard_normal((2, 6, 6)).astype(
        np.float32))
    sm = tx.compile(lambda s: s.masked_fill(tx.from_numpy(~mask), float("-inf")).softmax(-1),
                    options={"kernels": "numba", "tier_up": 0})
    out = sm(scores).numpy()
    assert np.array_equal(out[:, 0], np.tile(np.eye(1, 6, dtype=np.float32), (2, 1)))
    assert np.array_equal(out[:, ~mask], np.zeros((2, int((~mask).sum())), np.float32))
