"""Registry entries for ops/elementwise.py (arithmetic and binary math) and ops/pointwise.py
(comparisons, where, sign, clamp, predicates). Unary math and activations are in
``opinfo/unary.py``, logical and bitwise ops in ``opinfo/bitwise.py``."""

from __future__ import annotations

import numpy as np

import tensorix as tx

from ..registry import OpInfo, Sample, exempt, register
from ._samples import away_from, binary, positive, unary, uniform

FLOATS = (tx.float32, tx.float64)
LOWP = (tx.float32, tx.float64, tx.bfloat16, tx.float16)
LOWP_TOL = {"bfloat16": (3e-2, 3e-2), "float16": (4e-3, 4e-3)}


def _nonzero(rng, shape):
    return away_from(rng, shape, (0.0,), 0.25)


def _kinkless(rng, shape):
    return away_from(rng, shape)


def _special(rng, shape):
    """Uniform values with nan, +inf, -inf, 0.0 and -0.0 planted at the front."""
    x = uniform(rng, shape).reshape(-1)
    specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0])
    x[:min(x.size, 7)] = specials[:min(x.size, 7)]
    return x.reshape(shape)


def _np_lerp(a, b, w):
    return a + w * (b - a)


def _np_xlogy(x, y):
    with np.errstate(all="ignore"):
        return np.where(x == 0, 0.0, x * np.log(y))


def _lerp_samples(rng, dtype):
    out = [Sample((uniform(rng, a), uniform(rng, b), w)) for (a, b), w in
           [(((3, 4), (3, 4)), 0.3), (((3, 4), (4,)), 0.7), (((5,), ()), -0.5)]]
    out.append(Sample((uniform(rng, (3, 4)), uniform(rng, (3, 4)), rng.uniform(0, 1, (4,)))))
    return out


def _clamp_samples(rng, dtype):
    x = away_from(rng, (3, 4), (-0.5, 0.5))
    lo, hi = away_from(rng, (4,), (0.0,), 0.5) - 0.5, uniform(rng, (3, 1)) + 1.5
    return [Sample((x,), {"min": -0.5, "max": 0.5}), Sample((x,), {"min": -0.5}),
            Sample((x,), {"max": 0.5}), Sample((x, lo, hi)), Sample((x, None, hi)),
            Sample((x,), {"min": 0.5, "max": -0.5}, name="min>max ")]


def _np_clamp(x, min=None, max=None):  # noqa: A002
    if min is not None:
        x = np.maximum(x, min)
    if max is not None:
        x = np.minimum(x, max)
    return x


def _float_power_samples(rng, dtype):
    return [Sample((positive(rng, (3, 4)), uniform(rng, (4,)))),
            Sample((positive(rng, (5,)), 2)), Sample((positive(rng, (5,)), -0.5))]


def _isclose_samples(rng, dtype):
    a = uniform(rng, (3, 4))
    b = a + rng.choice([0.0, 1e-9, 1e-3, 1.0], size=a.shape)
    return [Sample((a, b)), Sample((a, b), {"rtol": 0.0, "atol": 1e-2}),
            Sample((_special(rng, (9,)), _special(rng, (9,))), {"equal_nan": True})]


def _pred(rng, dtype):
    """Special values for floating dtypes, finite ones for integers, complex for complex."""
    shapes = [(), (9,), (3, 4)]
    if dtype.category < 2:
        return [Sample((uniform(rng, s),)) for s in shapes]
    if dtype.is_complex:
        return [Sample((np.asarray(uniform(rng, s) + 1j * (rng.uniform(size=s) < 0.5)),))
                for s in shapes]
    return [Sample((_special(rng, s),)) for s in shapes]


def _nan_to_num_samples(rng, dtype):
    # infinities only with finite replacements: the default (the dtype's max) would overflow
    # the finite differences of gradcheck; tests/test_elementwise.py checks the defaults
    x = _special(rng, (3, 4))
    finite_or_nan = np.where(np.isinf(x), 0.5, x)
    return [Sample((finite_or_nan,)), Sample((x,), {"nan": 1.5, "posinf": 2.0, "neginf": -2.0})]


def _np_nan_to_num(dtype_max):
    def ref(x, nan=0.0, posinf=None, neginf=None):
        big = dtype_max(x)
        return np.nan_to_num(x, nan=nan, posinf=big if posinf is None else posinf,
                             neginf=-big if neginf is None else neginf)
    return ref


def _heaviside_samples(rng, dtype):
    x = np.where(rng.uniform(size=(3, 4)) < 0.3, 0.0, uniform(rng, (3, 4)))
    return [Sample((x, np.array(0.5))), Sample((x, uniform(rng, (4,))))]


def _np_heaviside(x, v):
    return np.where(x == 0, v, (x > 0).astype(x.dtype))


register(
    OpInfo("add", binary(), np.add, dtypes=LOWP, gradgrad=True),
    OpInfo("sub", binary(), np.subtract, dtypes=LOWP, aliases=("subtract",)),
    OpInfo("mul", binary(), np.multiply, dtypes=LOWP, gradgrad=True, aliases=("multiply",)),
    OpInfo("div", binary(gen_b=_nonzero, scalars=(2.5, -4)), np.divide, dtypes=LOWP,
           gradgrad=True, aliases=("divide", "true_divide")),
    OpInfo("neg", unary(), np.negative, dtypes=LOWP, aliases=("negative",)),
    OpInfo("pow", binary(positive, uniform, scalars=(2, 0.5)), np.power, dtypes=FLOATS,
           gradgrad=True),
    OpInfo("exp", unary(), np.exp, dtypes=LOWP, gradgrad=True),
    OpInfo("log", unary(positive), np.log, dtypes=LOWP, gradgrad=True),
    OpInfo("rsub", binary(), lambda a, b: np.subtract(b, a)),
    OpInfo("fmod", binary(gen_b=_nonzero, scalars=(1.5, -0.75)), np.fmod, dtypes=LOWP,
           tol=LOWP_TOL),
    OpInfo("remainder", binary(gen_b=_nonzero, scalars=(1.5, -0.75)), np.remainder,
           dtypes=LOWP, tol=LOWP_TOL),
    OpInfo("maximum", binary(scalars=()), np.maximum, dtypes=LOWP, gradgrad=True),
    OpInfo("minimum", binary(scalars=()), np.minimum, dtypes=LOWP),
    OpInfo("fmax", binary(scalars=()), np.fmax, dtypes=LOWP),
    OpInfo("fmin", binary(scalars=()), np.fmin, dtypes=LOWP),
    OpInfo("lerp", _lerp_samples, _np_lerp, dtypes=LOWP, gradgrad=True, tol=LOWP_TOL),
    OpInfo("hypot", binary(_nonzero, _nonzero, scalars=()), np.hypot, dtypes=LOWP,
           gradgrad=True),
    OpInfo("atan2", binary(_nonzero, _nonzero, scalars=()), np.arctan2, dtypes=LOWP,
           gradgrad=True, aliases=("arctan2",), tol=LOWP_TOL),
    OpInfo("copysign", binary(_nonzero, _nonzero, scalars=(-1.0, 2.0)), np.copysign,
           dtypes=LOWP),
    OpInfo("xlogy", binary(uniform, positive, scalars=(2.5,)), _np_xlogy, dtypes=LOWP,
           gradgrad=True, tol=LOWP_TOL),
    OpInfo("float_power", _float_power_samples, lambda a, b: np.power(
        np.asarray(a, np.float64), np.asarray(b, np.float64)), dtypes=FLOATS),
    OpInfo("logaddexp", binary(scalars=()), np.logaddexp, dtypes=LOWP, gradgrad=True,
           tol=LOWP_TOL),
    OpInfo("logaddexp2", binary(scalars=()), np.logaddexp2, dtypes=LOWP, tol=LOWP_TOL),
    OpInfo("where", lambda rng, d: [Sample((rng.uniform(size=(3, 4)) > 0.5,
                                            uniform(rng, (3, 4)), uniform(rng, (4,))))],
           np.where),
    OpInfo("sign", unary(_kinkless), np.sign, dtypes=LOWP),
    OpInfo("sgn", unary(_kinkless), np.sign),
    OpInfo("clamp", _clamp_samples, _np_clamp, dtypes=LOWP, gradgrad=True, aliases=("clip",)),
    OpInfo("clamp_min", lambda r, d: [Sample((away_from(r, (3, 4), (0.2,)), 0.2))],
           np.maximum, dtypes=LOWP),
    OpInfo("clamp_max", lambda r, d: [Sample((away_from(r, (3, 4), (0.2,)), 0.2))],
           np.minimum, dtypes=LOWP),
    OpInfo("nan_to_num", _nan_to_num_samples,
           _np_nan_to_num(lambda x: np.finfo(x.dtype).max), dtypes=FLOATS),
    OpInfo("heaviside", _heaviside_samples, _np_heaviside, grad=False, dtypes=LOWP),
    OpInfo("isclose", _isclose_samples, np.isclose, grad=False, dtypes=FLOATS),
    OpInfo("allclose", _isclose_samples, lambda *a, **k: bool(np.allclose(*a, **k)),
           grad=False, dtypes=FLOATS),
    OpInfo("equal", lambda r, d: [Sample((np.ones((2, 3)), np.ones((2, 3)))),
                                  Sample((np.ones((2, 3)), np.ones((3,)))),
                                  Sample((uniform(r, (4,)), uniform(r, (4,))))],
           lambda a, b: a.shape == b.shape and bool(np.all(a == b)), grad=False),
    OpInfo("signbit", _pred, np.signbit, grad=False, dtypes=LOWP + (tx.int64,)),
)

for _name, _np_fn in [("isnan", np.isnan), ("isinf", np.isinf), ("isposinf", np.isposinf),
                      ("isneginf", np.isneginf), ("isfinite", np.isfinite)]:
    register(OpInfo(_name, _pred, _np_fn, grad=False, dtypes=LOWP + (tx.int64,)))

register(OpInfo("isreal", _pred, np.isreal, grad=False,
                dtypes=FLOATS + (tx.complex64, tx.int64)))

for _name, _np_fn in [("eq", np.equal), ("ne", np.not_equal), ("lt", np.less),
                      ("le", np.less_equal), ("gt", np.greater), ("ge", np.greater_equal)]:
    register(OpInfo(_name, binary(), _np_fn, grad=False, dtypes=FLOATS + (tx.int64,)))

tx_aliases = {"greater": "gt", "greater_equal": "ge", "less": "lt", "less_equal": "le",
              "not_equal": "ne"}
exempt("aliases of comparison ops with their own entries", *tx_aliases)
exempt("dtype/device conversion, tested in tests/test_tensor.py", "to")
