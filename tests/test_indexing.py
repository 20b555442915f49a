"""Indexing beyond the op matrix: getitem/setitem against torch for every kind of index (basic,
Ellipsis, None, integer tensors, boolean masks, lists, mixed advanced + basic), setitem with
broadcasting and with values that require grad, the scatter/gather family's gradients at
duplicates and ties, the in-place variants, and the argument errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorix as tx
from tensorix.testing import assert_close, gradcheck, gradgradcheck


def _torch():
    return pytest.importorskip("torch")


RNG = np.random.default_rng(7)
X = RNG.standard_normal((4, 5, 3))


def _both(index):
    """The index for tensorix and for torch (numpy arrays become tensors of each)."""
    torch = _torch()

    def conv(i, lib):
        if isinstance(i, np.ndarray):
            return tx.tensor(i) if lib == "tx" else torch.from_numpy(i)
        return i

    if isinstance(index, tuple):
        return tuple(conv(i, "tx") for i in index), tuple(conv(i, "t") for i in index)
    return conv(index, "tx"), conv(index, "t")


INDICES = [
    0, -1, slice(1, 3), (slice(None, None, 2), 1), (Ellipsis, 1), (None, 0), (1, None, 2),
    (Ellipsis, None), (slice(None), None, slice(None), None), np.array([3, 0, 3]),
    np.array([[1, 2], [0, 0]]), X[..., 0] > 0, X > 0, (X[:, :, 0] > 0, 1),
    (0, slice(None), np.array([1, 2])), (np.array([0, 1]), slice(None), np.array([2, 0])),
    (np.array([[0], [3]]), None, np.array([1, 4, 4])), (slice(1, None, 2), X[0] > 0),
    (Ellipsis, np.array([2, 2, 0])), ([1, 1, 0], 3), (np.array(2), slice(None)),
    (np.array(2), np.array([0, 4])), True, False, (0, True), np.array([], dtype=np.int64),
    (slice(None), np.array([True, False, True, False, True])), (np.array([-1, -4]), -2),
    (1, slice(10, 20)), (np.int64(2), np.array([1], dtype=np.int32)),
]


@pytest.mark.parametrize("index", INDICES, ids=[str(i)[:40] for i in range(len(INDICES))])
def test_getitem_matches_torch_values_grads_and_views(index):
    torch = _torch()
    a, ta = tx.tensor(X, requires_grad=True), torch.tensor(X, requires_grad=True)
    i, ti = _both(index)
    out, tout = a[i], ta[ti]
    assert tuple(out.shape) == tuple(tout.shape)
    assert_close(out, tout)
    seed = RNG.standard_normal(tuple(tout.shape))
    (out * tx.tensor(seed)).sum().backward()
    (tout * torch.tensor(seed)).sum().backward()
    assert_close(a.grad, ta.grad)
    with torch.no_grad():
        is_view = tout._base is not None
    if not tout.numel():
        return  # an empty result shares no memory to speak of
    plain = tx.tensor(X)
    v = plain[i]
    assert (v._base is plain) == is_view
    if is_view:
        assert v.stride() == tout.stride()


def test_getitem_double_backward_with_duplicates():
    x = tx.tensor(X, requires_grad=True)
    idx = tx.tensor([0, 2, 0, 0])
    gradcheck(lambda t: t[idx, 1:] ** 2, [x])
    gradgradcheck(lambda t: t[idx, :, idx % 3] ** 2, [x])


def test_zero_dim_integer_tensor_index_is_a_view():
    x = tx.arange(12.).reshape(3, 4)
    v = x[tx.tensor(1)]
    assert v._base is x._base and v.shape == (4,)


# -- the property test: random index tuples against torch -----------------------------------------
def _draw_item(draw, kind, shape, d):
    """(item, dims consumed) for one index item of ``kind`` at input dim ``d``."""
    n = shape[d]
    if kind == "int":
        return draw(st.integers(-n, n - 1)), 1
    if kind == "slice":
        bound = st.integers(-n - 1, n + 1)
        return slice(draw(bound), draw(bound), draw(st.integers(1, 3))), 1
    if kind in ("array", "list"):
        vals = draw(st.lists(st.integers(-n, n - 1), min_size=1, max_size=3))
        return (np.array(vals) if kind == "array" else vals), 1
    k = draw(st.integers(1, min(2, len(shape) - d)))
    size = int(np.prod(shape[d:d + k]))
    bits = draw(st.lists(st.booleans(), min_size=size, max_size=size))
    return np.array(bits).reshape(shape[d:d + k]), k


@st.composite
def _index_cases(draw):
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=4)))
    items, d = [], 0
    kinds = st.sampled_from(["int", "slice", "None", "array", "mask", "...", "list", "bool"])
    for _ in range(draw(st.integers(0, 5))):
        kind = draw(kinds)
        if kind in ("None", "bool"):
            items.append(None if kind == "None" else draw(st.booleans()))
        elif kind == "...":
            if not any(i is Ellipsis for i in items):
                items.append(Ellipsis)
                d = len(shape)  # the items after it index the trailing dims: keep it simple
        elif d < len(shape):
            item, used = _draw_item(draw, kind, shape, d)
            items.append(item)
            d += used
    return shape, tuple(items)


def _lib_index(index, lib):
    torch = _torch()

    def conv(i):
        if isinstance(i, (np.ndarray, list)):
            return tx.tensor(i) if lib == "tx" else torch.tensor(np.asarray(i))
        return i

    return tuple(conv(i) for i in index)


@settings(max_examples=200, deadline=None)
@given(_index_cases())
def test_random_indices_get_and_set_like_torch(case):
    torch = _torch()
    shape, index = case
    x = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    try:
        want = torch.tensor(x)[_lib_index(index, "t")]
    except (IndexError, RuntimeError, ValueError):
        with pytest.raises((IndexError, RuntimeError, ValueError)):
            tx.tensor(x)[_lib_index(index, "tx")]
        return
    got = tx.tensor(x)[_lib_index(index, "tx")]
    assert tuple(got.shape) == tuple(want.shape), case
    assert_close(got, want, what=str(case))
    ids = torch.arange(x.size).reshape(shape)[_lib_index(index, "t")].reshape(-1)
    if len(set(ids.tolist())) != ids.numel():
        return  # duplicate targets: torch leaves the winning write unspecified
    vals = np.random.default_rng(0).standard_normal(tuple(want.shape))
    a, t = tx.tensor(x), torch.tensor(x)
    a[_lib_index(index, "tx")] = tx.tensor(vals)
    t[_lib_index(index, "t")] = torch.tensor(vals)
    assert_close(a, t, what=f"setitem {case}")


# -- setitem --------------------------------------------------------------------------------------
SET_CASES = [
    ((1, slice(0, 4, 2)), (2,)), ((np.array([3, 0]),), (1, 5)), ((slice(None), 2), ()),
    ((Ellipsis, np.array([4, 1])), (4, 1)), ((np.array([True, False, True, False]),), (5,)),
    ((0, slice(None), np.array([1, 2])), (5, 2)), ((None, 1), (1, 5)),
]


@pytest.mark.parametrize("index,vshape", SET_CASES)
def test_setitem_broadcasts_and_sends_gradients_to_target_and_value(index, vshape):
    torch = _torch()
    base = RNG.standard_normal((4, 5))
    val = RNG.standard_normal(vshape)
    if index and isinstance(index[0], int) and index[0] == 0:  # 3-d target for this case
        base = RNG.standard_normal((2, 5, 3))
    a, ta = tx.tensor(base, requires_grad=True), torch.tensor(base, requires_grad=True)
    v, tv = tx.tensor(val, requires_grad=True), torch.tensor(val, requires_grad=True)
    i, ti = _both(index)
    b, tb = a * 2, ta * 2
    b[i] = v * v
    tb[ti] = tv * tv
    assert_close(b.detach(), tb.detach())
    w = RNG.standard_normal(base.shape)
    (b * tx.tensor(w)).sum().backward()
    (tb * torch.tensor(w)).sum().backward()
    assert_close(a.grad, ta.grad)
    assert_close(v.grad, tv.grad)


def test_setitem_bumps_version_and_writes_base_through_a_view():
    x = tx.zeros(3, 4)
    row = x[1]
    row[tx.tensor([0, 3])] = 5.0
    assert x[1].tolist() == [5.0, 0.0, 0.0, 5.0]
    assert x._version[0] == 1
    x[x > 1] = -1.0
    assert x.sum().item() == -2.0


def test_setitem_value_cast_to_target_dtype_and_python_scalars():
    x = tx.zeros(3, dtype=tx.int64)
    x[1] = 2.7
    assert x.dtype == tx.int64 and x.tolist() == [0, 2, 0]
    y = tx.zeros(2, 2)
    y[0] = tx.tensor([1, 2])
    assert y.dtype == tx.float32 and y.tolist() == [[1.0, 2.0], [0.0, 0.0]]


# -- errors ---------------------------------------------------------------------------------------
T = tx.zeros(4, 5, 3)


@pytest.mark.parametrize("fn,exc,msg", [
    (lambda: T[tx.tensor([5])], IndexError, "index 5 is out of bounds for dimension 0 with size 4"),
    (lambda: T[:, 7], IndexError, "index 7 is out of bounds for dimension 1 with size 5"),
    (lambda: T[0, :, tx.tensor([1, -4])], IndexError,
     "index -4 is out of bounds for dimension 2 with size 3"),
    (lambda: T[tx.ones(3, dtype=tx.bool)], IndexError,
     r"shape of the mask \[3\] at index 0 does not match the shape of the indexed tensor"),
    (lambda: T[tx.tensor([1.0])], IndexError,
     "tensors used as indices must be long, int, byte or bool tensors, got float32"),
    (lambda: T[[0.5]], IndexError, "tensors used as indices must be long"),
    (lambda: T[1.5], IndexError, "only integers, slices"),
    (lambda: T["a"], TypeError, "invalid index of type str"),
    (lambda: T[::-1], ValueError, "step must be greater than zero"),
    (lambda: T[0, 0, 0, 0], IndexError, "too many indices for tensor of dimension 3"),
    (lambda: T[..., 0, ...], IndexError, "single ellipsis"),
    (lambda: T[tx.tensor([0, 1]), tx.tensor([0, 1, 2])], IndexError, "shape mismatch"),
])
def test_getitem_errors(fn, exc, msg):
    with pytest.raises(exc, match=msg):
        fn()


def test_setitem_errors():
    x = tx.zeros(4, 5)
    with pytest.raises(RuntimeError, match=r"setitem\(\): shape mismatch: value tensor of shape "
                                           r"\[3, 5\] cannot be broadcast to indexing result "
                                           r"of shape \[2, 5\]"):
        x[[0, 1]] = tx.ones(3, 5)
    with pytest.raises(IndexError, match="index 9 is out of bounds for dimension 0 with size 4"):
        x[tx.tensor([0, 9])] = 1.0
    with pytest.raises(TypeError, match="argument 'value' must be a Tensor or a number"):
        x[0] = "a"


# -- gather / scatter -----------------------------------------------------------------------------
def test_scatter_with_src_larger_than_index():
    torch = _torch()
    x, src = RNG.standard_normal((4, 5)), RNG.standard_normal((3, 6))
    idx = np.array([[0, 3, 1], [2, 0, 4]])
    out = tx.scatter(tx.tensor(x), 1, tx.tensor(idx), tx.tensor(src))
    assert_close(out, torch.scatter(torch.tensor(x), 1, torch.from_numpy(idx),
                                    torch.tensor(src)))
    add = tx.scatter_add(tx.tensor(x), 1, tx.tensor(idx), tx.tensor(src))
    assert_close(add, torch.scatter_add(torch.tensor(x), 1, torch.from_numpy(idx),
                                        torch.tensor(src)))
    a, s = tx.tensor(x, requires_grad=True), tx.tensor(src, requires_grad=True)
    gradcheck(lambda p, q: tx.scatter(p, 1, tx.tensor(idx), q), [a, s])
    gradcheck(lambda p, q: tx.scatter_add(p, 1, tx.tensor(idx), q) ** 2, [a, s])
    gradgradcheck(lambda p, q: tx.scatter_add(p, 1, tx.tensor(idx), q) ** 2, [a, s])


def test_gather_scatter_add_duality_double_backward():
    x = tx.tensor(RNG.standard_normal((3, 4)), requires_grad=True)
    idx = tx.tensor(RNG.integers(0, 3, (5, 4)))
    g = tx.gather(x, 0, idx)
    (gx,) = tx.autograd.grad((g ** 2).sum(), [x], create_graph=True)
    assert gx.grad_fn is not None
    gradgradcheck(lambda t: tx.gather(t, 0, idx) ** 3, [x])


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_ties_and_zeros_match_torch(reduce, include_self):
    torch = _torch()
    x = np.array([[1.0, 2.0, 0.0], [3.0, 3.0, 1.0], [0.0, 5.0, 2.0]])
    src = np.array([[3.0, 0.0, 2.0], [1.0, 5.0, 0.0], [3.0, 3.0, 0.0], [0.5, 2.0, 1.0]])
    if not include_self and reduce in ("amax", "amin"):
        x = x + 10.0 * (1 if reduce == "amax" else -1)  # no ties with the left-out self
    idx = np.array([[1, 0, 2], [0, 2, 0], [1, 1, 0], [0, 0, 2]])
    a, s = tx.tensor(x, requires_grad=True), tx.tensor(src, requires_grad=True)
    ta, ts = torch.tensor(x, requires_grad=True), torch.tensor(src, requires_grad=True)
    out = a.scatter_reduce(0, tx.tensor(idx), s, reduce, include_self=include_self)
    tout = ta.scatter_reduce(0, torch.from_numpy(idx), ts, reduce, include_self=include_self)
    assert_close(out, tout)
    w = RNG.standard_normal(x.shape)
    ga = tx.autograd.grad((out * tx.tensor(w)).sum(), [a, s])
    gt = torch.autograd.grad((tout * torch.tensor(w)).sum(), [ta, ts])
    assert_close(ga[0], gt[0], what="grad self")
    assert_close(ga[1], gt[1], what="grad src")


@pytest.mark.parametrize("reduce", ["amax", "amin"])
def test_scatter_reduce_minmax_left_out_self_takes_no_share(reduce):
    """With include_self=False an old value equal to the result is not an input of it, so the
    gradient is shared only among the src elements that reach it. (torch 2.13 still counts the
    old value when sharing and then drops its share, losing part of the gradient; we keep the
    whole gradient.)"""
    x = tx.tensor([[1.0, 7.0]], requires_grad=True)
    src = tx.tensor([[1.0, 7.0], [0.5, 7.0]], requires_grad=True)
    idx = tx.tensor([[0, 0], [0, 0]])
    src_ = src if reduce == "amax" else -src
    x_ = x if reduce == "amax" else -x
    out = x_.scatter_reduce(0, idx, src_, reduce, include_self=False)
    gx, gs = tx.autograd.grad(out.sum(), [x, src])
    assert gx.tolist() == [[0.0, 0.0]]
    assert gs.abs().tolist() == [[1.0, 0.5], [0.0, 0.5]]


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
def test_scatter_reduce_second_order(reduce):
    x = tx.tensor(RNG.uniform(0.5, 2, (3, 4)), requires_grad=True)
    src = tx.tensor(RNG.uniform(0.5, 2, (5, 4)), requires_grad=True)
    idx = tx.tensor(RNG.integers(0, 3, (5, 4)))
    gradgradcheck(lambda p, q: p.scatter_reduce(0, idx, q, reduce) ** 2, [x, src])


def test_scatter_value_and_reduce_forms():
    torch = _torch()
    x = RNG.standard_normal((3, 4))
    idx = np.array([[0, 1, 2, 0]])
    got = tx.tensor(x).scatter(0, tx.tensor(idx), 2.5)
    assert_close(got, torch.tensor(x).scatter(0, torch.from_numpy(idx), 2.5))
    src = RNG.standard_normal((1, 4))
    for ours, theirs in [("add", "add"), ("multiply", "multiply")]:
        got = tx.tensor(x).scatter(0, tx.tensor(idx), tx.tensor(src), reduce=ours)
        with warnings.catch_warnings():  # torch deprecates reduce= with a src tensor
            warnings.simplefilter("ignore")
            want = torch.tensor(x).scatter(0, torch.from_numpy(idx), torch.tensor(src),
                                           reduce=theirs)
        assert_close(got, want)


def test_zero_dim_gather_scatter_index_select():
    torch = _torch()
    x, tx_ = tx.tensor(5.0), torch.tensor(5.0)
    i = np.array([0, 0])
    assert_close(tx.gather(x, 0, tx.tensor(i)), torch.gather(tx_, 0, torch.from_numpy(i)))
    assert_close(tx.index_select(x, 0, tx.tensor([0])),
                 torch.index_select(tx_, 0, torch.tensor([0])))
    assert_close(x.index_fill(0, tx.tensor([0]), 2.0), tx_.index_fill(0, torch.tensor([0]), 2.0))


# -- index_* and masked_* -------------------------------------------------------------------------
def test_index_ops_with_duplicates_and_negative_fill_index():
    torch = _torch()
    x, src = RNG.standard_normal((4, 3)), RNG.standard_normal((5, 3))
    idx = np.array([1, 1, 3, 0, 1])
    a, s = tx.tensor(x, requires_grad=True), tx.tensor(src, requires_grad=True)
    ta, ts = torch.tensor(x, requires_grad=True), torch.tensor(src, requires_grad=True)
    out = a.index_add(0, tx.tensor(idx), s, alpha=-2.0)
    tout = ta.index_add(0, torch.from_numpy(idx), ts, alpha=-2.0)
    assert_close(out, tout)
    (out ** 2).sum().backward()
    (tout ** 2).sum().backward()
    assert_close(a.grad, ta.grad)
    assert_close(s.grad, ts.grad)
    v = tx.tensor(1.5, requires_grad=True)
    filled = tx.tensor(x).index_fill(1, tx.tensor([-1, 2, 0]), v)
    assert filled[:, 2].tolist() == [1.5] * 4
    (filled * 2).sum().backward()
    assert v.grad.item() == pytest.approx(16.0)  # 2 distinct columns x 4 rows x 2


@pytest.mark.parametrize("name,args", [
    ("scatter_", (0, np.array([[2, 0, 1]]), "src")), ("scatter_add_", (0, np.array([[2, 2, 1]]),
                                                                     "src")),
    ("index_add_", (0, np.array([2]), "src")), ("index_copy_", (0, np.array([1]), "src")),
    ("index_fill_", (1, np.array([0, 2]), -3.0)),
    ("masked_fill_", ("mask", 4.0)), ("masked_scatter_", ("mask", "src")),
    ("index_put_", ((np.array([0, 2]), np.array([1, 1])), "vals", True)),
    ("scatter_reduce_", (0, np.array([[2, 0, 1]]), "src", "amax")),
])
def test_inplace_variants_match_torch_with_autograd(name, args):
    torch = _torch()
    x = RNG.standard_normal((3, 3))
    src = RNG.standard_normal((1, 3))
    mask = np.array([[True, False, True], [False, False, True], [True, True, False]])
    vals = RNG.standard_normal((2,))

    def conv(a, lib):
        mk = (lambda v, rg=False: tx.tensor(v, requires_grad=rg)) if lib == "tx" else \
            (lambda v, rg=False: torch.tensor(v, requires_grad=rg))
        if isinstance(a, str):
            return {"src": srcs[lib], "mask": mk(mask), "vals": valt[lib]}.get(a, a)
        if isinstance(a, tuple):
            return tuple(conv(e, lib) for e in a)
        return mk(a) if isinstance(a, np.ndarray) else a

    srcs = {"tx": tx.tensor(src, requires_grad=True),
            "t": torch.tensor(src, requires_grad=True)}
    valt = {"tx": tx.tensor(vals, requires_grad=True),
            "t": torch.tensor(vals, requires_grad=True)}
    a, ta = tx.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    b, tb = a * 1.0, ta * 1.0
    if name == "masked_scatter_":
        srcs = {"tx": tx.tensor(RNG.standard_normal(5), requires_grad=True)}
        srcs["t"] = torch.tensor(srcs["tx"].detach().numpy(), requires_grad=True)
    out = getattr(b, name)(*conv(args, "tx"))
    tout = getattr(tb, name)(*conv(args, "t"))
    assert out is b
    assert_close(b.detach(), tb.detach())
    (b * b).sum().backward()
    (tb * tb).sum().backward()
    assert_close(a.grad, ta.grad)
    used = {a for a in args if isinstance(a, str)}
    for key, pair in (("src", srcs), ("vals", valt)):
        if key in used:
            assert_close(pair["tx"].grad, pair["t"].grad, what=f"grad of {key}")
    assert tout is tb


def test_masked_fill_value_tensor_gradient_and_broadcast():
    torch = _torch()
    x = RNG.standard_normal((2, 3))
    mask = np.array([True, False, True])
    v, tv = tx.tensor(0.5, requires_grad=True), torch.tensor(0.5, requires_grad=True)
    out = tx.tensor(x).masked_fill(tx.tensor(mask), v)
    tout = torch.tensor(x).masked_fill(torch.from_numpy(mask), tv)
    assert_close(out, tout)
    (out * 3).sum().backward()
    (tout * 3).sum().backward()
    assert_close(v.grad, tv.grad)


def test_index_put_accumulate_duplicates_and_masks():
    torch = _torch()
    x = RNG.standard_normal((4, 5))
    rows, cols = np.array([0, 0, 3, 0]), np.array([1, 1, 2, 1])
    vals = RNG.standard_normal(4)
    got = tx.tensor(x).index_put((tx.tensor(rows), tx.tensor(cols)), tx.tensor(vals), True)
    want = torch.tensor(x).index_put((torch.from_numpy(rows), torch.from_numpy(cols)),
                                     torch.tensor(vals), True)
    assert_close(got, want)
    m = x > 0
    got = tx.tensor(x).index_put((tx.tensor(m),), tx.tensor(2.0, dtype=tx.float64), True)
    assert_close(got, torch.tensor(x).index_put((torch.from_numpy(m),),
                                                torch.tensor(2.0, dtype=torch.float64), True))
    got = tx.tensor(x).index_put((tx.tensor(1),), tx.tensor(1.0, dtype=tx.float64), True)
    want = x.copy()
    want[1] += 1.0
    assert_close(got, want)


def test_take_and_take_along_dim():
    torch = _torch()
    x = RNG.standard_normal((3, 4))
    order = np.argsort(x, axis=1)
    got = tx.take_along_dim(tx.tensor(x), tx.tensor(order), dim=1)
    assert_close(got, np.sort(x, axis=1))
    i = np.array([[-1, 0], [11, 5]])
    assert_close(tx.take(tx.tensor(x), tx.tensor(i)), torch.take(torch.tensor(x),
                                                                torch.from_numpy(i)))


def test_nonzero_as_tuple_and_argwhere():
    torch = _torch()
    x = np.array([[0.0, 1.5, 0.0], [2.0, 0.0, -1.0]])
    t = torch.tensor(x)
    for ours, theirs in zip(tx.tensor(x).nonzero(as_tuple=True), t.nonzero(as_tuple=True)):
        assert ours.tolist() == theirs.tolist() and ours.dtype == tx.int64
    assert tx.argwhere(tx.tensor(x)).tolist() == torch.argwhere(t).tolist()
    for v in (0.0, 3.0):
        assert tuple(tx.tensor(v).nonzero().shape) == tuple(torch.tensor(v).nonzero().shape)
        assert [o.tolist() for o in tx.tensor(v).nonzero(as_tuple=True)] == \
            [o.tolist() for o in torch.tensor(v).nonzero(as_tuple=True)]
    assert tx.where(tx.tensor(x) > 0)[1].tolist() == [1, 0]


# -- argument errors of the indexing ops -----------------------------------------------------------
A = tx.zeros(3, 4)
I2 = tx.tensor([[0, 1], [2, 0]])


@pytest.mark.parametrize("fn,exc,msg", [
    (lambda: A.gather(0, I2.to(tx.int16)), RuntimeError,
     "Expected dtype int32 or int64 for index"),
    (lambda: A.gather(0, tx.zeros(2, 5, dtype=tx.int64)), RuntimeError,
     r"Size does not match at dimension 1 expected index \[2, 5\] to be no larger than self "
     r"\[3, 4\] apart from dimension 0"),
    (lambda: A.gather(0, tx.zeros(2, dtype=tx.int64)), RuntimeError,
     "Index tensor must have the same number of dimensions as input tensor"),
    (lambda: A.gather(0, tx.full((2, 2), 5)), IndexError,
     "index 5 is out of bounds for dimension 0 with size 3"),
    (lambda: A.gather(0, tx.full((2, 2), -1)), IndexError, "index -1 is out of bounds"),
    (lambda: A.gather(2, I2), IndexError, r"gather\(\): dimension out of range"),
    (lambda: A.scatter(0, I2, tx.zeros(2, 2, dtype=tx.float64)), RuntimeError,
     r"Expected self.dtype to be equal to src.dtype"),
    (lambda: A.scatter(0, I2, tx.zeros(1, 2)), RuntimeError,
     r"to be no larger size than src \[1, 2\]"),
    (lambda: A.scatter(0, I2), TypeError, "missing argument 'src'"),
    (lambda: A.scatter(0, I2, 1.0, reduce="max"), RuntimeError,
     "reduce argument must be either add or multiply"),
    (lambda: A.scatter_reduce(0, I2, tx.zeros(2, 2), "foo"), RuntimeError,
     "reduce argument must be either sum, prod, mean, amax or amin, got foo"),
    (lambda: A.index_select(0, tx.tensor([[0]])), IndexError, "Index is supposed to be a vector"),
    (lambda: A.index_select(0, tx.tensor([1.0])), RuntimeError,
     "Expected dtype int32 or int64 for index"),
    (lambda: A.index_select(0, tx.tensor([7])), IndexError,
     "index 7 is out of bounds for dimension 0 with size 3"),
    (lambda: A.index_add(0, tx.tensor([0, 1]), tx.zeros(3, 4)), RuntimeError,
     r"Number of indices \(2\) should be equal to source.size\(dim\): \(3\)"),
    (lambda: A.index_add(0, tx.tensor([0, 1]), tx.zeros(2, 5)), RuntimeError,
     "source tensor shape must match self tensor shape, excluding the specified dimension"),
    (lambda: A.index_add(0, tx.tensor([0]), tx.zeros(1, 4, dtype=tx.float64)), RuntimeError,
     r"self \(float32\) and source \(float64\) must have the same scalar type"),
    (lambda: A.index_copy(0, tx.tensor([-1]), tx.zeros(1, 4)), IndexError,
     "index -1 is out of bounds for dimension 0 with size 3"),
    (lambda: A.index_fill(0, tx.tensor([0]), tx.zeros(2)), RuntimeError,
     "only supports a 0-dimensional value tensor, but got tensor with 1 dimension"),
    (lambda: A.masked_fill(tx.ones(3, 4), 1.0), RuntimeError,
     "only supports boolean masks, but got mask with dtype float32"),
    (lambda: A.masked_fill(A > 0, tx.ones(2)), RuntimeError,
     "only supports a 0-dimensional value tensor"),
    (lambda: A.masked_scatter(A == 0, tx.ones(2)), RuntimeError,
     r"Number of elements of source \(2\) < number of ones in mask \(12\)"),
    (lambda: A.masked_scatter(A == 0, tx.ones(12, dtype=tx.float64)), RuntimeError,
     "expected self and source to have same dtypes"),
    (lambda: A.masked_select(tx.ones(3, 4)), RuntimeError, "expected BoolTensor for mask"),
    (lambda: A.take(tx.tensor([12])), IndexError,
     "out of range: tried to access index 12 on a tensor of 12 elements"),
    (lambda: A.take_along_dim(tx.tensor([1]), dim=0), RuntimeError,
     "input and indices should have the same number of dimensions, but got 2 dimensions for "
     "input, and 1 dimensions for indices"),
    (lambda: A.take_along_dim(tx.tensor([[1], [0]]), dim=1), RuntimeError,
     r"The size of tensor a \(3\) must match the size of tensor b \(2\) at non-singleton "
     "dimension 0"),
    (lambda: A.index_put((tx.tensor([0, 1]),), tx.ones(3, 4), True), RuntimeError,
     r"shape mismatch: value tensor of shape \[3, 4\] cannot be broadcast to indexing result "
     r"of shape \[2, 4\]"),
    (lambda: A.index_put((tx.tensor([0]),), tx.ones(1, 4, dtype=tx.float64)), RuntimeError,
     "Index put requires the source and destination dtypes match"),
    (lambda: A.index_put(tx.tensor([0]), tx.ones(4)), TypeError,
     "argument 'indices' must be a tuple of Tensors"),
    (lambda: A.gather(0, [[0]]), TypeError, "argument 'index' must be a Tensor"),
])
def test_indexing_op_errors(fn, exc, msg):
    with pytest.raises(exc, match=msg):
        fn()
