"""Export of the order primitives (sort, topk, kthvalue, median, quantile, argmax/argmin,
searchsorted), take/put with a tensor index, scatter's repeats and the bitwise ops: each written
once, then run in onnxruntime and loaded back on *other* inputs with NaN and ties, against eager
(whose order is torch's, checked here too)."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import tensorix as tx  # noqa: E402
from tensorix.onnx import UnsupportedOperatorError, export, load  # noqa: E402

from ._helpers import run_ort  # noqa: E402

NAN = float("nan")


def _inputs(seed):
    """Rows with ties, NaNs, infinities and signed zeros, in another pattern per seed."""
    rng = np.random.default_rng(seed)
    x = rng.integers(-3, 4, size=(4, 9)).astype(np.float32)  # small integers: ties
    x[0, rng.integers(0, 9, 2)] = np.nan
    x[1, rng.integers(0, 9)] = np.inf
    x[2, rng.integers(0, 9)] = -np.inf
    x[3] = np.nan if seed % 2 else x[3]  # an all-NaN row on odd seeds
    x[2, 0] = -0.0
    return tx.tensor(x)


ORDER_CASES = {
    "sort": lambda a: tuple(a.sort(1)),
    "sort-descending": lambda a: tuple(a.sort(1, descending=True)),
    "sort-dim0": lambda a: tuple(a.sort(0)),
    "argsort": lambda a: a.argsort(1, descending=True),
    "topk": lambda a: tuple(a.topk(3, 1)),
    "topk-smallest": lambda a: tuple(a.topk(4, 1, largest=False)),
    "kthvalue": lambda a: tuple(a.kthvalue(3, 1, keepdim=True)),
    "median": lambda a: tuple(a.median(1)),
    "median-all": lambda a: a.median(),
    "nanmedian": lambda a: tuple(a.nanmedian(1, keepdim=True)),
    "nanmedian-all": lambda a: a.nanmedian(),
    "argmax": lambda a: a.argmax(1),
    "argmin": lambda a: a.argmin(1, keepdim=True),
    "argmax-all": lambda a: a.argmax(),
    "argmin-all-keepdim": lambda a: a.argmin(keepdim=True),
    "max-dim": lambda a: tuple(a.max(1)),
    "min-dim": lambda a: tuple(a.min(0, keepdim=True)),
    "cummax": lambda a: tuple(a.cummax(1)),
    "cummin": lambda a: tuple(a.cummin(0)),
}


def _same(got, expected):
    for g, e in zip(got, expected, strict=True):
        g = g.detach().numpy() if isinstance(g, tx.Tensor) else np.asarray(g)
        e = e.detach().numpy() if isinstance(e, tx.Tensor) else np.asarray(e)
        assert g.shape == e.shape and g.dtype == e.dtype, (g.shape, e.shape, g.dtype, e.dtype)
        np.testing.assert_array_equal(g, e)


def _flat(out):
    return out if isinstance(out, tuple) else (out,)


@pytest.mark.parametrize("case", sorted(ORDER_CASES))
def test_order_ops_export_and_recompute_on_new_inputs(case):
    fn = ORDER_CASES[case]
    proto = export(fn, (_inputs(0),))
    for seed in (1, 2, 3):  # not the traced values: the graph must recompute the order
        x = _inputs(seed)
        expected = _flat(fn(x))
        _same(run_ort(proto, [x.numpy()]), expected)
        _same(_flat(load(proto)(x)), expected)


# torch documents which index it returns on ties for a stable sort and for max/min/argmax/
# argmin along a dim (the first); for topk, kthvalue and the medians it does not (its CPU
# selection picks any of equal elements), so there the values are compared and the indices
# must point at them
_TORCH_INDEX_RULE = {"sort", "sort-descending", "sort-dim0", "argsort", "argmax", "argmin",
                     "argmax-all", "argmin-all-keepdim", "max-dim", "min-dim", "cummax",
                     "cummin"}
_DIMS = {"topk": 1, "topk-smallest": 1, "kthvalue": 1, "median": 1, "nanmedian": 1}


@pytest.mark.parametrize("case", sorted(ORDER_CASES))
def test_order_ops_eager_equals_torch_with_nan_and_ties(case):
    """The order the exported graphs reproduce is torch's: NaN largest, stable ties, the
    first extreme for argmax/argmin."""
    torch = pytest.importorskip("torch")
    fn = ORDER_CASES[case]
    for seed in (0, 1):
        x = _inputs(seed)
        got = _flat(fn(x))
        t = torch.tensor(x.numpy())
        ref = fn(_StableSort(t) if case.startswith("sort") or case == "argsort" else t)
        ref = ref if isinstance(ref, tuple) else (ref,)
        if case in _TORCH_INDEX_RULE or len(got) == 1:
            for g, r in zip(got, ref, strict=True):
                np.testing.assert_array_equal(g.numpy(), r.numpy())
            continue
        (values, indices), d = got, _DIMS[case]
        np.testing.assert_array_equal(values.numpy(), ref[0].numpy())
        kept = indices if indices.ndim == x.ndim else indices.unsqueeze(d)
        np.testing.assert_array_equal(x.gather(d, kept).numpy().reshape(values.shape),
                                      values.numpy())


class _StableSort:
    """A torch tensor whose sort/argsort are the stable ones."""

    def __init__(self, t):
        self.t = t

    def sort(self, dim, descending=False):
        return self.t.sort(stable=True, dim=dim, descending=descending)

    def argsort(self, dim, descending=False):
        return self.t.argsort(stable=True, dim=dim, descending=descending)


@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
@pytest.mark.parametrize("op", ["quantile", "nanquantile"])
def test_quantile_exports_and_equals_torch(op, interpolation):
    torch = pytest.importorskip("torch")
    q = tx.tensor([0.0, 0.25, 0.5, 0.8, 1.0])

    def fn(a, q):
        return getattr(tx, op)(a, q, 1, interpolation=interpolation)

    proto = export(fn, (_inputs(0), q))
    for seed in (1, 2):
        x = _inputs(seed)
        expected = fn(x, q).numpy()
        ref = getattr(torch, op)(torch.tensor(x.numpy()), torch.tensor(q.numpy()), 1,
                                 interpolation=interpolation).numpy()
        np.testing.assert_allclose(expected, ref, rtol=1e-6, atol=1e-6, equal_nan=True)
        np.testing.assert_allclose(run_ort(proto, [x.numpy(), q.numpy()])[0], expected,
                                   rtol=1e-6, atol=1e-6, equal_nan=True)
        np.testing.assert_allclose(load(proto)(x, q).detach().numpy(), expected, rtol=1e-6,
                                   atol=1e-6, equal_nan=True)


@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_and_bucketize_export_with_nan_and_repeats(right):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)

    def fn(seq, values):
        return (tx.searchsorted(seq, values, right=right),
                tx.searchsorted(seq[0], values, right=right, out_int32=True),
                tx.bucketize(values, seq[1], right=right))

    def case():
        seq = np.sort(rng.integers(-3, 4, (3, 7)).astype(np.float32), axis=1)
        seq[1, -2:] = np.nan  # NaN sorts last
        values = rng.integers(-4, 5, (3, 5)).astype(np.float32)
        values[0, 1] = values[2, 3] = np.nan
        shuffled = rng.permuted(seq, axis=1)
        return tx.tensor(seq), tx.tensor(values), tx.tensor(shuffled)

    def graph(seq, values, shuffled):  # the sorter is computed in the graph (argsort)
        order = shuffled.argsort(1)
        return fn(seq, values) + (tx.searchsorted(shuffled, values, right=right,
                                                  sorter=order),)

    seq, values, shuffled = case()
    proto = export(graph, (seq, values, shuffled))
    for _ in range(3):
        seq, values, shuffled = case()
        expected = graph(seq, values, shuffled)
        ts, tv = torch.tensor(seq.numpy()), torch.tensor(values.numpy())
        np.testing.assert_array_equal(expected[0].numpy(),
                                      torch.searchsorted(ts, tv, right=right).numpy())
        np.testing.assert_array_equal(expected[2].numpy(),
                                      torch.bucketize(tv, ts[1], right=right).numpy())
        np.testing.assert_array_equal(expected[3].numpy(), expected[0].numpy())  # sorter
        inputs = [seq, values, shuffled]
        _same(run_ort(proto, [t.numpy() for t in inputs]), expected)
        _same(load(proto)(*inputs), expected)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int32, np.int64, np.bool_])
def test_order_ops_of_integer_and_bool_dtypes_export(dtype):
    """onnxruntime's TopK, ArgMax and comparisons take few integer types: narrower ones are
    widened exactly (to int32) for the comparison, the values gathered from the input."""
    def fn(a):
        return (*a.sort(1, descending=True), a.argmax(1), a.argmin(), *a.topk(2, 0),
                a.median(1).values, a.median(), *a.cummax(1), *a.cummin(0))

    def draw(seed):
        return tx.tensor(np.random.default_rng(seed).integers(0, 3, (4, 6)).astype(dtype))

    if dtype is np.bool_:  # no median or running extreme of bools in ONNX: sort, arg*, topk
        def fn(a):  # noqa: F811 - the bool subset
            return (*a.sort(1, descending=True), a.argmax(1), a.argmin(), *a.topk(2, 0))
    proto = export(fn, (draw(0),))
    for seed in (1, 2):
        x = draw(seed)
        _same(run_ort(proto, [x.numpy()]), fn(x))
        _same(load(proto)(x), fn(x))


def test_sort_along_a_dynamic_axis():
    proto = export(lambda a: tuple(a.sort(1, descending=True)), (_inputs(0),),
                   input_names=["x"], dynamic_axes={"x": {1: "n"}})
    x = tx.tensor(np.random.default_rng(5).integers(0, 3, (4, 13)).astype(np.float32))
    _same(run_ort(proto, [x.numpy()]), tuple(x.sort(1, descending=True)))


def test_take_and_put_read_their_index_tensor():
    x, src = tx.randn(3, 4), tx.randn(5)

    def fn(a, index, s):
        return a.take(index), a.put(index, s), a.put(index, s, accumulate=True)

    index = tx.tensor([0, 5, -1, 7, 5])  # a repeat: put's last write wins
    proto = export(fn, (x, index, src))
    for index in (tx.tensor([11, 2, 2, -12, 3]), tx.tensor([1, 1, 1, 1, 1])):
        expected = fn(x, index, src)
        got = run_ort(proto, [x.numpy(), index.numpy(), src.numpy()])
        for g, e in zip(got, expected, strict=True):
            np.testing.assert_allclose(g, e.numpy(), rtol=1e-6, atol=1e-6)
        for g, e in zip(load(proto)(x, index, src), expected, strict=True):
            np.testing.assert_allclose(g.detach().numpy(), e.numpy(), rtol=1e-6, atol=1e-6)


def test_put_and_take_gradients_equal_torch():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(1).standard_normal((3, 4))
    src = np.random.default_rng(2).standard_normal(5)
    index = np.array([0, 5, -1, 7, 5])
    a, s = tx.tensor(x, requires_grad=True), tx.tensor(src, requires_grad=True)
    ta, ts = torch.tensor(x, requires_grad=True), torch.tensor(src, requires_grad=True)
    w = np.arange(12.0).reshape(3, 4)
    (a.put(tx.tensor(index), s) * tx.tensor(w)).sum().backward()
    (a.take(tx.tensor(index)) * tx.tensor(src)).sum().backward()
    (ta.put(torch.tensor(index), ts) * torch.tensor(w)).sum().backward()
    (ta.take(torch.tensor(index)) * torch.tensor(src)).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(s.grad.numpy(), ts.grad.numpy(), rtol=1e-12)


def test_scatter_keeps_the_last_of_repeated_writes():
    """ONNX leaves repeated positions of a ScatterElements undefined; eager's last write wins,
    and the graph says so explicitly (the earlier writes go to a slot that is cut off)."""
    def fn(a, index, s):
        return a.scatter(1, index, s), a.scatter(0, index[:2] % 3, s[:2])

    x, s = tx.randn(3, 5), tx.randn(3, 5)
    index = tx.tensor(np.array([[0, 2, 0, 4, 2], [1, 1, 1, 1, 1], [4, 3, 2, 1, 0]]))
    proto = export(fn, (x, index, s))
    kinds = [n.op_type for n in proto.graph.node]
    assert "ScatterElements" in kinds and "Pad" in kinds
    for g, e in zip(run_ort(proto, [x.numpy(), index.numpy(), s.numpy()]), fn(x, index, s),
                    strict=True):
        np.testing.assert_array_equal(g, e.numpy())
    assert float(fn(x, index, s)[0][1, 1]) == float(s[1, 4])  # the last of five writes


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16, np.int32, np.int64])
@pytest.mark.parametrize("op", ["bitwise_left_shift", "bitwise_right_shift"])
def test_shifts_of_every_integer_dtype_export(op, dtype):
    torch = pytest.importorskip("torch")
    info = np.iinfo(dtype)
    values = np.array([info.min, info.max, -1, 0, 1, 5, -5, info.min + 1]).astype(dtype)
    a = tx.tensor(np.repeat(values[:, None], info.bits + 3, 1))
    b = tx.tensor(np.tile(np.arange(info.bits + 3), (8, 1)).astype(dtype))  # past the width
    fn = getattr(tx, op)
    expected = fn(a, b).numpy()
    # torch is the oracle within the width (past it, tensorix's documented rule: 0 or the
    # sign fill)
    inside = np.arange(info.bits + 3) < info.bits
    ref = getattr(torch, op)(torch.tensor(a.numpy()), torch.tensor(b.numpy())).numpy()
    np.testing.assert_array_equal(expected[:, inside], ref[:, inside])
    for opset in (13, 18):
        proto = export(fn, (a, b), opset_version=opset)
        assert "BitShift" not in [n.op_type for n in proto.graph.node]
        np.testing.assert_array_equal(run_ort(proto, [a.numpy(), b.numpy()])[0], expected)
        np.testing.assert_array_equal(load(proto)(a, b).detach().numpy(), expected)


@pytest.mark.parametrize("op", ["bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not"])
def test_bitwise_ops_need_opset_18_on_integers_but_not_on_bools(op):
    fn = getattr(tx, op)
    args = (lambda a, b: fn(a)) if op == "bitwise_not" else fn
    rng = np.random.default_rng(0)
    ints = tuple(tx.tensor(rng.integers(-50, 50, (3, 4)).astype(np.int16)) for _ in range(2))
    bools = tuple(tx.tensor(rng.random((3, 4)) > 0.5) for _ in range(2))
    with pytest.raises(UnsupportedOperatorError, match="needs opset >= 18"):
        export(args, ints, opset_version=17)
    for inputs, opset in ((ints, 18), (bools, 13), (bools, 17)):
        proto = export(args, inputs, opset_version=opset)
        expected = args(*inputs).numpy()
        np.testing.assert_array_equal(run_ort(proto, [t.numpy() for t in inputs])[0], expected)
        np.testing.assert_array_equal(load(proto)(*inputs).detach().numpy(), expected)


def test_mode_is_refused_by_name():
    with pytest.raises(UnsupportedOperatorError, match=r"op ModeRank .*opset 17"):
        export(lambda a: tuple(a.mode(1)), (_inputs(0),))


def test_searchsorted_is_torchs_search_on_unsorted_and_nan_sequences():
    """Where a row is not sorted (or holds NaN, which compares false both ways) a search has
    no single answer; eager and the graph run torch's binary search step for step, so all
    three agree on any input."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)

    def draw():
        seq = rng.integers(-3, 4, (4, 11)).astype(np.float32)
        seq[0] = np.sort(seq[0])
        seq[1, 3] = np.nan
        values = rng.integers(-4, 5, (4, 6)).astype(np.float32)
        values[2, 0] = np.nan
        return tx.tensor(seq), tx.tensor(values)

    for right in (False, True):
        fn = lambda s, v: tx.searchsorted(s, v, right=right)  # noqa: E731
        proto = export(fn, draw())
        for _ in range(3):
            seq, values = draw()
            expected = fn(seq, values)
            ref = torch.searchsorted(torch.tensor(seq.numpy()), torch.tensor(values.numpy()),
                                     right=right)
            np.testing.assert_array_equal(expected.numpy(), ref.numpy())
            np.testing.assert_array_equal(run_ort(proto, [seq.numpy(), values.numpy()])[0],
                                          expected.numpy())
            np.testing.assert_array_equal(load(proto)(seq, values).numpy(), expected.numpy())
