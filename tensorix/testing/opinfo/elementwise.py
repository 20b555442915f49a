"""Registry entries for ops/elementwise.py, ops/unary.py and ops/pointwise.py."""

from __future__ import annotations

import numpy as np

import tensorix as tx

from ..registry import OpInfo, Sample, exempt, register
from ._samples import away_from, binary, positive, unary, uniform

FLOATS = (tx.float32, tx.float64)
LOWP = (tx.float32, tx.float64, tx.bfloat16, tx.float16)


def _nonzero(rng, shape):
    return away_from(rng, shape, (0.0,), 0.25)


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
    OpInfo("abs", unary(lambda r, s: away_from(r, s)), np.abs, dtypes=LOWP,
           aliases=("absolute",)),
    OpInfo("sqrt", unary(positive), np.sqrt, dtypes=LOWP, gradgrad=True),
    OpInfo("tanh", unary(), np.tanh, dtypes=LOWP, gradgrad=True),
    OpInfo("relu", unary(lambda r, s: away_from(r, s)), lambda x: np.maximum(x, 0),
           dtypes=LOWP),
    OpInfo("conj", unary(), np.conj, dtypes=FLOATS + (tx.complex64, tx.complex128),
           torch="conj_physical"),
    OpInfo("trunc", unary(), np.trunc, aliases=("fix",)),
    OpInfo("floor", unary(), np.floor),
    OpInfo("ceil", unary(), np.ceil),
    OpInfo("floor_divide", binary(gen_b=_nonzero, scalars=(2.5,)), np.floor_divide,
           grad=False),
    OpInfo("where", lambda rng, d: [Sample((rng.uniform(size=(3, 4)) > 0.5,
                                            uniform(rng, (3, 4)), uniform(rng, (4,))))],
           np.where),
    OpInfo("sign", unary(lambda r, s: away_from(r, s)), np.sign),
    OpInfo("sgn", unary(lambda r, s: away_from(r, s)), np.sign),
)

for _name, _np_fn in [("eq", np.equal), ("ne", np.not_equal), ("lt", np.less),
                      ("le", np.less_equal), ("gt", np.greater), ("ge", np.greater_equal)]:
    register(OpInfo(_name, binary(), _np_fn, grad=False, dtypes=FLOATS + (tx.int64,)))

tx_aliases = {"greater": "gt", "greater_equal": "ge", "less": "lt", "less_equal": "le",
              "not_equal": "ne"}
exempt("aliases of comparison ops with their own entries", *tx_aliases)
exempt("dtype/device conversion, tested in tests/test_tensor.py", "to")
