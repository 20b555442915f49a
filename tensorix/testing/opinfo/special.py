"""Registry entries for ops/special.py (gamma family, i0, sinc, incomplete gamma) and
ops/arith.py (addcmul/addcdiv, positive, conj_physical, resolve_*), ops/number.py (gcd/lcm,
ldexp/frexp, nextafter), the softmax family (ops/softmax.py) and the activations of
ops/activation.py that torch keeps in nn.functional (prelu, glu, threshold, softshrink,
hardshrink).

Samples keep away from the poles of the gamma family (the non-positive integers), where
finite differences are meaningless. NumPy has no gamma functions: ``lgamma`` and ``i0`` use
``math.lgamma`` / ``numpy.i0`` as references; digamma, polygamma and igamma compare with torch
only (and with mpmath in tests/test_api_completion.py).
"""

from __future__ import annotations

import math

import numpy as np

import tensorix as tx

from ..registry import OpInfo, Sample, register
from ._samples import away_from, uniform

FLOATS = (tx.float32, tx.float64)
LOWP = (tx.float32, tx.float64, tx.bfloat16, tx.float16)
COMPLEX = (tx.complex64, tx.complex128)
LOWP_TOL = {"bfloat16": (3e-2, 3e-2), "float16": (4e-3, 4e-3)}
_lgamma = np.vectorize(math.lgamma, otypes=[np.float64])


def _gamma_args(rng, shape):
    """Positive values and negative ones at least 0.15 from the poles."""
    x = rng.uniform(-3.0, 6.0, size=shape)
    frac = x - np.floor(x)
    near = (x <= 0.5) & ((frac < 0.15) | (frac > 0.85))
    return np.where(near, np.floor(x) + 0.5, np.where(np.abs(x) < 0.15, 0.4, x))


def _unary(gen, shapes=((3, 4), (5,), ()), **kw):
    def samples(rng, dtype):
        return [Sample((gen(rng, s),), dict(kw)) for s in shapes]
    return samples


def _polygamma_samples(rng, dtype):
    return [Sample((n, _gamma_args(rng, (3, 4)))) for n in (0, 1, 2, 3)] + \
        [Sample((1, rng.uniform(10.0, 40.0, size=(4,))))]


def _mvlgamma_samples(rng, dtype):
    return [Sample((rng.uniform(1.6, 5.0, size=(3, 4)),), {"p": 3}),
            Sample((rng.uniform(0.3, 4.0, size=(5,)),), {"p": 1})]


def _np_mvlgamma(x, p):
    return sum(_lgamma(x - j / 2) for j in range(p)) + p * (p - 1) / 4 * math.log(math.pi)


def _i0_samples(rng, dtype):
    return [Sample((uniform(rng, (3, 4), -6, 6),)), Sample((uniform(rng, (5,), -11, 11),)),
            Sample((np.array(0.7),))]


def _sinc_samples(rng, dtype):
    return [Sample((uniform(rng, (3, 4), -3, 3),)), Sample((np.array([0.0, 0.5, -1.5]),))]


def _igamma_samples(rng, dtype):
    a, x = rng.uniform(0.5, 5.0, size=(3, 4)), rng.uniform(0.1, 8.0, size=(3, 4))
    return [Sample((a, x), grad=(1,)),
            Sample((rng.uniform(0.5, 3.0, size=(4,)), np.array(2.5)), grad=(1,)),
            Sample((rng.uniform(0.5, 3.0, size=(2, 1)), rng.uniform(0.2, 5.0, size=(3,))),
                   grad=(1,))]


def _addc_samples(away=False):
    def gen(rng, shape):
        return away_from(rng, shape, (0.0,), 0.4) if away else uniform(rng, shape)

    def samples(rng, dtype):
        return [Sample((uniform(rng, (3, 4)), uniform(rng, (3, 4)), gen(rng, (3, 4)))),
                Sample((uniform(rng, (3, 1)), uniform(rng, (4,)), gen(rng, (3, 4))),
                       {"value": 0.5}),
                Sample((uniform(rng, ()), uniform(rng, (2, 3)), gen(rng, (3,))),
                       {"value": -2})]
    return samples


def _np_addcmul(x, a, b, value=1):
    if np.result_type(x, a, b).kind in "iu":  # torch truncates value for integral results
        value = int(value)
    return x + value * a * b


def _np_addcdiv(x, a, b, value=1):
    return x + value * a / b


def _int_pair(rng, dtype):
    a = rng.integers(-30, 30, size=(3, 4))
    b = rng.integers(-30, 30, size=(3, 4))
    return [Sample((a, b)), Sample((a, np.array(0))), Sample((np.array([0, 7, -12]),
                                                              np.array([0, 0, 18])))]


def _ldexp_samples(rng, dtype):
    # non-negative exponents: torch's ldexp gradient computes 2 ** other in integers, which
    # is 0 for negative ones (negative exponents are tested in tests/test_api_completion.py)
    return [Sample((uniform(rng, (3, 4)), rng.integers(0, 6, size=(3, 4)))),
            Sample((uniform(rng, (2, 3)), rng.integers(0, 4, size=(3,))))]


def _np_ldexp(x, e):
    return x * np.power(2.0, e)


def _frexp_samples(rng, dtype):
    return [Sample((uniform(rng, (3, 4), -100, 100),)),
            Sample((np.array([0.0, 1.0, -0.5, 8.0, 3e-3]),))]


def _nextafter_samples(rng, dtype):
    return [Sample((uniform(rng, (3, 4)), uniform(rng, (3, 4)))),
            Sample((np.array([1.0, 0.0, -2.0]), np.array([2.0, -1.0, -2.0])))]


def _np_softmax(x, dim):
    e = np.exp(x - x.max(dim, keepdims=True))
    return e / e.sum(dim, keepdims=True)


def _softmax_samples(rng, dtype):
    return [Sample((uniform(rng, (3, 4), -3, 3), 1)), Sample((uniform(rng, (2, 3, 2)), 0)),
            Sample((uniform(rng, (5,)), -1))]


def _prelu_samples(rng, dtype):
    x = away_from(rng, (2, 3, 4), (0.0,), 0.1)
    return [Sample((x, rng.uniform(0.05, 0.5, (3,)))), Sample((x, np.array([0.25]))),
            Sample((away_from(rng, (3,), (0.0,), 0.1), np.array([0.2])))]


def _np_prelu(x, w):
    if w.size > 1 and x.ndim >= 2:
        w = w.reshape((1, -1) + (1,) * (x.ndim - 2))
    return np.where(x > 0, x, w * x)


def _glu_samples(rng, dtype):
    return [Sample((uniform(rng, (3, 4)), -1)), Sample((uniform(rng, (4, 2, 3)), 0))]


def _np_glu(x, dim):
    a, b = np.split(x, 2, axis=dim)
    return a / (1 + np.exp(-b))


register(
    OpInfo("lgamma", _unary(_gamma_args), _lgamma, dtypes=LOWP, gradgrad=True, tol=LOWP_TOL),
    OpInfo("digamma", _unary(_gamma_args), None, dtypes=LOWP, gradgrad=True, tol=LOWP_TOL),
    OpInfo("polygamma", _polygamma_samples, None, gradgrad=True),
    OpInfo("mvlgamma", _mvlgamma_samples, _np_mvlgamma, gradgrad=True),
    OpInfo("i0", _i0_samples, np.i0, dtypes=LOWP, gradgrad=True, tol=LOWP_TOL),
    OpInfo("sinc", _sinc_samples, np.sinc, dtypes=FLOATS + COMPLEX, gradgrad=True),
    OpInfo("igamma", _igamma_samples, None, gradgrad=True),
    OpInfo("igammac", _igamma_samples, None, gradgrad=True),
    OpInfo("addcmul", _addc_samples(), _np_addcmul, gradgrad=True,
           dtypes=(tx.float32, tx.float64, tx.int64)),
    OpInfo("addcdiv", _addc_samples(away=True), _np_addcdiv, gradgrad=True),
    OpInfo("gcd", _int_pair, np.gcd, dtypes=(tx.int64,), grad=False),
    OpInfo("lcm", _int_pair, np.lcm, dtypes=(tx.int64,), grad=False),
    OpInfo("ldexp", _ldexp_samples, _np_ldexp),
    OpInfo("frexp", _frexp_samples, np.frexp, grad=False, dtypes=FLOATS + (tx.float16,)),
    OpInfo("nextafter", _nextafter_samples, np.nextafter, grad=False),
    OpInfo("positive", _unary(uniform), lambda x: x, dtypes=LOWP + (tx.int64,)),
    OpInfo("conj_physical", _unary(uniform), np.conj, dtypes=FLOATS + COMPLEX),
    OpInfo("resolve_conj", _unary(uniform), lambda x: x, dtypes=FLOATS + COMPLEX),
    OpInfo("resolve_neg", _unary(uniform), lambda x: x, dtypes=FLOATS + COMPLEX),
    OpInfo("softmax", _softmax_samples, _np_softmax, gradgrad=True),
    OpInfo("log_softmax", _softmax_samples, lambda x, d: np.log(_np_softmax(x, d)),
           gradgrad=True),
    OpInfo("hardshrink", _unary(lambda r, s: away_from(r, s, (-0.5, 0.5), 0.1)),
           lambda x: np.where(np.abs(x) > 0.5, x, 0.0), dtypes=LOWP),
    # activations that torch keeps in nn.functional only
    OpInfo("nn.functional.softmin", _softmax_samples, lambda x, d: _np_softmax(-x, d),
           gradgrad=True),
    OpInfo("nn.functional.prelu", _prelu_samples, _np_prelu, gradgrad=True),
    OpInfo("nn.functional.glu", _glu_samples, _np_glu, gradgrad=True),
    OpInfo("nn.functional.threshold", lambda r, d: [
        Sample((away_from(r, (3, 4), (0.5,), 0.1), 0.5, -2.0), grad=(0,))],
        lambda x, th, v: np.where(x > th, x, v)),
    OpInfo("nn.functional.softshrink", _unary(lambda r, s: away_from(r, s, (-0.5, 0.5), 0.1)),
           lambda x: np.where(x > 0.5, x - 0.5, np.where(x < -0.5, x + 0.5, 0.0))),
)
