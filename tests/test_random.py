"""Random numbers: reproducible streams, state save/restore, distributions, shapes and errors.

Statistical checks use fixed seeds and bounds of about five standard errors, so they are
deterministic and still fail for a wrong distribution (a wrong mean, variance or support).
"""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import tensorix as tx

N = 20000


def _gen(seed=0):
    return tx.Generator().manual_seed(seed)


def _np(t):
    return np.asarray(t.numpy(), dtype=np.float64) if t.dtype.low_precision else t.numpy()


def _close_mean(x, mean, sd, n=None):
    """The sample mean is within five standard errors of ``mean``."""
    n = x.size if n is None else n
    assert abs(x.mean() - mean) < 5 * sd / np.sqrt(n), (x.mean(), mean)


# every sampler, called with a generator: used for reproducibility checks
SAMPLERS = {
    "rand": lambda g: tx.rand(3, 4, generator=g),
    "randn": lambda g: tx.randn(5, generator=g),
    "randint": lambda g: tx.randint(0, 100, (6,), generator=g),
    "randperm": lambda g: tx.randperm(10, generator=g),
    "normal": lambda g: tx.normal(tx.zeros(4), tx.ones(4), generator=g),
    "bernoulli": lambda g: tx.bernoulli(tx.full((8,), 0.5), generator=g),
    "multinomial": lambda g: tx.multinomial(tx.ones(10), 4, generator=g),
    "multinomial-repl": lambda g: tx.multinomial(tx.ones(3), 6, True, generator=g),
    "poisson": lambda g: tx.poisson(tx.full((5,), 3.0), generator=g),
    "rand_like": lambda g: tx.rand_like(tx.zeros(3), generator=g),
    "randn_like": lambda g: tx.randn_like(tx.zeros(3), generator=g),
    "randint_like": lambda g: tx.randint_like(tx.zeros(3), 10, generator=g),
    "uniform_": lambda g: tx.empty(5).uniform_(generator=g),
    "normal_": lambda g: tx.empty(5).normal_(generator=g),
    "bernoulli_": lambda g: tx.empty(5).bernoulli_(0.5, generator=g),
    "random_": lambda g: tx.empty(5).random_(generator=g),
    "exponential_": lambda g: tx.empty(5).exponential_(generator=g),
    "log_normal_": lambda g: tx.empty(5).log_normal_(generator=g),
    "geometric_": lambda g: tx.empty(5).geometric_(0.3, generator=g),
    "cauchy_": lambda g: tx.empty(5).cauchy_(generator=g),
}


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_same_seed_same_stream_different_seed_different(name):
    fn = SAMPLERS[name]
    a, b, c = _gen(1), _gen(1), _gen(2)
    first, again, other = [np.concatenate([fn(g).numpy().ravel() for _ in range(3)])
                           for g in (a, b, c)]
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)
    # consecutive draws from one generator differ (the stream advances)
    g = _gen(1)
    assert not np.array_equal(fn(g).numpy(), fn(g).numpy())


def test_default_generator_manual_seed():
    tx.manual_seed(123)
    a = tx.rand(5).numpy()
    tx.manual_seed(123)
    np.testing.assert_array_equal(tx.rand(5).numpy(), a)
    assert tx.initial_seed() == 123
    assert tx.manual_seed(7) is tx.default_generator
    s = tx.seed()
    assert tx.initial_seed() == s and 0 <= s < 2 ** 64
    x = tx.randn(3).numpy()
    tx.manual_seed(s)
    np.testing.assert_array_equal(tx.randn(3).numpy(), x)


def test_generator_defaults_and_seeding():
    assert tx.Generator().initial_seed() == 67280421310721  # torch.Generator()'s default
    np.testing.assert_array_equal(tx.rand(4, generator=tx.Generator()).numpy(),
                                  tx.rand(4, generator=tx.Generator()).numpy())
    g = tx.Generator()
    s = g.seed()
    assert g.initial_seed() == s
    assert _gen(-1).initial_seed() == 2 ** 64 - 1  # negative seeds wrap, as in PyTorch
    np.testing.assert_array_equal(tx.rand(3, generator=_gen(-1)).numpy(),
                                  tx.rand(3, generator=_gen(2 ** 64 - 1)).numpy())
    assert _gen(tx.tensor(5)).initial_seed() == 5
    assert "initial_seed=3" in repr(_gen(3)) and _gen(0).device == tx.device("cpu")


def test_manual_seed_errors():
    with pytest.raises(TypeError, match=r"manual_seed\(\): expected an int seed, got float"):
        tx.manual_seed(1.5)
    with pytest.raises(ValueError, match=r"manual_seed\(\): seed must be within the range"):
        tx.Generator().manual_seed(2 ** 64)
    with pytest.raises(TypeError, match=r"rand\(\): argument 'generator' must be "
                                        r"tensorix.Generator, not int"):
        tx.rand(2, generator=0)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_state_save_restore_bit_identical(dtype):
    d = getattr(tx, dtype)
    g = _gen(42)
    tx.rand(3, generator=g, dtype=d)  # an odd number of 32-bit draws leaves a buffered half
    state = g.get_state()
    assert state.dtype is tx.uint8 and tuple(state.shape) == (45,)
    want = [tx.rand(5, generator=g, dtype=d).numpy().copy(), tx.randn(4, generator=g).numpy(),
            tx.randint(0, 9, (4,), generator=g).numpy()]
    g2 = tx.Generator().set_state(state)
    got = [tx.rand(5, generator=g2, dtype=d).numpy(), tx.randn(4, generator=g2).numpy(),
           tx.randint(0, 9, (4,), generator=g2).numpy()]
    for w, x in zip(want, got):
        np.testing.assert_array_equal(np.asarray(x, np.float64), np.asarray(w, np.float64))
    assert g2.initial_seed() == 42


def test_state_survives_pickle_and_copy():
    g = _gen(5)
    tx.randn(7, generator=g)
    restored = pickle.loads(pickle.dumps(g))
    cloned = copy.deepcopy(g)
    state = pickle.loads(pickle.dumps(g.get_state()))
    want = tx.rand(6, generator=g).numpy()
    np.testing.assert_array_equal(tx.rand(6, generator=restored).numpy(), want)
    np.testing.assert_array_equal(tx.rand(6, generator=cloned).numpy(), want)
    np.testing.assert_array_equal(tx.rand(6, generator=tx.Generator().set_state(state)).numpy(),
                                  want)


def test_default_rng_state_roundtrip():
    tx.manual_seed(9)
    tx.rand(1)
    state = tx.get_rng_state()
    a = tx.randn(4).numpy()
    tx.rand(10)
    tx.set_rng_state(state)
    np.testing.assert_array_equal(tx.randn(4).numpy(), a)


def test_set_state_errors():
    with pytest.raises(RuntimeError, match=r"set_state\(\): expected a uint8 tensor of 45 bytes "
                                           r"\(from get_state\(\)\), got float32 tensor"):
        tx.Generator().set_state(tx.zeros(45))
    with pytest.raises(RuntimeError, match=r"got uint8 tensor of shape \[3\]"):
        tx.set_rng_state(tx.zeros(3, dtype=tx.uint8))
    with pytest.raises(RuntimeError, match=r"got bytes"):
        tx.Generator().set_state(b"x" * 45)


# -- distributions -----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_rand_uniform(dtype):
    d = getattr(tx, dtype)
    x = tx.rand(N, generator=_gen(0), dtype=d)
    assert x.dtype is d
    v = _np(x)
    assert v.min() >= 0 and v.max() < 1
    _close_mean(v, 0.5, np.sqrt(1 / 12))
    assert abs(v.var() - 1 / 12) < 0.004
    digits = {"float32": 24, "float64": 53, "float16": 11, "bfloat16": 8}[dtype]
    scaled = v * 2.0 ** digits  # every value lies on the dtype's exact grid on [0, 1)
    np.testing.assert_array_equal(scaled, np.round(scaled))


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_randn_normal(dtype):
    v = _np(tx.randn(N, generator=_gen(1), dtype=getattr(tx, dtype)))
    _close_mean(v, 0.0, 1.0)
    assert abs(v.var() - 1) < 0.05
    assert 0.30 < np.mean(np.abs(v) > 1) < 0.335  # P(|z| > 1) = 0.3173


def test_complex_rand_and_randn():
    z = tx.randn(N, generator=_gen(2), dtype=tx.complex64).numpy()
    assert z.dtype == np.complex64
    assert abs(z.real.var() - 0.5) < 0.03 and abs(z.imag.var() - 0.5) < 0.03
    assert abs(np.mean(np.abs(z) ** 2) - 1) < 0.05
    u = tx.rand(N, generator=_gen(3), dtype=tx.complex128).numpy()
    assert u.real.min() >= 0 and u.real.max() < 1 and u.imag.min() >= 0 and u.imag.max() < 1
    _close_mean(u.imag, 0.5, np.sqrt(1 / 12))


def test_randint_range_and_uniformity():
    x = tx.randint(-3, 7, (N,), generator=_gen(4))
    assert x.dtype is tx.int64
    v = x.numpy()
    assert v.min() == -3 and v.max() == 6
    counts = np.bincount(v + 3, minlength=10)
    chi2 = ((counts - N / 10) ** 2 / (N / 10)).sum()
    assert chi2 < 40  # 9 degrees of freedom: p(chi2 > 40) < 1e-5
    assert tx.randint(5, (2, 3)).shape == (2, 3)
    assert tx.randint(5, size=(4,)).shape == (4,)
    assert tx.randint(0, 2, (3,), dtype=tx.float32).dtype is tx.float32
    assert tx.randint(0, 2, (3,), dtype=tx.float32, requires_grad=True).requires_grad


def test_randperm():
    p = tx.randperm(50, generator=_gen(5))
    assert p.dtype is tx.int64
    np.testing.assert_array_equal(np.sort(p.numpy()), np.arange(50))
    assert not np.array_equal(p.numpy(), np.arange(50))
    assert tx.randperm(0).shape == (0,)
    assert tx.randperm(4, dtype=tx.int32).dtype is tx.int32


def test_normal_forms():
    g = _gen(6)
    means, stds = np.array([[-10.0], [0.0], [10.0]]), np.array([0.5, 1.0, 2.0, 4.0])
    mean, std = tx.tensor(means.tolist()), tx.tensor(stds.tolist())
    x = tx.normal(tx.tensor(np.repeat(np.repeat(means, 4, 1), 2000, 1)),
                  tx.tensor(np.tile(stds, (3, 2000))), generator=g)
    v = x.numpy().reshape(3, 2000, 4)
    for i, m in enumerate((-10.0, 0.0, 10.0)):
        for j, s in enumerate((0.5, 1.0, 2.0, 4.0)):
            _close_mean(v[i, :, j], m, s)
            assert abs(v[i, :, j].std() / s - 1) < 0.1
    b = tx.normal(mean, std, generator=g)  # broadcast mean (3, 1) with std (4,)
    assert tuple(b.shape) == (3, 4) and b.dtype is tx.float32
    assert tuple(tx.normal(tx.zeros(2, dtype=tx.float64), 2.0).shape) == (2,)
    assert tx.normal(tx.zeros(2, dtype=tx.float64), 2.0).dtype is tx.float64
    s = tx.normal(3.0, tx.full((N,), 0.1), generator=g).numpy()
    _close_mean(s, 3.0, 0.1)
    f = tx.normal(1.0, 2.0, size=(N,), generator=g).numpy()
    _close_mean(f, 1.0, 2.0)
    assert tx.normal(0.0, 1.0, (2, 2), dtype=tx.float64).dtype is tx.float64
    assert not tx.normal(tx.zeros(2, requires_grad=True), 1.0).requires_grad


def test_normal_errors():
    with pytest.raises(RuntimeError, match=r"normal\(\): expects all elements of std >= 0.0"):
        tx.normal(tx.zeros(2), tx.tensor([1.0, -1.0]))
    with pytest.raises(TypeError, match=r"normal\(\): with a float mean and std, 'size' is "
                                        r"required"):
        tx.normal(0.0, 1.0)
    with pytest.raises(TypeError, match=r"normal\(\): argument 'mean' must be a floating point "
                                        r"tensor, got int64"):
        tx.normal(tx.zeros(2, dtype=tx.int64), 1.0)
    with pytest.raises(TypeError, match=r"argument 'std' must be a Tensor or a float, not str"):
        tx.normal(0.0, "1", (2,))


def test_bernoulli():
    p = tx.tensor(np.repeat([[0.0, 0.2, 0.9, 1.0]], N // 4, 0), dtype=tx.float32)
    x = tx.bernoulli(p, generator=_gen(7))
    assert x.dtype is tx.float32 and x.shape == p.shape
    v = x.numpy()
    assert set(np.unique(v)) <= {0.0, 1.0}
    assert v[:, 0].sum() == 0 and v[:, 3].sum() == N // 4
    for j, q in ((1, 0.2), (2, 0.9)):
        _close_mean(v[:, j], q, np.sqrt(q * (1 - q)))
    y = tx.bernoulli(tx.zeros(N, dtype=tx.float64), p=0.3, generator=_gen(8))
    assert y.dtype is tx.float64
    _close_mean(y.numpy(), 0.3, np.sqrt(0.21))
    assert tx.ones(3).bernoulli().shape == (3,)


def test_bernoulli_errors():
    with pytest.raises(RuntimeError, match=r"bernoulli\(\): expects p to be in \[0, 1\], but "
                                           r"got p=1.5"):
        tx.bernoulli(tx.zeros(2), p=1.5)
    with pytest.raises(RuntimeError, match=r"bernoulli\(\): expects p to be in \[0, 1\]"):
        tx.bernoulli(tx.tensor([0.5, -0.1]))
    with pytest.raises(TypeError, match=r"bernoulli\(\): expected a floating point probability "
                                        r"tensor, got int64"):
        tx.bernoulli(tx.tensor([1, 0]))
    with pytest.raises(RuntimeError, match=r"bernoulli_\(\): expects p to be in \[0, 1\], but "
                                           r"got p=2"):
        tx.zeros(2).bernoulli_(2.0)


def test_multinomial_with_replacement():
    p = tx.tensor([0.1, 0.0, 0.6, 0.3])
    x = tx.multinomial(p, N, replacement=True, generator=_gen(9))
    assert x.dtype is tx.int64 and tuple(x.shape) == (N,)
    counts = np.bincount(x.numpy(), minlength=4) / N
    assert counts[1] == 0
    for k, q in enumerate((0.1, 0.0, 0.6, 0.3)):
        assert abs(counts[k] - q) < 5 * np.sqrt(q * (1 - q) / N) + 1e-12
    rows = tx.multinomial(tx.tensor([[1.0, 0.0], [0.0, 5.0]]), 7, True, generator=_gen(10))
    assert tuple(rows.shape) == (2, 7)
    np.testing.assert_array_equal(rows.numpy(), [[0] * 7, [1] * 7])


def test_multinomial_without_replacement():
    g = _gen(11)
    w = tx.tensor([[1.0, 2.0, 0.0, 4.0, 8.0]] * 3)
    for _ in range(50):
        x = tx.multinomial(w, 3, generator=g).numpy()
        for row in x:
            assert len(set(row.tolist())) == 3 and 2 not in row
    full = tx.multinomial(tx.tensor([1.0, 0.0]), 2, generator=g).numpy()
    assert full.tolist() == [0, 1]  # zero-weight categories come last, as in PyTorch
    # the first draw follows the weights; the largest weight is first most often
    firsts = np.array([tx.multinomial(w[0], 1, generator=g).item() for _ in range(600)])
    freq = np.bincount(firsts, minlength=5) / 600
    assert abs(freq[4] - 8 / 15) < 0.08 and abs(freq[0] - 1 / 15) < 0.05


def test_multinomial_errors():
    with pytest.raises(RuntimeError, match=r"multinomial\(\): cannot sample n_sample > "
                                           r"prob_dist.size\(-1\) samples without replacement"):
        tx.multinomial(tx.ones(2), 3)
    with pytest.raises(RuntimeError, match=r"probability tensor contains either `inf`, `nan` "
                                           r"or element < 0"):
        tx.multinomial(tx.tensor([-1.0, 2.0]), 1)
    with pytest.raises(RuntimeError, match=r"invalid multinomial distribution \(sum of "
                                           r"probabilities <= 0\)"):
        tx.multinomial(tx.zeros(2), 1)
    with pytest.raises(RuntimeError, match=r"prob_dist must be 1 or 2 dim, got 3"):
        tx.multinomial(tx.ones(2, 2, 2), 1)
    with pytest.raises(RuntimeError, match=r"cannot sample n_sample <= 0 samples"):
        tx.multinomial(tx.ones(2), 0)
    with pytest.raises(TypeError, match=r"multinomial\(\): argument 'input' must be a floating "
                                        r"point Tensor"):
        tx.multinomial(tx.ones(2, dtype=tx.int64), 1)


def test_poisson():
    lam = tx.tensor(np.repeat([[0.0, 0.5, 4.0, 30.0]], N // 4, 0), dtype=tx.float32)
    v = tx.poisson(lam, generator=_gen(12)).numpy()
    assert v.dtype == np.float32 and (v == np.round(v)).all()
    assert v[:, 0].sum() == 0
    for j, m in ((1, 0.5), (2, 4.0), (3, 30.0)):
        _close_mean(v[:, j], m, np.sqrt(m))
        assert abs(v[:, j].var() / m - 1) < 0.1
    with pytest.raises(RuntimeError, match=r"poisson\(\): invalid Poisson rate, expected rate "
                                           r"to be non-negative"):
        tx.poisson(tx.tensor([-1.0]))


def test_like_variants():
    x = tx.zeros(2, 3, dtype=tx.float64)
    assert tx.rand_like(x).dtype is tx.float64 and tx.rand_like(x).shape == x.shape
    assert tx.randn_like(x, dtype=tx.float32).dtype is tx.float32
    i = tx.zeros(4, dtype=tx.int32)
    r = tx.randint_like(i, 3, 5, generator=_gen(13))
    assert r.dtype is tx.int32 and set(r.numpy().tolist()) <= {3, 4}
    assert set(tx.randint_like(i, 2).numpy().tolist()) <= {0, 1}
    assert tx.rand_like(x, requires_grad=True).requires_grad
    with pytest.raises(TypeError, match=r"rand_like\(\): argument 'input' must be a Tensor"):
        tx.rand_like([1.0])
    with pytest.raises(TypeError, match=r"rand_like\(\): expected a floating point dtype, got "
                                        r"int32"):
        tx.rand_like(i)


def test_shapes_dtypes_and_requires_grad():
    assert tx.rand(2, 3).shape == (2, 3) and tx.rand((2, 3)).shape == (2, 3)
    assert tx.randn([4]).shape == (4,) and tx.rand().shape == ()
    assert tx.rand(2).dtype is tx.get_default_dtype()
    tx.set_default_dtype(tx.float64)
    assert tx.rand(2).dtype is tx.float64 and tx.randn(2).dtype is tx.float64
    x = tx.randn(3, requires_grad=True)
    assert x.requires_grad and x.is_leaf


def test_creation_errors():
    with pytest.raises(TypeError, match=r"rand\(\): expected a floating point dtype, got int64"):
        tx.rand(2, dtype=tx.int64)
    with pytest.raises(TypeError, match=r"randn\(\): expected a floating point dtype, got bool"):
        tx.randn(2, dtype=tx.bool)
    with pytest.raises(RuntimeError, match=r"randint\(\): random_ expects 'from' to be less than "
                                           r"'to', but got from=5 >= to=5"):
        tx.randint(5, 5, (2,))
    with pytest.raises(TypeError, match=r"randint\(\): expected \(high, size\) or \(low, high, "
                                        r"size\)"):
        tx.randint(5)
    with pytest.raises(TypeError, match=r"randint\(\): argument 'high' must be an int, not "
                                        r"float"):
        tx.randint(0, 2.5, (2,))
    with pytest.raises(RuntimeError, match=r"randperm\(\): n must be non-negative, got -1"):
        tx.randperm(-1)
    with pytest.raises(RuntimeError, match=r"rand\(\): trying to create tensor with negative "
                                           r"dimension -2"):
        tx.rand(-2)


# -- in-place fills ----------------------------------------------------------------------------
def test_uniform_and_normal_inplace():
    x = tx.empty(N, dtype=tx.float64)
    out = x.uniform_(-2, 3, generator=_gen(14))
    assert out is x and x.dtype is tx.float64
    v = x.numpy()
    assert v.min() >= -2 and v.max() < 3
    _close_mean(v, 0.5, 5 / np.sqrt(12))
    x.normal_(4.0, 0.5, generator=_gen(15))
    _close_mean(x.numpy(), 4.0, 0.5)
    assert abs(x.numpy().std() - 0.5) < 0.02
    h = tx.empty(100, dtype=tx.bfloat16).uniform_()
    assert h.dtype is tx.bfloat16 and min(h.tolist()) >= 0 and max(h.tolist()) < 1
    c = tx.empty(N, dtype=tx.complex64).normal_(generator=_gen(16))
    assert abs(np.mean(np.abs(c.numpy()) ** 2) - 1) < 0.05


def test_other_inplace_distributions():
    g = _gen(17)
    e = tx.empty(N).exponential_(2.0, generator=g).numpy()
    assert e.min() >= 0
    _close_mean(e, 0.5, 0.5)
    ln = tx.empty(N, dtype=tx.float64).log_normal_(1.0, 0.5, generator=g).numpy()
    assert ln.min() > 0 and abs(np.median(np.log(ln)) - 1.0) < 0.03
    geo = tx.empty(N).geometric_(0.25, generator=g).numpy()
    assert geo.min() >= 1 and (geo == np.round(geo)).all()
    _close_mean(geo, 4.0, np.sqrt(0.75) / 0.25)
    ca = tx.empty(N).cauchy_(2.0, 0.5, generator=g).numpy()
    assert abs(np.median(ca) - 2.0) < 0.05
    q = np.quantile(ca, [0.25, 0.75])  # the quartiles of Cauchy(m, s) are m -+ s
    np.testing.assert_allclose(q, [1.5, 2.5], atol=0.06)
    b = tx.zeros(N, dtype=tx.int64).bernoulli_(0.25, generator=g).numpy()
    assert set(np.unique(b)) == {0, 1}
    _close_mean(b, 0.25, np.sqrt(0.1875))
    bp = tx.zeros(3).bernoulli_(tx.tensor([0.0, 1.0, 0.0]), generator=g)
    assert bp.tolist() == [0.0, 1.0, 0.0]


@pytest.mark.parametrize("dtype,high", [("float32", 2 ** 24), ("float64", 2 ** 53),
                                        ("float16", 2 ** 11), ("bfloat16", 2 ** 8),
                                        ("int8", 127), ("uint8", 255), ("int64", 2 ** 63 - 1),
                                        ("bool", 1)])
def test_random_inplace_ranges(dtype, high):
    g = _gen(18)
    d = getattr(tx, dtype)
    x = tx.zeros(4000, dtype=d).random_(generator=g)
    v = np.asarray(x.tolist(), dtype=np.float64 if d.is_floating_point else object)
    assert v.min() >= 0 and v.max() <= high
    assert v.max() > high * 0.9
    y = tx.zeros(1000, dtype=d).random_(2, generator=g)  # random_(to): [0, to)
    assert set(np.unique(_np(y)).tolist()) == {0, 1}
    if dtype != "bool":
        z = tx.zeros(1000, dtype=d).random_(3, 6, generator=g).tolist()
        assert set(z) == {3, 4, 5}


def test_random_inplace_from_to_none():
    v = tx.zeros(2000, dtype=tx.int8).random_(-5, None, generator=_gen(19)).numpy()
    assert v.min() >= -5 and v.max() > 100


def test_inplace_errors():
    with pytest.raises(TypeError, match=r"uniform_\(\): expected a floating point tensor, got "
                                        r"int64"):
        tx.zeros(2, dtype=tx.int64).uniform_()
    with pytest.raises(TypeError, match=r"normal_\(\): expected a floating point tensor, got "
                                        r"int32"):
        tx.zeros(2, dtype=tx.int32).normal_()
    with pytest.raises(TypeError, match=r"exponential_\(\): expected a floating point tensor"):
        tx.zeros(2, dtype=tx.int32).exponential_()
    with pytest.raises(RuntimeError, match=r"uniform_\(\): expects to return a \[from, to\) "
                                           r"range, but found from=1 > to=0"):
        tx.zeros(3).uniform_(1, 0)
    with pytest.raises(RuntimeError, match=r"normal_\(\): expects std >= 0.0, but found std -1"):
        tx.zeros(3).normal_(0, -1)
    with pytest.raises(RuntimeError, match=r"exponential_\(\): expects lambda > 0.0, but found "
                                           r"lambda=0"):
        tx.zeros(3).exponential_(0)
    with pytest.raises(RuntimeError, match=r"random_\(\): random_ expects 'from' to be less "
                                           r"than 'to', but got from=5 >= to=5"):
        tx.zeros(3).random_(5, 5)
    with pytest.raises(RuntimeError, match=r"geometric_\(\): expects p to be in \(0, 1\), but "
                                           r"got p=0"):
        tx.zeros(3).geometric_(0)
    with pytest.raises(RuntimeError, match=r"log_normal_\(\): expects std > 0.0"):
        tx.zeros(3).log_normal_(0, -1)
    with pytest.raises(RuntimeError, match=r"cauchy_\(\): expects sigma > 0.0"):
        tx.zeros(3).cauchy_(0, 0)
    with pytest.raises(TypeError, match=r"random_\(\): complex tensors are not supported"):
        tx.zeros(3, dtype=tx.complex64).random_()


def test_inplace_autograd_rules():
    w = tx.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"uniform_\(\): a leaf Variable that requires grad "
                                           r"is being used in an in-place operation"):
        w.uniform_()
    version = w._version_value
    with tx.no_grad():
        w.normal_(generator=_gen(20))
    assert w.requires_grad and w.is_leaf and w._version_value == version + 1
    assert np.any(w.detach().numpy() != 0)
    base = tx.zeros(4)
    view = base[1:3]
    view.uniform_(5, 6, generator=_gen(21))  # a view's fill writes through to its base
    b = base.numpy()
    assert b[0] == 0 and b[3] == 0 and (b[1:3] >= 5).all()


@pytest.mark.cuda
@pytest.mark.skipif(not tx.backend.cuda_available(), reason="needs a GPU")
def test_cuda_streams_match_cpu():
    a = tx.rand(5, generator=_gen(22), device="cuda")
    b = tx.rand(5, generator=_gen(22))
    assert a.device.type == "cuda"
    np.testing.assert_array_equal(a.cpu().numpy(), b.numpy())
    x = tx.zeros(4, device="cuda").normal_(generator=_gen(23))
    np.testing.assert_array_equal(x.cpu().numpy(), tx.zeros(4).normal_(generator=_gen(23)).numpy())
