"""Observers (against torch.ao's where they share a definition, and by their own rules), LSQ
against torch's learnable fake quant and the paper's formula, QAT modules."""

import math

import numpy as np
import pytest

import tensorix as tx
from tensorix.quant import (
    FakeQuantize,
    HistogramObserver,
    LearnableFakeQuantize,
    MinMaxObserver,
    MovingAverageMinMaxObserver,
    MSEObserver,
    QScheme,
    fake_quantize,
    lsq_fake_quantize,
    qparams_from_range,
)

AFFINE = QScheme(8, symmetric=False)


def test_minmax_running_range(rng):
    obs = MinMaxObserver(AFFINE)
    batches = [rng.standard_normal(100).astype(np.float32) * k for k in (1, 3, 0.5)]
    for b in batches:
        assert obs(tx.tensor(b)) is not None
    allv = np.concatenate(batches)
    scale, zp = obs.calculate_qparams()
    rs, rz = qparams_from_range(np.float32(allv.min()), np.float32(allv.max()), AFFINE)
    assert float(scale) == float(rs) and int(zp) == int(rz)


def test_minmax_matches_torch_observer(rng):
    torch = pytest.importorskip("torch")
    a = rng.standard_normal((8, 30)).astype(np.float32) * 2 + 0.5
    obs = MinMaxObserver(AFFINE)
    obs(tx.tensor(a))
    t = torch.ao.quantization.MinMaxObserver(dtype=torch.qint8, quant_min=-128, quant_max=127)
    t(torch.tensor(a))
    ts, tz = t.calculate_qparams()
    s, z = obs.calculate_qparams()
    assert float(s) == pytest.approx(float(ts), rel=1e-6) and int(z) == int(tz)


def test_per_channel_minmax(rng):
    a = rng.standard_normal((4, 16)).astype(np.float32) * np.float32([[1], [2], [4], [8]])
    obs = MinMaxObserver(QScheme(8, granularity="per_channel"))
    obs(tx.tensor(a))
    s, _ = obs.calculate_qparams()
    np.testing.assert_allclose(s.numpy().ravel(), np.abs(a).max(axis=1) / 127, rtol=1e-6)


def test_moving_average(rng):
    obs = MovingAverageMinMaxObserver(AFFINE, averaging_constant=0.5)
    obs(tx.tensor([-1.0, 1.0]))
    obs(tx.tensor([-3.0, 5.0]))
    assert float(obs.min_val) == -2.0 and float(obs.max_val) == 3.0


def test_histogram_percentile_clips_outliers(rng):
    a = rng.standard_normal(100_000).astype(np.float32)
    a[:10] = 1000.0  # rare outliers
    obs = HistogramObserver(AFFINE, bins=4096, percentile=99.9)
    for part in np.split(a, 4):
        obs(tx.tensor(part))
    lo, hi = obs._range()
    q = np.percentile(a, [0.1, 99.9])
    width = 1001 / 4096 * 2  # the data's range over the bins, and re-binning
    assert abs(lo - q[0]) < width and abs(hi - q[1]) < width and hi < 10
    assert int(obs.histogram.numpy().sum()) == a.size


def test_mse_beats_minmax_on_heavy_tails(rng):
    a = rng.standard_t(2, 20_000).astype(np.float32)
    x = tx.tensor(a)
    err = {}
    for name, obs in (("minmax", MinMaxObserver(QScheme(4, False))),
                      ("mse", MSEObserver(QScheme(4, False)))):
        obs(x)
        s, z = obs.calculate_qparams()
        err[name] = float(((fake_quantize(x, QScheme(4, False), s, z) - x) ** 2).mean())
    # a brute-force reference: clip ratios on a 10x finer grid, errors in float64 NumPy
    a64, best = a.astype(np.float64), np.inf
    for r in np.linspace(0.001, 1, 1000):
        lo, hi = r * a64.min(), r * a64.max()
        sc = (hi - lo) / 15
        zp = np.clip(-8 - np.rint(lo / sc), -8, 7)
        deq = (np.clip(np.rint(a64 / sc) + zp, -8, 7) - zp) * sc
        best = min(best, ((deq - a64) ** 2).mean())
    assert err["mse"] <= 1.01 * best and best < 0.8 * err["minmax"]


def test_mse_per_channel_weight(rng):
    w = rng.standard_t(3, (8, 64)).astype(np.float32)
    s4 = QScheme(4, True, "per_channel")
    obs = MSEObserver(s4)
    obs(tx.tensor(w))
    s, z = obs.calculate_qparams()
    assert tuple(s.shape) == (8, 1)
    e_mse = ((fake_quantize(tx.tensor(w), s4, s, z).numpy() - w) ** 2).mean(axis=1)
    e_mm = ((fake_quantize(tx.tensor(w), s4).numpy() - w) ** 2).mean(axis=1)
    assert (e_mse <= e_mm + 1e-9).all() and e_mse.sum() < e_mm.sum()


def test_no_data_raises():
    for obs in (MinMaxObserver(), HistogramObserver(), MSEObserver()):
        with pytest.raises(ValueError, match="no data was observed"):
            obs.calculate_qparams()
    with pytest.raises(ValueError, match="per_tensor schemes only"):
        HistogramObserver(QScheme(granularity="per_channel"))


# -- LSQ ---------------------------------------------------------------------------------------
def test_lsq_matches_torch_per_tensor(rng):
    torch = pytest.importorskip("torch")
    a = (rng.standard_normal(200) * 2).astype(np.float32)
    g = rng.standard_normal(200).astype(np.float32)
    t = torch.tensor(a, requires_grad=True)
    ts = torch.tensor([0.3], requires_grad=True)
    tz = torch.tensor([1.3], requires_grad=True)
    ty = torch._fake_quantize_learnable_per_tensor_affine(t, ts, tz, -8, 7, 0.5)
    (ty * torch.tensor(g)).sum().backward()
    x, s, z = (tx.tensor(v, requires_grad=True) for v in (a, [0.3], [1.3]))
    y = lsq_fake_quantize(x, s, z, -8, 7, 0.5)
    (y * tx.tensor(g)).sum().backward()
    np.testing.assert_array_equal(y.detach().numpy(), ty.detach().numpy())
    np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())
    np.testing.assert_allclose(s.grad.numpy(), ts.grad.numpy(), rtol=1e-5)
    np.testing.assert_allclose(z.grad.numpy(), tz.grad.numpy(), rtol=1e-5)


def test_lsq_matches_torch_per_channel(rng):
    torch = pytest.importorskip("torch")
    a = (rng.standard_normal((4, 6)) * 2).astype(np.float32)
    sc = rng.uniform(0.1, 1, 4).astype(np.float32)
    t, ts = torch.tensor(a, requires_grad=True), torch.tensor(sc, requires_grad=True)
    tz = torch.zeros(4, requires_grad=True)
    torch._fake_quantize_learnable_per_channel_affine(t, ts, tz, 0, -8, 7, 1.0).sum().backward()
    x = tx.tensor(a, requires_grad=True)
    s = tx.tensor(sc.reshape(4, 1), requires_grad=True)
    z = tx.zeros(4, 1, requires_grad=True)
    lsq_fake_quantize(x, s, z, -8, 7, 1.0).sum().backward()
    np.testing.assert_allclose(s.grad.numpy().ravel(), ts.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(z.grad.numpy().ravel(), tz.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_lsq_scale_gradient_is_the_paper_formula():
    # Esser et al. eq. 3 (z = 0): -x/s + round(x/s) inside, Qn below, Qp above; float64
    x = np.array([-10.0, -0.74, -0.2, 0.05, 0.31, 0.5, 3.3, 9.0])
    s, qn, qp = 0.4, -4, 3
    xs = tx.tensor(x, dtype=tx.float64, requires_grad=True)
    st = tx.tensor([s], dtype=tx.float64, requires_grad=True)
    zt = tx.zeros(1, dtype=tx.float64, requires_grad=True)
    gf = 1 / math.sqrt(x.size * qp)
    lsq_fake_quantize(xs, st, zt, qn, qp, gf).sum().backward()
    v = x / s
    paper = np.where(v <= qn, qn, np.where(v >= qp, qp, -v + np.rint(v)))
    assert float(st.grad) == pytest.approx(paper.sum() * gf, rel=1e-12)
    np.testing.assert_array_equal(xs.grad.numpy(), ((v > qn - 0.5) & (v < qp + 0.5)) * 1.0)


def test_learnable_fake_quantize_trains_scale(rng):
    a = tx.tensor(rng.standard_normal((256, 16)).astype(np.float32))
    fq = LearnableFakeQuantize(QScheme(3, symmetric=True))
    fq(a)  # initialise: 2 mean|x| / sqrt(qmax)
    assert float(fq.scale) == pytest.approx(2 * np.abs(a.numpy()).mean() / math.sqrt(3), rel=1e-5)
    with tx.no_grad():
        fq.scale.mul_(4.0)  # a poor start that training must fix
    opt = tx.optim.Adam([fq.scale], lr=0.05)
    losses = []
    for _ in range(40):
        opt.zero_grad()
        loss = ((fq(a) - a) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    assert losses[-1] < 0.5 * losses[0]


def test_fake_quantize_module_observes_then_rounds():
    fq = FakeQuantize(AFFINE)
    x = tx.tensor([-1.0, 0.0, 0.5, 2.0, 3.0], dtype=tx.float64)
    y = fq(x)
    s, z = fq.calculate_qparams()
    np.testing.assert_array_equal(y.numpy(), fake_quantize(x, AFFINE, s, z).numpy())
    fq.fake_quant_enabled = False
    assert fq(x) is x
