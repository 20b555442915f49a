"""The linear algebra every decomposition shares: unfoldings, Khatri-Rao and Kronecker
products, mode-n products, norms and (randomized) truncated SVDs.

Conventions are TensorLy's (Kolda & Bader with C-order unfoldings): ``unfold(X, n)`` puts mode
``n`` first and flattens the remaining modes in their order, so that for a CP tensor
``unfold(X, n) = A_n diag(w) khatri_rao(A, skip_matrix=n).T``. All functions are written with
tensorix ops, so they run on any device and are differentiable.
"""

from __future__ import annotations

import math

from .. import linalg as _linalg
from ..backend import array_module
from ..dtypes import finfo
from ..ops.creation import zeros
from ..ops.linalg import kron
from ..ops.pointwise import where
from ..ops.random import Generator, rand, randn
from ..ops.shape import cat
from ..tensor import Tensor, _make

__all__ = ["unfold", "fold", "khatri_rao", "kronecker", "mode_dot", "multi_mode_dot", "norm",
           "truncated_svd", "randomized_svd", "svd_flip", "nndsvda"]


# -- input checks shared by every decomposition ------------------------------------------------
def check_tensor(op, tensor, arg="tensor", min_ndim=1, finite=False):
    """Raise a clear error unless ``tensor`` is a floating Tensor of at least ``min_ndim`` dims
    (and, with ``finite``, holds no inf/nan: ALS and SVD would silently return garbage)."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{op}: expected {arg} to be a tensorix Tensor, got "
                        f"{type(tensor).__name__}")
    if not tensor.dtype.is_floating_point:
        raise TypeError(f"{op}: expected {arg} to have a floating dtype, got {tensor.dtype}")
    if tensor.ndim < min_ndim:
        raise ValueError(f"{op}: expected {arg} to have at least {min_ndim} dimensions, got "
                         f"shape {tuple(tensor.shape)}")
    if finite and not bool(tensor.isfinite().all()):
        raise ValueError(f"{op}: {arg} contains inf or nan values; decompositions need finite "
                         "data (use mask= for missing entries where the method supports it)")


def check_mode(op, mode, ndim):
    if not isinstance(mode, int) or not -ndim <= mode < ndim:
        raise IndexError(f"{op}: mode {mode!r} is out of range for a tensor of {ndim} "
                         f"dimensions (expected an int in [{-ndim}, {ndim - 1}])")
    return mode % ndim


def masked_input(op, tensor, mask):
    """``(work, observed)``: ``tensor`` in its working dtype with missing entries (``mask ==
    0``, which may hold nan) zeroed, and the mask as 0/1 of that dtype (None without a mask).
    Refuses a mask of another shape, non-finite observed entries and a mask observing
    nothing (no fit can be measured)."""
    work = working(tensor)
    if mask is None:
        check_tensor(op, work, finite=True)
        return work, None
    if not isinstance(mask, Tensor) or tuple(mask.shape) != tuple(tensor.shape):
        shape = tuple(mask.shape) if isinstance(mask, Tensor) else type(mask).__name__
        raise ValueError(f"{op}: mask must be a Tensor of the tensor's shape "
                         f"{tuple(tensor.shape)}, got {shape}")
    observed = mask.to(device=work.device) != 0
    if not bool((work.isfinite() | ~observed).all()):
        raise ValueError(f"{op}: tensor contains inf or nan values at observed entries (mask "
                         "!= 0); only the missing entries may hold them")
    if not bool(observed.any()):
        raise ValueError(f"{op}: mask has no observed entries (all zero); at least one entry "
                         "must be observed")
    # missing entries may hold anything (nan included): zero them before any arithmetic
    work = where(observed, work, zeros((), dtype=work.dtype, device=work.device))
    return work, observed.to(work.dtype)


def working(tensor):
    """16-bit inputs are decomposed in float32 (LAPACK has no half-precision SVD or solve);
    the caller casts the result back to ``tensor.dtype``."""
    return tensor.float() if tensor.dtype.bits < 32 else tensor


def make_generator(random_state):
    """``random_state`` as TensorLy takes it: None (fresh entropy), an int seed, or a
    ``tensorix.Generator`` (used as is)."""
    if isinstance(random_state, Generator):
        return random_state
    gen = Generator()
    if random_state is None:
        gen.seed()
    else:
        gen.manual_seed(int(random_state))
    return gen


def random_like(shape, like, gen, uniform=False):
    """A random (normal, or uniform on [0, 1)) array of ``shape`` with ``like``'s dtype and
    device, drawn on the host so that a seed gives the same numbers on every device."""
    draw = rand if uniform else randn
    if not isinstance(like, Tensor):  # a raw array: the same numbers, as an array
        wrapped = _make(like)
        return draw(*shape, generator=gen, dtype=wrapped.dtype).to(wrapped.device)._data
    return draw(*shape, generator=gen, dtype=like.dtype).to(like.device)


# -- unfoldings -----------------------------------------------------------------------------------
def unfold(tensor, mode):
    """Mode-``mode`` unfolding: ``(I_0, ..., I_{N-1}) -> (I_mode, prod of the other I_k)``.

    The other modes are flattened in their order, last fastest (TensorLy's convention).
    Example: ``unfold(tensorix.arange(24.).reshape(2, 3, 4), 1).shape == (3, 8)``.
    """
    check_tensor("unfold", tensor)
    return _unfold(tensor, check_mode("unfold", mode, tensor.ndim))


def _split(shape, mode):
    """``(left, size, right)``: the products of the dims before, at and after ``mode``."""
    return math.prod(shape[:mode]), shape[mode], math.prod(shape[mode + 1:])


# The private helpers below take Tensors (differentiable) or raw backend arrays alike: they use
# only what both have (reshape, swapaxes, mT, [:, None], @, *). Why: the fits run their loops
# on raw arrays (a Tensor op costs tens of microseconds of dispatch, which made small fits
# several times slower than TensorLy), and the public, differentiable functions share this code.
def _unfold(tensor, mode):
    left, size, right = _split(tuple(tensor.shape), mode)
    if right == 1:  # the last mode's unfolding is a transposed view: no copy
        return tensor.reshape(left, size).mT
    if left == 1:
        return tensor.reshape(size, right)
    return tensor.reshape(left, size, right).swapaxes(0, 1).reshape(size, left * right)


def fold(unfolded, mode, shape):
    """Inverse of :func:`unfold`: ``(I_mode, rest) -> shape``.

    Example: ``fold(unfold(X, 2), 2, X.shape)`` equals ``X``.
    """
    check_tensor("fold", unfolded, "unfolded", min_ndim=2)
    shape = tuple(int(s) for s in shape)
    mode = check_mode("fold", mode, len(shape))
    if unfolded.ndim != 2 or unfolded.shape[0] != shape[mode] or \
            unfolded.numel() != math.prod(shape):
        raise ValueError(f"fold: unfolded of shape {tuple(unfolded.shape)} is not a mode-{mode} "
                         f"unfolding of shape {shape}")
    return _fold(unfolded, mode, shape)


def _fro(a):
    """Frobenius norm as a Python float (the fits' error bookkeeping)."""
    return float((a * a).sum()) ** 0.5


def _fold(unfolded, mode, shape):
    left, size, right = _split(shape, mode)
    return unfolded.reshape(size, left, right).swapaxes(0, 1).reshape(shape)


# -- products -----------------------------------------------------------------------------------
def _matrix_list(op, matrices, skip_matrix, reverse):
    matrices = list(matrices)
    if not matrices:
        raise ValueError(f"{op}: expected at least one matrix")
    for i, m in enumerate(matrices):
        check_tensor(op, m, f"matrices[{i}]", min_ndim=2)
        if m.ndim != 2:
            raise ValueError(f"{op}: matrices[{i}] must be 2-d, got shape {tuple(m.shape)}")
    if skip_matrix is not None:
        skip = check_mode(op, skip_matrix, len(matrices))
        matrices = matrices[:skip] + matrices[skip + 1:]
    return matrices[::-1] if reverse else matrices


def khatri_rao(matrices, weights=None, skip_matrix=None, reverse=False):
    """Column-wise Kronecker product of matrices ``(I_k, R)``: ``(prod I_k, R)``.

    Row index of the first matrix varies slowest, as in :func:`kronecker`. ``weights (R,)``
    scale the columns; ``skip_matrix`` leaves one matrix out; ``reverse`` reverses the order.
    Example: ``khatri_rao([A, B])[:, r]`` equals ``kron(A[:, r], B[:, r])``.
    """
    matrices = _matrix_list("khatri_rao", matrices, skip_matrix, reverse)
    n_cols = matrices[0].shape[1]
    if any(m.shape[1] != n_cols for m in matrices):
        raise ValueError("khatri_rao: all matrices must have the same number of columns, got "
                         f"shapes {[tuple(m.shape) for m in matrices]}")
    result = _khatri_rao(matrices)
    return result if weights is None else result * weights


def _khatri_rao(matrices):
    result = matrices[0]
    for m in matrices[1:]:
        result = (result[:, None, :] * m[None, :, :]).reshape(-1, m.shape[1])
    return result


def kronecker(matrices, skip_matrix=None, reverse=False):
    """Kronecker product of a list of matrices ``(I_k, J_k)``: ``(prod I_k, prod J_k)``.

    Example: ``kronecker([A, B])`` equals ``tensorix.kron(A, B)``.
    """
    matrices = _matrix_list("kronecker", matrices, skip_matrix, reverse)
    result = matrices[0]
    for m in matrices[1:]:
        result = kron(result, m)
    return result


def mode_dot(tensor, matrix_or_vector, mode, transpose=False):
    """Mode-``mode`` product: a matrix ``(J, I_mode)`` replaces dim ``I_mode`` by ``J``; a vector
    ``(I_mode,)`` contracts the mode away. ``transpose`` uses the matrix transposed.

    Example: ``mode_dot(X, U, 1)`` equals ``fold(U @ unfold(X, 1), 1, new_shape)``.
    """
    check_tensor("mode_dot", tensor)
    check_tensor("mode_dot", matrix_or_vector, "matrix_or_vector")
    mode = check_mode("mode_dot", mode, tensor.ndim)
    m = matrix_or_vector
    if m.ndim == 2:
        m = m.mT if transpose else m
        if m.shape[1] != tensor.shape[mode]:
            raise ValueError(f"mode_dot: shapes {tuple(tensor.shape)} and {tuple(m.shape)} are "
                             f"not aligned in mode {mode} (expected a matrix (J, "
                             f"{tensor.shape[mode]}))")
        return _mode_dot(tensor, m, mode)
    if m.ndim == 1:
        if m.shape[0] != tensor.shape[mode]:
            raise ValueError(f"mode_dot: vector of length {m.shape[0]} does not match dim "
                             f"{tensor.shape[mode]} of mode {mode}")
        return _mode_dot(tensor, m, mode)
    raise ValueError(f"mode_dot: expected a matrix or a vector, got shape {tuple(m.shape)}")


def _mode_dot(tensor, m, mode):
    """``m (J, I_mode)`` or ``(I_mode,)`` applied along ``mode``, as GEMMs on free reshapes
    (no mode is moved, so nothing is copied but the result)."""
    shape = tuple(tensor.shape)
    left, size, right = _split(shape, mode)
    new = shape[:mode] + tuple(m.shape[:-1]) + shape[mode + 1:]
    if right == 1:
        flat = tensor.reshape(left, size)
        return (flat @ (m.mT if m.ndim == 2 else m)).reshape(new)
    if left == 1:
        return (m @ tensor.reshape(size, right)).reshape(new)
    return (m @ tensor.reshape(left, size, right)).reshape(new)  # batched over ``left``


def multi_mode_dot(tensor, matrix_or_vec_list, modes=None, skip=None, transpose=False):
    """Mode products with several matrices/vectors: ``matrix_or_vec_list[i]`` along
    ``modes[i]`` (default ``0..len-1``), leaving out index ``skip``.

    Vectors remove their mode; later modes are renumbered accordingly, as in TensorLy.
    Example: ``multi_mode_dot(core, factors)`` is the Tucker reconstruction.
    """
    factors = list(matrix_or_vec_list)
    modes = list(range(len(factors))) if modes is None else list(modes)
    if len(modes) != len(factors):
        raise ValueError(f"multi_mode_dot: got {len(factors)} matrices for {len(modes)} modes")
    result, removed = tensor, 0
    order = sorted(range(len(modes)), key=lambda i: modes[i] % tensor.ndim)
    for i in order:
        if skip is not None and i == skip:
            continue
        f = factors[i]
        result = mode_dot(result, f, modes[i] % tensor.ndim - removed, transpose=transpose)
        removed += f.ndim == 1
    return result


def _multi_mode_dot(tensor, matrices, skip=None, transpose=False):
    """:func:`multi_mode_dot` with one matrix per mode, without checks (Tensors or arrays)."""
    for mode, m in enumerate(matrices):
        if mode != skip:
            tensor = _mode_dot(tensor, m.mT if transpose else m, mode)
    return tensor


def norm(tensor, order=2, axis=None):
    """Entrywise ``order``-norm (2: Frobenius, 1, ``'inf'`` or any p) of the whole tensor, or
    along ``axis``. Example: ``norm(X)`` equals ``unfold(X, 0).norm()``."""
    check_tensor("norm", tensor)
    order = math.inf if order in ("inf", math.inf) else order
    return _linalg.vector_norm(tensor, ord=order, dim=axis)


# -- SVDs ---------------------------------------------------------------------------------------
def _lin(a):
    """The linear algebra of ``a``'s kind: tensorix.linalg for Tensors (differentiable), the
    backend's ``xp.linalg`` for raw arrays (the fits' loops)."""
    return _linalg if isinstance(a, Tensor) else array_module(a).linalg


def svd_flip(U, Vh):
    """Deterministic signs: each column of ``U`` gets a positive entry of largest magnitude,
    and the matching row of ``Vh`` the same sign (so ``U diag(S) Vh`` is unchanged).
    Example: ``U, Vh = svd_flip(U, Vh)`` after any SVD gives reproducible factors."""
    if isinstance(U, Tensor):
        signs = U.gather(0, U.abs().argmax(0, keepdim=True)).squeeze(0)
        signs = (signs >= 0).to(U.dtype) * 2 - 1
    else:
        signs = array_module(U).take_along_axis(U, abs(U).argmax(0)[None], 0)[0]
        signs = ((signs >= 0) * 2 - 1).astype(U.dtype)
    return U * signs, Vh * signs[:, None]


def _check_n_eigenvecs(op, matrix, n_eigenvecs):
    check_tensor(op, matrix, "matrix", min_ndim=2)
    if matrix.ndim != 2:
        raise ValueError(f"{op}: expected a matrix, got shape {tuple(matrix.shape)}")
    k = min(matrix.shape)
    if n_eigenvecs is None:
        return k
    if not isinstance(n_eigenvecs, int) or not 1 <= n_eigenvecs <= k:
        raise ValueError(f"{op}: n_eigenvecs must be an int in [1, {k}] for a matrix of shape "
                         f"{tuple(matrix.shape)}, got {n_eigenvecs!r}")
    return n_eigenvecs


def truncated_svd(matrix, n_eigenvecs=None, flip_sign=True):
    """Leading ``k = n_eigenvecs`` singular triplets of ``matrix (m, n)``: ``U (m, k)``,
    ``S (k,)`` descending, ``Vh (k, n)``, signs made deterministic by :func:`svd_flip`.

    Example: ``U, S, Vh = truncated_svd(A, 3)``; ``U * S @ Vh`` is the best rank-3 approximation.
    """
    k = _check_n_eigenvecs("truncated_svd", matrix, n_eigenvecs)
    return _truncated_svd(matrix, k, flip_sign)


def _truncated_svd(matrix, k, flip_sign=True):
    U, S, Vh = _lin(matrix).svd(matrix, full_matrices=False)
    U, S, Vh = U[:, :k], S[:k], Vh[:k]
    if flip_sign:
        U, Vh = svd_flip(U, Vh)
    return U, S, Vh


def randomized_svd(matrix, n_eigenvecs, n_oversamples=5, n_iter=2, random_state=None,
                   flip_sign=True):
    """Randomized truncated SVD (Halko, Martinsson & Tropp 2011, Alg. 4.4): a Gaussian sketch
    with ``n_oversamples`` extra columns, ``n_iter`` QR-stabilised power iterations, then an
    exact SVD of the small projected matrix. Returns ``U (m, k)``, ``S (k,)``, ``Vh (k, n)``.

    Example: ``U, S, Vh = randomized_svd(A, 10, n_iter=4, random_state=0)``.
    """
    k = _check_n_eigenvecs("randomized_svd", matrix, n_eigenvecs)
    return _randomized_svd(matrix, k, n_oversamples, n_iter, random_state, flip_sign)


def _randomized_svd(matrix, k, n_oversamples=5, n_iter=2, random_state=None, flip_sign=True):
    lin = _lin(matrix)
    m, n = matrix.shape
    # sketch the smaller side: the range of A^T when A is wide costs m x l instead of n x l
    wide = n > m
    a = matrix.mT if wide else matrix
    cols = min(k + int(n_oversamples), min(m, n))
    omega = random_like((a.shape[1], cols), a, make_generator(random_state))
    q = lin.qr(a @ omega)[0]
    for _ in range(int(n_iter)):
        q = lin.qr(a.mT @ q)[0]
        q = lin.qr(a @ q)[0]
    ub, S, Vh = lin.svd(q.mT @ a, full_matrices=False)
    U, S, Vh = (q @ ub)[:, :k], S[:k], Vh[:k]
    if wide:
        U, Vh = Vh.mT, U.mT
    if flip_sign:
        U, Vh = svd_flip(U, Vh)
    return U, S, Vh


def nndsvda(matrix, U, S, Vh):
    """Non-negative left factor from a truncated SVD of ``matrix`` (NNDSVD, Boutsidis &
    Gallopoulos 2008, variant 'a' as TensorLy's default): each singular pair is replaced by the
    dominant of its positive and negative parts; near-zero entries take the matrix mean.
    Returns ``W (m, k) >= 0``. Example: ``W = nndsvda(M, *truncated_svd(M, 3))``."""
    def unit(x, axis):
        n = norm(x, axis=axis)
        return x / (n + (n == 0).to(n.dtype)).unsqueeze(axis), n

    (up, upn), (un, unn) = unit(U.clamp_min(0), 0), unit((-U).clamp_min(0), 0)
    vpn, vnn = norm(Vh.clamp_min(0), axis=1), norm((-Vh).clamp_min(0), axis=1)
    positive = upn * vpn > unn * vnn
    sigma = where(positive, upn * vpn, unn * vnn)
    W = where(positive, up, un) * (S * sigma).sqrt()
    # the leading pair of a non-negative matrix has one sign (Perron): keep it whole
    W = cat([U[:, :1].abs() * S[:1].sqrt(), W[:, 1:]], 1)
    return where(finfo(matrix.dtype).eps > W, matrix.mean(), W)


SVD_METHODS = {"truncated_svd": truncated_svd, "randomized_svd": randomized_svd}


def svd_interface(op, matrix, n_eigenvecs, method, gen):
    """The SVD every decomposition calls, by name as in TensorLy (``svd=`` argument), on a
    Tensor or a raw array; ``n_eigenvecs`` is in ``[1, min(matrix.shape)]``."""
    if method == "truncated_svd":
        return _truncated_svd(matrix, n_eigenvecs)
    if method == "randomized_svd":
        return _randomized_svd(matrix, n_eigenvecs, random_state=gen)
    raise ValueError(f"{op}: svd must be one of {sorted(SVD_METHODS)}, got {method!r}")
