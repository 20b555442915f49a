"""Type promotion against torch: the promote_types table for every pair, and hypothesis property
tests of result_type and the dtype of ``a + b``, ``a * b``, ``a / b`` and ``where`` for random
operands (tensors with dimensions, 0-d tensors and Python bool/int/float/complex scalars)."""

from __future__ import annotations

import itertools
import pathlib

import numpy as np
import pytest

import tensorix as tx

from ._harness import torch

hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies
needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed")
# torch warns once per process when it first makes a complex32 tensor (our complex64 case)
pytestmark = pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental:UserWarning")

ARITH = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
         "float64", "complex64", "complex128"]
FLOAT8 = ["float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu"]
TABLE = ARITH + FLOAT8
SETTINGS = hypothesis.settings(max_examples=300, deadline=None, derandomize=True,
                               suppress_health_check=list(hypothesis.HealthCheck))


def _torch_promote(a, b):
    try:
        return str(torch.promote_types(getattr(torch, a), getattr(torch, b)))[len("torch."):]
    except RuntimeError:
        return "error"


def _tx_promote(a, b):
    try:
        return tx.promote_types(getattr(tx, a), getattr(tx, b)).name
    except TypeError:
        return "error"


@needs_torch
def test_promote_types_table_matches_torch():
    mismatches = [(a, b, _tx_promote(a, b), _torch_promote(a, b))
                  for a, b in itertools.product(TABLE, TABLE)
                  if _tx_promote(a, b) != _torch_promote(a, b)]
    assert not mismatches, mismatches


def test_promote_types_is_symmetric_and_idempotent():
    for a, b in itertools.product(TABLE, TABLE):
        assert _tx_promote(a, b) == _tx_promote(b, a)
    for a in TABLE:
        assert _tx_promote(a, a) == a


def test_float8_promotion_errors():
    with pytest.raises(TypeError, match=r"promote_types: promotion for float8 types is not "
                                        r"supported \(float8_e4m3fn and float32\)"):
        tx.promote_types(tx.float8_e4m3fn, tx.float32)
    with pytest.raises(TypeError, match=r"promotion for float8 types is not supported "
                                        r"\(float8_e5m2 and float8_e4m3fn\)"):
        tx.result_type(tx.ones(2, dtype=tx.float8_e5m2), tx.ones(2, dtype=tx.float8_e4m3fn))
    with pytest.raises(TypeError, match=r"promotion for float8"):
        tx.ones(2, dtype=tx.float8_e4m3fn) + tx.ones(2)
    # a tier below that is not of a higher category does not promote: no error
    assert tx.result_type(tx.ones(2, dtype=tx.float8_e4m3fn), 2.5) is tx.float8_e4m3fn


# -- operands ----------------------------------------------------------------------------------
# an operand spec: ("tensor", dtype, ndim) or ("scalar", python type name)
SCALARS = {"bool": True, "int": 3, "float": 2.5, "complex": 1.5 + 0.5j}


def _operand(lib, spec):
    if spec[0] == "scalar":
        return SCALARS[spec[1]]
    _, dtype, ndim = spec
    shape = (2,) * ndim
    return lib.ones(shape, dtype=getattr(lib, dtype))


def _tensor_spec(dtypes):
    return st.tuples(st.just("tensor"), st.sampled_from(dtypes), st.sampled_from([0, 1, 2]))


def _any_spec(dtypes):
    return st.one_of(_tensor_spec(dtypes),
                     st.tuples(st.just("scalar"), st.sampled_from(sorted(SCALARS))))


def _pair(dtypes):
    """Two operands, at least one a tensor (torch has no op on two Python scalars)."""
    return st.one_of(st.tuples(_tensor_spec(dtypes), _any_spec(dtypes)),
                     st.tuples(_any_spec(dtypes), _tensor_spec(dtypes)))


def _outcome(fn):
    try:
        out = fn()
    except (RuntimeError, TypeError):
        return "error"
    name = str(out.dtype if hasattr(out, "dtype") else out).split(".")[-1]
    # tensorix has no complex32 (ComplexHalf): float16 meeting a complex operand gives
    # complex64, the smallest complex dtype it has (see docs/dtypes.md)
    return "complex64" if name == "complex32" else name


@pytest.fixture(params=["float32", "float64"], autouse=True)
def default_dtype(request):
    """Every property holds under both default dtypes (Python floats follow the default)."""
    tx.set_default_dtype(getattr(tx, request.param))
    if torch is None:
        yield request.param
        return
    old = torch.get_default_dtype()
    torch.set_default_dtype(getattr(torch, request.param))
    yield request.param
    torch.set_default_dtype(old)


@needs_torch
def test_result_type_every_pair_matches_torch():
    """Exhaustive over (dtype, 0-d or 1-d) and Python scalars, both operand orders."""
    specs = [("tensor", d, n) for d in TABLE for n in (0, 1)] + \
        [("scalar", k) for k in sorted(SCALARS)]
    bad = []
    for a, b in itertools.product(specs, specs):
        if a[0] == b[0] == "scalar":
            continue
        want = _outcome(lambda: torch.result_type(_operand(torch, a), _operand(torch, b)))
        got = _outcome(lambda: tx.result_type(_operand(tx, a), _operand(tx, b)))
        if got != want:
            bad.append((a, b, got, want))
    assert not bad, bad[:10]


@needs_torch
@SETTINGS
@hypothesis.given(_pair(TABLE))
def test_result_type_matches_torch(pair):
    a, b = pair
    want = _outcome(lambda: torch.result_type(_operand(torch, a), _operand(torch, b)))
    got = _outcome(lambda: tx.result_type(_operand(tx, a), _operand(tx, b)))
    assert got == want, (a, b)


@needs_torch
@SETTINGS
@hypothesis.given(st.tuples(_tensor_spec(ARITH), _tensor_spec(ARITH), _tensor_spec(ARITH)))
def test_three_operand_result_type_matches_torch(ops):
    """Three tensors of mixed tiers: torch has no n-ary result_type, but ``addcmul`` promotes
    its three operands together with the same tier rules (TensorIterator)."""
    try:
        want = torch.addcmul(*[_operand(torch, o) for o in ops]).dtype
    except RuntimeError:  # e.g. addcmul is not implemented for bool
        hypothesis.assume(False)
    got = tx.result_type(*[_operand(tx, o) for o in ops])
    assert got.name == _outcome(lambda: want), ops


@needs_torch
@SETTINGS
@hypothesis.given(_pair(ARITH), st.sampled_from(["add", "mul", "div"]))
def test_binary_op_dtype_matches_torch(pair, op):
    a, b = pair
    fns = {"add": lambda x, y: x + y, "mul": lambda x, y: x * y, "div": lambda x, y: x / y}
    fn = fns[op]
    want = _outcome(lambda: fn(_operand(torch, a), _operand(torch, b)))
    got = _outcome(lambda: fn(_operand(tx, a), _operand(tx, b)))
    assert got == want, (a, b, op)
    if want != "error":
        t_out = fn(_operand(torch, a), _operand(torch, b))
        x_out = fn(_operand(tx, a), _operand(tx, b))
        assert tuple(x_out.shape) == tuple(t_out.shape)
        np.testing.assert_allclose(np.asarray(x_out.detach().tolist(), dtype=complex),
                                   np.asarray(t_out.tolist(), dtype=complex), rtol=1e-2)


@needs_torch
@SETTINGS
@hypothesis.given(_pair(ARITH), st.sampled_from([0, 1]))
def test_where_dtype_matches_torch(pair, cond_ndim):
    a, b = pair
    cond_shape = (2,) * cond_ndim
    want = _outcome(lambda: torch.where(torch.ones(cond_shape, dtype=torch.bool),
                                        _operand(torch, a), _operand(torch, b)))
    got = _outcome(lambda: tx.where(tx.ones(cond_shape, dtype=tx.bool), _operand(tx, a),
                                    _operand(tx, b)))
    assert got == want, (a, b)


@needs_torch
@pytest.mark.parametrize("scalar,expected", [(True, "int8"), (3, "int8"), (2.5, "default"),
                                             (1j, "complex")])
def test_scalars_do_not_upcast_a_tensor_of_their_category(scalar, expected, default_dtype):
    got = tx.result_type(tx.ones(2, dtype=tx.int8), scalar)
    want = torch.result_type(torch.ones(2, dtype=torch.int8), scalar)
    assert got.name == str(want)[6:]
    if expected == "default":
        assert got.name == default_dtype


# -- the documented table ----------------------------------------------------------------------
DOC = pathlib.Path(__file__).resolve().parents[1] / "docs" / "dtypes.md"
_BEGIN, _END = "<!-- promotion-table:begin -->", "<!-- promotion-table:end -->"


def _short(name):
    return (name.replace("bfloat", "bf").replace("float", "f").replace("complex", "c")
            .replace("uint", "u").replace("int", "i"))


def render_promotion_table() -> str:
    """The promote_types table of every dtype pair, as Markdown (x: no implicit promotion).
    Regenerate the docs with ``python -c "from tests.test_promotion import
    render_promotion_table as r; print(r())"``."""
    names = [d.name for d in tx.dtypes.ALL]
    rows = ["| | " + " | ".join(_short(n) for n in names) + " |",
            "|---" * (len(names) + 1) + "|"]
    for a in names:
        cells = [_short(r) if (r := _tx_promote(a, b)) != "error" else "x" for b in names]
        rows.append(f"| **{_short(a)}** | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def test_docs_table_is_rendered_from_the_code():
    text = DOC.read_text()
    assert _BEGIN in text and _END in text, f"{DOC} lacks the table markers"
    table = text.split(_BEGIN)[1].split(_END)[0].strip()
    assert table == render_promotion_table(), (
        "docs/dtypes.md is out of date; regenerate it with render_promotion_table()")
