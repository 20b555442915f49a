"""The integer-code symbolics (onnx/_symbolic_bits.py): lu_unpack's permutation from the pivots
of each input, fp4/fp6 (un)packing, gcd and lcm by unrolled Euclid, each run in onnxruntime on
inputs other than the traced ones against eager and NumPy."""

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import tensorix as tx  # noqa: E402
from tensorix.onnx import UnsupportedOperatorError, export  # noqa: E402

from ._helpers import flat_tensors, run_ort  # noqa: E402


def _run(fn, example, other):
    proto = export(fn, tuple(example))
    got = run_ort(proto, [t.numpy() for t in other])
    want = [t.numpy() for t in flat_tensors(fn(*other))]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    return got


def test_lu_unpack_permutes_by_each_inputs_pivots():
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((2, 4, 4)) for _ in range(2))
    example, other = (list(tx.linalg.lu_factor(tx.tensor(m))) for m in (a, b))
    # the other input's pivots differ from the traced ones: the swaps are recomputed
    assert not np.array_equal(example[1].numpy(), other[1].numpy())
    p, low, up = _run(lambda lu, piv: tuple(tx.lu_unpack(lu, piv)), example, other)
    np.testing.assert_allclose(p @ low @ up, b, atol=1e-12)  # A = P L U


@pytest.mark.parametrize("order", ["low_first", "high_first"])
def test_fp4_pack_unpack(order):
    rng = np.random.default_rng(1)
    codes = [tx.tensor(rng.integers(0, 16, (3, 7)).astype(np.uint8)) for _ in range(2)]
    (packed,) = _run(lambda c: tx.numerics.pack_fp4(c, order=order, pad=True), codes[:1],
                     codes[1:])
    (back,) = _run(lambda p: tx.numerics.unpack_fp4(p, 7, order=order), [tx.tensor(packed)],
                   [tx.tensor(packed[::-1].copy())])
    np.testing.assert_array_equal(back, codes[1].numpy()[::-1])


def test_fp6_pack_unpack():
    rng = np.random.default_rng(2)
    codes = [tx.tensor(rng.integers(0, 64, (2, 9)).astype(np.uint8)) for _ in range(2)]
    (packed,) = _run(lambda c: tx.numerics.pack_fp6(c, pad=True), codes[:1], codes[1:])
    (back,) = _run(lambda p: tx.numerics.unpack_fp6(p, 9), [tx.tensor(packed)],
                   [tx.tensor(packed[:, ::-1].copy())])
    assert back.shape == (2, 9)
    again = tx.numerics.unpack_fp6(tx.tensor(packed[:, ::-1].copy()), 9).numpy()
    np.testing.assert_array_equal(back, again)


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8"])
def test_gcd_lcm_unrolled_euclid_is_exact(dtype):
    rng = np.random.default_rng(3)
    info = np.iinfo(dtype)
    lo, hi = max(info.min, -1000), min(info.max, 1000)

    def draw():
        a = rng.integers(lo, hi, 64).astype(dtype)
        b = rng.integers(lo, hi, 64).astype(dtype)
        a[:4], b[:4] = [0, 0, 7, hi], [0, 5, 0, hi - 1]  # zeros; consecutive (the most steps)
        return tx.tensor(a), tx.tensor(b)

    example, other = draw(), draw()
    g, lcm = _run(lambda a, b: (tx.gcd(a, b), tx.lcm(a, b)), example, other)
    a, b = (t.numpy() for t in other)
    np.testing.assert_array_equal(g, np.gcd(a, b))
    np.testing.assert_array_equal(lcm, np.lcm(a, b))


def test_gcd_of_the_worst_case_int64_pair():
    # consecutive Fibonacci numbers take the most Euclid steps: F(91), F(92) < 2**63
    f = [0, 1]
    while len(f) < 93:
        f.append(f[-1] + f[-2])
    a, b = tx.tensor([f[92], 12], dtype=tx.int64), tx.tensor([f[91], 18], dtype=tx.int64)
    (g,) = _run(lambda x, y: tx.gcd(x, y), [a, b], [a, b])
    np.testing.assert_array_equal(g, [1, 6])


def test_nextafter_is_refused_naming_the_opset():
    x = tx.tensor([1.0, 2.0])
    with pytest.raises(UnsupportedOperatorError, match="NextAfter.*opset 17"):
        export(lambda a: tx.nextafter(a, a * 2), (x,))
