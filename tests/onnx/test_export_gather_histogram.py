"""``x[i]`` with an integer index tensor exported as a Gather by that tensor (a graph input:
export refused it before, as a position table of the example's index would bake it in), and
``x[i, j]`` with index tensors at adjacent dims as a GatherND by them, and
histogram exported (tensorix/onnx/_symbolic_count.py); both run in onnxruntime and loaded back
on inputs other than the traced example, against eager and torch."""

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import tensorix as tx  # noqa: E402
from tensorix.onnx import export, load  # noqa: E402

from ._helpers import run_ort  # noqa: E402

X = np.arange(20, dtype=np.float32).reshape(5, 4) * 0.5 - 3.0
INDEX_CASES = {
    "rows": (lambda x, i: x[i] * 2, [3, 0, 1, 1], [4, -1, 0, 2]),
    "columns": (lambda x, i: x[:, i], [2, 0], [-4, 3]),
    "2-d index after a slice": (lambda x, i: x[i, 1:], [[1, 2], [3, 0]], [[0, 0], [4, -2]]),
    "after an int": (lambda x, i: x[2, i] + x[0, i], [0, 3, 3], [1, -1, 2]),
    "ellipsis": (lambda x, i: x[..., i], [1, 0], [3, 3]),
}


@pytest.mark.parametrize("case", sorted(INDEX_CASES))
def test_getitem_by_an_index_tensor_is_a_gather_of_that_tensor(case):
    fn, first, other = INDEX_CASES[case]
    x = tx.tensor(X)
    proto = export(fn, (x, tx.tensor(first)))
    assert "Gather" in [n.op_type for n in proto.graph.node]
    torch = pytest.importorskip("torch")
    for xs, idx in ((X, other), (X[::-1].copy() + 1.0, first)):
        want = fn(tx.tensor(xs), tx.tensor(idx)).numpy()
        np.testing.assert_array_equal(run_ort(proto, [xs, np.asarray(idx)])[0], want)
        loaded = load(proto)(tx.tensor(xs), tx.tensor(idx))
        np.testing.assert_array_equal(loaded.detach().numpy(), want)
        np.testing.assert_array_equal(
            want, fn(torch.tensor(xs), torch.tensor(idx)).numpy())


X3 = np.arange(60, dtype=np.float32).reshape(3, 4, 5) - 30.0
ND_CASES = {
    "two": (lambda x, i, j: x[i, j], [2, 0, 1], [3, -1, 0], [0, 0, -3], [1, 2, -4]),
    "broadcast after a slice": (lambda x, i, j: x[:, i, j], [[1], [3]], [0, 4, 2], [[0], [2]],
                                [1, 1, -1]),
    "after an int": (lambda x, i, j: x[1, i, j], [0, 3], [1], [2, 1], [4]),
    "before a slice": (lambda x, i, j: x[i, j, 1:], [[0, 2]], [[1], [3]], [[1, 1]],
                       [[0], [2]]),
}


@pytest.mark.parametrize("case", sorted(ND_CASES))
def test_getitem_by_adjacent_index_tensors_is_a_gathernd_of_them(case):
    """Index tensors at adjacent dims: a GatherND by the tensors broadcast (the indexed dims
    moved first and the broadcast dims back to their place, as NumPy and torch place them)."""
    fn, i, j, i2, j2 = ND_CASES[case]
    x = tx.tensor(X3)
    proto = export(fn, (x, tx.tensor(i), tx.tensor(j)))
    assert "GatherND" in [n.op_type for n in proto.graph.node]
    torch = pytest.importorskip("torch")
    for xs, a, b in ((X3, i2, j2), (X3[::-1].copy() * 2.0, i, j)):
        want = fn(tx.tensor(xs), tx.tensor(a), tx.tensor(b)).numpy()
        got = run_ort(proto, [xs, np.asarray(a), np.asarray(b)])[0]
        np.testing.assert_array_equal(got, want)
        loaded = load(proto)(tx.tensor(xs), tx.tensor(a), tx.tensor(b))
        np.testing.assert_array_equal(loaded.detach().numpy(), want)
        np.testing.assert_array_equal(
            want, fn(torch.tensor(xs), torch.tensor(a), torch.tensor(b)).numpy())


EXAMPLE = np.array([[0.5, -1.0, 2.0, 2.0], [3.0, -0.25, 0.0, 1.0]], np.float32)
OTHERS = [
    np.array([[2.75, 2.75, -3.0, 0.0], [1.0, 1.0, 1.0, -0.5]], np.float32),
    np.array([[1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0]], np.float32),  # one value
    np.array([[-2.0, 1e-3, 2.0, 1.9999999], [0.0, -0.0, 5.0, -5.0]], np.float32),
]
HIST_CASES = {
    "range": lambda t, x: tuple(t.histogram(x, 5, range=(-2.0, 2.0))),
    "data range": lambda t, x: tuple(t.histogram(x, 3)),
    "weighted density": lambda t, x: tuple(t.histogram(x, 4, weight=x.abs() + 0.5,
                                                       density=True)),
    "edges": lambda t, x: tuple(t.histogram(x, t.tensor([-1.0, 0.0, 0.5, 2.5]))),
}


@pytest.mark.parametrize("case", sorted(HIST_CASES))
@pytest.mark.parametrize("which", range(len(OTHERS)))
def test_histogram_export_equals_eager_and_torch_on_other_inputs(case, which):
    fn = HIST_CASES[case]
    proto = export(lambda x: fn(tx, x), (tx.tensor(EXAMPLE),))
    x = OTHERS[which]
    want = [w.numpy() for w in fn(tx, tx.tensor(x))]
    got = run_ort(proto, [x])
    loaded = load(proto)(tx.tensor(x))
    for g, l_, w in zip(got, loaded, want):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=0)
        np.testing.assert_allclose(l_.detach().numpy(), w, rtol=1e-6, atol=0)
    torch = pytest.importorskip("torch")
    for w, t in zip(want, fn(torch, torch.tensor(x))):
        np.testing.assert_allclose(w, t.numpy(), rtol=1e-6, atol=0)
