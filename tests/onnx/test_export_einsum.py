"""The einsum contraction symbolics (onnx/_symbolic_einsum.py): the boolean semiring as counts
compared with 0, and an output label no operand has as an Expand, each run in onnxruntime on
inputs other than the traced ones against eager."""

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import tensorix as tx  # noqa: E402
from tensorix.onnx import export  # noqa: E402

from ._helpers import run_ort  # noqa: E402


def _check(fn, example, other):
    proto = export(fn, tuple(example))
    got = run_ort(proto, [t.numpy() for t in other])[0]
    want = fn(*other).detach().numpy()
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    return proto


def test_boolean_einsum_is_counts_compared_with_zero():
    rng = np.random.default_rng(0)

    def reach(a, b):
        return tx.einsum("ij,jk->ik", a, b, semiring="boolean")

    example = [tx.tensor(rng.random((4, 5)) < 0.3), tx.tensor(rng.random((5, 3)) < 0.3)]
    other = [tx.tensor(rng.random((4, 5)) < 0.5), tx.tensor(rng.random((5, 3)) < 0.2)]
    proto = _check(reach, example, other)
    assert "Greater" in {n.op_type for n in proto.graph.node}
    # against a NumPy oracle too: a witness j with a[i, j] and b[j, k]
    a, b = (t.numpy() for t in other)
    want = (a[:, :, None] & b[None, :, :]).any(1)
    assert np.array_equal(run_ort(proto, [a, b])[0], want)


def test_einsum_broadcast_output_label_is_expanded():
    from tensorix.ops._semiring import contract

    def spread(a):  # "k" is in no operand: the row sums broadcast along a new axis of size 3
        return contract(a, "ij", None, None, "ikj", {"i": 2, "j": 4, "k": 3}).sum(0)

    x = tx.randn(2, 4)
    want = np.broadcast_to(x.numpy()[:, None, :], (2, 3, 4)).sum(0)
    np.testing.assert_allclose(spread(x).numpy(), want, rtol=1e-6)
    proto = _check(spread, [x], [tx.randn(2, 4) * 3])
    assert "Expand" in {n.op_type for n in proto.graph.node}


def test_einsum_ellipsis_broadcast_exports():
    def f(a, b):
        return tx.einsum("b...i,b...i->b...", a, b)

    _check(f, [tx.randn(2, 1, 3), tx.randn(2, 4, 3)], [tx.randn(2, 1, 3) * 2, tx.randn(2, 4, 3)])


def test_bilinear_exports_on_other_inputs():
    tx.manual_seed(0)
    w, bias = tx.randn(3, 4, 5), tx.randn(3)

    def bil(x1, x2):
        return tx.nn.functional.bilinear(x1, x2, w, bias)

    _check(bil, [tx.randn(2, 4), tx.randn(2, 5)], [tx.randn(2, 4) * 2, tx.randn(2, 5) - 1])


@pytest.mark.parametrize("semiring", ["max-plus", "min-plus", "max-product", "min-product",
                                      "log-sum-exp"])
@pytest.mark.parametrize("equation", ["ij,jk->ik", "bij,bjk->bik", "ij,jk->i", "ijk->k"])
def test_semiring_einsum_exports_and_recomputes(semiring, equation):
    """Winners and max shifts are computed in the graph: on other inputs (another scale, where
    the example's shifts would overflow exp, and other winners) onnxruntime equals eager."""
    rng = np.random.default_rng(2)
    shapes = {"ij,jk->ik": [(3, 4), (4, 2)], "bij,bjk->bik": [(2, 3, 4), (2, 4, 2)],
              "ij,jk->i": [(3, 4), (4, 2)], "ijk->k": [(2, 3, 4)]}[equation]
    low = 0.0 if semiring.endswith("product") else -1.0

    def draw(scale):
        return [tx.tensor((rng.random(s) * (1 - low) + low) * scale, dtype=tx.float32)
                for s in shapes]

    def f(*ops):
        return tx.einsum(equation, *ops, semiring=semiring)

    _check(f, draw(1.0), draw(1.0))
    if semiring == "log-sum-exp":
        _check(f, draw(1.0), draw(120.0))  # exp(120) overflows float32: the shift is recomputed
