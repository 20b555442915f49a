"""Ozaki schemes (spec 5: O1-O3, the measured tables, backends, complex) and L-Mul (spec 4:
the vector table and our measured error numbers)."""

import numpy as np
import pytest

import tensorix as tx
from tensorix import numerics as nx


@pytest.fixture(scope="module")
def normal32():
    rng = np.random.default_rng(42)
    A, B = rng.standard_normal((32, 32)), rng.standard_normal((32, 32))
    return A, B, nx.exact_matmul(A, B)


def test_o1_integers_exact_thresholds():
    rng = np.random.default_rng(0)
    A = rng.integers(-1000, 1001, (16, 24)).astype(float)
    B = rng.integers(-1000, 1001, (24, 8)).astype(float)
    C = A @ B
    assert not np.array_equal(nx.ozaki_gemm(A, B, "II", moduli=3), C)
    for backend in ("f64", "f32", "int8"):
        assert np.array_equal(nx.ozaki_gemm(A, B, "II", moduli=4, backend_gemm=backend), C)
        assert np.array_equal(nx.ozaki_gemm(A, B, "I", slices=3, backend_gemm=backend), C)
    assert not np.array_equal(nx.ozaki_gemm(A, B, "I", slices=2), C)
    assert np.array_equal(nx.ozaki_gemm(A, B, "I", slices=2, schedule="full"), C)


def test_o2_small_exact():
    A = np.array([[3, -1.5], [0.25, 2]])
    B = np.array([[1, 0.5], [-2, 4]])
    want = [[6, -4.5], [-3.75, 8.125]]
    assert nx.ozaki_gemm(A, B, "II", moduli=3).tolist() == want
    assert nx.ozaki_gemm(A, B, "II", moduli=3, crt="exact").tolist() == want


@pytest.mark.parametrize("S,lo,hi", [(3, 3e-6, 8e-6), (5, 3e-10, 8e-10), (7, 3e-14, 7e-14),
                                     (8, 2e-16, 5e-16), (9, 0, 2.0**-52)])
def test_ozaki1_error_table(normal32, S, lo, hi):
    A, B, exact = normal32
    e = nx.componentwise_error(nx.ozaki_gemm(A, B, "I", slices=S), A, B, exact)
    assert lo <= e <= hi


@pytest.mark.parametrize("N,lo,hi", [(6, 2e-6, 5e-6), (10, 4e-11, 1e-10), (13, 1e-14, 3e-14),
                                     (15, 0, 2.0**-52), (18, 0, 0)])
def test_ozaki2_error_table(normal32, N, lo, hi):
    A, B, exact = normal32
    for crt in ("dd", "exact"):
        e = nx.componentwise_error(nx.ozaki_gemm(A, B, "II", moduli=N, crt=crt), A, B, exact)
        assert lo <= e <= hi, crt


def test_native_metric_and_exact_reference(normal32):
    A, B, exact = normal32
    assert 2e-16 < nx.componentwise_error(A @ B, A, B, exact) < 5e-16
    assert np.max(np.abs(exact - A @ B)) < 1e-13


def test_ozaki_complex_tensor_and_errors():
    rng = np.random.default_rng(3)
    A = rng.standard_normal((6, 10)) + 1j * rng.standard_normal((6, 10))
    B = rng.standard_normal((10, 4)) + 1j * rng.standard_normal((10, 4))
    C = nx.ozaki_gemm(A, B, "I", slices=9)
    assert C.dtype == np.complex128 and np.allclose(C, A @ B, rtol=0, atol=1e-14)
    t = nx.ozaki_gemm(tx.tensor(A.real), tx.tensor(B.real), "II", moduli=16)
    assert isinstance(t, tx.Tensor) and np.allclose(t.numpy(), A.real @ B.real, atol=1e-14)
    with pytest.raises(ValueError, match="ozaki_gemm\\(\\): argument 'scheme' must be"):
        nx.ozaki_gemm(A.real, B.real, "III")
    with pytest.raises(ValueError, match="cannot be multiplied"):
        nx.ozaki_gemm(A.real, A.real, "I")
    with pytest.raises(ValueError, match="argument 'backend_gemm' must be"):
        nx.ozaki_gemm(A.real, B.real, "I", backend_gemm="int4")
    with pytest.raises(ValueError, match="inputs must be finite"):
        nx.ozaki_gemm(np.full((2, 2), np.inf), np.ones((2, 2)), "II")
    assert nx.ozaki_moduli(6) == [256, 255, 253, 251, 247, 241]
    assert nx.ozaki_moduli(18)[-6:] == [211, 199, 197, 193, 191, 181]


def test_cupy_style_int8_wraparound_is_avoided():
    """O4: int8 @ int8 wraps in NumPy (and CuPy); the int8 backend upcasts."""
    a = np.full((1, 300), 100, np.int8)
    assert (a @ a.T)[0, 0] != 3_000_000
    A = np.full((1, 300), 100.0 / 128)
    assert nx.ozaki_gemm(A, A.T, "I", slices=2, backend_gemm="int8")[0, 0] == 300 * (100 / 128)**2


LMUL_TABLE = [  # x, y, fmt, formula, bitadd (spec 4)
    (1.5, 1.5, "bf16", 2.0625, 2.125), (1.25, 1.25, "bf16", 1.5625, 1.5625),
    (1.75, 1.75, "bf16", 2.5625, 3.125), (-2, 3, "bf16", -6.25, -6.25),
    (1, 1, "bf16", 1.0625, 1.0625), (1.5, 1.5, "e4m3", 2.125, 2.25),
    (1.75, 1.75, "e4m3", 2.625, 3.25), (3, 0.375, "e4m4", 1.0625, 1.125),
]


@pytest.mark.parametrize("x,y,fmt,formula,bitadd", LMUL_TABLE)
def test_lmul_vector_table(x, y, fmt, formula, bitadd):
    a, b = np.float32([x]), np.float32([y])
    assert nx.lmul(a, b, fmt, "formula")[0] == formula
    assert nx.lmul(a, b, fmt, "bitadd")[0] == bitadd
    if fmt == "bf16":
        assert nx.lmul(a, b, "fp32", "bitadd")[0] == bitadd  # same C on bf16-valued inputs


def test_lmul_constants_and_specials():
    assert [nx.lmul_offset_bits(m) for m in (2, 3, 4, 7, 23)] == [2, 3, 3, 4, 4]
    e4 = nx.encode(np.float32([1.5]), "e4m3")[0]
    assert int(e4) + int(e4) - 0x37 == 0x41  # the spec's integer example
    x = np.float32([0, 2, np.nan, np.inf, 1e-30, 400])
    y = np.float32([5, 0, 1, 2, 1e-30, 400])
    got = nx.lmul(x, y, "bf16")
    assert got[0] == 0 and got[1] == 0 and np.isnan(got[2]) and got[3] == np.inf
    assert got[4] == 0  # underflow flushes
    assert np.isnan(nx.lmul(np.float32([400]), np.float32([400]), "e4m3")[0])
    assert nx.lmul(np.float32([5]), np.float32([5]), "e2m1")[0] == 6  # finite: saturates
    assert nx.lmul(np.float32([-1.5]), np.float32([1.5]), "e4m3")[0] == -2.25
    with pytest.raises(ValueError, match="lmul\\(\\): argument 'variant' must be"):
        nx.lmul(x, y, "bf16", "shift")


def test_lmul_setting1_error_numbers():
    want = {"fp8_e4m3": (6.9, 5.2), "e4m4": (6.9, 5.1), "bf16": (7.5, 2.7)}
    for fmt, (wf, wb) in want.items():
        m = nx.get_format(fmt).mbits
        g = 1 + np.arange(2**m) / 2**m
        x, y = (a.ravel() for a in np.meshgrid(g, g))
        ex = x * y
        ef = 100 * np.mean(np.abs(nx.lmul(x, y, fmt, "formula") - ex) / ex)
        eb = 100 * np.mean(np.abs(nx.lmul(x, y, fmt, "bitadd") - ex) / ex)
        assert abs(ef - wf) < 0.1 and abs(eb - wb) < 0.1, fmt


def test_lmul_setting2_three_bits_beats_e5m2():
    rng = np.random.default_rng(0)
    x, y = rng.uniform(1, 2, 20000), rng.uniform(1, 2, 20000)
    ex = x * y

    def q(v, f):
        return nx.decode(nx.encode(v, f), f, np.float64)

    e5m2 = np.mean(np.abs(q(q(x, "e5m2") * q(y, "e5m2"), "e5m2") - ex) / ex)
    e4m3 = np.mean(np.abs(q(q(x, "e4m3") * q(y, "e4m3"), "e4m3") - ex) / ex)
    l3 = np.mean(np.abs(nx.lmul(x, y, "e4m3") - ex) / ex)
    l4 = np.mean(np.abs(nx.lmul(x, y, "e4m4") - ex) / ex)
    assert l3 < e5m2 and abs(l3 - 0.0575) < 0.003 and abs(l4 - 0.053) < 0.003
    assert abs(e4m3 - 0.035) < 0.002 and abs(e5m2 - 0.071) < 0.003


def test_lmul_matmul_and_attention():
    rng = np.random.default_rng(1)
    A = rng.standard_normal((2, 5, 7)).astype(np.float32)
    B = rng.standard_normal((7, 3)).astype(np.float32)
    got = nx.lmul_matmul(A, B, "bf16", chunk=2)
    want = nx.lmul(A[..., :, :, None], B[None, None], "bf16").astype(np.float64).sum(-2)
    assert got.shape == (2, 5, 3) and np.array_equal(got, want.astype(np.float32))
    assert np.abs(got - A @ B).max() < 0.2 * np.abs(A @ B).max()
    q, k, v = (rng.standard_normal((2, 6, 8)).astype(np.float32) for _ in range(3))
    out = nx.lmul_attention(tx.tensor(q), tx.tensor(k), tx.tensor(v), causal=True)
    assert isinstance(out, tx.Tensor) and out.shape == (2, 6, 8)
    assert np.allclose(out.numpy()[:, 0], nx.lmul(np.ones(1, np.float32), v[:, 0], "bf16"),
                       atol=0.05)
    with pytest.raises(ValueError, match="lmul_matmul\\(\\): shapes"):
        nx.lmul_matmul(A, A)
