"""Matrix products: matmul (batched, broadcasting, 1-d cases), mm, bmm, and the products built
on it (dot, vdot, inner, outer, tensordot, kron, mv, addmm/addmv/addr/baddbmm/addbmm, trace,
matrix_power, chain_matmul), plus top-level aliases of ``tensorix.linalg`` (det, inverse, ...).

Low-precision floats (fp16, bf16, fp8) multiply in float32 and round once at the end, like a
tensor core with fp32 accumulation (NumPy has no BLAS for them). Integer products accumulate in
int64 and refuse, with a clear error, a result that does not fit (NumPy's int8 @ int8 wraps).

Only ``MatMul`` is a primitive here; every other product is a composite of matmul, movement
and elementwise ops, so its gradients (of any order) come from theirs.
"""

from __future__ import annotations

import numpy as np

from .. import _threads, backend, kernels
from ..autograd.dispatch import NARROW, kernel
from ..autograd.function import Function
from ..tensor import Tensor, _make
from . import linalg_decomp as _decomp
from ._common import check_same_dtype, check_tensor, norm_dim, same_device
from .pointwise import where

__all__ = ["matmul", "mm", "bmm", "dot", "vdot", "inner", "outer", "ger", "tensordot", "kron",
           "mv", "addmm", "addmv", "addr", "baddbmm", "addbmm", "trace", "matrix_power",
           "chain_matmul", "det", "logdet", "slogdet", "inverse", "pinverse"]


def _int_matmul(a, b, dtype):
    xp = backend.array_module(a)
    # a float64 bound on |a| @ |b| tells whether int64 accumulation itself is exact
    bound = xp.abs(a.astype(np.float64)) @ xp.abs(b.astype(np.float64))
    if bound.size and float(bound.max()) > 2.0 ** 62:
        raise OverflowError(f"matmul(): integer product may overflow int64 accumulation "
                            f"(largest possible magnitude {float(bound.max()):.3g}); cast the "
                            "operands to a floating dtype first")
    out = a.astype(np.int64) @ b.astype(np.int64)
    info = np.iinfo(dtype.np)
    if out.size and (int(out.max()) > info.max or int(out.min()) < info.min):
        raise OverflowError(f"matmul(): integer product overflows {dtype.name} (result range "
                            f"[{int(out.min())}, {int(out.max())}], {dtype.name} holds "
                            f"[{info.min}, {info.max}]); cast the operands to a wider integer "
                            "or floating dtype first")
    return out.astype(dtype.np)


class MatMul(Function):
    _kernels = {"forward": (kernels.cuda.matmul,)}  # cuBLAS 16-bit, float32 accumulation

    @staticmethod
    def _gemm(matmul, a, b):
        """The product under a GEMM policy (autograd/dispatch.py): the policy's matmul."""
        return matmul(a, b)

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        d = a._dtype
        if d.category < 2:
            return _int_matmul(a._data, b._data, d)
        # by hand, not _widen16: the 16-bit arrays reach cuBLAS's 16-bit kernel (and a GEMM
        # policy sees the op's own dtype)
        if d in NARROW:
            fused = kernel(MatMul, "forward", a.device, d)
            if fused is not None:
                return fused(a._data, b._data)
            return _threads.matmul(a._data.astype(np.float32),
                                   b._data.astype(np.float32)).astype(d.np)
        return _threads.matmul(a._data, b._data)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        na, nb = ctx.needs_input_grad
        ga = g @ b.mT.conj() if na else None
        gb = a.mT.conj() @ g if nb else None
        return ga, gb


def matmul(input, other) -> Tensor:
    """Matrix product with NumPy/PyTorch semantics.

    Shapes: ``(..., n, k) @ (..., k, m) -> (..., n, m)`` with broadcast batch dims; a 1-d
    first operand is a row vector and a 1-d second operand a column vector, their added dim
    removed from the result; ``(k,) @ (k,)`` is a 0-d dot product.
    Example: ``tensorix.randn(8, 3, 4) @ tensorix.randn(4, 5)`` has shape ``(8, 3, 5)``.
    """
    return _matmul(input, other, "matmul")


def _matmul(a, b, op):
    """matmul, naming ``op`` (mm, dot, ...) in its errors. Operands of two dtypes are refused,
    as in torch (no promotion)."""
    check_tensor(a, op, "input")
    check_tensor(b, op, "other")
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(f"{op}(): both arguments need at least 1 dimension, got "
                           f"{a.ndim}D and {b.ndim}D tensors")
    check_same_dtype(op, ("input", a), ("other", b))
    if type(a._data) is not type(b._data):
        same_device(op, a, b)
    ka = a.shape[-1]
    kb = b.shape[-2] if b.ndim > 1 else b.shape[0]
    if ka != kb:
        raise RuntimeError(f"{op}(): mat1 and mat2 shapes cannot be multiplied "
                           f"({_desc(a)} and {_desc(b)})")
    if a.ndim == 1 and b.ndim == 1:
        return MatMul.apply(a.unsqueeze(0), b.unsqueeze(1)).reshape(())
    if a.ndim == 1:
        return MatMul.apply(a.unsqueeze(0), b).squeeze(-2)
    if b.ndim == 1:
        return MatMul.apply(a, b.unsqueeze(1)).squeeze(-1)
    try:
        np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        raise RuntimeError(f"{op}(): batch dimensions {list(a.shape[:-2])} and "
                           f"{list(b.shape[:-2])} are not broadcastable") from None
    return MatMul.apply(a, b)


def _desc(t):
    return "x".join(str(s) for s in t.shape)


def mm(input, mat2) -> Tensor:
    """Product of two 2-d matrices ``(n, k) @ (k, m)``."""
    if input.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError(f"mm(): expected 2D tensors, got {input.ndim}D and {mat2.ndim}D")
    return _matmul(input, mat2, "mm")


def bmm(input, mat2) -> Tensor:
    """Batched product of 3-d tensors ``(b, n, k) @ (b, k, m)`` (no broadcasting)."""
    if input.ndim != 3 or mat2.ndim != 3:
        raise RuntimeError(f"bmm(): expected 3D tensors, got {input.ndim}D and {mat2.ndim}D")
    if input.shape[0] != mat2.shape[0]:
        raise RuntimeError(f"bmm(): batch sizes differ: {input.shape[0]} and {mat2.shape[0]}")
    return _matmul(input, mat2, "bmm")


def _check_ndim(op, arg, t, nd):
    check_tensor(t, op, arg)
    if t.ndim != nd:
        raise RuntimeError(f"{op}(): argument '{arg}' must be a {nd}D tensor, got a {t.ndim}D "
                           f"tensor of shape {list(t.shape)}")


def dot(input, other) -> Tensor:
    """Dot product of two 1-d tensors of equal length; a 0-d result.

    Example: ``tensorix.dot(tensorix.tensor([1., 2.]), tensorix.tensor([3., 4.]))`` is
    ``tensor(11.)``.
    """
    check_tensor(input, "dot", "input")
    check_tensor(other, "dot", "other")
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"dot(): 1D tensors expected, but got {input.ndim}D and "
                           f"{other.ndim}D tensors")
    n, m = input.shape[0], other.shape[0]
    if n != m:
        raise RuntimeError(f"dot(): inconsistent tensor size, expected tensor [{n}] and src "
                           f"[{m}] to have the same number of elements, but got {n} and {m} "
                           "elements respectively")
    return _matmul(input, other, "dot")


def vdot(input, other) -> Tensor:
    """``dot(input.conj(), other)``: the first argument is conjugated (the same as ``dot`` for
    real tensors). Example: ``tensorix.vdot(x, x)`` is ``|x|^2`` for a complex vector."""
    check_tensor(input, "vdot", "input")
    if input.ndim != 1 or check_tensor(other, "vdot", "other").ndim != 1:
        raise RuntimeError(f"vdot(): 1D tensors expected, but got {input.ndim}D and "
                           f"{other.ndim}D tensors")
    return dot(input.conj() if input.is_complex() else input, other)


def inner(input, other) -> Tensor:
    """Inner product over the last dimension of both inputs (``a * b`` if either is 0-d).

    Shapes: ``(*a, k)`` and ``(*b, k)`` give ``(*a, *b)``.
    Example: ``tensorix.inner(tensorix.ones(2, 3), tensorix.ones(4, 3))`` has shape ``(2, 4)``.
    """
    check_tensor(input, "inner", "input")
    check_tensor(other, "inner", "other")
    if input.ndim == 0 or other.ndim == 0:
        return input * other
    check_same_dtype("inner", ("input", input), ("other", other))
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner(): the last dimension must match on both input tensors but "
                           f"got shapes {list(input.shape)} and {list(other.shape)}")
    return tensordot(input, other, ([input.ndim - 1], [other.ndim - 1]))


def outer(input, vec2) -> Tensor:
    """Outer product of two 1-d tensors: ``(n,)`` and ``(m,)`` give ``(n, m)``.

    Example: ``tensorix.outer(tensorix.arange(3.), tensorix.ones(2))`` has shape ``(3, 2)``.
    """
    _check_ndim("outer", "input", input, 1)
    _check_ndim("outer", "vec2", vec2, 1)
    return input.unsqueeze(-1) * vec2


def ger(input, vec2) -> Tensor:
    """Alias of :func:`outer`."""
    return outer(input, vec2)


def _tensordot_dims(a, b, dims):
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, (int, np.integer)) and not isinstance(dims, bool):
        if dims < 0:
            raise RuntimeError(f"tensordot(): expects dims >= 0, but got dims={dims}")
        if dims > a.ndim or dims > b.ndim:
            raise RuntimeError(f"tensordot(): dims={dims} exceeds the number of dimensions of "
                               f"the inputs ({a.ndim} and {b.ndim})")
        return list(range(a.ndim - dims, a.ndim)), list(range(dims))
    try:
        da, db = dims
    except (TypeError, ValueError):
        raise TypeError("tensordot(): argument 'dims' must be an int or a pair of lists of "
                        f"dimensions, got {dims!r}") from None
    da = [da] if isinstance(da, (int, np.integer)) else list(da)
    db = [db] if isinstance(db, (int, np.integer)) else list(db)
    if len(da) != len(db):
        raise RuntimeError(f"tensordot(): both dimension lists should have same length, got "
                           f"{len(da)} and {len(db)}")
    da = [norm_dim(d, a.ndim, "tensordot") for d in da]
    db = [norm_dim(d, b.ndim, "tensordot") for d in db]
    if len(set(da)) != len(da) or len(set(db)) != len(db):
        raise RuntimeError(f"tensordot(): a dimension appears twice in dims {dims!r}")
    return da, db


def tensordot(a, b, dims=2) -> Tensor:
    """Contract ``a`` and ``b`` over the given dimensions, as NumPy/PyTorch ``tensordot``.

    ``dims`` is an int ``d`` (the last ``d`` dims of ``a`` with the first ``d`` of ``b``) or a
    pair of lists ``([dims of a], [dims of b])``. The result's shape is ``a``'s free dims
    followed by ``b``'s free dims.
    Example: ``tensorix.tensordot(tensorix.ones(2, 3, 4), tensorix.ones(4, 3, 5),
    ([1, 2], [1, 0]))`` has shape ``(2, 5)``.
    """
    check_tensor(a, "tensordot", "a")
    check_tensor(b, "tensordot", "b")
    da, db = _tensordot_dims(a, b, dims)
    for i, j in zip(da, db):
        if a.shape[i] != b.shape[j]:
            raise RuntimeError(f"tensordot(): contracted dimensions need to match, but first "
                               f"has size {a.shape[i]} in dim {i} and second has size "
                               f"{b.shape[j]} in dim {j}")
    free_a = [i for i in range(a.ndim) if i not in da]
    free_b = [j for j in range(b.ndim) if j not in db]
    k = int(np.prod([a.shape[i] for i in da], dtype=np.int64))
    sa = [a.shape[i] for i in free_a]
    sb = [b.shape[j] for j in free_b]
    a2 = a.permute(*(free_a + da)).reshape(int(np.prod(sa, dtype=np.int64)), k)
    b2 = b.permute(*(db + free_b)).reshape(k, int(np.prod(sb, dtype=np.int64)))
    return _matmul(a2, b2, "tensordot").reshape(tuple(sa + sb))


def kron(input, other) -> Tensor:
    """Kronecker product: block ``(i, j, ...)`` of the result is ``input[i, j, ...] * other``.

    Shapes: inputs are left-padded with size-1 dims to equal rank; result dims are the
    products ``input.shape[d] * other.shape[d]``.
    Example: ``tensorix.kron(tensorix.eye(2), tensorix.ones(2, 2))`` has shape ``(4, 4)``.
    """
    check_tensor(input, "kron", "input")
    check_tensor(other, "kron", "other")
    nd = max(input.ndim, other.ndim)
    sa = (1,) * (nd - input.ndim) + tuple(input.shape)
    sb = (1,) * (nd - other.ndim) + tuple(other.shape)
    # interleave: a as (a0, 1, a1, 1, ...) times b as (1, b0, 1, b1, ...)
    a = input.reshape(tuple(x for s in sa for x in (s, 1)))
    b = other.reshape(tuple(x for s in sb for x in (1, s)))
    return (a * b).reshape(tuple(x * y for x, y in zip(sa, sb)))


def mv(input, vec) -> Tensor:
    """Matrix-vector product ``(n, m) @ (m,) -> (n,)``."""
    check_tensor(input, "mv", "input")
    check_tensor(vec, "mv", "vec")
    if input.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"mv(): vector + matrix @ vector expected, got {input.ndim}D "
                           f"matrix and {vec.ndim}D vector")
    return _matmul(input, vec, "mv")


def _scaled_sum(op, input, product, beta, alpha, promotes=False):
    """``beta * input + alpha * product`` with PyTorch's rules: ``input`` broadcasts to the
    product's shape, and ``beta == 0`` ignores it (its nan/inf do not propagate). ``input``
    must have the product's dtype unless the op ``promotes`` (addr, as in torch)."""
    check_tensor(input, op, "input")
    if not promotes:
        check_same_dtype(op, ("input", input), ("product", product))
    try:
        shape = np.broadcast_shapes(tuple(input.shape), tuple(product.shape))
    except ValueError:
        shape = None
    if shape != tuple(product.shape):
        raise RuntimeError(f"{op}(): input of shape {list(input.shape)} cannot be broadcast to "
                           f"the product's shape {list(product.shape)}")
    for name, v in (("beta", beta), ("alpha", alpha)):
        if isinstance(v, float) and not (input.is_floating_point() or input.is_complex()):
            raise RuntimeError(f"{op}(): for integral input tensors, argument {name} must not "
                               "be a floating point number")
    out = product if alpha == 1 else product * alpha
    if beta == 0:
        if input.requires_grad:  # a zero gradient for input, as PyTorch, without nan * 0
            xp = input.xp
            out = out + where(_make(xp.zeros(input._data.shape, dtype=bool)), input, 0)
        return out
    return (input if beta == 1 else input * beta) + out


def addmm(input, mat1, mat2, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)`` for 2-d ``mat1 (n, k)``, ``mat2 (k, m)``;
    ``input`` broadcasts to ``(n, m)``.

    Example: ``tensorix.addmm(bias, x, w)`` is a linear layer ``x @ w + bias``.
    """
    for arg, t in (("mat1", mat1), ("mat2", mat2)):
        _check_ndim("addmm", arg, t, 2)
    return _scaled_sum("addmm", input, _matmul(mat1, mat2, "addmm"), beta, alpha)


def addmv(input, mat, vec, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * (mat @ vec)`` for ``mat (n, m)``, ``vec (m,)``; ``input``
    broadcasts to ``(n,)``. Example: ``tensorix.addmv(b, A, x)``."""
    _check_ndim("addmv", "mat", mat, 2)
    _check_ndim("addmv", "vec", vec, 1)
    return _scaled_sum("addmv", input, _matmul(mat, vec, "addmv"), beta, alpha)


def addr(input, vec1, vec2, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * outer(vec1, vec2)``; ``input`` broadcasts to ``(n, m)``.
    Example: a rank-one update ``tensorix.addr(A, u, v)``."""
    return _scaled_sum("addr", input, outer(vec1, vec2), beta, alpha, promotes=True)


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * bmm(batch1, batch2)`` for ``(b, n, k)`` and ``(b, k, m)``;
    ``input`` broadcasts to ``(b, n, m)``. Example: attention scores plus a mask."""
    return _scaled_sum("baddbmm", input, bmm(batch1, batch2), beta, alpha)


def addbmm(input, batch1, batch2, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * sum_b(batch1[b] @ batch2[b])``: the batch of products is
    summed to one ``(n, m)`` matrix. Example: ``tensorix.addbmm(C, A, B)``."""
    return _scaled_sum("addbmm", input, bmm(batch1, batch2).sum(0), beta, alpha)


def trace(input) -> Tensor:
    """Sum of the main diagonal of a 2-d tensor (integers sum in int64, as ``sum``).

    Example: ``tensorix.trace(tensorix.eye(3))`` is ``tensor(3.)``.
    """
    check_tensor(input, "trace")
    if input.ndim != 2:
        raise RuntimeError(f"trace(): expected a matrix, but got tensor with dim {input.ndim}")
    return _decomp.diagonal_of(input).sum()


def matrix_power(input, n) -> Tensor:
    """``input`` multiplied by itself ``n`` times, for batches of square matrices
    ``(..., k, k)``: ``n == 0`` gives the identity, ``n < 0`` powers the inverse.
    Uses repeated squaring (about ``2 log2 n`` products).

    Example: ``tensorix.matrix_power(A, 3)`` equals ``A @ A @ A``.
    """
    op = "linalg.matrix_power"
    check_tensor(input, op, "A")
    if input.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor A must have at least 2 dimensions.")
    if input.shape[-1] != input.shape[-2]:
        raise RuntimeError(f"{op}: A must be batches of square matrices, but they are "
                           f"{input.shape[-2]} by {input.shape[-1]} matrices")
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        raise TypeError(f"{op}: argument 'n' must be an int, not {type(n).__name__}")
    if n == 0:
        xp = input.xp
        eye = xp.eye(input.shape[-1], dtype=input._data.dtype)
        return _make(xp.broadcast_to(eye, input._data.shape).copy(), input._dtype)
    base = input
    if n < 0:
        base, n = _decomp.inv(input), -int(n)
    result = None
    while n:
        if n & 1:
            result = base if result is None else result @ base
        n >>= 1
        if n:
            base = base @ base
    return result


def _chain_order(dims):
    """Optimal parenthesisation of a matrix chain (dims[i] x dims[i+1] matrices): the classic
    O(n^3) dynamic programme, returning split[i][j] for the product of matrices i..j."""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def _chain_product(mats, split, i, j):
    if i == j:
        return mats[i]
    k = split[i][j]
    return matmul(_chain_product(mats, split, i, k), _chain_product(mats, split, k + 1, j))


def multi_dot(tensors) -> Tensor:
    """Product of a chain of matrices in the cheapest order (by flop count).

    The first tensor may be 1-d (a row vector) and the last 1-d (a column vector); all others
    are 2-d. Example: ``tensorix.linalg.multi_dot([A, B, C])`` equals ``A @ B @ C``.
    """
    op = "multi_dot"
    tensors = list(tensors)
    if len(tensors) < 2:
        raise RuntimeError(f"{op}(): expected at least 2 tensors but got {len(tensors)}")
    for i, t in enumerate(tensors):
        check_tensor(t, op, f"tensors[{i}]")
        ok = t.ndim == 2 or (t.ndim == 1 and i in (0, len(tensors) - 1))
        if not ok:
            where = "the first and last" if t.ndim == 1 else "every"
            raise RuntimeError(f"{op}(): tensor {i} must be 2D (1D allowed only for {where} "
                               f"tensor), but got {t.ndim}D")
    check_same_dtype(op, *((f"tensors[{i}]", t) for i, t in enumerate(tensors)))
    first_vec, last_vec = tensors[0].ndim == 1, tensors[-1].ndim == 1
    mats = list(tensors)
    if first_vec:
        mats[0] = mats[0].unsqueeze(0)
    if last_vec:
        mats[-1] = mats[-1].unsqueeze(-1)
    for i in range(len(mats) - 1):
        if mats[i].shape[1] != mats[i + 1].shape[0]:
            raise RuntimeError(f"{op}(): tensors {i} and {i + 1} with shapes "
                               f"{list(tensors[i].shape)} and {list(tensors[i + 1].shape)} "
                               "cannot be multiplied")
    dims = [m.shape[0] for m in mats] + [mats[-1].shape[1]]
    out = _chain_product(mats, _chain_order(dims), 0, len(mats) - 1)
    if first_vec:
        out = out.squeeze(0)
    if last_vec:
        out = out.squeeze(-1)
    return out


def chain_matmul(*matrices) -> Tensor:
    """Product of 2-d matrices in the cheapest order (``linalg.multi_dot`` of 2-d inputs).
    Example: ``tensorix.chain_matmul(A, B, C)``."""
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    for i, m in enumerate(matrices):
        if check_tensor(m, "chain_matmul", f"matrices[{i}]").ndim != 2:
            raise RuntimeError(f"chain_matmul(): Tensor dimension is {m.ndim}, expected 2 "
                               "instead.")
    if len(matrices) == 1:
        return matrices[0].clone()
    return multi_dot(matrices)


det = _decomp.det
logdet = _decomp.logdet
slogdet = _decomp.slogdet
inverse = _decomp.inv


def pinverse(input, rcond=1e-15) -> Tensor:
    """Pseudo-inverse with singular values below ``rcond * max(S)`` treated as zero
    (``tensorix.linalg.pinv(input, rtol=rcond)``)."""
    return _decomp.pinv(input, rtol=rcond)


def _methods():
    from .inplace import make

    m = {"matmul": matmul, "mm": mm, "bmm": bmm, "__matmul__": matmul,
         "__rmatmul__": lambda self, other: matmul(other, self)}
    for fn in (dot, vdot, inner, outer, ger, kron, mv, addmm, addmv, addr, baddbmm, addbmm,
               trace, matrix_power, det, logdet, slogdet, pinverse):
        m[fn.__name__] = fn
    m["inverse"] = inverse
    for fn in (addmm, addmv, addr, baddbmm, addbmm):
        m[fn.__name__ + "_"] = make(fn)
    return m


TENSOR_METHODS = _methods()
