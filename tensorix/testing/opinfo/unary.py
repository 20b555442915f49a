"""Registry entries for ops/unary.py (unary math) and ops/activation.py (activations)."""

from __future__ import annotations

import math

import numpy as np

import tensorix as tx

from ..registry import OpInfo, Sample, register
from ._samples import away_from, positive, unary, uniform

FLOATS = (tx.float32, tx.float64)
LOWP = (tx.float32, tx.float64, tx.bfloat16, tx.float16)
COMPLEX = (tx.complex64, tx.complex128)


def _between(low, high):
    return lambda rng, shape: rng.uniform(low, high, size=shape)


def _kinks(*points, margin=0.1, low=-4.0, high=4.0):
    return lambda rng, shape: away_from(rng, shape, points, margin, low, high)


def _scaled(k):
    return lambda rng, shape: np.asarray(uniform(rng, shape) * k)  # 0-d stays an array


def _complex(rng, shape):
    return np.asarray(uniform(rng, shape) + 1j * uniform(rng, shape))


_erf = np.vectorize(math.erf, otypes=[np.float64])  # test reference only
_erfc = np.vectorize(math.erfc, otypes=[np.float64])


def _np_sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _np_softplus(x, beta=1.0, threshold=20.0):
    return np.where(x * beta > threshold, x, np.log1p(np.exp(beta * x)) / beta)


def _np_elu(x, alpha=1.0):
    return np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0)))


def _np_gelu(x, approximate="none"):
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + _erf(x / math.sqrt(2)))


def _np_round(x, decimals=0):
    return np.round(x, decimals)


def _round_samples(rng, dtype):
    x = uniform(rng, (3, 4)) * 50
    return [Sample((x,)), Sample((x,), {"decimals": 1}), Sample((x,), {"decimals": -1})]


def _kw(gen, shapes=((3, 4), (5,)), **kwargs):
    def samples(rng, dtype):
        return [Sample((gen(rng, s),), dict(kwargs)) for s in shapes]
    return samples


def _gelu_samples(rng, dtype):
    x = uniform(rng, (3, 4)) * 2
    return [Sample((x,)), Sample((x,), {"approximate": "tanh"}), Sample((uniform(rng, ()),))]


def _softplus_samples(rng, dtype):
    x = uniform(rng, (3, 4)) * 3
    return [Sample((x,)), Sample((x,), {"beta": 2.0, "threshold": 3.0}),
            Sample((np.array([25.0, -30.0, 0.0]),), name="threshold ")]


def _logit_samples(rng, dtype):
    p = rng.uniform(0.05, 0.95, size=(3, 4))
    edge = np.array([0.02, 0.3, 0.97])
    return [Sample((p,)), Sample((edge,), {"eps": 0.05})]


def _np_logit(x, eps=None):
    if eps is not None:
        x = np.clip(x, eps, 1 - eps)
    return np.log(x / (1 - x))


SELU = (1.6732632423543772848170429916717, 1.0507009873554804934193349852946)
TANH_KINKS = _kinks(-1.0, 1.0)
ACT_TOL = {"bfloat16": (3e-2, 3e-2), "float16": (4e-3, 4e-3)}

register(
    OpInfo("abs", unary(_kinks(0.0)), np.abs, dtypes=LOWP, aliases=("absolute",)),
    OpInfo("sqrt", unary(positive), np.sqrt, dtypes=LOWP, gradgrad=True),
    OpInfo("rsqrt", unary(positive), lambda x: 1 / np.sqrt(x), dtypes=LOWP, gradgrad=True),
    OpInfo("square", unary(), np.square, dtypes=LOWP + (tx.int64,), gradgrad=True),
    OpInfo("reciprocal", unary(_kinks(0.0, margin=0.3)), np.reciprocal, dtypes=LOWP,
           gradgrad=True),
    OpInfo("tanh", unary(), np.tanh, dtypes=LOWP, gradgrad=True, bits16=True),
    OpInfo("relu", unary(_kinks(0.0)), lambda x: np.maximum(x, 0), dtypes=LOWP),
    OpInfo("conj", unary(), np.conj, dtypes=FLOATS + COMPLEX, torch="conj_physical"),
    OpInfo("exp2", unary(), np.exp2, dtypes=LOWP),
    OpInfo("expm1", unary(), np.expm1, dtypes=LOWP, gradgrad=True),
    OpInfo("log2", unary(positive), np.log2, dtypes=LOWP),
    OpInfo("log10", unary(positive), np.log10, dtypes=LOWP),
    OpInfo("log1p", unary(_between(-0.8, 3.0)), np.log1p, dtypes=LOWP, gradgrad=True),
    OpInfo("sin", unary(), np.sin, dtypes=LOWP, gradgrad=True),
    OpInfo("cos", unary(), np.cos, dtypes=LOWP, gradgrad=True),
    OpInfo("tan", unary(_between(-1.2, 1.2)), np.tan, dtypes=LOWP, gradgrad=True),
    OpInfo("asin", unary(_between(-0.9, 0.9)), np.arcsin, dtypes=LOWP, aliases=("arcsin",),
           gradgrad=True),
    OpInfo("acos", unary(_between(-0.9, 0.9)), np.arccos, dtypes=LOWP, aliases=("arccos",)),
    OpInfo("atan", unary(), np.arctan, dtypes=LOWP, aliases=("arctan",), gradgrad=True),
    OpInfo("sinh", unary(), np.sinh, dtypes=LOWP),
    OpInfo("cosh", unary(), np.cosh, dtypes=LOWP),
    OpInfo("asinh", unary(), np.arcsinh, dtypes=LOWP, aliases=("arcsinh",)),
    OpInfo("acosh", unary(_between(1.2, 4.0)), np.arccosh, dtypes=LOWP, aliases=("arccosh",)),
    OpInfo("atanh", unary(_between(-0.9, 0.9)), np.arctanh, dtypes=LOWP, aliases=("arctanh",),
           gradgrad=True),
    OpInfo("erf", unary(_between(-3.0, 3.0)), _erf, dtypes=LOWP, gradgrad=True),
    OpInfo("erfc", unary(_between(-3.0, 3.0)), _erfc, dtypes=LOWP),
    OpInfo("erfinv", unary(_between(-0.95, 0.95)), None, dtypes=LOWP, gradgrad=True),
    OpInfo("trunc", unary(), np.trunc, dtypes=LOWP, aliases=("fix",)),
    OpInfo("floor", unary(), np.floor, dtypes=LOWP),
    OpInfo("ceil", unary(), np.ceil, dtypes=LOWP),
    OpInfo("round", _round_samples, _np_round, dtypes=FLOATS),
    OpInfo("frac", unary(), lambda x: x - np.trunc(x), dtypes=LOWP),
    OpInfo("floor_divide", lambda r, d: [
        Sample((uniform(r, (3, 4)), away_from(r, (4,), (0.0,), 0.25))),
        Sample((uniform(r, (3, 2)), 2.5))], np.floor_divide, grad=False),
    OpInfo("deg2rad", unary(), np.deg2rad, dtypes=LOWP),
    OpInfo("rad2deg", unary(), np.rad2deg, dtypes=LOWP,
           tol={"bfloat16": (1.6e-2, 5e-2), "float16": (2e-3, 2e-2)}),
    OpInfo("angle", unary(_kinks(0.0)), lambda x: np.where(x < 0, np.pi, 0.0 * x),
           dtypes=FLOATS),
    OpInfo("real", unary(_complex), np.real, dtypes=COMPLEX),
    OpInfo("imag", unary(_complex), np.imag, dtypes=COMPLEX),
    # activations
    OpInfo("sigmoid", unary(_scaled(4)), _np_sigmoid, dtypes=LOWP,
           gradgrad=True, bits16=True),
    OpInfo("logit", _logit_samples, _np_logit, dtypes=LOWP, tol=ACT_TOL),
    OpInfo("softplus", _softplus_samples, _np_softplus, torch="nn.functional.softplus",
           dtypes=LOWP, gradgrad=True, tol=ACT_TOL),
    OpInfo("relu6", unary(_kinks(0.0, 6.0, low=-3, high=8)), lambda x: np.clip(x, 0, 6),
           torch="nn.functional.relu6", dtypes=LOWP),
    OpInfo("leaky_relu", _kw(_kinks(0.0), negative_slope=0.2), lambda x, negative_slope:
           np.where(x > 0, x, x * negative_slope), torch="nn.functional.leaky_relu",
           dtypes=LOWP),
    OpInfo("elu", _kw(_kinks(0.0), alpha=1.5), _np_elu, torch="nn.functional.elu",
           dtypes=LOWP, gradgrad=True, tol=ACT_TOL),
    OpInfo("selu", unary(_kinks(0.0)), lambda x: SELU[1] * _np_elu(x, SELU[0]),
           torch="nn.functional.selu", dtypes=LOWP, tol=ACT_TOL),
    OpInfo("celu", _kw(_kinks(0.0), alpha=2.0), lambda x, alpha: np.where(
        x > 0, x, alpha * np.expm1(np.minimum(x, 0) / alpha)), torch="nn.functional.celu",
        dtypes=LOWP, tol=ACT_TOL),
    OpInfo("gelu", _gelu_samples, _np_gelu, torch="nn.functional.gelu", dtypes=LOWP,
           gradgrad=True, tol=ACT_TOL),
    OpInfo("silu", unary(_scaled(3)), lambda x: x * _np_sigmoid(x),
           torch="nn.functional.silu", dtypes=LOWP, gradgrad=True, tol=ACT_TOL),
    OpInfo("mish", unary(_scaled(3)),
           lambda x: x * np.tanh(np.log1p(np.exp(x))), torch="nn.functional.mish",
           dtypes=LOWP, gradgrad=True, tol=ACT_TOL),
    OpInfo("hardtanh", _kw(TANH_KINKS), lambda x: np.clip(x, -1, 1),
           torch="nn.functional.hardtanh", dtypes=LOWP),
    OpInfo("hardsigmoid", unary(_kinks(-3.0, 3.0)), lambda x: np.clip(x + 3, 0, 6) / 6,
           torch="nn.functional.hardsigmoid", dtypes=LOWP, tol=ACT_TOL),
    OpInfo("hardswish", unary(_kinks(-3.0, 3.0)), lambda x: x * np.clip(x + 3, 0, 6) / 6,
           torch="nn.functional.hardswish", dtypes=LOWP, tol=ACT_TOL),
    OpInfo("softsign", unary(), lambda x: x / (1 + np.abs(x)),
           torch="nn.functional.softsign", dtypes=LOWP, tol=ACT_TOL),
    OpInfo("tanhshrink", unary(), lambda x: x - np.tanh(x), torch="nn.functional.tanhshrink",
           dtypes=LOWP, tol={"bfloat16": (5e-2, 3e-2), "float16": (1e-2, 4e-3)}),
    OpInfo("logsigmoid", unary(_scaled(5)),
           lambda x: -np.logaddexp(0, -x), torch="nn.functional.logsigmoid", dtypes=LOWP,
           tol=ACT_TOL),
)
