"""``repr(tensor)`` is PyTorch's, character for character ('torch.' reads 'tensorix.')."""

from __future__ import annotations

import re

import numpy as np
import pytest

import tensorix as tx

torch = pytest.importorskip("torch")

_RNG = np.random.default_rng(0)
NAN, INF = float("nan"), float("inf")

# (id, data, dtype name or None)
CASES = [
    ("four-decimals", [1.0, 2.5, 3.0], None), ("int-valued", [1.0, 2.0, 3.0], None),
    ("negative-2d", [[1.0, -2.0], [3.0, 4.0]], None), ("tiny-sci", [1e-5, 1.0], None),
    ("huge-sci", [1e9, 2.0], None), ("ratio-sci", [1.5e10, 1.0], None),
    ("zeros", [0.0, 0.0], None), ("nonfinite-int", [NAN, 1.0, INF, -INF], None),
    ("nonfinite-frac", [NAN, 1.5], None), ("ints", [1, 2, 3], None),
    ("ints-padding", [-1, 200, 3], None), ("bools", [True, False], None),
    ("0d-float", 3.5, None), ("0d-int", 3, None), ("0d-bool", True, None),
    ("neg-zero", -0.0, None), ("empty", [], None), ("empty-2d", [[], []], None),
    ("empty-int", [], "int64"), ("f64", [1.0, 2.0], "float64"), ("i32", [1, 2], "int32"),
    ("f16", [1.0, 2.5], "float16"), ("bf16", [1.0, 2.5], "bfloat16"),
    ("bf16-rounding", [0.1, 0.2], "bfloat16"), ("u8", [1, 2], "uint8"),
    ("fp8", [1.0, 2.0], "float8_e4m3fn"), ("i8-2d", [[1, 2]], "int8"),
    ("i16-0", [[0.0]], "int16"), ("complex", [1 + 2j, -3.5 - 1j], None),
    ("complex-mixed", [1j, 2], None), ("c128", [1 + 1j], "complex128"),
    ("complex-sci", [-1 - 1j, 1e-6j], None),
    ("randn-2d", _RNG.standard_normal((3, 4)).tolist(), None),
    ("randn-3d", _RNG.standard_normal((2, 3, 4)).tolist(), None),
    ("randn-4d", _RNG.standard_normal((2, 2, 2, 2)).tolist(), None),
    ("summarised-1d", _RNG.standard_normal(2000).tolist(), None),
    ("summarised-2d", _RNG.standard_normal((40, 40)).tolist(), None),
    ("summarised-f64", _RNG.standard_normal(1002).tolist(), "float64"),
    ("summarised-int", _RNG.integers(-1000, 1000, (50, 30)).tolist(), None),
    ("arange-1500", list(range(1500)), None), ("wrapping-ints", list(range(30)), None),
    ("wide-f64", _RNG.standard_normal((11, 11)).tolist(), "float64"),
    ("large-values", (_RNG.standard_normal(30) * 1e5).tolist(), None),
    ("small-values", (_RNG.standard_normal(30) * 1e-6).tolist(), None),
    ("mixed-magnitude", [123456.789, 0.5], None), ("milli", [1e-3, 1.0], None),
    ("1e8-row", [[1e8, 1.0]], None), ("neg-frac", [-1.5, 2.0], None),
    ("0d-big", 1e20, None), ("0d-neg-int", -1, None), ("2**40", [2.0 ** 40], None),
]


def _pair(data, dtype):
    x = tx.tensor(data, dtype=dtype and getattr(tx, dtype))
    t = torch.tensor(data, dtype=dtype and getattr(torch, dtype))
    return x, t


_SUFFIX = r"(dtype=|size=|device=|requires_grad=|grad_fn=)"


def _torch_repr(t):
    """torch's repr with 'tensorix.' names and suffix wrapping normalised: 'tensorix.' is 3
    characters longer than 'torch.', so a suffix may legitimately wrap in one and not the
    other (how suffixes wrap is checked by :func:`_check_suffix_wrapping`)."""
    return _unwrap_suffixes(repr(t).replace("torch.", "tensorix."))


def _unwrap_suffixes(s):
    return re.sub(r",\n *" + _SUFFIX, r", \1", s)


def _check_suffix_wrapping(s):
    """Suffixes wrap exactly as torch's own ``_add_suffixes`` wraps them (used as the oracle
    on our body and our suffix names)."""
    from torch._tensor_str import _add_suffixes

    parts = re.split(r", (?=(?:dtype|size|device|requires_grad|grad_fn)=)",
                     _unwrap_suffixes(s)[:-1])
    assert _add_suffixes(parts[0], parts[1:], len("tensor("), False) == s


def _same_repr(x, t):
    got = repr(x)
    assert _unwrap_suffixes(got) == _torch_repr(t)
    _check_suffix_wrapping(got)


@pytest.fixture(autouse=True)
def _restore_printoptions():
    yield
    tx.set_printoptions(profile="default")
    torch.set_printoptions(profile="default")
    torch.set_default_dtype(torch.float32)


@pytest.mark.parametrize("data,dtype", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_repr_matches_torch(data, dtype):
    x, t = _pair(data, dtype)
    _same_repr(x, t)
    assert str(x) == repr(x)


@pytest.mark.parametrize("data,dtype", [([1.5, 2.0], None), ([[0.5, 1.0], [2.0, 3.0]], None),
                                        (2.5, None), ([1.0, 2.0], "float64"),
                                        (_RNG.standard_normal((3, 7)).tolist(), None)])
def test_requires_grad_repr(data, dtype):
    x, t = _pair(data, dtype)
    x.requires_grad_()
    t.requires_grad_()
    _same_repr(x, t)


def _structural(s):
    """Node names differ (MulBackward vs MulBackward0): compare everything else."""
    return re.sub(r"grad_fn=<\w+>", "grad_fn=<node>", s)


@pytest.mark.parametrize("op", ["mul", "sum", "add-f64"])
def test_grad_fn_repr(op):
    x, t = _pair([[1.0, -2.5], [3.0, 4.25]], "float64" if op == "add-f64" else None)
    x.requires_grad_()
    t.requires_grad_()
    if op == "mul":
        xo, to = x * 2, t * 2
    elif op == "sum":
        xo, to = (x * x).sum(), (t * t).sum()
    else:
        xo, to = x + 1, t + 1
    got, want = repr(xo), _torch_repr(to)
    assert re.search(r"grad_fn=<\w+Backward\w*>", got)
    assert _structural(_unwrap_suffixes(got)) == _structural(want)


@pytest.mark.parametrize("options", [{"precision": 2}, {"precision": 6},
                                     {"linewidth": 40}, {"edgeitems": 1, "threshold": 10},
                                     {"edgeitems": 0, "threshold": 5}, {"sci_mode": True},
                                     {"sci_mode": False}, {"profile": "short"},
                                     {"profile": "full"}])
def test_printoptions_match_torch(options):
    tx.set_printoptions(**options)
    torch.set_printoptions(**options)
    for data, dtype in [(_RNG.standard_normal((4, 12)).tolist(), None),
                        ([1e-6, 1.0, 3.0], None), (list(range(20)), None),
                        (_RNG.standard_normal(1200).tolist(), "float64"),
                        ([1 + 2j, 3.25 - 4j], None)]:
        x, t = _pair(data, dtype)
        _same_repr(x, t)


def test_printoptions_context_and_get():
    before = tx.get_printoptions()
    with tx.printoptions(precision=1):
        assert repr(tx.tensor([1.26])) == "tensor([1.3])"
        assert tx.get_printoptions()["precision"] == 1
    assert tx.get_printoptions() == before
    with pytest.raises(ValueError, match=r"set_printoptions\(\): unknown profile 'tiny'"):
        tx.set_printoptions(profile="tiny")


@pytest.mark.parametrize("data", [[1.5], [1j], [[]], [], [1, 2], 0.5])
def test_repr_under_float64_default(data):
    tx.set_default_dtype(tx.float64)
    torch.set_default_dtype(torch.float64)
    x, t = _pair(data, None)
    _same_repr(x, t)
    x32, t32 = _pair([1.5], "float32")
    _same_repr(x32, t32)


def test_format_of_0d_tensor():
    assert f"{tx.tensor(2.5):.2f}" == "2.50"
    assert f"{tx.tensor([1, 2])}" == "tensor([1, 2])"
