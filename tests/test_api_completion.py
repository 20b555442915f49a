"""The API-completion ops beyond the registry matrix: accuracy of the special functions over
wide ranges (against mpmath and torch), their values at poles and infinities, argument errors
with their messages, and the semantics of the pointwise, structured and counting ops that the
matrix samples do not reach (ties, wrap-around, warnings, negative exponents, devices)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import tensorix as tx
from tensorix.ops import special as S
from tensorix.testing import assert_close, gradcheck, gradgradcheck


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def _t(a, dtype=tx.float64, requires_grad=False):
    return tx.tensor(np.asarray(a), dtype=dtype, requires_grad=requires_grad)


def _off_poles(x):
    return x[np.abs(x - np.round(x)) > 1e-6]


def _wide(rng):
    """Moderate values, both signs, and magnitudes from 1e-300 to 1e300."""
    return np.concatenate([rng.uniform(-30, 30, 400), 10 ** rng.uniform(-300, 300, 200),
                           -(10 ** rng.uniform(-300, 2, 100))])


def _rel_err(got, want, floor):
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    ok = np.isfinite(want)
    assert np.array_equal(np.isfinite(got), ok), "finite/infinite pattern differs"
    return np.max(np.abs(got[ok] - want[ok]) / np.maximum(np.abs(want[ok]), floor))


# -- accuracy of the float64 kernels --------------------------------------------------------------
def test_special_kernels_against_mpmath(rng):
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 30
    x = _off_poles(_wide(rng))
    x = x[np.abs(x) < 1e250]
    mp = [mpmath.mpf(float(v)) for v in x]
    lg = [float(mpmath.log(abs(mpmath.gamma(v)))) for v in mp]
    # relative accuracy, absolute near the zeros of lgamma (x = 1, 2) and digamma
    assert _rel_err(S.lgamma_kernel(x), lg, 1.0) < 1e-13
    small = np.abs(x) < 1e15
    dg = [float(mpmath.digamma(v)) for v, s in zip(mp, small) if s]
    assert _rel_err(S.digamma_kernel(x[small]), dg, 1.0) < 1e-13
    for n in (1, 2, 5):
        xs = _off_poles(np.concatenate([rng.uniform(-15, 40, 150), 10 ** rng.uniform(-4, 8, 50)]))
        want = [float(mpmath.polygamma(n, mpmath.mpf(float(v)))) for v in xs]
        assert _rel_err(S.polygamma_kernel(n, xs), want, 1e-300) < 1e-13
    xb = np.concatenate([rng.uniform(-40, 40, 200), rng.uniform(-700, 700, 50)])
    for order in (0, 1):
        want = [float(mpmath.besseli(order, mpmath.mpf(float(v)))) for v in xb]
        assert _rel_err(S.bessel_kernel(xb, order), want, 1e-300) < 1e-14


def test_incomplete_gamma_against_mpmath(rng):
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 30
    a = 10 ** rng.uniform(-1.5, 2, 150)
    x = a * rng.uniform(0.05, 3, 150)
    p = [float(mpmath.gammainc(mpmath.mpf(float(ai)), 0, mpmath.mpf(float(xi)),
                               regularized=True)) for ai, xi in zip(a, x)]
    q = [float(mpmath.gammainc(mpmath.mpf(float(ai)), mpmath.mpf(float(xi)), mpmath.inf,
                               regularized=True)) for ai, xi in zip(a, x)]
    assert _rel_err(S.igamma_kernel(a, x, False), p, 1e-300) < 1e-12
    assert _rel_err(S.igamma_kernel(a, x, True), q, 1e-300) < 1e-12


@pytest.mark.parametrize("name", ["lgamma", "digamma", "i0", "sinc"])
def test_unary_special_against_torch_wide(torch, rng, name):
    x = _off_poles(_wide(rng))
    if name == "i0":
        x = x[np.abs(x) < 700]
    got = getattr(tx, name)(_t(x)).numpy()
    want = getattr(torch, name)(torch.tensor(x)).numpy()
    assert _rel_err(got, want, 1.0) < 1e-12


@pytest.mark.parametrize("n", [0, 1, 2, 4, 7])
def test_polygamma_against_torch(torch, rng, n):
    x = _off_poles(np.concatenate([rng.uniform(-8, 20, 300), 10 ** rng.uniform(-3, 6, 100)]))
    got = tx.polygamma(n, _t(x)).numpy()
    want = torch.polygamma(n, torch.tensor(x)).numpy()
    # torch's trigamma (n = 1) is the less accurate side, by up to 5e-10 (checked against
    # mpmath above, where ours is within 1e-13)
    assert _rel_err(got, want, 1e-300) < (1e-9 if n == 1 else 1e-11)


def test_special_values_at_poles_and_infinities(torch):
    x = np.array([0.0, -0.0, -1.0, -2.0, np.inf, -np.inf, np.nan, 1e-300, 1e300, 2.6e305])
    for name in ("lgamma", "digamma"):
        got = getattr(tx, name)(_t(x)).numpy()
        want = getattr(torch, name)(torch.tensor(x)).numpy()
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=name)
        fin = np.isfinite(want)
        np.testing.assert_array_equal(got[~fin & ~np.isnan(want)], want[~fin & ~np.isnan(want)])
        np.testing.assert_allclose(got[fin], want[fin], rtol=1e-13, err_msg=name)
    # polygamma poles: +inf for odd n, -inf for even n (as torch's zeta)
    assert tx.polygamma(3, _t([0.0, -2.0])).numpy().tolist() == [math.inf, math.inf]
    assert tx.polygamma(2, _t([0.0, -1.0])).numpy().tolist() == [-math.inf, -math.inf]
    assert tx.i0(_t([710.0, -720.0, 0.0])).numpy().tolist() == [math.inf, math.inf, 1.0]


def test_igamma_edge_values_match_torch(torch):
    a = np.array([0.0, 1.0, -1.0, 1.0, 2.0, np.inf, 3.0, 0.0, np.nan, 2.0])
    x = np.array([0.0, 0.0, 1.0, -1.0, np.inf, 2.0, 0.0, 2.0, 1.0, np.nan])
    for name in ("igamma", "igammac"):
        got = getattr(tx, name)(_t(a), _t(x)).numpy()
        want = getattr(torch, name)(torch.tensor(a), torch.tensor(x)).numpy()
        np.testing.assert_array_equal(got, want, err_msg=name)


def test_special_dtypes(torch):
    ints = tx.tensor([1, 2, 3])
    for name in ("lgamma", "digamma", "i0", "sinc"):
        assert getattr(tx, name)(ints).dtype is tx.float32, name
    assert tx.polygamma(1, ints).dtype is tx.float32
    assert tx.lgamma(tx.tensor([3.0], dtype=tx.bfloat16)).dtype is tx.bfloat16
    assert tx.i0(tx.tensor([20.0], dtype=tx.float16)).isinf().all()  # 4.3e7 overflows fp16
    z = tx.tensor([0.5 + 0.25j, 0.0j])
    assert_close(tx.sinc(z), torch.sinc(torch.tensor([0.5 + 0.25j, 0.0j])))


def test_special_second_derivatives_at_special_points():
    # sinc'' at 0 is -pi^2/3; i1'(0) = 1/2 reaches i0''(0)
    x = _t([0.0, 0.7], requires_grad=True)
    gradgradcheck(tx.sinc, [x], name="sinc at 0")
    gradgradcheck(tx.i0, [x], name="i0 at 0")
    (g,) = tx.autograd.grad(tx.sinc(x).sum(), x, create_graph=True)
    (h,) = tx.autograd.grad(g.sum(), x)
    assert abs(h.numpy()[0] + math.pi ** 2 / 3) < 1e-12


def test_igamma_gradient_in_a_is_refused():
    a, x = _t([1.5], requires_grad=True), _t([2.0], requires_grad=True)
    with pytest.raises(NotImplementedError, match=r"igamma: the derivative with respect to "
                                                  r"'input'"):
        tx.igamma(a, x).sum().backward()
    gradcheck(lambda v: tx.igammac(a.detach(), v), [x], name="igammac in x")


@pytest.mark.parametrize("call,exc,match", [
    (lambda: tx.polygamma(-1, _t([1.0])), RuntimeError, r"polygamma\(\): .*negative n"),
    (lambda: tx.polygamma(1.5, _t([1.0])), TypeError, r"argument 'n' must be an int"),
    (lambda: tx.mvlgamma(_t([1.0]), 0), RuntimeError, r"p has to be greater than or equal"),
    (lambda: tx.mvlgamma(_t([1.0]), 3), RuntimeError, r"All elements must be greater than "
                                                      r"\(p-1\)/2 = 1.0"),
    (lambda: tx.mvlgamma(_t([3.0]), 2.0), TypeError, r"argument 'p' must be an int"),
    (lambda: tx.lgamma(tx.tensor([1j])), RuntimeError, r"lgamma\(\): not implemented for "
                                                       r"complex"),
    (lambda: tx.i0([1.0]), TypeError, r"i0\(\): argument 'input' must be a Tensor"),
    (lambda: tx.igamma(tx.tensor([1j]), tx.tensor([1j])), RuntimeError,
     r"igamma\(\): not implemented for complex"),
])
def test_special_argument_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


# -- misc pointwise ------------------------------------------------------------------------------
def test_ldexp_negative_and_float_exponents(torch):
    x = _t([1.5, -3.0, 0.25], requires_grad=True)
    e = tx.tensor([-3, 2, -1])
    out = tx.ldexp(x, e)
    assert_close(out, np.array([1.5, -3.0, 0.25]) * 2.0 ** np.array([-3, 2, -1]))
    out.sum().backward()
    assert_close(x.grad, 2.0 ** np.array([-3, 2, -1]))
    assert_close(tx.ldexp(tx.tensor([1.0]), tx.tensor([2.5])), torch.ldexp(
        torch.tensor([1.0]), torch.tensor([2.5])))
    assert tx.ldexp(tx.tensor([1, 2]), tx.tensor([3, 4])).dtype is tx.float32
    assert tx.ldexp(_t([1.0]), tx.tensor([200])).item() == 2.0 ** 200


def test_addcmul_addcdiv_dtypes_and_inplace(torch):
    i = tx.tensor([1, 2])
    assert tx.addcmul(i, i, tx.tensor([1, 3]), value=0.5).tolist() == [1, 2]  # as torch
    assert tx.addcmul(i, i, tx.tensor([1.0, 3.0]), value=0.5).tolist() == [1.5, 5.0]
    assert tx.addcdiv(i, tx.tensor([1.0, 2.0]), i).dtype is tx.float32
    x = tx.zeros(3)
    assert x.addcmul_(tx.ones(3), tx.full((3,), 2.0), value=3) is x
    assert x.tolist() == [6.0, 6.0, 6.0]
    with pytest.raises(RuntimeError, match=r"addcdiv\(\): Integer division with addcdiv"):
        tx.addcdiv(_t([1.0]), i, i)
    with pytest.raises(TypeError, match=r"addcmul\(\): argument 'tensor2' must be a Tensor"):
        tx.addcmul(i, i, 2)


def test_integer_and_bit_ops_errors_and_grads():
    with pytest.raises(RuntimeError, match=r"gcd\(\): \"gcd_cpu\" not implemented for "
                                           r"'float32'"):
        tx.gcd(tx.tensor([1.0]), tx.tensor([2.0]))
    with pytest.raises(RuntimeError, match=r"frexp\(\): torch.frexp\(\) only supports "
                                           r"floating-point"):
        tx.frexp(tx.tensor([1, 2]))
    with pytest.raises(RuntimeError, match=r"nextafter\(\): \"nextafter_cpu\" not implemented "
                                           r"for 'int64'"):
        tx.nextafter(tx.tensor([1]), tx.tensor([2]))
    with pytest.raises(RuntimeError, match=r"positive\(\): The `\+` operator, on a bool"):
        tx.positive(tx.tensor([True]))
    x = _t([1.0, 2.0], requires_grad=True)
    assert not tx.nextafter(x, _t([3.0, 0.0])).requires_grad
    m, e = tx.frexp(x)
    assert not m.requires_grad and e.dtype is tx.int32
    assert tx.positive(x) is x and tx.resolve_conj(x) is x and tx.resolve_neg(x) is x
    assert tx.conj_physical(x) is x
    z = tx.tensor([1 + 2j])
    assert z.conj_physical_() is z and z.tolist() == [1 - 2j]


def test_float_power_inplace():
    x = _t([2.0, 3.0])
    assert x.float_power_(2) is x and x.tolist() == [4.0, 9.0]
    with pytest.raises(RuntimeError, match=r"float_power_\(\): the base given to float_power_ "
                                           r"has dtype float32 but the operation's result "
                                           r"requires dtype Double"):
        tx.tensor([2.0]).float_power_(2)


def test_nn_method_delegates(torch):
    x = np.random.default_rng(0).standard_normal((3, 4))
    tt = torch.tensor(x)
    assert_close(_t(x).softmax(1), tt.softmax(1))
    assert_close(_t(x).log_softmax(0), tt.log_softmax(0))
    assert_close(tx.softmax(_t(x), -1, dtype=tx.float32),
                 torch.softmax(tt, -1, dtype=torch.float32), rtol=1e-6)
    assert_close(_t(x).hardshrink(0.3), tt.hardshrink(0.3))
    w = _t([0.25])
    assert_close(_t(x).prelu(w), tt.prelu(torch.tensor([0.25], dtype=torch.float64)))


# -- structured ---------------------------------------------------------------------------------
def test_scatter_ops_errors():
    x = tx.zeros(3, 4)
    with pytest.raises(RuntimeError, match=r"slice_scatter\(\): expected src to have a size "
                                           r"equal to the slice of self. src size = \[3, 3\], "
                                           r"slice size = \[3, 2\]"):
        tx.slice_scatter(x, tx.ones(3, 3), 1, 0, 2)
    with pytest.raises(RuntimeError, match=r"slice_scatter\(\): slice step must be positive"):
        tx.slice_scatter(x, tx.ones(3, 2), 1, step=0)
    with pytest.raises(IndexError, match=r"select_scatter\(\): index 3 out of range"):
        tx.select_scatter(x, tx.ones(4), 0, 3)
    with pytest.raises(IndexError, match=r"select_scatter\(\): select\(\) cannot be applied"):
        tx.select_scatter(tx.tensor(1.0), tx.tensor(2.0), 0, 0)
    with pytest.raises(RuntimeError, match=r"diagonal_scatter\(\): expected src to have a size "
                                           r"equal to the slice"):
        tx.diagonal_scatter(x, tx.ones(4))
    with pytest.raises(RuntimeError, match=r"diagonal\(\): diagonal dimensions cannot be "
                                           r"identical"):
        tx.diagonal_scatter(x, tx.ones(3), 0, 1, 1)
    with pytest.raises(RuntimeError, match=r"as_strided\(\): setStorage"):
        tx.as_strided_scatter(x, tx.ones(4), (4,), (4,))
    with pytest.raises(RuntimeError, match=r"diag\(\): Supports 1D or 2D tensors. Got 3D"):
        tx.diag(tx.zeros(2, 2, 2))
    with pytest.raises(RuntimeError, match=r"diag_embed\(\): diagonal dimensions cannot be "
                                           r"identical -1, 2"):
        tx.diag_embed(tx.zeros(2, 3), 0, -1, 2)


def test_scatter_casts_src_and_differentiates_both(torch):
    x = _t(np.arange(12.0).reshape(3, 4), requires_grad=True)
    src = tx.ones(3, 2, requires_grad=True)  # float32 into float64, as torch
    out = tx.slice_scatter(x, src, 1, 1, 3)
    assert out.dtype is tx.float64
    out.sum().backward()
    assert x.grad.numpy()[:, 1:3].sum() == 0 and x.grad.numpy()[:, [0, 3]].sum() == 6
    assert src.grad.dtype is tx.float32 and src.grad.tolist() == [[1.0, 1.0]] * 3
    assert type(out.grad_fn).__name__ == "ViewScatter"


def test_fill_diagonal_(torch):
    for shape, wrap in (((7, 3), True), ((7, 3), False), ((3, 5), True), ((3, 3, 3), False)):
        got = tx.zeros(*shape).fill_diagonal_(2.5, wrap=wrap)
        want = torch.zeros(*shape).fill_diagonal_(2.5, wrap=wrap)
        assert_close(got, want)
    x = _t(np.ones((3, 3)), requires_grad=True)
    y = x * 2
    y.fill_diagonal_(0.0)
    y.sum().backward()
    assert x.grad.tolist() == [[0, 2, 2], [2, 0, 2], [2, 2, 0]]
    with pytest.raises(RuntimeError, match=r"fill_diagonal_\(\): dimensions must larger than 1"):
        tx.zeros(3).fill_diagonal_(1)
    with pytest.raises(RuntimeError, match=r"all dimensions of input must be of equal length"):
        tx.zeros(3, 4, 3).fill_diagonal_(1)


def test_put_semantics_and_errors(torch):
    x = tx.zeros(2, 3)
    assert x.put_(tx.tensor([-1, 0]), tx.tensor([5.0, 6.0])) is x
    assert x.tolist() == [[6.0, 0, 0], [0, 0, 5.0]]
    acc = tx.zeros(4).put(tx.tensor([1, 1, 1]), tx.ones(3), accumulate=True)
    assert acc.tolist() == [0, 3, 0, 0]
    with pytest.raises(IndexError, match=r"put\(\): out of range: tried to access index 10 on "
                                         r"a tensor of 6 elements"):
        tx.zeros(6).put(tx.tensor([10]), tx.ones(1))
    with pytest.raises(RuntimeError, match=r"Expected source and index to have the same number"):
        tx.zeros(6).put(tx.tensor([1, 2]), tx.ones(1))
    with pytest.raises(RuntimeError, match=r"self and source expected to have the same dtype"):
        tx.zeros(6).put(tx.tensor([1]), _t([1.0]))
    with pytest.raises(RuntimeError, match=r"Expected a long tensor for index, but got int32"):
        tx.zeros(6).put(tx.tensor([1], dtype=tx.int32), tx.ones(1))


def test_index_reduce_ties_and_errors(torch):
    base = np.array([[1.0, 5.0], [2.0, 0.5]])
    src = np.array([[5.0, 1.0], [3.0, 5.0], [5.0, 0.0]])
    index = np.array([0, 1, 0])
    for reduce in ("amax", "amin", "prod", "mean"):
        for include_self in (True, False):
            x = _t(base, requires_grad=True)
            s = _t(src, requires_grad=True)
            xt = torch.tensor(base, requires_grad=True)
            st = torch.tensor(src, requires_grad=True)
            out = tx.index_reduce(x, 0, tx.tensor(index), s, reduce, include_self=include_self)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # torch: index_reduce is a beta API
                want = torch.index_reduce(xt, 0, torch.tensor(index), st, reduce,
                                          include_self=include_self)
            assert_close(out, want, what=reduce)
            out.sum().backward()
            want.sum().backward()
            assert_close(x.grad, xt.grad, what=f"{reduce} self grad")
            assert_close(s.grad, st.grad, what=f"{reduce} source grad")
    with pytest.raises(RuntimeError, match=r"index_reduce\(\): Expected reduce to be one of "
                                           r"prod, mean, amax or amin but got sum"):
        tx.index_reduce(tx.zeros(3), 0, tx.tensor([0]), tx.ones(1), "sum")
    with pytest.raises(RuntimeError, match=r"index_reduce\(\): Number of indices"):
        tx.index_reduce(tx.zeros(3), 0, tx.tensor([0, 1]), tx.ones(1), "prod")
    y = tx.ones(3)
    assert y.index_reduce_(0, tx.tensor([2]), tx.full((1,), 4.0), "prod") is y
    assert y.tolist() == [1.0, 1.0, 4.0]


def test_renorm_errors_and_inplace():
    with pytest.raises(RuntimeError, match=r"renorm\(\): input needs at least 2 dimensions"):
        tx.renorm(tx.zeros(3), 2, 0, 1)
    with pytest.raises(RuntimeError, match=r"renorm\(\): non-positive-norm not supported"):
        tx.renorm(tx.zeros(3, 2), 0, 0, 1)
    with pytest.raises(RuntimeError, match=r"renorm\(\): expected maxnorm to be >= 0"):
        tx.renorm(tx.zeros(3, 2), 2, 0, -1)
    x = _t([[3.0, 4.0], [0.3, 0.4]])
    assert x.renorm_(2, 0, 1.0) is x
    assert_close(x, np.array([[3.0, 4.0], [0.3, 0.4]]) / np.array([[5 + 1e-7], [1.0]]))


def test_cross_default_dim(torch):
    a = np.random.default_rng(1).standard_normal((3, 4, 3))
    b = np.random.default_rng(2).standard_normal((3, 4, 3))
    assert_close(tx.cross(_t(a), _t(b)), np.cross(a, b, axis=0))
    assert_close(_t(a).cross(_t(b), dim=2), torch.cross(torch.tensor(a), torch.tensor(b),
                                                        dim=2))
    with pytest.raises(RuntimeError, match=r"cross\(\): no dimension of size 3 in input"):
        tx.cross(tx.zeros(2, 2), tx.zeros(2, 2))


# -- stats -------------------------------------------------------------------------------------
def test_diff_errors_and_bool(torch):
    assert tx.diff(tx.tensor([True, False, False])).tolist() == [True, False]
    assert tx.diff(_t([1.0, 2.0]), n=5).shape == (0,)
    with pytest.raises(RuntimeError, match=r"diff\(\): order must be non-negative but got -1"):
        tx.diff(_t([1.0]), n=-1)
    with pytest.raises(RuntimeError, match=r"diff expects input to be at least one-dim"):
        tx.diff(_t(1.0))
    with pytest.raises(RuntimeError, match=r"diff expects prepend or append to be the same "
                                           r"dimension as input"):
        tx.diff(_t([1.0, 2.0]), prepend=tx.zeros(2, 2))


def test_counting_ops_against_torch(torch, rng):
    x = rng.standard_normal(200).astype(np.float32)
    for kw in ({}, {"bins": 13}, {"bins": 5, "min": -1.0, "max": 0.5}):
        assert_close(tx.histc(tx.tensor(x), **kw), torch.histc(torch.tensor(x), **kw))
    for bins, kw in ((7, {}), (4, {"range": (-2.0, 1.0)}), (3, {"density": True})):
        got = tx.histogram(tx.tensor(x), bins, **kw)
        want = torch.histogram(torch.tensor(x), bins, **kw)
        assert_close(got.hist, want.hist, rtol=1e-6)
        assert_close(got.bin_edges, want.bin_edges, rtol=1e-6)
    ints = rng.integers(0, 9, 50)
    w = rng.standard_normal(50).astype(np.float32)
    got = tx.bincount(tx.tensor(ints), tx.tensor(w), minlength=12)
    want = torch.bincount(torch.tensor(ints), torch.tensor(w), minlength=12)
    assert got.dtype is tx.float32 and got.shape == tuple(want.shape)
    assert_close(got, want, rtol=1e-6)
    assert tx.bincount(tx.tensor(ints), tx.tensor(ints)).dtype is tx.float64


@pytest.mark.parametrize("call,match", [
    (lambda: tx.bincount(tx.tensor([[1]])), r"bincount only supports 1-d non-negative"),
    (lambda: tx.bincount(tx.tensor([-1])), r"bincount only supports 1-d non-negative"),
    (lambda: tx.bincount(tx.tensor([1.0])), r"\"bincount_cpu\" not implemented for 'float32'"),
    (lambda: tx.bincount(tx.tensor([1]), tx.tensor([1.0, 2.0])),
     r"weights should be 1-d and have the same length as input"),
    (lambda: tx.bincount(tx.tensor([1]), minlength=-1), r"minlength should be >= 0"),
    (lambda: tx.histc(tx.tensor([1, 2])), r"histc\(\): \"histogram_cpu\" not implemented"),
    (lambda: tx.histc(tx.tensor([1.0]), bins=0), r"bins must be > 0, but got 0"),
    (lambda: tx.histc(tx.tensor([1.0]), min=3, max=1), r"max must be larger than min"),
    (lambda: tx.histogram(tx.tensor([1.0]), 2, range=(3.0, 1.0)),
     r"min should not exceed max"),
    (lambda: tx.histogram(tx.tensor([1.0]), tx.tensor([1.0])), r"at least 2 edges"),
    (lambda: tx.histogram(tx.tensor([1.0, 2.0]), 2, weight=tx.tensor([1.0])),
     r"same shape as the input"),
    (lambda: tx.cov(tx.zeros(2, 2, 2)), r"cov\(\): expected input to have two or fewer dim"),
    (lambda: tx.cov(tx.zeros(2, 3), fweights=tx.tensor([1.0, 1.0, 1.0])),
     r"expected fweights to have integral dtype"),
    (lambda: tx.cov(tx.zeros(2, 3), aweights=tx.tensor([1, 1, 1])),
     r"expected aweights to have floating point dtype"),
    (lambda: tx.cov(tx.zeros(2, 3), fweights=tx.tensor([1, 1])),
     r"expected fweights to have the same numel as there are observations"),
    (lambda: tx.cov(tx.zeros(2, 3), aweights=tx.tensor([1.0, -1.0, 1.0])),
     r"aweights cannot be negative"),
])
def test_stats_argument_errors(call, match):
    with pytest.raises(RuntimeError, match=match):
        call()


def test_cov_degrees_of_freedom_warning(torch):
    with pytest.warns(UserWarning, match=r"cov\(\): degrees of freedom is <= 0"):
        got = tx.cov(_t([1.0]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = torch.cov(torch.tensor([1.0], dtype=torch.float64))
    assert_close(got, want)
    assert tx.cov(tx.tensor([[1, 2, 4], [0, 1, 1]])).dtype is tx.float32
    c = tx.corrcoef(_t([1.0, 2.0, 4.0]))
    assert c.ndim == 0 and c.item() == 1.0


def test_new_ops_on_device(device):
    x = tx.tensor(np.linspace(0.5, 3.0, 6).reshape(2, 3), device=device, dtype=tx.float64,
                  requires_grad=True)
    outs = [tx.lgamma(x), tx.digamma(x), tx.polygamma(2, x), tx.i0(x), tx.sinc(x),
            tx.igamma(x.detach(), x), tx.diag_embed(x), tx.diff(x, dim=1), tx.cov(x),
            tx.renorm(x, 2, 0, 1.0), tx.matrix_exp(x[:, :2])]
    total = sum(o.sum() for o in outs)
    total.backward()
    assert x.grad.device.type == device
    ref = x.detach().cpu()
    assert_close(tx.lgamma(x).detach().cpu(), tx.lgamma(ref))
    assert_close(tx.matrix_exp(x[:, :2]).detach().cpu(), tx.matrix_exp(ref[:, :2]))
    ints = tx.tensor([0, 2, 2, 5], device=device)
    assert tx.bincount(ints).cpu().tolist() == [1, 0, 2, 0, 0, 1]
    packed, piv = tx.linalg.lu_factor(x.detach()[:, :2] + tx.eye(2, device=device,
                                                                 dtype=tx.float64))
    assert piv.device.type == device
