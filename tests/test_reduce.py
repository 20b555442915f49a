"""Reductions, scans and order statistics beyond the op matrix: argument errors, result dtypes,
keepdim shapes, NaN handling, tie-breaking, gradients at zeros and ties, stability, and a
property test of sum/amax over random dims against NumPy."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorix as tx
from tensorix.testing import assert_close, gradcheck, gradgradcheck

NAN = float("nan")


def _t(data, dtype=tx.float64, rg=False):
    return tx.tensor(np.asarray(data, dtype=np.float64), dtype=dtype, requires_grad=rg)


def _torch():
    return pytest.importorskip("torch")


# -- errors ------------------------------------------------------------------------------------
@pytest.mark.parametrize("fn", [
    lambda x: tx.sum(x, 2), lambda x: tx.max(x, 2), lambda x: tx.amax(x, (0, -3)),
    lambda x: tx.argmax(x, 5), lambda x: tx.cumsum(x, 2), lambda x: tx.sort(x, -3),
    lambda x: tx.median(x, 2), lambda x: tx.var(x, 2), lambda x: tx.topk(x, 1, dim=3),
    lambda x: tx.logsumexp(x, 2), lambda x: tx.prod(x, -3),
])
def test_bad_dim_is_an_index_error(fn):
    with pytest.raises(IndexError, match=r"dimension out of range \(expected to be in range of "
                                         r"\[-2, 1\]"):
        fn(tx.ones(2, 3))


def test_repeated_dim():
    with pytest.raises(RuntimeError, match=r"amax\(\): dim \(1, -1\) appears multiple times"):
        tx.amax(tx.ones(2, 3), (1, -1))


@pytest.mark.parametrize("op", ["max", "min", "amax", "amin"])
def test_extreme_of_empty_needs_a_dim(op):
    with pytest.raises(RuntimeError, match=rf"{op}\(\): Expected reduction dim to be specified "
                                           r"for input.numel\(\) == 0"):
        getattr(tx, op)(tx.zeros(0))
    with pytest.raises(IndexError, match=rf"{op}\(\): Expected reduction dim 0 to have "
                                         "non-zero size"):
        getattr(tx, op)(tx.zeros(0, 3), 0)
    out = getattr(tx, op)(tx.zeros(0, 3), 1)  # reducing a non-empty dim of an empty tensor
    out = out.values if isinstance(out, tuple) else out
    assert tuple(out.shape) == (0,)


def test_arg_and_order_statistics_of_empty():
    with pytest.raises(IndexError, match=r"argmax\(\): Expected reduction dim to be specified"):
        tx.argmax(tx.zeros(0))
    with pytest.raises(IndexError, match=r"argmin\(\): Expected reduction dim 0 to have"):
        tx.argmin(tx.zeros(0, 2), 0)
    with pytest.raises(IndexError, match=r"mode\(\): Expected reduction dim 0 to have"):
        tx.mode(tx.zeros(0), 0)
    with pytest.raises(IndexError, match=r"median\(\): Expected reduction dim 1 to have"):
        tx.median(tx.zeros(2, 0), 1)
    with pytest.raises(RuntimeError, match=r"aminmax\(\): cannot compute aminmax over an empty"):
        tx.aminmax(tx.zeros(0))
    assert math.isnan(tx.median(tx.zeros(0)).item())  # like torch: NaN, not an error


def test_empty_sums_and_products_are_identities():
    assert tx.sum(tx.zeros(0)).item() == 0
    assert tx.prod(tx.zeros(0)).item() == 1
    assert tx.logsumexp(tx.zeros(0), 0).item() == -math.inf
    assert math.isnan(tx.mean(tx.zeros(0)).item())


def test_dtype_errors():
    ints = tx.tensor([1, 2, 3])
    with pytest.raises(RuntimeError, match=r"mean\(\): could not infer output dtype.*Got: int64"):
        tx.mean(ints)
    with pytest.raises(RuntimeError, match=r"var\(\): std and var only support floating point"):
        tx.var(ints)
    with pytest.raises(RuntimeError, match=r"std\(\): std and var only support floating point"):
        ints.std()
    with pytest.raises(RuntimeError, match=r"norm\(\): expected a floating point or complex "
                                           "input, got int64"):
        tx.norm(ints)
    with pytest.raises(RuntimeError, match=r"logcumsumexp\(\): expected a floating point"):
        tx.logcumsumexp(ints, 0)
    with pytest.raises(RuntimeError, match=r"nanmean\(\): expected input to have floating"):
        tx.nanmean(ints)
    with pytest.raises(RuntimeError, match=r"quantile\(\) input tensor must be either float "
                                           "or double dtype"):
        tx.quantile(ints, 0.5)


def test_argument_errors():
    x = tx.ones(2, 3)
    with pytest.raises(TypeError, match=r"var\(\): pass either 'unbiased' or 'correction'"):
        tx.var(x, 1, True, correction=0)
    with pytest.raises(ValueError, match=r"norm\(\): p must be a number or 'fro', got 'nuc'"):
        tx.norm(x, "nuc")
    with pytest.raises(RuntimeError, match=r"topk\(\): selected index k out of range"):
        tx.topk(x, 4)
    with pytest.raises(RuntimeError, match=r"kthvalue\(\): selected number k out of range for "
                                           "dimension 1"):
        tx.kthvalue(x, 0)
    with pytest.raises(TypeError, match=r"sum\(\): argument 'input' must be a Tensor, not list"):
        tx.sum([1, 2])


def test_quantile_errors():
    x = _t([1.0, 2.0, 3.0], tx.float32)
    with pytest.raises(RuntimeError, match=r"quantile\(\) q must be in the range \[0, 1\] but "
                                           "got 1.5"):
        tx.quantile(x, 1.5)
    with pytest.raises(RuntimeError, match=r"quantile\(\) q values must be in the range"):
        tx.quantile(x, _t([0.5, -0.1], tx.float32))
    with pytest.raises(RuntimeError, match=r"quantile\(\) q tensor must be same dtype"):
        tx.quantile(x, _t([0.5]))
    with pytest.raises(RuntimeError, match=r"quantile\(\) q must be a scalar or 1D tensor"):
        tx.quantile(x, _t([[0.5]], tx.float32))
    with pytest.raises(RuntimeError, match=r"nanquantile\(\) interpolation must be one of "
                                           "linear, lower, higher, midpoint or nearest, but "
                                           "got cubic"):
        tx.nanquantile(x, 0.5, interpolation="cubic")
    with pytest.raises(RuntimeError, match=r"quantile\(\) input tensor must be non-empty"):
        tx.quantile(tx.zeros(0), 0.5)


def test_search_errors():
    with pytest.raises(RuntimeError, match=r"searchsorted\(\): side and right can't be set to "
                                           "opposites"):
        tx.searchsorted(tx.tensor([1, 2]), tx.tensor([1]), right=True, side="left")
    with pytest.raises(RuntimeError, match=r"searchsorted\(\): boundaries tensor should be 1 "
                                           r"dimension or the first N-1 dimensions"):
        tx.searchsorted(tx.ones(2, 3), tx.ones(3, 1))
    with pytest.raises(RuntimeError, match=r"bucketize\(\): boundaries tensor must be 1 "
                                           r"dimension, but got dim\(2\)"):
        tx.bucketize(tx.ones(3), tx.ones(2, 2))


# -- result dtypes -----------------------------------------------------------------------------
@pytest.mark.parametrize("fn,src,want", [
    (lambda x: tx.sum(x), tx.int32, tx.int64),
    (lambda x: tx.sum(x), tx.bool, tx.int64),
    (lambda x: tx.sum(x, dtype=tx.float64), tx.int32, tx.float64),
    (lambda x: tx.prod(x), tx.int8, tx.int64),
    (lambda x: tx.cumsum(x, 0), tx.bool, tx.int64),
    (lambda x: tx.cumprod(x, 0), tx.int8, tx.int64),
    (lambda x: tx.mean(x, dtype=tx.float64), tx.int64, tx.float64),
    (lambda x: tx.all(x), tx.uint8, tx.uint8),
    (lambda x: tx.any(x, 0), tx.float32, tx.bool),
    (lambda x: tx.argmax(x), tx.float32, tx.int64),
    (lambda x: tx.max(x, 0).indices, tx.int32, tx.int64),
    (lambda x: tx.max(x, 0).values, tx.int32, tx.int32),
    (lambda x: tx.count_nonzero(x), tx.float32, tx.int64),
    (lambda x: tx.nansum(x), tx.int16, tx.int64),
    (lambda x: tx.logsumexp(x, 0), tx.int64, tx.float32),
    (lambda x: tx.sort(x).values, tx.int16, tx.int16),
    (lambda x: tx.var(x), tx.bfloat16, tx.bfloat16),
    (lambda x: tx.norm(x), tx.float16, tx.float16),
    (lambda x: tx.searchsorted(x, x, out_int32=True), tx.int64, tx.int32),
])
def test_result_dtypes(fn, src, want):
    x = tx.tensor([1, 2, 0, 3]).to(src)
    assert fn(x).dtype is want


def test_low_precision_accumulates_in_float32():
    ones = tx.ones(1000, dtype=tx.bfloat16)
    assert tx.sum(ones).item() == 1000  # a bf16 running sum would stall at 256
    assert tx.cumsum(ones, 0)[-1].item() == 1000
    assert tx.mean(ones).item() == 1
    x = tx.tensor([1.0, 1.0 + 2 ** -7, 3.0], dtype=tx.bfloat16)
    assert tx.amax(x).dtype is tx.bfloat16 and tx.amax(x).item() == 3.0


# -- keepdim shapes -------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["sum", "mean", "amax", "amin", "nansum", "nanmean", "var",
                                  "std", "logsumexp", "norm", "all", "any"])
@pytest.mark.parametrize("dim", [0, -1, (0, 2), None])
@pytest.mark.parametrize("keepdim", [False, True])
def test_keepdim_shapes(name, dim, keepdim):
    x = tx.ones(2, 3, 4)
    if name == "norm":
        out = tx.norm(x, 2, dim, keepdim)
    elif name in ("var", "std"):  # their third positional is the legacy 'unbiased'
        out = getattr(tx, name)(x, dim, keepdim=keepdim)
    else:
        out = getattr(tx, name)(x, dim, keepdim)
    want = np.sum(np.ones((2, 3, 4)), axis=dim, keepdims=keepdim).shape
    assert tuple(out.shape) == want


@pytest.mark.parametrize("name", ["max", "min", "median", "nanmedian", "mode", "kthvalue"])
def test_keepdim_shapes_of_value_index_pairs(name):
    x = tx.tensor(np.arange(24.0).reshape(2, 3, 4))
    args = (1,) if name == "kthvalue" else ()
    kw = {"dim": 1}
    for keepdim, shape in [(False, (2, 4)), (True, (2, 1, 4))]:
        out = getattr(tx, name)(x, *args, keepdim=keepdim, **kw)
        assert tuple(out.values.shape) == shape and tuple(out.indices.shape) == shape
        values, indices = out  # plain tuple unpacking works too
        assert values is out[0] and indices is out.indices


def test_zero_dim_inputs():
    s = _t(3.5)
    v, i = tx.max(s, 0)
    assert v.item() == 3.5 and i.item() == 0 and i.ndim == 0
    assert tx.sort(s).values.item() == 3.5
    assert tx.cumsum(s, 0).item() == 3.5 and tx.cumsum(s, 0).ndim == 0
    assert tx.argmax(s).item() == 0
    assert tx.prod(s, 0).item() == 3.5


def test_empty_dim_list_reduces_everything_like_torch():
    x = tx.ones(2, 3)
    for name in ("sum", "mean", "var", "nansum", "amax", "norm", "count_nonzero"):
        assert getattr(tx, name)(x, dim=[]).ndim == 0, name
    assert tx.sum(x, dim=()).item() == 6


def test_argmax_keepdim_without_dim():
    x = tx.tensor([[1.0, 9.0], [3.0, 4.0]])
    out = tx.argmax(x, keepdim=True)
    assert tuple(out.shape) == (1, 1) and out.item() == 1


def test_quantile_shapes():
    x = tx.ones(3, 4)
    q = tx.tensor([0.2, 0.5])
    assert tuple(tx.quantile(x, q, 1).shape) == (2, 3)
    assert tuple(tx.quantile(x, q, 1, keepdim=True).shape) == (2, 3, 1)
    assert tuple(tx.quantile(x, q, keepdim=True).shape) == (2, 1, 1)
    assert tuple(tx.quantile(x, 0.3, keepdim=True).shape) == (1, 1)
    assert tuple(tx.quantile(x, tx.tensor(0.3)).shape) == ()


# -- NaN handling and ties -----------------------------------------------------------------
def test_nan_propagates_through_max_and_argmax():
    x = _t([[1.0, NAN, 3.0], [2.0, 5.0, 0.0]])
    v, i = x.max(1)
    assert math.isnan(v[0].item()) and i.tolist() == [1, 1]
    assert math.isnan(tx.amax(x).item()) and math.isnan(tx.min(x).item())
    assert tx.argmin(x, 1).tolist() == [1, 2]  # NaN counts as the extreme for both


def test_nan_sorts_last_and_first_when_descending():
    x = _t([1.0, NAN, 0.0])
    assert tx.sort(x).indices.tolist() == [2, 0, 1]
    assert tx.sort(x, descending=True).indices.tolist() == [1, 0, 2]


def test_nan_in_order_statistics():
    x = _t([[1.0, NAN, 3.0, NAN], [4.0, 2.0, 3.0, 1.0]])
    v, i = tx.median(x, 1)
    assert math.isnan(v[0].item()) and i[0].item() == 1  # the first NaN, as torch
    assert v[1].item() == 2.0 and i[1].item() == 1
    v, i = tx.nanmedian(x, 1)
    assert v.tolist() == [1.0, 2.0] and i.tolist() == [0, 1]
    assert math.isnan(tx.median(x).item()) and tx.nanmedian(x).item() == 2.0
    v, i = tx.nanmedian(_t([NAN, NAN]), 0)
    assert math.isnan(v.item()) and i.item() == 0
    q = tx.quantile(x.float(), 0.5, 1)
    assert math.isnan(q[0].item()) and q[1].item() == 2.5
    assert tx.nanquantile(x.float(), 0.5, 1).tolist() == [2.0, 2.5]
    assert math.isnan(tx.nanquantile(_t([NAN, NAN]), 0.5).item())


def test_nan_aware_sums():
    x = _t([[1.0, NAN], [NAN, NAN]], rg=True)
    assert tx.nansum(x).item() == 1.0
    m = tx.nanmean(x, 1)
    assert m[0].item() == 1.0 and math.isnan(m[1].item())
    tx.nansum(x).backward()
    assert x.grad.tolist() == [[1.0, 0.0], [0.0, 0.0]]


def test_cummax_nan_and_ties_like_torch():
    x = _t([1.0, 3.0, 3.0, NAN, 2.0, NAN, 5.0])
    v, i = tx.cummax(x, 0)
    assert i.tolist() == [0, 1, 2, 3, 3, 5, 5]  # latest index on ties and NaNs
    assert np.isnan(v.numpy()[3:]).all()
    assert tx.cummin(_t([3.0, 1.0, 1.0, 2.0]), 0).indices.tolist() == [0, 1, 2, 2]


def test_tie_breaking():
    x = tx.tensor([2, 1, 2, 1])
    assert tx.argsort(x, descending=True).tolist() == [0, 2, 1, 3]  # stable both ways
    assert tx.argsort(x).tolist() == [1, 3, 0, 2]
    assert tx.argmax(x).item() == 0 and tx.argmin(x).item() == 1  # first occurrence
    assert tx.topk(tx.tensor([1.0, 2.0, 2.0, 1.0]), 2).indices.tolist() == [1, 2]
    v, i = tx.mode(tx.tensor([[1.0, 2.0, 2.0, 1.0, 3.0, 3.0]]), 1)
    assert v.tolist() == [1.0] and i.tolist() == [3]  # smallest mode, last occurrence


def test_unique_and_consecutive():
    x = tx.tensor([[3, 1], [3, 2]])
    u, inv, cnt = tx.unique(x, return_inverse=True, return_counts=True)
    assert u.tolist() == [1, 2, 3] and inv.tolist() == [[2, 0], [2, 1]]
    assert cnt.tolist() == [1, 1, 2]
    nans = tx.unique(_t([1.0, NAN, NAN]))
    assert nans.shape[0] == 3  # NaNs are all distinct, as in torch
    rows = tx.unique(tx.tensor([[1, 2], [0, 5], [1, 2]]), dim=0)
    assert rows.tolist() == [[0, 5], [1, 2]]
    out, inv, cnt = tx.unique_consecutive(tx.tensor([1, 1, 2, 2, 3, 1]), return_inverse=True,
                                          return_counts=True)
    assert out.tolist() == [1, 2, 3, 1] and inv.tolist() == [0, 0, 1, 1, 2, 3]
    assert cnt.tolist() == [2, 2, 1, 1]


def test_searchsorted_and_bucketize():
    seq = tx.tensor([1, 3, 5])
    assert tx.searchsorted(seq, tx.tensor([3, 4])).tolist() == [1, 2]
    assert tx.searchsorted(seq, tx.tensor([3, 4]), right=True).tolist() == [2, 2]
    assert tx.searchsorted(seq, 3).item() == 1
    assert tx.bucketize(tx.tensor([3, 4]), seq).tolist() == [1, 2]
    assert tx.bucketize(tx.tensor([3, 4]), seq, right=True).tolist() == [2, 2]
    s = tx.tensor([[1, 3, 5], [2, 4, 6]])
    assert tx.searchsorted(s, tx.tensor([[3], [3]])).tolist() == [[1], [1]]
    sorter = tx.tensor([1, 2, 0])  # argsort of [5, 1, 3]
    assert tx.searchsorted(tx.tensor([5, 1, 3]), tx.tensor([4]), sorter=sorter).tolist() == [2]


def test_variance_with_no_degrees_of_freedom_warns_and_is_nan():
    with pytest.warns(UserWarning, match=r"var\(\): degrees of freedom is <= 0"):
        v = tx.var(_t([2.0]))
    assert math.isnan(v.item())
    assert tx.var(_t([2.0]), correction=0).item() == 0
    assert tx.var(_t([1.0, 2.0, 3.0, 4.0]), unbiased=False).item() == pytest.approx(1.25)
    assert tx.var(_t([1.0, 2.0, 3.0, 4.0]), False).item() == pytest.approx(1.25)  # legacy


# -- gradients at zeros and ties, against torch --------------------------------------------
def _both(fn, data, torch_fn=None, seed_shape=None):
    """Gradient of fn in tensorix and torch for the same input and seed."""
    torch = _torch()
    x = _t(data, rg=True)
    tx_out = fn(x)
    tt = torch.tensor(np.asarray(data, dtype=np.float64), requires_grad=True)
    t_out = (torch_fn or fn)(tt)
    seed = np.linspace(0.5, 1.5, int(np.prod(tuple(tx_out.shape))) or 1).reshape(
        tuple(tx_out.shape))
    (gx,) = tx.autograd.grad(tx_out, [x], tx.tensor(seed))
    (gt,) = torch.autograd.grad(t_out, [tt], torch.tensor(seed))
    return gx, gt


@pytest.mark.parametrize("data", [[[2.0, 0.0, 3.0], [1.0, 2.0, 4.0]],
                                  [[0.0, 0.0, 3.0], [1.0, 0.0, 4.0]]])
@pytest.mark.parametrize("dim", [None, 0, 1])
def test_prod_gradient_with_zeros_matches_torch(data, dim):
    def fn(x):
        return x.prod() if dim is None else x.prod(dim)

    gx, gt = _both(fn, data)
    assert_close(gx, gt)


def test_prod_and_cumprod_second_order_with_zeros():
    x = _t([[2.0, 0.0, 3.0, 1.5], [1.0, 2.0, 0.0, 0.0]], rg=True)
    gradgradcheck(lambda a: a.prod(1), [x], name="prod with zeros")
    gradgradcheck(lambda a: a.prod(), [x], name="prod() with zeros")
    gradgradcheck(lambda a: a.cumprod(1), [x], name="cumprod with zeros")


def test_cumprod_gradient_with_zeros_matches_torch():
    gx, gt = _both(lambda x: x.cumprod(1), [[2.0, 0.0, 3.0, 5.0], [0.0, 2.0, 0.0, 4.0]])
    assert_close(gx, gt)


def test_amax_splits_the_gradient_evenly_among_ties():
    gx, gt = _both(lambda x: x.amax(1), [[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])
    assert_close(gx, gt)
    assert_close(gx, [[0, 0.25, 0.25], [0.5, 0.5, 0.5]])
    gx, gt = _both(lambda x: x.max(), [[1.0, 3.0, 3.0], [2.0, 3.0, 0.0]])
    assert_close(gx, gt)
    gx, gt = _both(lambda x: x.median(), [1.0, 2.0, 2.0, 5.0])
    assert_close(gx, gt)


def test_max_with_dim_sends_the_gradient_to_its_index():
    gx, gt = _both(lambda x: x.max(1).values, [[1.0, 3.0, 3.0], [2.0, 2.0, 1.0]])
    assert_close(gx, gt)


def test_norm_gradient_at_zero_is_zero_like_torch():
    for p in (2, 3, 1.5, 0.5, 1, float("inf")):
        gx, gt = _both(lambda x, p=p: x.norm(p), [0.0, 0.0, 0.0])
        assert_close(gx, gt, what=f"p={p} all zeros")
        gx, gt = _both(lambda x, p=p: x.norm(p), [0.0, 3.0, -4.0])
        assert_close(gx, gt, what=f"p={p}")


def test_quantile_gradients_with_nan_rows_match_torch():
    data = [[NAN, 1.0, 4.0], [NAN, NAN, NAN], [2.0, 3.0, NAN], [0.5, 1.0, 2.0]]
    gx, gt = _both(lambda x: x.nanquantile(0.7, 1), data)
    assert_close(gx, gt)
    gx, gt = _both(lambda x: x.quantile(0.3, 1), data)  # a NaN row reads its last NaN
    assert_close(gx, gt)


def test_std_gradient_matches_torch():
    gx, gt = _both(lambda x: x.std(1), [[1.0, 2.0, 4.0], [0.5, 0.25, 3.0]])
    assert_close(gx, gt)


def test_selecting_ops_have_second_derivatives():
    rng = np.random.default_rng(0)
    x = _t(rng.standard_normal((3, 5)), rg=True)
    for name, fn in [("sort", lambda a: a.sort(1).values * a.sort(1).values),
                     ("topk", lambda a: a.topk(2).values ** 2),
                     ("cummax", lambda a: a.cummax(1).values ** 2),
                     ("median", lambda a: a.median(0).values ** 3),
                     ("quantile", lambda a: a.quantile(0.3, 1) ** 2)]:
        gradgradcheck(fn, [x], name=name)


# -- stability -----------------------------------------------------------------------------
def test_logsumexp_is_stable():
    x = _t([[1000.0, 1000.0], [-1000.0, -1000.0], [-math.inf, -math.inf]])
    out = tx.logsumexp(x, 1).numpy()
    assert_close(out[:2], [1000 + math.log(2), -1000 + math.log(2)])
    assert out[2] == -math.inf
    assert tx.logsumexp(_t([math.inf, 0.0]), 0).item() == math.inf


def test_logcumsumexp_is_stable():
    x = _t([-1000.0, 0.0, 1000.0], rg=True)
    out = tx.logcumsumexp(x, 0)
    assert_close(out, [-1000.0, 0.0, 1000.0])
    out.sum().backward()
    assert np.isfinite(x.grad.numpy()).all()
    torch = _torch()
    t = torch.tensor([-1000.0, 0.0, 1000.0], dtype=torch.float64, requires_grad=True)
    torch.logcumsumexp(t, 0).sum().backward()
    assert_close(x.grad, t.grad)


# -- methods, in-place ------------------------------------------------------------------------
def test_tensor_methods():
    x = tx.tensor([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])
    assert x.max(dim=1).indices.tolist() == [0, 1]
    assert x.sort().values.tolist() == [[1.0, 2.0, 3.0], [0.0, 4.0, 5.0]]
    assert x.topk(2).values.tolist() == [[3.0, 2.0], [5.0, 4.0]]
    assert x.argsort(dim=0).tolist() == [[1, 0, 0], [0, 1, 1]]
    assert x.amax(0).tolist() == [3.0, 5.0, 4.0] and x.argmin().item() == 3
    assert x.prod(1).tolist() == [6.0, 0.0] and x.cumsum(1).tolist()[1] == [0.0, 5.0, 9.0]
    assert x.kthvalue(2, 1).values.tolist() == [2.0, 4.0]
    assert x.count_nonzero().item() == 5 and bool(x.any()) and not bool(x.all())
    mn, mx = x.aminmax()
    assert (mn.item(), mx.item()) == (0.0, 5.0)


def test_inplace_cumsum():
    x = tx.tensor([1.0, 2.0, 3.0])
    assert x.cumsum_(0) is x and x.tolist() == [1.0, 3.0, 6.0]


def test_binary_max_is_elementwise_maximum():
    a, b = tx.tensor([1.0, 5.0]), tx.tensor([3.0, 2.0])
    if not hasattr(tx, "maximum"):
        with pytest.raises(NotImplementedError, match=r"max\(input, other\): the elementwise "
                                                      r"maximum\(\) is not available"):
            tx.max(a, b)
        return
    assert tx.max(a, b).tolist() == [3.0, 5.0] and tx.min(a, b).tolist() == [1.0, 2.0]


# -- property test -------------------------------------------------------------------------
@st.composite
def _array_and_dims(draw):
    ndim = draw(st.integers(1, 4))
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=ndim, max_size=ndim)))
    seed = draw(st.integers(0, 2 ** 31))
    dims = draw(st.one_of(st.none(), st.integers(-ndim, ndim - 1),
                          st.sets(st.integers(0, ndim - 1), min_size=1).map(tuple)))
    keepdim = draw(st.booleans())
    return np.random.default_rng(seed).standard_normal(shape), dims, keepdim


@settings(max_examples=60, deadline=None)
@given(_array_and_dims())
def test_sum_and_amax_match_numpy_over_random_dims(case):
    a, dims, keepdim = case
    x = tx.tensor(a)
    assert_close(tx.sum(x, dims, keepdim), np.sum(a, axis=dims, keepdims=keepdim))
    assert_close(tx.amax(x, dims, keepdim), np.amax(a, axis=dims, keepdims=keepdim))
    xr = tx.tensor(a, requires_grad=True)
    tx.amax(xr, dims, keepdim).sum().backward()
    # every reduced slice holds one maximum (continuous draws): its gradient is exactly 1
    assert xr.grad.numpy().sum() == pytest.approx(np.amax(a, axis=dims).size)


def test_gradcheck_of_ops_with_many_args():
    rng = np.random.default_rng(3)
    x = _t(rng.standard_normal((2, 3, 4)), rg=True)
    gradcheck(lambda a: tx.var_mean(a, (0, 2), correction=0)[0], [x], name="var_mean")
    gradcheck(lambda a: tx.logsumexp(a, (0, 1), keepdim=True), [x], name="logsumexp")
    gradcheck(lambda a: tx.norm(a, 2.5, (1, 2)), [x], name="norm p=2.5")
