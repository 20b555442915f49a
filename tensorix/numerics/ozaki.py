"""FP64 GEMM from exact int8 products: the Ozaki schemes (spec section 5).

* **Scheme I** (Ozaki-Ogita-Oishi-Rump 2012; ozIMMU): scale each row of A (column of B) by a
  power of two so it lies in (-1, 1), cut it error-free into ``slices`` int8 slices of 7 bits
  (``R <- 128 R; A_s = trunc(R); R <- R - A_s``), multiply slice pairs exactly, and recombine
  ``C = 2^e [sum 2^(-7(s+t+2)) A_s B_t] 2^f`` from the smallest terms up. The triangular
  schedule keeps ``s + t <= S - 1`` (S(S+1)/2 GEMMs), the full one all S^2.
* **Scheme II** (Ozaki-Uchino-Imamura 2025; GEMMul8): scale A and B to integers A', B' with
  ``sum |A'||B'| < P/2`` (P the product of ``moduli`` pairwise-coprime moduli <= 256), take
  symmetric residues (they fit int8), do one exact GEMM per modulus, and rebuild ``A'B'`` by the
  Chinese remainder theorem. ``crt="dd"`` does that with Garner's mixed-radix digits and a
  double-double Horner sum (vectorised, either backend); ``crt="exact"`` with Python integers
  (the reference).

The exact products run as ``backend_gemm`` = ``"f64"`` (a float64 GEMM of int8-valued data, exact
while ``k * 127^2 < 2^53``; NumPy has no int8 BLAS), ``"f32"`` (float32 GEMMs on k-chunks of
<= 1024, exact) or ``"int8"`` (int32 accumulation; never int8 @ int8, which wraps): both are
``tensorix.quant.int_mm``'s routes, the library's one exact int8 GEMM. Complex
inputs become two real GEMMs on ``[Ar, -Ai] @ [Br; Bi]`` and ``[Ar, Ai] @ [Bi; Br]``.

Example::

    >>> A = np.array([[3, -1.5], [0.25, 2]]); B = np.array([[1, 0.5], [-2, 4]])
    >>> ozaki_gemm(A, B, scheme="II", moduli=3)
    array([[ 6.   , -4.5  ],
           [-3.75 ,  8.125]])
"""

from __future__ import annotations

import math

import numpy as np

from ..autograd.function import Function
from ..tensor import Tensor, _make
from ._xp import raw, untraced, xp_of

__all__ = ["ozaki_gemm", "ozaki_moduli", "exact_matmul", "componentwise_error"]


# -- shared helpers ------------------------------------------------------------------------
def _row_exponents(A, axis):
    """e with max|A| * 2^-e < 1 along ``axis`` (0 for all-zero lines), from frexp (R7)."""
    xp = xp_of(A)
    amax = xp.abs(A).max(axis=axis)
    e = xp.frexp(amax)[1].astype(np.int64)
    return xp.where(amax == 0, 0, e)


def _gemm(a, b, backend):
    """Exact product of int-valued float64 matrices with |entries| <= 128."""
    if backend == "f64":
        return a @ b
    if backend in ("f32", "int8"):
        # the one exact int8 GEMM of the library (tensorix.quant.int_mm): "int8" its fastest
        # route (the compiled kernel where numba runs), "f32" its float32 K-chunk route
        from ..quant import kernels

        a8, b8 = a.astype(np.int8), b.astype(np.int8)  # the int8 operands of an IMMA GEMM
        if backend == "f32":  # chunk sums in float64: exact for k < 2^38, as "f64"
            return kernels._blas(a8, b8, np.float64)
        return kernels._int_mm_raw(a8, b8).astype(np.float64)
    raise ValueError(f"ozaki_gemm(): argument 'backend_gemm' must be 'f64', 'f32' or 'int8', "
                     f"got {backend!r}")


def _check(A, B, k_limit):
    if A.ndim != 2 or B.ndim != 2:
        raise ValueError(f"ozaki_gemm(): expected 2-d matrices, got {A.ndim}-d and {B.ndim}-d")
    if A.shape[1] != B.shape[0]:
        raise ValueError(f"ozaki_gemm(): shapes {tuple(A.shape)} and {tuple(B.shape)} cannot be "
                         "multiplied")
    if A.shape[1] >= k_limit:
        raise ValueError(f"ozaki_gemm(): k = {A.shape[1]} is too large for exact int8 products "
                         f"(k < {k_limit})")
    xp = xp_of(A)
    if not (bool(xp.isfinite(A).all()) and bool(xp.isfinite(B).all())):
        raise ValueError("ozaki_gemm(): inputs must be finite")


# -- scheme I --------------------------------------------------------------------------------
def _slices(R, S):
    """S error-free 7-bit slices of R in (-1, 1): every step is exact in float64."""
    xp = xp_of(R)
    out = []
    for _ in range(S):
        R = R * 128.0
        sl = xp.trunc(R)
        R = R - sl
        out.append(sl)
    return out


def _ozaki1(A, B, S, backend, schedule):
    xp = xp_of(A)
    e = _row_exponents(A, 1)
    f = _row_exponents(B, 0)
    As = _slices(A * xp.ldexp(1.0, -e)[:, None], S)
    Bs = _slices(B * xp.ldexp(1.0, -f)[None, :], S)
    gmax = S - 1 if schedule == "triangular" else 2 * S - 2
    groups = [None] * (gmax + 1)
    for s in range(S):
        for t in range(S):
            if s + t > gmax:
                continue
            p = _gemm(As[s], Bs[t], backend)
            groups[s + t] = p if groups[s + t] is None else groups[s + t] + p  # exact ints
    C = xp.zeros((A.shape[0], B.shape[1]), dtype=np.float64)
    for g in range(gmax, -1, -1):  # smallest terms first
        C = C + groups[g] * 2.0 ** (-7 * (g + 2))
    return C * xp.ldexp(1.0, e)[:, None] * xp.ldexp(1.0, f)[None, :]


# -- scheme II --------------------------------------------------------------------------------
def ozaki_moduli(n: int) -> list:
    """The first ``n`` pairwise-coprime moduli <= 256, greedily from 256 down (spec 5.2:
    256, 255, 253, 251, 247, 241, ...)."""
    out = []
    c = 256
    while len(out) < n and c > 1:
        if all(math.gcd(c, p) == 1 for p in out):
            out.append(c)
        c -= 1
    if len(out) < n:
        raise ValueError(f"ozaki_moduli(): only {len(out)} pairwise-coprime moduli <= 256")
    return out


def _sym_mod(x, p):
    """Symmetric residue of integer-valued floats: [-128, 127] for 256, [-(p-1)/2, (p-1)/2]."""
    xp = xp_of(x)
    r = xp.fmod(x, float(p))  # exact
    hi = (p - 1) // 2 if p % 2 else p // 2 - 1
    r = xp.where(r > hi, r - p, r)
    return xp.where(r < -(p // 2), r + p, r)


def _two_sum(a, b):
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _garner_dd(residues, moduli):
    """Mixed-radix (Garner) digits with symmetric ranges, then a double-double Horner sum:
    x = v0 + p0 (v1 + p1 (v2 + ...)), |x| < P/2. Returns (hi, lo)."""
    xp = xp_of(residues[0])
    digits = []
    for l, p in enumerate(moduli):
        t = residues[l].astype(np.int64)
        for j in range(l):
            inv = pow(moduli[j] % p, -1, p)
            t = ((t - digits[j]) % p) * inv % p
        t = t % p
        hi = (p - 1) // 2 if p % 2 else p // 2 - 1
        digits.append(xp.where(t > hi, t - p, t))
    hi = digits[-1].astype(np.float64)
    lo = xp.zeros_like(hi)
    for l in range(len(moduli) - 2, -1, -1):
        p = float(moduli[l])
        c = hi * 257.0  # Veltkamp split: a1 has <= 45 bits, so p * a1 and p * a2 are exact
        a1 = c - (c - hi)
        a2 = hi - a1
        s, e = _two_sum(p * a1, p * a2)
        s, e2 = _two_sum(s, digits[l].astype(np.float64))
        e = e + e2 + p * lo
        hi, lo = _two_sum(s, e)
    return hi, lo


def _crt_exact(residues, moduli, shape):
    P = math.prod(moduli)
    coef = [(P // p) * pow(P // p, -1, p) for p in moduli]
    res = [np.asarray(_host(r)).astype(np.int64).tolist() for r in residues]
    out = np.empty(shape, dtype=object)
    for i in range(shape[0]):
        for j in range(shape[1]):
            v = sum(c * rl[i][j] for c, rl in zip(coef, res)) % P
            out[i, j] = v - P if v > P // 2 else v
    return out


def _host(a):
    return a.get() if hasattr(a, "get") else a


def _ozaki2(A, B, N, backend, crt):
    xp = xp_of(A)
    moduli = ozaki_moduli(N)
    P = math.prod(moduli)
    k = A.shape[1]
    budget = math.floor(math.log2(P)) - 2 - math.ceil(math.log2(max(k, 1)))
    a_bits = budget // 2
    b_bits = budget - a_bits
    mu = a_bits - _row_exponents(A, 1)
    nu = b_bits - _row_exponents(B, 0)
    Ai = xp.trunc(A * xp.ldexp(1.0, mu)[:, None])  # |A'| < 2^a, exact power-of-two scaling
    Bi = xp.trunc(B * xp.ldexp(1.0, nu)[None, :])
    residues = []
    for p in moduli:
        c = _gemm(_sym_mod(Ai, p), _sym_mod(Bi, p), backend)
        residues.append(xp.fmod(c, float(p)))
    scale_e = -(mu[:, None] + nu[None, :])
    if crt == "exact":
        ints = _crt_exact(residues, moduli, (A.shape[0], B.shape[1]))
        se = _host(scale_e)
        out = np.array([[math.ldexp(float(ints[i, j]), int(se[i, j]))
                         for j in range(ints.shape[1])] for i in range(ints.shape[0])])
        return xp.asarray(out)
    if crt != "dd":
        raise ValueError(f"ozaki_gemm(): argument 'crt' must be 'dd' or 'exact', got {crt!r}")
    hi, lo = _garner_dd(residues, moduli)
    return xp.ldexp(hi + lo, scale_e.astype(np.int32))


# -- public ------------------------------------------------------------------------------------
def ozaki_gemm(A, B, scheme="I", slices=8, moduli=15, backend_gemm="f64",
               schedule="triangular", crt="dd"):
    """``A @ B`` in float64 from exact int8 GEMMs (module docstring).

    ``A``: ``(n, k)``, ``B``: ``(k, m)``, real or complex (Tensors or arrays; the result has the
    same kind, float64/complex128). ``scheme="I"`` uses ``slices`` int8 slices per operand and
    ``schedule`` ``"triangular"`` or ``"full"``; ``scheme="II"`` uses ``moduli`` CRT moduli.
    Accuracy is componentwise relative to ``|A||B|``: about 3e-16 needs S = 8 or N = 15.
    """
    if isinstance(A, Tensor):
        return OzakiGemm.apply(A, B, scheme, slices, moduli, backend_gemm, schedule, crt)
    a, b = raw(A), raw(B)
    if a.dtype.kind == "c" or b.dtype.kind == "c":  # not np.iscomplexobj: device arrays too
        xp = xp_of(a)
        a, b = a.astype(np.complex128), b.astype(np.complex128)
        kw = dict(scheme=scheme, slices=slices, moduli=moduli, backend_gemm=backend_gemm,
                  schedule=schedule, crt=crt)
        re = ozaki_gemm(xp.concatenate([a.real, -a.imag], 1), xp.concatenate([b.real, b.imag]),
                        **kw)
        im = ozaki_gemm(xp.concatenate([a.real, a.imag], 1), xp.concatenate([b.imag, b.real]),
                        **kw)
        return re + 1j * im
    a, b = a.astype(np.float64), b.astype(np.float64)
    if scheme == "I":
        if schedule not in ("triangular", "full"):
            raise ValueError(f"ozaki_gemm(): argument 'schedule' must be 'triangular' or "
                             f"'full', got {schedule!r}")
        if not 1 <= int(slices) <= 12:
            raise ValueError(f"ozaki_gemm(): argument 'slices' must be in [1, 12], got {slices}")
        _check(a, b, 2**17 if backend_gemm == "int8" else 2**38)
        out = _ozaki1(a, b, int(slices), backend_gemm, schedule)
    elif scheme == "II":
        if not 2 <= int(moduli) <= 40:
            raise ValueError(f"ozaki_gemm(): argument 'moduli' must be in [2, 40], got {moduli}")
        _check(a, b, 2**17 if backend_gemm == "int8" else 2**38)
        out = _ozaki2(a, b, int(moduli), backend_gemm, crt)
    else:
        raise ValueError(f"ozaki_gemm(): argument 'scheme' must be 'I' or 'II', got {scheme!r}")
    return out


class OzakiGemm(Function):
    """ozaki_gemm on Tensors: a primitive (no gradient), so a compiled call multiplies the
    matrices it is given (a wrapped raw array was the example's product to a trace)."""

    _differentiable = False

    @staticmethod
    def forward(ctx, a, b, scheme, slices, moduli, backend_gemm, schedule, crt):
        return _make(ozaki_gemm(raw(a), raw(b), scheme, slices, moduli, backend_gemm, schedule,
                                crt))


def _to_ints(M, axis):
    """M = I * 2^s with I exact Python ints per row (axis=1) or column (axis=0)."""
    M = np.asarray(_host(M), dtype=np.float64)
    e = np.frexp(np.abs(M))[1]
    lo = np.where(M != 0, e - 53, 10**6).min(axis=axis)
    lo = np.where(lo == 10**6, 0, lo)
    scale = lo[:, None] if axis == 1 else lo[None, :]
    ints = np.vectorize(lambda v, s: int(math.ldexp(v, -s)), otypes=[object])(M, scale)
    return ints, lo


def exact_matmul(A, B):
    """``A @ B`` computed exactly (Python integers) and rounded once to float64: the reference
    for accuracy studies. For small matrices only (it is pure Python). Returns a NumPy
    array, also for Tensors (a trace breaks the graph here: the array is no graph value)."""
    untraced("exact_matmul", A, B)
    a = np.asarray(_host(raw(A)), dtype=np.float64)
    b = np.asarray(_host(raw(B)), dtype=np.float64)
    ai, ea = _to_ints(a, 1)
    bi, eb = _to_ints(b, 0)
    prod = ai.dot(bi)
    out = np.empty(prod.shape)
    for i in range(prod.shape[0]):
        for j in range(prod.shape[1]):
            out[i, j] = math.ldexp(float(prod[i, j]), int(ea[i] + eb[j]))
    return out


def componentwise_error(C, A, B, exact=None) -> float:
    """``max_ij |C - AB|_ij / (|A||B|)_ij`` against the exact product (spec 5.3 metric)."""
    untraced("componentwise_error", C, A, B, exact)  # a Python float of the data
    a = np.asarray(_host(raw(A)), dtype=np.float64)
    b = np.asarray(_host(raw(B)), dtype=np.float64)
    c = np.asarray(_host(raw(C)))
    ref = exact_matmul(a, b) if exact is None else exact
    denom = np.abs(a) @ np.abs(b)
    err = np.abs(c - ref)
    return float(np.max(np.where(denom > 0, err / np.where(denom > 0, denom, 1), err)))
