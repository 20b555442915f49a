"""The Tensor-handle side of the API completion: in-place shape changes with autograd,
post-accumulate-grad hooks, legacy constructors and queries, Python-callable maps, the split
aliases' errors, and the LU / matrix_exp / Cholesky-solve / legacy linear-algebra names
beyond the registry matrix."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

import tensorix as tx
from tensorix.testing import assert_close, gradcheck


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def _t(a, requires_grad=False):
    return tx.tensor(np.asarray(a, dtype=np.float64), requires_grad=requires_grad)


# -- in-place shape changes ------------------------------------------------------------------------
@pytest.mark.parametrize("name,args", [
    ("unsqueeze_", (1,)), ("squeeze_", ()), ("squeeze_", (0,)), ("t_", ()),
    ("transpose_", (0, 2)), ("swapaxes_", (1, 2)), ("swapdims_", (0, 1)),
    ("as_strided_", ((2, 2), (1, 3), 1)),
])
def test_inplace_shape_changes_match_torch(torch, name, args):
    data = np.arange(6.0).reshape(1, 2, 3) if name != "t_" else np.arange(6.0).reshape(2, 3)
    src = _t(data, requires_grad=True)
    x = src * 2
    ptr, version = x.data_ptr(), x._version_value
    assert getattr(x, name)(*args) is x
    ts = torch.tensor(data, requires_grad=True)
    tt = ts * 2
    getattr(tt, name)(*args)
    assert tuple(x.shape) == tuple(tt.shape) and x.stride() == tt.stride()
    offset = args[2] if name == "as_strided_" else 0
    assert x.data_ptr() == ptr + 8 * offset and x._version_value == version + 1
    weights = np.random.default_rng(0).standard_normal(tuple(tt.shape))
    (x * tx.tensor(weights)).sum().backward()
    (tt * torch.tensor(weights)).sum().backward()
    assert_close(x.detach(), tt.detach())
    assert_close(src.grad, ts.grad)


def test_inplace_shape_change_rules():
    leaf = tx.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"unsqueeze_\(\): a leaf Variable that requires "
                                           r"grad is being used in an in-place operation"):
        leaf.unsqueeze_(0)
    with tx.no_grad():
        leaf.unsqueeze_(0)
    assert tuple(leaf.shape) == (1, 3) and leaf.is_leaf and leaf.grad_fn is None
    # a view changed in place still writes through to its base's gradient
    a = tx.randn(2, 3, requires_grad=True)
    b = a * 1
    v = b[0]
    v.unsqueeze_(0)
    v.mul_(3)
    b.sum().backward()
    assert a.grad.tolist() == [[3.0] * 3, [1.0] * 3]
    with pytest.raises(RuntimeError, match=r"t\(\): t\(\) expects a tensor with <= 2"):
        tx.zeros(2, 2, 2).t_()


# -- post-accumulate-grad hooks ----------------------------------------------------------------
def test_post_accumulate_grad_hook():
    p = tx.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    h1 = p.register_post_accumulate_grad_hook(lambda t: seen.append(("a", t.grad.tolist())))
    p.register_post_accumulate_grad_hook(lambda t: seen.append(("b", t.grad.tolist())))
    (p * p).sum().backward()  # two uses of p: the hook still runs once, on the total
    assert seen == [("a", [2.0, 4.0]), ("b", [2.0, 4.0])]
    (p * 3).sum().backward()
    assert seen[-1] == ("b", [5.0, 7.0])
    h1.remove()
    seen.clear()
    tx.autograd.grad((p * 2).sum(), p)  # grad() accumulates nothing: no hook
    assert seen == []
    q = tx.tensor([1.0], requires_grad=True)
    (p.sum() * q).sum().backward(inputs=[p])
    assert seen == [("b", [6.0, 8.0])]


def test_post_accumulate_grad_hook_steps_an_optimizer():
    # the use it exists for: update each parameter as soon as its gradient is ready
    w = tx.tensor([1.0, -1.0], requires_grad=True)

    def step(t):
        with tx.no_grad():
            t -= 0.1 * t.grad
        t.grad = None

    w.register_post_accumulate_grad_hook(step)
    (w * w).sum().backward()
    assert_close(w.detach(), np.array([0.8, -0.8]), rtol=1e-6)
    assert w.grad is None


def test_post_accumulate_grad_hook_errors():
    with pytest.raises(RuntimeError, match=r"cannot register a hook on a tensor that doesn't "
                                           r"require gradient"):
        tx.tensor([1.0]).register_post_accumulate_grad_hook(lambda t: None)
    x = tx.tensor([1.0], requires_grad=True) * 2
    with pytest.raises(RuntimeError, match=r"post accumulate grad hooks cannot be registered "
                                           r"on non-leaf tensors"):
        x.register_post_accumulate_grad_hook(lambda t: None)


# -- handle queries and legacy constructors ---------------------------------------------------
def test_new_legacy_constructor(torch):
    x = tx.tensor([1.0, 2.0])
    assert x.new().shape == (0,) and x.new().dtype is tx.float32
    assert x.new(2, 3).shape == (2, 3)
    assert x.new(tx.Size([4, 1])).shape == (4, 1)
    data = x.new((2, 3))
    assert data.tolist() == [2.0, 3.0] and data.dtype is tx.float32
    assert x.new([1, 2]).dtype is tx.float32
    alias = x.new(x)
    assert alias is not x and alias.data_ptr() == x.data_ptr()
    with pytest.raises(TypeError, match=r"new\(\): expected float32 tensor \(got int64\)"):
        x.new(tx.tensor([1]))


def test_layout_and_dense_queries(torch):
    x = tx.zeros(2, 3)
    assert x.layout is tx.strided and repr(tx.strided) == "tensorix.strided"
    assert isinstance(x.layout, tx.layout)
    assert pickle.loads(pickle.dumps(tx.strided)) is tx.strided
    assert x.dense_dim() == torch.zeros(2, 3).dense_dim() == 2
    assert x.sparse_dim() == 0 and x.to_dense() is x
    assert x.to_dense(tx.float64).dtype is tx.float64
    assert x.get_device() == -1 and x.is_cpu
    assert not (x.is_sparse or x.is_quantized or x.is_meta or x.is_nested or x.is_mkldnn
                or x.is_sparse_csr)


def test_output_nr_and_predicates(torch):
    a = tx.randn(3, 3, requires_grad=True)
    u, s, vh = tx.linalg.svd(a * 1)
    assert (u.output_nr, s.output_nr, vh.output_nr) == (0, 1, 2)
    assert a.output_nr == 0
    for dtype, tdtype in ((tx.int64, torch.int64), (tx.uint8, torch.uint8),
                          (tx.bool, torch.bool), (tx.float16, torch.float16)):
        assert tx.zeros(1, dtype=dtype).is_signed() == torch.zeros(1, dtype=tdtype).is_signed()
    assert tx.tensor([0.0]).is_nonzero() is False and tx.tensor([[2]]).is_nonzero() is True
    with pytest.raises(RuntimeError, match=r"is_nonzero\(\): Boolean value of Tensor with more "
                                           r"than one value is ambiguous"):
        tx.tensor([1, 2]).is_nonzero()
    with pytest.raises(RuntimeError, match=r"Boolean value of Tensor with no values"):
        tx.zeros(0).is_nonzero()
    assert a.is_same_size(tx.zeros(3, 3)) and not a.is_same_size(tx.zeros(3))
    assert not (a.is_conj() or a.is_neg() or a.is_inference())
    with pytest.raises(RuntimeError, match=r"chalf\(\): tensorix has no complex32"):
        a.chalf()


def test_type_as_ravel_adjoint(torch):
    x = tx.tensor([1, 2])
    assert x.type_as(tx.zeros(1, dtype=tx.float64)).dtype is tx.float64
    base = tx.arange(12.0).reshape(3, 4)[:, ::2]
    flat = base.ravel()
    assert flat.is_contiguous() and flat.tolist() == [0, 2, 4, 6, 8, 10]
    c = tx.arange(6.0)
    assert tx.ravel(c).data_ptr() == c.data_ptr()  # contiguous: a view
    with pytest.raises(RuntimeError, match=r"adjoint\(\): tensor.adjoint\(\) is only supported "
                                           r"on matrices"):
        tx.zeros(3).adjoint()
    z = tx.tensor([[1 + 1j, 2j]])
    assert_close(z.adjoint(), torch.tensor([[1 + 1j, 2j]]).adjoint())


def test_resize_dim_order_new_empty_strided(torch):
    x = tx.arange(6.0).reshape(2, 3)
    ptr = x.data_ptr()
    assert x.resize_(2, 2) is x and x.tolist() == [[0.0, 1.0], [2.0, 3.0]]
    assert x.data_ptr() == ptr  # shrinking keeps the memory, as torch keeps its storage
    x.resize_as_(tx.zeros(3, 3))
    assert x.shape == (3, 3) and x.reshape(-1)[:4].tolist() == [0.0, 1.0, 2.0, 3.0]
    with pytest.raises(RuntimeError, match=r"resize_\(\): cannot resize variables that "
                                           r"require grad"):
        tx.zeros(2, requires_grad=True).resize_(3)
    with pytest.raises(RuntimeError, match=r"resize_\(\): Trying to create tensor with "
                                           r"negative dimension"):
        tx.zeros(2).resize_(-1)
    for t, tt in ((tx.zeros(2, 3).t(), torch.zeros(2, 3).t()),
                  (tx.empty(2, 1, 3), torch.empty(2, 1, 3)),
                  (tx.empty(2, 3, 4).permute(2, 0, 1), torch.empty(2, 3, 4).permute(2, 0, 1))):
        assert t.dim_order() == tt.dim_order()
    z = x.new_empty_strided((2, 2), (1, 2), dtype=tx.float64, requires_grad=True)
    assert z.shape == (2, 2) and z.stride() == (1, 2) and z.dtype is tx.float64
    assert z.requires_grad and z.is_leaf
    with pytest.raises(RuntimeError, match=r"new_empty_strided\(\): mismatch in length"):
        x.new_empty_strided((2, 2), (1,))
    assert x.const_data_ptr() == x.data_ptr()
    with pytest.raises(RuntimeError, match=r"nonzero_static\(\): 'size' must be an "
                                           r"non-negative integer"):
        tx.nonzero_static(x, size=-1)


def test_apply_and_map(torch):
    z = tx.tensor([1, 2])
    assert z.apply_(lambda v: v * 2.7) is z and z.tolist() == [2, 5]  # truncated, as torch
    z.map_(tx.tensor([10]), lambda u, v: u + v)
    assert z.tolist() == [12, 15]
    f = tx.tensor([[1.0, 2.0], [3.0, 4.0]])
    f.map2_(tx.tensor([1.0, 0.0]), tx.tensor([[2.0], [3.0]]), lambda a, b, c: a * b + c)
    assert f.tolist() == [[3.0, 2.0], [6.0, 3.0]]
    v = f._version_value
    f.apply_(abs)
    assert f._version_value == v + 1
    with pytest.raises(RuntimeError, match=r"apply_\(\): Can't call apply_\(\) on Variable "
                                           r"that requires grad"):
        tx.zeros(2, requires_grad=True).apply_(abs)
    with pytest.raises(TypeError, match=r"map_\(\): expected int64 for 'other' \(got float32"):
        z.map_(tx.tensor([1.5]), lambda u, v: u)
    with pytest.raises(TypeError, match=r"map2_\(\): expected float32 for 'y'"):
        f.map2_(f, tx.tensor([1]), lambda a, b, c: a)


def test_split_aliases(torch):
    x = tx.arange(24.0).reshape(2, 3, 4)
    for name, spec in (("hsplit", 3), ("hsplit", [1, 2]), ("vsplit", [1]), ("dsplit", 2),
                       ("dsplit", [1, 3])):
        got = getattr(tx, name)(x, spec)
        want = getattr(torch, name)(torch.arange(24.0).reshape(2, 3, 4), spec)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert_close(g, w)
            assert g.data_ptr() >= x.data_ptr()  # views
    assert [p.shape for p in tx.hsplit(tx.arange(6), 3)] == [(2,), (2,), (2,)]
    with pytest.raises(RuntimeError, match=r"hsplit\(\): torch.hsplit attempted to split "
                                           r"along dimension 1, but the size of the dimension "
                                           r"3 is not divisible by the split_size 2!"):
        tx.hsplit(tx.zeros(2, 3), 2)
    with pytest.raises(RuntimeError, match=r"vsplit\(\): torch.vsplit requires a tensor with "
                                           r"at least 2 dimension, but got a tensor with 1"):
        tx.vsplit(tx.zeros(3), 1)
    with pytest.raises(RuntimeError, match=r"dsplit requires a tensor with at least 3"):
        tx.zeros(2, 2).dsplit(2)
    with pytest.raises(TypeError, match=r"split_with_sizes\(\): argument 'split_sizes' must be "
                                        r"a sequence"):
        tx.split_with_sizes(x, 2)
    assert [p.shape[0] for p in x.unsafe_chunk(2)] == [1, 1]
    assert [p.shape[2] for p in x.unsafe_split(3, 2)] == [3, 1]
    assert [p.shape[1] for p in x.unsafe_split_with_sizes([1, 2], 1)] == [1, 2]
    assert x.narrow_copy(1, 1, 2).data_ptr() != x.data_ptr()


def test_dist_against_torch(torch):
    a, b = np.random.default_rng(3).standard_normal((2, 3, 4))
    for p in (2, 1, 0, np.inf, -np.inf, 3.5):
        assert_close(tx.dist(_t(a), _t(b), p), torch.dist(torch.tensor(a), torch.tensor(b), p))


def test_api_names_exist():
    names = ["addcdiv", "addcdiv_", "addcmul", "addcmul_", "diag", "diag_embed", "diagflat",
             "diff", "bincount", "histc", "cov", "corrcoef", "ravel", "type_as", "positive",
             "softmax", "log_softmax", "squeeze_", "unsqueeze_", "t_", "transpose_",
             "swapaxes_", "swapdims_", "as_strided_", "hsplit", "vsplit", "dsplit",
             "split_with_sizes", "unsafe_split", "unsafe_chunk", "cross", "fill_diagonal_",
             "renorm", "renorm_", "slice_scatter", "select_scatter", "diagonal_scatter",
             "as_strided_scatter", "put", "put_", "index_reduce", "index_reduce_",
             "resolve_conj", "resolve_neg", "get_device", "conj_physical", "conj_physical_",
             "float_power_", "chalf", "lgamma", "digamma", "polygamma", "mvlgamma", "i0",
             "sinc", "gcd", "lcm", "ldexp", "frexp", "nextafter", "igamma", "igammac",
             "hardshrink", "matrix_exp", "cholesky", "cholesky_solve", "cholesky_inverse", "qr",
             "svd", "lu", "lu_solve", "triangular_solve", "register_post_accumulate_grad_hook",
             "output_nr", "new", "layout", "dense_dim", "to_dense", "apply_", "map_"]
    missing = [n for n in names if not hasattr(tx.Tensor, n)]
    assert not missing, missing
    for n in ("lgamma_", "digamma_", "polygamma_", "mvlgamma_", "i0_", "sinc_", "gcd_",
              "lcm_", "ldexp_", "nextafter_", "igamma_", "igammac_"):
        assert hasattr(tx.Tensor, n), n
    x = tx.tensor([0.5, 2.5])
    assert x.lgamma_() is x and abs(x[1].item() - 0.2846829) < 1e-6
    y = tx.tensor([3.0])
    assert y.polygamma_(1).item() == pytest.approx(0.39493406)


# -- LU, matrix_exp, Cholesky solves, legacy names ---------------------------------------------
def test_lu_matches_torch_including_singular(torch):
    rng = np.random.default_rng(5)
    for a in (rng.standard_normal((3, 4, 4)), rng.standard_normal((2, 3)),
              np.array([[1.0, 2.0], [2.0, 4.0]]), np.zeros((3, 3)),
              rng.standard_normal((4, 4)) + 1j * rng.standard_normal((4, 4))):
        packed, piv, info = tx.linalg.lu_factor_ex(tx.tensor(a))
        tp, tpiv, tinfo = torch.linalg.lu_factor_ex(torch.tensor(a))
        assert info.tolist() == tinfo.tolist()
        assert_close(packed, tp)
        assert piv.tolist() == tpiv.tolist()
        p, low, up = tx.linalg.lu(tx.tensor(a))
        assert_close(p @ low @ up, a)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = torch.lu(torch.tensor([[1.0, 2.0], [2.0, 4.0]]), get_infos=True)
    got = tx.tensor([[1.0, 2.0], [2.0, 4.0]]).lu(get_infos=True)
    assert got[2].item() == want[2].item() == 2
    assert tx.lu(tx.eye(3), get_infos=True)[2].item() == 0
    singular = np.array([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 2.0], [2.0, 4.0]]])
    with pytest.raises(tx.linalg.LinAlgError, match=r"linalg.lu_factor: \(Batch element 1\): "
                                                    r"U\[2,2\] is zero and using it on "
                                                    r"lu_solve would result in a division"):
        tx.linalg.lu_factor(_t(singular))
    assert tx.linalg.lu(_t(singular)).U.shape == (2, 2, 2)  # linalg.lu does not check


def test_lu_errors_and_unpack_options():
    with pytest.raises(RuntimeError, match=r"linalg.lu_factor: LU without pivoting is not "
                                           r"implemented on the CPU"):
        tx.linalg.lu_factor(tx.eye(2), pivot=False)
    with pytest.raises(RuntimeError, match=r"linalg.lu_factor: The input tensor A must have "
                                           r"at least 2 dimensions"):
        tx.linalg.lu_factor(tx.ones(3))
    packed, piv = tx.linalg.lu_factor(tx.eye(3) * 2)
    p, low, up = tx.lu_unpack(packed, piv, unpack_data=False)
    assert low.numel() == 0 and up.numel() == 0 and p.shape == (3, 3)
    p, low, up = tx.lu_unpack(packed, piv, unpack_pivots=False)
    assert p.numel() == 0 and low.shape == (3, 3)
    with pytest.raises(RuntimeError, match=r"lu_unpack: LU_pivots must be an integer tensor "
                                           r"of shape \[3\]"):
        tx.lu_unpack(packed, piv.to(tx.float32))
    with pytest.raises(RuntimeError, match=r"linalg.lu_solve: Incompatible shapes of A and B"):
        tx.linalg.lu_solve(packed, piv, tx.ones(2, 1))
    with pytest.raises(RuntimeError, match=r"linalg.lu_solve: Expected A and B to have the "
                                           r"same dtype"):
        tx.linalg.lu_solve(packed, piv, tx.ones(3, 1, dtype=tx.float64))


def test_lu_solve_against_linalg_solve():
    rng = np.random.default_rng(7)
    a = rng.standard_normal((2, 4, 4)) + 4 * np.eye(4)
    b = rng.standard_normal((2, 4, 3))
    packed, piv = tx.linalg.lu_factor(_t(a))
    for left, adjoint, want in ((True, False, np.linalg.solve(a, b)),
                                (True, True, np.linalg.solve(np.swapaxes(a, -1, -2), b))):
        assert_close(tx.linalg.lu_solve(packed, piv, _t(b), left=left, adjoint=adjoint), want)
    bt = np.swapaxes(b, -1, -2)
    want = np.swapaxes(np.linalg.solve(np.swapaxes(a, -1, -2), b), -1, -2)
    assert_close(tx.linalg.lu_solve(packed, piv, _t(bt), left=False), want)
    assert_close(_t(b).lu_solve(packed, piv), np.linalg.solve(a, b))


def test_matrix_exp_against_torch(torch):
    rng = np.random.default_rng(11)
    for scale in (1e-8, 0.5, 6.0, 60.0):
        a = rng.standard_normal((2, 5, 5)) * scale
        x = _t(a, requires_grad=True)
        xt = torch.tensor(a, requires_grad=True)
        out, want = tx.matrix_exp(x), torch.matrix_exp(xt)
        assert_close(out, want, rtol=1e-11 * max(1.0, scale), atol=0)
        g = rng.standard_normal(a.shape)
        out.backward(tx.tensor(g))
        want.backward(torch.tensor(g))
        assert_close(x.grad, xt.grad, rtol=1e-9 * max(1.0, scale), atol=1e-12)
    z = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))
    assert_close(tx.matrix_exp(tx.tensor(z)), torch.matrix_exp(torch.tensor(z)), rtol=1e-12)
    assert tx.matrix_exp(tx.zeros(2, 2)).tolist() == [[1.0, 0.0], [0.0, 1.0]]
    with pytest.raises(RuntimeError, match=r"linalg.matrix_exp: A must be batches of square "
                                           r"matrices"):
        tx.matrix_exp(tx.zeros(2, 3))
    # the rotation generator: exp(t J) is a rotation by t
    rot = tx.linalg.matrix_exp(_t([[0.0, -0.3], [0.3, 0.0]]))
    assert_close(rot, np.array([[np.cos(0.3), -np.sin(0.3)], [np.sin(0.3), np.cos(0.3)]]))


def test_cholesky_solve_inverse_read_one_triangle(torch):
    rng = np.random.default_rng(2)
    q = rng.standard_normal((4, 4))
    a = q @ q.T + 4 * np.eye(4)
    low = np.linalg.cholesky(a)
    noisy = low + np.triu(rng.standard_normal((4, 4)), 1)  # the upper part must be ignored
    b = rng.standard_normal((4, 2))
    assert_close(tx.cholesky_solve(_t(b), _t(noisy)), np.linalg.solve(a, b))
    assert_close(tx.cholesky_inverse(_t(noisy)), np.linalg.inv(a))
    up = _t(low.T + np.tril(rng.standard_normal((4, 4)), -1))
    assert_close(tx.cholesky_solve(_t(b), up, upper=True), np.linalg.solve(a, b))
    assert_close(up.cholesky_inverse(upper=True), np.linalg.inv(a))
    lt = _t(noisy, requires_grad=True)
    gradcheck(lambda m: tx.cholesky_inverse(m), [lt], name="cholesky_inverse")
    with pytest.raises(RuntimeError, match=r"cholesky_solve: Expected A and B to have the "
                                           r"same dtype"):
        tx.cholesky_solve(tx.ones(4, 1), _t(low))


def test_legacy_linalg_names(torch):
    rng = np.random.default_rng(4)
    a = rng.standard_normal((4, 3))
    u, s, v = tx.svd(_t(a), compute_uv=False)
    tu, ts, tv = torch.svd(torch.tensor(a), compute_uv=False)
    assert u.shape == tuple(tu.shape) and v.shape == tuple(tv.shape)
    assert not u.numpy().any() and not v.numpy().any()
    assert_close(s, ts)
    u, s, v = _t(a).svd(some=False)
    assert u.shape == (4, 4) and v.shape == (3, 3)
    assert_close((u[:, :3] * s) @ v.mT, a)
    q, r = _t(a).qr(some=False)
    assert q.shape == (4, 4) and r.shape == (4, 3)
    spd = a.T @ a + np.eye(3)
    assert_close(_t(spd).cholesky(upper=True), np.linalg.cholesky(spd).T)
    tri = np.triu(rng.standard_normal((3, 3))) + 3 * np.eye(3)
    x, clone = tx.triangular_solve(_t(np.ones((3, 1))), _t(tri))
    assert_close(_t(tri) @ x, np.ones((3, 1)))
    assert clone.data_ptr() != 0 and clone.tolist() == tri.tolist()
    for name, new in (("solve", "solve"), ("lstsq", "lstsq"), ("eig", "eig"),
                      ("symeig", "eigh")):
        with pytest.raises(RuntimeError, match=rf"{name}\(\): This function was deprecated since "
                                               rf"version 1.9 and is now removed.*"
                                               rf"tensorix.linalg.{new}"):
            getattr(_t(spd), name)(_t(spd))


def test_householder_family(torch):
    rng = np.random.default_rng(8)
    a = rng.standard_normal((5, 3))
    h, tau = tx.geqrf(_t(a))
    q, r = tx.linalg.qr(_t(a))
    assert_close(tx.linalg.householder_product(h, tau), q)
    assert_close(h.triu()[:3], r)
    assert_close(_t(a).geqrf().tau, torch.geqrf(torch.tensor(a)).tau)
    x = _t(a, requires_grad=True)
    with pytest.raises(NotImplementedError, match=r"geqrf: the derivative for 'geqrf' is not "
                                                  r"implemented"):
        tx.geqrf(x).a.sum().backward()
    with pytest.raises(RuntimeError, match=r"householder_product: input.shape\[-2\] must be "
                                           r"greater than or equal"):
        tx.linalg.householder_product(tx.zeros(2, 3), tx.zeros(2))
    with pytest.raises(RuntimeError, match=r"householder_product: tau must have shape"):
        tx.orgqr(tx.zeros(3, 2), tx.zeros(3))
    with pytest.raises(RuntimeError, match=r"ormqr: input.shape\[-2\] must be equal to "
                                           r"other.shape\[-2\]"):
        tx.ormqr(h, tau, tx.zeros(4, 2, dtype=tx.float64))
    full_q = tx.ormqr(h, tau, tx.eye(5, dtype=tx.float64))
    assert_close(full_q.mT @ full_q, np.eye(5), atol=1e-12)
