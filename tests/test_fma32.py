"""The float32 fused multiply-add of ``_math32``'s bodies: ``_fma32.fma32`` (NumPy, no fma
instruction) against exact rational arithmetic and against the CPU's instruction (numba's
``_jit_13gelu.fma``), on random and adversarial triples (ties, cancellation, subnormal
results, overflow, inf and nan)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from tensorix.kernels._fma32 import fma32


def _exact(a, b, c):
    """a * b + c rounded once to float32, from exact rationals: the nearest float32 of the
    rational, ties to even, found among the float32 neighbours of its float64 rounding
    (which is within one float32 ulp of it); overflow to +-inf past the rounding boundary."""
    a, b, c = (np.float32(v) for v in (a, b, c))
    if not (np.isfinite(a) and np.isfinite(b) and np.isfinite(c)):
        return np.float32(np.float64(a) * np.float64(b) + np.float64(c))
    v = Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))
    limit = Fraction(float(np.finfo(np.float32).max)) + Fraction(2) ** 103  # max + ulp / 2
    if abs(v) >= limit:
        return np.float32(np.inf if v > 0 else -np.inf)
    guess = np.float32(float(v))
    best = None
    for cand in (np.nextafter(guess, np.float32(-np.inf)), guess,
                 np.nextafter(guess, np.float32(np.inf))):
        if not np.isfinite(cand):
            continue
        d = abs(Fraction(float(cand)) - v)
        even = (int(np.asarray(cand).view(np.int32)) & 1) == 0
        if best is None or d < best[0] or (d == best[0] and even):
            best = (d, cand)
    if v != 0 or best[1] != 0:
        return best[1]  # a zero rounded from a tiny v has v's sign (guess's)
    # an exact zero: -0 only for (-0) + (-0) (IEEE's sum of zeros; a cancellation gives +0)
    neg = (a == 0 or b == 0) and c == 0 and np.signbit(a) != np.signbit(b) and np.signbit(c)
    return np.float32(-0.0) if neg else np.float32(0.0)


def _triples(rng, n):
    """Random triples of every scale, and adversarial ones: c = -round(a b) (the result is
    the product's rounding error, exactly), products on a float32 midpoint nudged by a tiny c,
    subnormal products, results near float32's max."""
    def f32(bits):
        return np.asarray(bits, np.uint32).view(np.float32)

    a = f32(rng.integers(0, 2 ** 32, n, dtype=np.uint64))
    b = f32(rng.integers(0, 2 ** 32, n, dtype=np.uint64))
    c = f32(rng.integers(0, 2 ** 32, n, dtype=np.uint64))
    m = rng.standard_normal((3, n)).astype(np.float32)
    cancel = -(m[0] * m[1])  # the product rounded: a b + c is its rounding error
    # (1 + i 2^-12)(1 + j 2^-12) with i, j odd is a float32 midpoint (ij 2^-24 on a 2^-23
    # grid); a c far below float64's half ulp makes float64 round onto it: a double rounding
    tie_a, tie_b = ((1 + (2 * rng.integers(0, 2 ** 10, n) + 1) * 2.0 ** -12).astype(np.float32)
                    for _ in range(2))
    tie_c = (np.ldexp(1.0, rng.integers(-62, -56, n)) * rng.choice([-1, 1], n)).astype(
        np.float32)
    sub = (m[:2] * np.float32(2.0 ** -70)).astype(np.float32)
    big = np.full(n, np.float32(2.0 ** 64), np.float32)
    big_c = np.full(n, np.finfo(np.float32).max, np.float32) * np.sign(m[2]).astype(np.float32)
    special = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 1.0, 1e-45, -1e-45], np.float32)
    sa, sb, sc = (x.ravel() for x in np.meshgrid(special, special, special))
    return (np.concatenate(x) for x in (
        (a, m[0], m[0], tie_a, sub[0], big, m[0] * big, sa),
        (b, m[1], m[1], tie_b, sub[1], big, big, sb),
        (c, m[2], cancel, tie_c, m[2] * np.float32(2.0 ** -140), -big_c, big_c, sc)))


def test_numpy_fma_is_the_exactly_rounded_value():
    a, b, c = _triples(np.random.default_rng(0), 400)
    with np.errstate(all="ignore"):
        got = fma32(a, b, c)
        want = np.array([_exact(*t) for t in zip(a, b, c)], np.float32)
    np.testing.assert_array_equal(got.view(np.int32)[~np.isnan(want)],
                                  want.view(np.int32)[~np.isnan(want)])
    assert np.array_equal(np.isnan(got), np.isnan(want))
    # the triples reach the exact path: a plain float64 sum rounded to float32 (twice
    # rounded) misses on some of them
    with np.errstate(all="ignore"):
        naive = (np.multiply(a, b, dtype=np.float64) + c.astype(np.float64)).astype(np.float32)
    fin = np.isfinite(want)
    assert np.any(naive.view(np.int32)[fin] != want.view(np.int32)[fin])
    # it is a real fma: the unfused form differs on the cancelling triples
    m = np.random.default_rng(0).standard_normal((2, 100)).astype(np.float32)
    assert np.any(fma32(m[0], m[1], -(m[0] * m[1])) != 0)
    assert fma32(np.float32(0.1), np.float32(10), np.float32(-1)) == np.float32(2.0 ** -26)


def test_numpy_fma_matches_the_cpu_instruction():
    pytest.importorskip("numba")
    import numba

    from tensorix.kernels._jit_13gelu import fma

    @numba.njit
    def loop(out, a, b, c):
        for i in range(a.shape[0]):
            out[i] = fma(a[i], b[i], c[i])

    a, b, c = _triples(np.random.default_rng(1), 20000)
    out = np.empty_like(a)
    loop(out, a, b, c)
    with np.errstate(all="ignore"):
        got = fma32(a, b, c)
    ok = ~np.isnan(out)
    np.testing.assert_array_equal(got.view(np.int32)[ok], out.view(np.int32)[ok])
    assert np.array_equal(np.isnan(got), ~ok)
