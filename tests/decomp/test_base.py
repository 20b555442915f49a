"""The shared linear algebra of tensorix.decomp against TensorLy and NumPy."""

import numpy as np
import pytest

import tensorix as tx
from tensorix import decomp
from tensorix.testing import assert_close, gradcheck


def T(a):
    return tx.tensor(np.asarray(a))


def test_unfold_fold_match_tensorly(rng):
    tl = pytest.importorskip("tensorly")
    x = rng.standard_normal((3, 4, 5, 2))
    for mode in range(4):
        u = decomp.unfold(T(x), mode)
        assert_close(u, tl.unfold(x, mode))
        assert_close(decomp.fold(u, mode, x.shape), x)
    assert_close(decomp.unfold(T(x), -1), tl.unfold(x, 3))


def test_unfold_fold_on_device(device, rng):
    x = rng.standard_normal((3, 4, 5))
    t = T(x).to(device)
    u = decomp.unfold(t, 1)
    assert u.device.type == device
    assert_close(u.cpu(), np.moveaxis(x, 1, 0).reshape(4, -1))
    assert_close(decomp.fold(u, 1, x.shape).cpu(), x)


def test_khatri_rao_and_kronecker_match_tensorly(rng):
    tl = pytest.importorskip("tensorly")
    mats = [rng.standard_normal((s, 3)) for s in (4, 2, 5)]
    w = rng.standard_normal(3)
    tmats = [T(m) for m in mats]
    assert_close(decomp.khatri_rao(tmats), tl.tenalg.khatri_rao(mats))
    assert_close(decomp.khatri_rao(tmats, weights=T(w)), tl.tenalg.khatri_rao(mats, weights=w))
    assert_close(decomp.khatri_rao(tmats, skip_matrix=1),
                 tl.tenalg.khatri_rao(mats, skip_matrix=1))
    assert_close(decomp.khatri_rao(tmats, reverse=True), tl.tenalg.khatri_rao(mats[::-1]))
    kmats = [rng.standard_normal(s) for s in ((2, 3), (4, 1), (3, 2))]
    assert_close(decomp.kronecker([T(m) for m in kmats]), tl.tenalg.kronecker(kmats))
    assert_close(decomp.kronecker([T(m) for m in kmats], skip_matrix=0),
                 np.kron(kmats[1], kmats[2]))


def test_mode_dot_and_multi_mode_dot_match_tensorly(rng):
    tl = pytest.importorskip("tensorly")
    x = rng.standard_normal((3, 4, 5))
    m, v = rng.standard_normal((6, 4)), rng.standard_normal(5)
    assert_close(decomp.mode_dot(T(x), T(m), 1), tl.tenalg.mode_dot(x, m, 1))
    assert_close(decomp.mode_dot(T(x), T(m.T), 1, transpose=True), tl.tenalg.mode_dot(x, m, 1))
    assert_close(decomp.mode_dot(T(x), T(v), 2), tl.tenalg.mode_dot(x, v, 2))
    mats = [rng.standard_normal((2, 3)), rng.standard_normal(4), rng.standard_normal((7, 5))]
    assert_close(decomp.multi_mode_dot(T(x), [T(a) for a in mats]),
                 tl.tenalg.multi_mode_dot(x, mats))
    assert_close(decomp.multi_mode_dot(T(x), [T(a) for a in mats], skip=1),
                 tl.tenalg.multi_mode_dot(x, mats, skip=1))
    mats = [rng.standard_normal((5, 2)), rng.standard_normal((3, 7))]
    assert_close(decomp.multi_mode_dot(T(x), [T(a) for a in mats], modes=[2, 0], transpose=True),
                 tl.tenalg.multi_mode_dot(x, mats, modes=[2, 0], transpose=True))


def test_norms_match_numpy(rng):
    x = rng.standard_normal((3, 4, 5))
    assert_close(decomp.norm(T(x)), np.linalg.norm(x))
    assert_close(decomp.norm(T(x), 1), np.abs(x).sum())
    assert_close(decomp.norm(T(x), "inf"), np.abs(x).max())
    assert_close(decomp.norm(T(x), 3, axis=1), (np.abs(x) ** 3).sum(1) ** (1 / 3))


def test_truncated_svd_is_the_best_low_rank_approximation(rng):
    a = rng.standard_normal((9, 6))
    U, S, Vh = decomp.truncated_svd(T(a), 3)
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    assert_close(S, s[:3])
    assert_close((U * S) @ Vh, (u[:, :3] * s[:3]) @ vh[:3])
    # deterministic signs: the largest entry of each column of U is positive
    un = U.numpy()
    assert (un[np.abs(un).argmax(0), range(3)] > 0).all()


def test_randomized_svd_power_iterations_recover_a_decaying_spectrum(rng):
    u = np.linalg.qr(rng.standard_normal((200, 40)))[0]
    v = np.linalg.qr(rng.standard_normal((80, 40)))[0]
    s = 0.7 ** np.arange(40)
    a = (u * s) @ v.T
    for mat in (a, a.T):  # tall and wide
        errors = []
        for n_iter in (0, 4):
            U, S, Vh = decomp.randomized_svd(T(mat), 5, n_iter=n_iter, random_state=0)
            errors.append(np.abs(S.numpy() - s[:5]).max())
            assert U.shape == (mat.shape[0], 5) and Vh.shape == (5, mat.shape[1])
            assert_close(U.mT @ U, np.eye(5), atol=1e-10)
        assert errors[1] < 1e-6 and errors[1] < errors[0]


def test_nndsvda_matches_tensorly(rng):
    pytest.importorskip("tensorly")
    from tensorly.tenalg.svd import svd_interface

    m = np.abs(rng.standard_normal((7, 30)))
    W, _, _ = svd_interface(m, n_eigenvecs=4, non_negative=True)
    ours = decomp.nndsvda(T(m), *decomp.truncated_svd(T(m), 4))
    assert float(ours.min()) >= 0
    assert_close(ours, W)


def test_svds_on_device_and_float32(device, rng):
    a = T(rng.standard_normal((12, 7)).astype(np.float32)).to(device)
    for fn in (decomp.truncated_svd, decomp.randomized_svd):
        U, S, Vh = fn(a, 7) if fn is decomp.truncated_svd else fn(a, 7, random_state=1)
        assert U.device.type == device and U.dtype == tx.float32
        assert_close(((U * S) @ Vh).cpu(), a.cpu(), dtype=tx.float32, atol=1e-4)


def test_products_are_differentiable():
    mats = [tx.randn(s, 3, dtype=tx.float64, requires_grad=True) for s in (2, 3, 4)]
    gradcheck(lambda *m: decomp.khatri_rao(m), mats, name="khatri_rao")
    x = tx.randn(3, 4, 2, dtype=tx.float64, requires_grad=True)
    m = tx.randn(5, 4, dtype=tx.float64, requires_grad=True)
    gradcheck(lambda a, b: decomp.mode_dot(a, b, 1), [x, m], name="mode_dot")
    gradcheck(lambda a: decomp.fold(decomp.unfold(a, 2) * 2, 2, a.shape), [x], name="fold")


def test_bad_input_errors():
    x = tx.randn(3, 4, 5)
    with pytest.raises(IndexError, match="unfold: mode 3"):
        decomp.unfold(x, 3)
    with pytest.raises(TypeError, match="unfold: expected tensor to be a tensorix Tensor"):
        decomp.unfold(np.zeros((2, 2)), 0)
    with pytest.raises(TypeError, match="floating dtype"):
        decomp.unfold(tx.zeros(2, 2, dtype=tx.int64), 0)
    with pytest.raises(ValueError, match="fold: unfolded of shape"):
        decomp.fold(tx.randn(4, 14), 1, (3, 4, 5))
    with pytest.raises(ValueError, match="khatri_rao: all matrices must have the same"):
        decomp.khatri_rao([tx.randn(2, 3), tx.randn(2, 4)])
    with pytest.raises(ValueError, match="mode_dot: shapes"):
        decomp.mode_dot(x, tx.randn(2, 3), 1)
    with pytest.raises(ValueError, match=r"truncated_svd: n_eigenvecs must be an int in \[1, 3\]"):
        decomp.truncated_svd(tx.randn(3, 5), 4)
    with pytest.raises(ValueError, match="randomized_svd: expected a matrix"):
        decomp.randomized_svd(x, 2)
