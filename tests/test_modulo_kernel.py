"""fmod and remainder on float32 through the numba pass (ops/_modulo.py, kernels/_cpu_jit.py):
the same bits as NumPy's ufuncs (the oracle the op had) on quotients of every size (the fast
path's off-by-one fix-ups near exact multiples, and the C library's fmod beyond 2^29), zeros
of both signs, infinities, nan and zero divisors; one divisor for all; torch's values where
the quotient is moderate."""

import numpy as np
import pytest

import tensorix as tx
from tensorix.ops import _modulo


def _bits_equal(got, want):
    return bool(np.all((got.view(np.uint32) == want.view(np.uint32))
                       | (np.isnan(got) & np.isnan(want))))


def _hard(rng, n):
    special = np.float32([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 3.4e38, -3.4e38,
                          1.0, -1.0, 6.0, -6.0, 3.0, -3.0, 0.1, 2.0 ** 24, 2.0 ** 30 + 1])
    wild = (rng.standard_normal(n) * 10.0 ** rng.integers(-40, 38, n)).astype(np.float32)
    a = np.concatenate([np.repeat(special, len(special)), wild, rng.uniform(-9, 9, n)])
    b = np.concatenate([np.tile(special, len(special)), wild[::-1], rng.uniform(-3, 3, n)])
    k = rng.integers(-2 ** 20, 2 ** 20, n).astype(np.float32)  # near exact multiples
    d = rng.uniform(0.1, 3, n).astype(np.float32)
    m = (k * d).astype(np.float32)
    a = np.concatenate([a, m, np.nextafter(m, np.float32(np.inf)),
                        np.nextafter(m, np.float32(-np.inf))])
    return a.astype(np.float32), np.concatenate([b, d, d, d]).astype(np.float32)


@pytest.mark.parametrize("fn", ["fmod", "remainder"])
def test_float32_kernel_gives_numpys_bits(fn):
    if _modulo._kernel(fn) is None:
        pytest.skip("numba kernel unavailable")
    a, b = _hard(np.random.default_rng(0), 20000)
    with np.errstate(all="ignore"):
        want = getattr(np, fn)(a, b)
        got = getattr(tx, fn)(tx.tensor(a), tx.tensor(b)).numpy()
        assert _bits_equal(got, want)
        for d in (1.5, -0.75, 0.0, np.inf):  # one divisor for all (a lifted Python scalar)
            got = getattr(tx, fn)(tx.tensor(a), d).numpy()
            assert _bits_equal(got, getattr(np, fn)(a, np.float32(d))), d
        a2 = a[:360].reshape(20, 18)  # a broadcast row: the ufunc path, same bits
        got = getattr(tx, fn)(tx.tensor(a2), tx.tensor(b[:18])).numpy()
        assert _bits_equal(got, getattr(np, fn)(a2, b[:18]))


@pytest.mark.parametrize("fn", ["fmod", "remainder"])
def test_float32_values_and_gradients_match_torch(fn):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    a = rng.uniform(-50, 50, (64, 33)).astype(np.float32)
    b = (rng.uniform(0.3, 4, (64, 33)) * rng.choice([-1, 1], (64, 33))).astype(np.float32)
    x, y = tx.tensor(a, requires_grad=True), tx.tensor(b, requires_grad=True)
    tx_out = getattr(tx, fn)(x, y)
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    t_out = getattr(torch, fn)(ta, tb)
    np.testing.assert_allclose(tx_out.detach().numpy(), t_out.detach().numpy(), atol=2e-5)
    tx_out.sum().backward()
    t_out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), ta.grad.numpy())
    np.testing.assert_array_equal(y.grad.numpy(), tb.grad.numpy())
