"""Semantics of the products and of ``tensorix.linalg`` beyond the registry matrix: errors
(non-square, singular, non-positive-definite, wrong dims and dtypes), integer overflow,
named results, gauge-invariant checks of full decompositions, gradients at special points
(singular det, repeated singular values, zero norms) and second derivatives against torch."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import tensorix as tx
from tensorix.testing import assert_close, gradcheck, gradgradcheck
from tensorix.testing.opinfo.linalg import distinct_svals, spd, well_conditioned

LA = tx.linalg


def _t(a, requires_grad=False):
    return tx.tensor(np.asarray(a, dtype=np.float64), requires_grad=requires_grad)


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


# -- integer products never wrap ------------------------------------------------------------------
def test_int8_matmul_overflow_raises():
    a = tx.tensor(np.full((2, 3), 100, dtype=np.int8))
    b = tx.tensor(np.full((3, 2), 100, dtype=np.int8))
    with pytest.raises(OverflowError, match=r"matmul\(\): integer product overflows int8"):
        a @ b


def test_int8_matmul_that_fits_is_exact():
    a = np.array([[1, -2, 3], [4, 5, -6]], dtype=np.int8)
    b = np.array([[7, 8], [-9, 10], [11, 12]], dtype=np.int8)
    out = tx.tensor(a) @ tx.tensor(b)
    assert out.dtype == tx.int8
    np.testing.assert_array_equal(out.numpy(), (a.astype(np.int64) @ b).astype(np.int8))


def test_int_dot_and_matrix_power_overflow_raise():
    v = tx.tensor(np.full(4, 100, dtype=np.int8))
    with pytest.raises(OverflowError, match="overflows int8"):
        tx.dot(v, v)
    m = tx.tensor(np.full((2, 2), 10, dtype=np.int8))
    with pytest.raises(OverflowError, match="overflows int8"):
        tx.matrix_power(m, 3)


# -- argument errors -------------------------------------------------------------------------------
@pytest.mark.parametrize("fn", [LA.inv, LA.det, LA.slogdet, LA.cholesky, LA.eigh, LA.eigvalsh])
def test_square_ops_reject_non_square(fn):
    with pytest.raises(RuntimeError, match="must be batches of square matrices, but they are "
                                           "2 by 3 matrices"):
        fn(tx.zeros(2, 3, dtype=tx.float64))


@pytest.mark.parametrize("fn", [LA.inv, LA.det, LA.qr, LA.svd, LA.svdvals, LA.pinv,
                                LA.matrix_rank, LA.matrix_norm])
def test_matrix_ops_reject_vectors(fn):
    with pytest.raises(RuntimeError, match="must have at least 2 dimensions"):
        fn(tx.zeros(3))


def test_integer_and_half_inputs_are_refused():
    with pytest.raises(RuntimeError, match=r"linalg.inv: Expected a floating point or complex "
                                           r"tensor as input. Got int64"):
        LA.inv(tx.tensor([[1, 2], [3, 4]]))
    with pytest.raises(RuntimeError, match="linalg.svd: Low precision dtypes not supported. "
                                           "Got float16"):
        LA.svd(tx.eye(2, dtype=tx.float16))
    with pytest.raises(RuntimeError, match="linalg.vector_norm: Expected a floating point"):
        LA.vector_norm(tx.tensor([1, 2]))


def test_singular_inverse_and_solve_raise_linalg_error():
    s = _t([[1.0, 2.0], [2.0, 4.0]])
    with pytest.raises(LA.LinAlgError, match="linalg.inv: The input matrix is singular"):
        LA.inv(s)
    with pytest.raises(RuntimeError, match="linalg.solve: The input matrix is singular"):
        LA.solve(s, _t([1.0, 2.0]))
    batch = tx.stack([tx.eye(2, dtype=tx.float64), tx.zeros(2, 2, dtype=tx.float64)])
    with pytest.raises(LA.LinAlgError, match="singular"):
        LA.inv(batch)
    assert issubclass(LA.LinAlgError, RuntimeError)


def test_cholesky_of_non_positive_definite_raises():
    with pytest.raises(LA.LinAlgError, match="linalg.cholesky: .* not positive-definite"):
        LA.cholesky(_t([[1.0, 2.0], [2.0, 1.0]]))


def test_solve_shape_and_dtype_errors():
    a = tx.eye(3, dtype=tx.float64)
    with pytest.raises(RuntimeError, match="Incompatible shapes of A and B"):
        LA.solve(a, tx.ones(4, 2, dtype=tx.float64))
    with pytest.raises(RuntimeError, match="Expected A and B to have the same dtype"):
        LA.solve(a, tx.ones(3, dtype=tx.float32))
    with pytest.raises(RuntimeError, match="batch dimensions .* are not broadcastable"):
        LA.solve(tx.eye(3, dtype=tx.float64).expand(2, 3, 3), tx.ones(4, 3, 1,
                                                                      dtype=tx.float64))
    with pytest.raises(RuntimeError, match="solve_triangular: Incompatible shapes"):
        LA.solve_triangular(a, tx.ones(2, 2, dtype=tx.float64), upper=True)


def test_mode_ord_and_uplo_errors():
    a = tx.eye(3, dtype=tx.float64)
    with pytest.raises(RuntimeError, match="qr received unrecognized mode 'full'"):
        LA.qr(a, mode="full")
    with pytest.raises(RuntimeError, match="Expected UPLO argument to be 'L' or 'U'"):
        LA.eigh(a, UPLO="X")
    with pytest.raises(RuntimeError, match="linalg.matrix_norm: Order 3 not supported"):
        LA.matrix_norm(a, ord=3)
    with pytest.raises(RuntimeError, match="dims must be different"):
        LA.matrix_norm(a, dim=(0, 0))
    with pytest.raises(RuntimeError, match="If dim is not specified but ord is, the input "
                                           "must be 1D or 2D. Got 3D"):
        LA.norm(tx.ones(2, 2, 2), ord=2)
    with pytest.raises(RuntimeError, match="If dim is specified, it must be of length 1 or 2"):
        LA.norm(tx.ones(2, 2, 2), dim=(0, 1, 2))
    with pytest.raises(RuntimeError, match="parameter `driver` should be one of"):
        LA.lstsq(a, a, driver="magic")
    with pytest.raises(RuntimeError, match=r"input.size\(-2\) should match other.size\(-2\)"):
        LA.lstsq(a, tx.ones(4, 1, dtype=tx.float64))
    with pytest.raises(RuntimeError, match="cannot compute the inf norm on an empty tensor"):
        LA.vector_norm(tx.ones(0), ord=math.inf)


def test_product_errors():
    with pytest.raises(RuntimeError, match=r"dot\(\): 1D tensors expected, but got 2D and 1D"):
        tx.dot(tx.ones(2, 2), tx.ones(2))
    with pytest.raises(RuntimeError, match=r"dot\(\): inconsistent tensor size"):
        tx.dot(tx.ones(2), tx.ones(3))
    with pytest.raises(RuntimeError, match=r"inner\(\): the last dimension must match"):
        tx.inner(tx.ones(2, 3), tx.ones(4))
    with pytest.raises(RuntimeError, match=r"outer\(\): argument 'vec2' must be a 1D tensor"):
        tx.outer(tx.ones(2), tx.ones(2, 2))
    with pytest.raises(RuntimeError, match="contracted dimensions need to match, but first has "
                                           "size 3 in dim 1 and second has size 4 in dim 0"):
        tx.tensordot(tx.ones(2, 3), tx.ones(4, 5), 1)
    with pytest.raises(RuntimeError, match="both dimension lists should have same length"):
        tx.tensordot(tx.ones(2, 3), tx.ones(3, 2), ([0, 1], [0]))
    with pytest.raises(TypeError, match="argument 'dims' must be an int or a pair"):
        tx.tensordot(tx.ones(2, 3), tx.ones(3, 2), "x")
    with pytest.raises(RuntimeError, match=r"mv\(\): vector \+ matrix @ vector expected"):
        tx.mv(tx.ones(2, 2), tx.ones(2, 1))
    with pytest.raises(RuntimeError, match=r"trace\(\): expected a matrix, but got tensor "
                                           "with dim 3"):
        tx.trace(tx.ones(2, 2, 2))
    with pytest.raises(RuntimeError, match="linalg.matrix_power: A must be batches of square"):
        tx.matrix_power(tx.ones(2, 3), 2)
    with pytest.raises(RuntimeError, match=r"multi_dot\(\): expected at least 2 tensors"):
        LA.multi_dot([tx.ones(2, 2)])
    with pytest.raises(RuntimeError, match=r"multi_dot\(\): tensor 1 must be 2D"):
        LA.multi_dot([tx.ones(2, 2), tx.ones(2), tx.ones(2, 2)])
    with pytest.raises(RuntimeError, match=r"multi_dot\(\): tensors 0 and 1 with shapes "
                                           r"\[2, 3\] and \[2, 2\] cannot be multiplied"):
        LA.multi_dot([tx.ones(2, 3), tx.ones(2, 2)])
    with pytest.raises(RuntimeError, match="inputs dimension -1 must have length 3. Got 2"):
        LA.cross(tx.ones(4, 2), tx.ones(4, 2))
    with pytest.raises(RuntimeError, match="diagonal dimensions cannot be identical"):
        LA.diagonal(tx.ones(2, 2), dim1=0, dim2=-2)


def test_add_products_check_input_shape_and_integral_scalars():
    with pytest.raises(RuntimeError, match=r"addmm\(\): input of shape \[4, 4\] cannot be "
                                           r"broadcast to the product's shape \[2, 2\]"):
        tx.addmm(tx.ones(4, 4), tx.ones(2, 3), tx.ones(3, 2))
    with pytest.raises(RuntimeError, match="for integral input tensors, argument alpha must not "
                                           "be a floating point number"):
        tx.addmm(tx.ones(2, 2, dtype=tx.int64), tx.ones(2, 2, dtype=tx.int64),
                 tx.ones(2, 2, dtype=tx.int64), alpha=0.5)
    with pytest.raises(RuntimeError, match=r"addmm\(\): argument 'mat1' must be a 2D tensor"):
        tx.addmm(tx.ones(2), tx.ones(2), tx.ones(2, 2))


def test_beta_zero_ignores_nan_input_but_gives_zero_grad():
    inp = tx.tensor([[float("nan"), 1.0]], requires_grad=True)
    out = tx.addmm(inp, tx.ones(1, 2), tx.ones(2, 2), beta=0)
    np.testing.assert_array_equal(out.detach().numpy(), [[2.0, 2.0]])
    out.sum().backward()
    np.testing.assert_array_equal(inp.grad.numpy(), [[0.0, 0.0]])


# -- results, named fields, methods ----------------------------------------------------------------
def test_named_results(rng):
    a = _t(distinct_svals(rng, (4, 3)))
    assert LA.svd(a).U.shape == (4, 4) and LA.svd(a, full_matrices=False).Vh.shape == (3, 3)
    assert LA.qr(a).Q.shape == (4, 3) and LA.qr(a, mode="complete").R.shape == (4, 3)
    q, r = LA.qr(a, mode="r")
    assert q.shape == (0,) and r.shape == (3, 3)
    s = _t(spd(rng, (3, 3)))
    assert LA.eigh(s).eigenvalues.shape == (3,) and LA.eigh(s).eigenvectors.shape == (3, 3)
    sign, logabs = LA.slogdet(s)
    assert LA.slogdet(s).logabsdet is not None and float(sign) == 1.0
    assert LA.lstsq(a, _t(np.ones((4, 1)))).solution.shape == (3, 1)


def test_tensor_methods(rng):
    a = _t(well_conditioned(rng, (3, 3)))
    assert_close(a.det(), np.linalg.det(a.numpy()))
    assert_close(a.inverse(), np.linalg.inv(a.numpy()))
    assert_close(a.matrix_power(-2), np.linalg.matrix_power(a.numpy(), -2))
    assert_close(a.trace(), np.trace(a.numpy()))
    v = _t([1.0, 2.0, 3.0])
    assert_close(v.dot(v), 14.0)
    assert_close(v.outer(v), np.outer(v.numpy(), v.numpy()))
    c = a.clone()
    c.addmm_(a, a, beta=2.0)
    assert_close(c, 2 * a.numpy() + a.numpy() @ a.numpy())


def test_full_svd_is_orthogonal_and_reconstructs(rng, torch):
    for shape in ((5, 3), (3, 5), (2, 4, 4)):
        a = distinct_svals(rng, shape)
        u, s, vh = LA.svd(_t(a))
        k = min(shape[-2:])
        assert u.shape == shape[:-2] + (shape[-2],) * 2 and vh.shape == shape[:-2] + \
            (shape[-1],) * 2
        assert_close(u.mT @ u, np.broadcast_to(np.eye(shape[-2]), u.shape), atol=1e-12)
        assert_close(vh @ vh.mT, np.broadcast_to(np.eye(shape[-1]), vh.shape), atol=1e-12)
        assert_close((u[..., :k] * s.unsqueeze(-2)) @ vh[..., :k, :], a, atol=1e-12)
        assert_close(s, torch.linalg.svdvals(torch.tensor(a)))


def test_eigh_reads_only_the_named_triangle(rng, torch):
    a = rng.standard_normal((2, 4, 4))
    for uplo in ("L", "U"):
        w, v = LA.eigh(_t(a), UPLO=uplo)
        tw, tv = torch.linalg.eigh(torch.tensor(a), UPLO=uplo)
        assert_close(w, tw)
        assert_close(abs(v), tv.abs())
        assert_close(LA.eigvalsh(_t(a), UPLO=uplo), tw)


def test_cholesky_reads_lower_triangle_and_upper_is_transpose(rng):
    a = spd(rng, (3, 3))
    junk = a + np.triu(rng.standard_normal((3, 3)), 1)  # garbage above the diagonal
    low = LA.cholesky(_t(junk))
    assert_close(low, np.linalg.cholesky(a))
    assert_close(LA.cholesky(_t(junk), upper=True), np.linalg.cholesky(a).T)


def test_solve_vector_rule_and_left_false(rng, torch):
    a = well_conditioned(rng, (2, 3, 3))
    for b in (rng.standard_normal(3), rng.standard_normal((2, 3)),
              rng.standard_normal((3, 2))):
        want = torch.linalg.solve(torch.tensor(a), torch.tensor(b))
        assert_close(LA.solve(_t(a), _t(b)), want)
    b = rng.standard_normal((4, 3))
    assert_close(LA.solve(_t(a[0]), _t(b), left=False),
                 torch.linalg.solve(torch.tensor(a[0]), torch.tensor(b), left=False))


def test_lstsq_all_outputs_against_torch(rng, torch):
    a, b = well_conditioned(rng, (2, 5, 3)), rng.standard_normal((2, 5, 2))
    for driver in ("gelsy", "gelsd", "gelss", "gels"):
        got = LA.lstsq(_t(a), _t(b), driver=driver)
        want = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b), driver=driver)
        for name in ("solution", "residuals", "rank", "singular_values"):
            g, w = getattr(got, name), getattr(want, name)
            assert tuple(g.shape) == tuple(w.shape), (driver, name)
            assert_close(g, w, what=f"{driver} {name}")
    wide = rng.standard_normal((3, 5))
    assert_close(LA.lstsq(_t(wide), _t(np.ones(3))).solution,
                 torch.linalg.lstsq(torch.tensor(wide), torch.ones(3, dtype=torch.float64),
                                    driver="gelsd").solution)


def test_rank_pinv_of_rank_deficient(rng, torch):
    a = well_conditioned(rng, (4, 2)) @ well_conditioned(rng, (2, 5))
    assert int(LA.matrix_rank(_t(a))) == 2
    assert int(LA.matrix_rank(_t(a), atol=10.0)) == 0
    assert_close(LA.pinv(_t(a)), torch.linalg.pinv(torch.tensor(a)), atol=1e-9)
    h = spd(rng, (3, 3))
    assert_close(LA.pinv(_t(h), hermitian=True), np.linalg.inv(h))
    assert int(LA.matrix_rank(_t(h), hermitian=True)) == 3


def test_logdet_negative_is_nan_and_det_of_singular_is_zero():
    assert math.isnan(float(tx.logdet(_t([[0.0, 1.0], [1.0, 0.0]]))))
    assert float(tx.logdet(_t([[2.0, 0.0], [0.0, 2.0]]))) == pytest.approx(math.log(4))
    assert float(LA.det(_t([[1.0, 2.0], [2.0, 4.0]]))) == 0.0


def test_cond_and_matrix_power_special_cases(rng):
    assert float(LA.cond(_t(np.diag([1.0, 0.0])), "fro")) == math.inf
    assert float(LA.cond(_t(np.diag([1.0, 0.0])))) == math.inf
    a = _t(well_conditioned(rng, (2, 3, 3)), requires_grad=True)
    p0 = tx.matrix_power(a, 0)
    assert_close(p0, np.broadcast_to(np.eye(3), (2, 3, 3)))
    assert_close(tx.matrix_power(a, -2), np.linalg.matrix_power(a.detach().numpy(), -2))


def test_multi_dot_picks_the_cheap_order():
    from tensorix.ops.linalg import _chain_order

    # (10x100)(100x5)(5x50): (AB)C costs 7,500 flops, A(BC) 75,000
    assert _chain_order([10, 100, 5, 50])[0][2] == 1
    assert _chain_order([50, 5, 100, 10])[0][2] == 0


def test_kron_and_tensordot_shapes(rng):
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((4, 1, 2))
    assert_close(tx.kron(_t(a), _t(b)), np.kron(a, b))
    x, y = rng.standard_normal((2, 3, 4)), rng.standard_normal((4, 3, 5))
    assert_close(tx.tensordot(_t(x), _t(y), ([1, 2], [1, 0])),
                 np.tensordot(x, y, ([1, 2], [1, 0])))
    assert_close(tx.tensordot(_t(x), _t(y), tx.tensor([[2], [0]])),
                 np.tensordot(x, y, ([2], [0])))


# -- gradients at special points -------------------------------------------------------------------
def test_det_gradient_at_singular_matrix_is_the_adjugate():
    # the exact derivative of det at a rank-(n-1) matrix is the (non-zero) cofactor matrix;
    # torch 2.13 returns zeros here, so the reference is the cofactor matrix itself
    a = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.5, -1.0, 2.0]])
    cof = np.array([[(-1) ** (i + j) * np.linalg.det(np.delete(np.delete(a, i, 0), j, 1))
                     for j in range(3)] for i in range(3)])
    x = _t(a, requires_grad=True)
    LA.det(x).backward()
    assert_close(x.grad, cof, atol=1e-10)
    assert np.abs(cof).max() > 1
    x2 = _t(a, requires_grad=True)
    (g,) = tx.autograd.grad(LA.det(x2), x2, create_graph=True)
    with pytest.raises(RuntimeError, match="second derivative of det at a singular matrix"):
        tx.autograd.grad(g.sum(), x2)


def test_svdvals_and_spectral_norm_gradients_with_repeated_values(torch):
    eye = np.eye(3)
    x = _t(eye, requires_grad=True)
    LA.svdvals(x).sum().backward()
    assert_close(x.grad, eye)
    x = _t(eye, requires_grad=True)
    LA.matrix_norm(x, 2).backward()
    t = torch.tensor(eye, requires_grad=True)
    torch.linalg.matrix_norm(t, 2).backward()
    assert_close(x.grad, t.grad)
    x = _t(np.diag([2.0, 2.0, 1.0]), requires_grad=True)
    LA.eigvalsh(x).sum().backward()
    assert np.isfinite(x.grad.numpy()).all()


def test_vector_norm_gradient_at_zero_is_zero_without_warnings(torch):
    for ord in (2, 1, 3, 1.5, 0.5, math.inf):
        x = tx.zeros(3, dtype=tx.float64, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            LA.vector_norm(x, ord).backward()
        t = torch.zeros(3, dtype=torch.float64, requires_grad=True)
        torch.linalg.vector_norm(t, ord).backward()
        assert_close(x.grad, t.grad, what=f"ord={ord}")


def test_vector_norm_inf_ties_share_the_gradient(torch):
    x = _t([3.0, -3.0, 1.0], requires_grad=True)
    LA.vector_norm(x, math.inf).backward()
    assert_close(x.grad, [0.5, -0.5, 0.0])


def test_pinv_hermitian_gradient(rng, torch):
    h = spd(rng, (3, 3))

    def sym_pinv(a):
        return LA.pinv((a + a.mT) / 2, hermitian=True)

    gradcheck(sym_pinv, [_t(h, requires_grad=True)], name="pinv hermitian")
    x = _t(h, requires_grad=True)
    sym_pinv(x).sum().backward()
    t = torch.tensor(h, requires_grad=True)
    torch.linalg.pinv((t + t.mT) / 2, hermitian=True).sum().backward()
    assert_close(x.grad, t.grad)


def test_qr_backward_errors(rng):
    a = _t(distinct_svals(rng, (4, 3)), requires_grad=True)
    with pytest.raises(RuntimeError, match="not computed when mode='r'"):
        LA.qr(a, mode="r").R.sum().backward()
    with pytest.raises(RuntimeError, match="not differentiable when mode='complete' and "
                                           "nrows > ncols"):
        LA.qr(a, mode="complete").Q.sum().backward()


def test_qr_of_wide_matrix_gradients(rng, torch):
    a = distinct_svals(rng, (2, 3, 5))
    gradcheck(lambda x: LA.qr(x), [_t(a, requires_grad=True)], name="qr wide")
    gradgradcheck(lambda x: LA.qr(x).R, [_t(a, requires_grad=True)], name="qr wide")
    w = rng.standard_normal((2, 3, 5))
    x = _t(a, requires_grad=True)
    q, r = LA.qr(x)
    ((q.sum(-1, keepdim=True) * r) * _t(w)).sum().backward()
    t = torch.tensor(a, requires_grad=True)
    tq, tr = torch.linalg.qr(t)
    ((tq.sum(-1, keepdim=True) * tr) * torch.tensor(w)).sum().backward()
    assert_close(x.grad, t.grad)


def test_complete_qr_of_square_and_wide_shapes(rng):
    a = distinct_svals(rng, (3, 5))
    q, r = LA.qr(_t(a), mode="complete")
    assert q.shape == (3, 3) and r.shape == (3, 5)
    assert_close(q @ r, a, atol=1e-12)


# -- second derivatives against torch --------------------------------------------------------------
def _hvp_tx(fn, x, v):
    xt = _t(x, requires_grad=True)
    (g,) = tx.autograd.grad(fn(xt), xt, create_graph=True)
    (h,) = tx.autograd.grad((g * _t(v)).sum(), xt)
    return h


def _hvp_torch(torch, fn, x, v):
    xt = torch.tensor(x, requires_grad=True)
    (g,) = torch.autograd.grad(fn(xt), xt, create_graph=True)
    (h,) = torch.autograd.grad((g * torch.tensor(v)).sum(), xt)
    return h


@pytest.mark.parametrize("name", ["inv", "det", "slogdet", "solve", "cholesky", "pinv",
                                  "svdvals", "eigh"])
def test_hessian_vector_products_match_torch(name, rng, torch):
    x = spd(rng, (3, 3)) if name in ("cholesky", "eigh") else distinct_svals(rng, (3, 3))
    v = rng.standard_normal((3, 3))
    w = rng.standard_normal((3, 3))
    b = rng.standard_normal((3, 2))

    def make(lib, la, wrap):
        def sym(a):
            return (a + a.mT) / 2

        return {
            "inv": lambda a: (la.inv(a) * wrap(w)).sum(),
            "det": lambda a: la.det(a),
            "slogdet": lambda a: la.slogdet(a)[1],
            "solve": lambda a: (la.solve(a, wrap(b)) ** 2).sum(),
            "cholesky": lambda a: (la.cholesky(sym(a)) * wrap(w)).sum(),
            "pinv": lambda a: (la.pinv(a) * wrap(w)).sum(),
            "svdvals": lambda a: (la.svdvals(a) ** 3).sum(),
            "eigh": lambda a: (abs(la.eigh(sym(a))[1]) * wrap(w)).sum(),
        }[name]

    got = _hvp_tx(make(tx, LA, _t), x, v)
    want = _hvp_torch(torch, make(torch, torch.linalg, torch.tensor), x, v)
    assert_close(got, want, rtol=1e-6, atol=1e-8, what=f"{name} Hessian-vector product")


def test_gradgradcheck_on_batched_inputs(rng):
    a = _t(well_conditioned(rng, (2, 3, 3)), requires_grad=True)
    b = _t(rng.standard_normal((2, 3, 1)), requires_grad=True)
    gradgradcheck(lambda x, y: LA.solve(x, y), [a, b], name="solve batched")
    gradgradcheck(lambda x: LA.det(x), [a], name="det batched")
    s = _t(spd(rng, (2, 3, 3)), requires_grad=True)
    gradgradcheck(lambda x: LA.cholesky((x + x.mT) / 2, upper=True), [s], name="cholesky")


@pytest.mark.parametrize("name", ["inv", "det", "slogdet", "solve", "cholesky", "svdvals",
                                  "eigvalsh", "pinv", "qr", "svd", "vector_norm"])
def test_complex_gradients_match_torch(name, rng, torch):
    def cm(shape):
        return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)

    a = cm((3, 3)) + 3 * np.eye(3)
    if name in ("cholesky", "eigvalsh"):
        a = a @ a.conj().T + np.eye(3)

    def herm(x):
        return (x + x.mH) / 2

    fns = {"inv": lambda la, x: la.inv(x), "det": lambda la, x: la.det(x),
           "slogdet": lambda la, x: la.slogdet(x)[1], "solve": lambda la, x: la.solve(x, x.mH),
           "cholesky": lambda la, x: la.cholesky(herm(x)),
           "svdvals": lambda la, x: la.svdvals(x), "eigvalsh": lambda la, x: la.eigvalsh(herm(x)),
           "pinv": lambda la, x: la.pinv(x[..., :2]), "qr": lambda la, x: la.qr(x)[1].abs(),
           "svd": lambda la, x: la.svd(x)[0].abs(), "vector_norm": lambda la, x: la.vector_norm(x)}
    x = tx.tensor(a, requires_grad=True)
    t = torch.tensor(a, requires_grad=True)
    out, tout = fns[name](LA, x), fns[name](torch.linalg, t)
    assert_close(out, tout)
    seed = rng.standard_normal(tuple(tout.shape))
    if tout.is_complex():
        seed = seed + 1j * rng.standard_normal(tuple(tout.shape))
    (g,) = tx.autograd.grad(out, x, tx.tensor(seed).to(out.dtype))
    (tg,) = torch.autograd.grad(tout, t, torch.tensor(seed).to(tout.dtype))
    assert_close(g, tg, what=f"{name} complex gradient")
