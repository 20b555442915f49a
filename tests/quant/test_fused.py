"""int_linear's fused VNNI route (quant/_fused.py, quant/_act_kernels.py): the input quantized to
the kernel's uint8 operand in one compiled pass gives the NumPy route's bits (scales, zero
points, codes, outputs), takes the calls it claims, and leaves NaN / Inf to the NumPy route's
error."""

import numpy as np
import pytest

import tensorix as tx
from tensorix import nn
from tensorix.quant import QScheme, _fused, compute_qparams, kernels, quantize, quantize_dynamic
from tensorix.quant.gemm import IntWeight, int_linear
from tensorix.quant.methods import token_scheme


def _need_route():
    if not kernels.compiled_available() or kernels._vnni() is None or _fused._act() is None:
        pytest.skip("no VNNI kernel (or numba) on this CPU")


ACTS = {
    "per tensor affine (quantize_dynamic's)": QScheme(8, False),
    "per tensor symmetric": QScheme(8, True),
    "per tensor symmetric full range": QScheme(8, True, full_range=True),
    "per tensor affine 6 bits": QScheme(6, False),
    "per token symmetric": token_scheme(8),
    "per token symmetric 4 bits": token_scheme(4),
}
WEIGHTS = {
    "int8 per channel": QScheme(8, True, "per_channel", axis=0),
    "int8 per tensor": QScheme(8, True),
    "int4 g32": QScheme(4, True, "per_group", group_size=32),
}


def _input(rng, m, k):
    # magnitudes from 1e-3 to 50, a zero row, halves (rint's ties), a negative zero, and one
    # row of a constant
    x = (rng.standard_normal((m, k)) * rng.choice([1e-3, 1.0, 50.0])).astype(np.float32)
    x[0, :5] = [0.5, -0.5, 1.5, 2.5, -0.0]
    if m > 2:
        x[1] = 0
        x[2] = 3.0
    return x


def _both(x, w, act, static=None, bias=None, monkeypatch=None):
    fused = int_linear(x, w, act, static, bias)
    with monkeypatch.context() as mp:
        mp.setattr(_fused, "int_linear_fused", lambda *a: None)
        import tensorix.quant.gemm as gemm

        mp.setattr(gemm, "int_linear_fused", lambda *a: None)
        ref = int_linear(x, w, act, static, bias)
    return fused, ref


@pytest.mark.parametrize("act_name", sorted(ACTS))
@pytest.mark.parametrize("w_name", sorted(WEIGHTS))
def test_fused_route_same_bits_as_numpy_route(act_name, w_name, monkeypatch):
    _need_route()
    act, ws = ACTS[act_name], WEIGHTS[w_name]
    rng = np.random.default_rng(71)
    # M across the 8-row tiles, K over one K block (4128: the sums kept between blocks), N off
    # the 32-column panels
    for m, k, n in ((1, 224, 45), (37, 224, 45), (64, 4128, 33), (9, 96, 70)):
        x = _input(rng, m, k)
        w = IntWeight.from_float(rng.standard_normal((n, k)).astype(np.float32), ws)
        bias = rng.standard_normal(n).astype(np.float32)
        chunk = 32 if ws.granularity == "per_group" else k
        assert _fused.int_linear_fused(x, w, act, None, chunk, None) is not None  # taken
        fused, ref = _both(x, w, act, None, bias, monkeypatch)
        np.testing.assert_array_equal(fused.view(np.int32), ref.view(np.int32),
                                      err_msg=f"M={m} K={k} N={n}")


def test_fused_pass_codes_and_qparams_are_the_quantizers(rng):
    # the compiled pass against compute_qparams + quantize themselves: the scale and zero
    # point bits, and u = code + 128, per tensor and per token
    _need_route()
    mod = _fused._act()
    for act in ACTS.values():
        per_row = act.granularity != "per_tensor"
        for scale in (1e-30, 1e-3, 1.0, 1e4):
            x = (_input(rng, 7, 130) * np.float32(scale)).astype(np.float32)
            u = np.empty((7, 132), np.uint8)
            s, z = np.empty(7 if per_row else 1, np.float32), np.empty(7 if per_row else 1,
                                                                      np.float32)
            denom = 2 ** (act.bits - 1) if act.full_range else act.qmax
            assert mod.quantize_dynamic(x, u, s, z, act.qmin, act.qmax, denom, act.symmetric,
                                        per_row)
            sa, za = compute_qparams(tx.tensor(x), act)
            codes = quantize(tx.tensor(x), sa, za, act).numpy()
            np.testing.assert_array_equal(s.view(np.int32), sa.numpy().reshape(-1).view(np.int32))
            np.testing.assert_array_equal(z, za.numpy().reshape(-1).astype(np.float32))
            np.testing.assert_array_equal(u[:, :130].astype(np.int16) - 128, codes)


def test_fused_static_per_tensor_and_int64_zero_point(monkeypatch):
    _need_route()
    rng = np.random.default_rng(72)
    x = _input(rng, 37, 224) * np.float32(10)  # codes clipped at both ends
    w = IntWeight.from_float(rng.standard_normal((45, 224)).astype(np.float32),
                             WEIGHTS["int8 per channel"])
    for static in ((np.float32(0.02), np.int64(-7)), (np.float64(0.05), np.int32(100))):
        fused, ref = _both(x, w, QScheme(8, False), static, None, monkeypatch)
        np.testing.assert_array_equal(fused.view(np.int32), ref.view(np.int32))


def test_fused_route_declines_what_it_does_not_take(rng):
    _need_route()
    w = IntWeight.from_float(rng.standard_normal((8, 64)).astype(np.float32))
    x = rng.standard_normal((3, 64)).astype(np.float32)
    f = _fused.int_linear_fused
    assert f(x.astype(np.float64), w, QScheme(8, False), None, 64, None) is None  # float64
    per_token_affine = QScheme(8, False, "per_channel", axis=0)  # a zero point a row
    assert f(x, w, per_token_affine, None, 64, None) is None
    assert f(x, w, QScheme(8, True, "per_group", group_size=32), None, 32, None) is None
    odd = IntWeight.from_float(rng.standard_normal((8, 63)).astype(np.float32))
    assert f(x[:, :63], odd, QScheme(8, False), None, 63, None) is None  # K off the quads
    assert f(x[:0], w, QScheme(8, False), None, 64, None) is None  # empty: the route's error
    with pytest.raises(ValueError, match="empty"):
        int_linear(x[:0], w, QScheme(8, False))
    x[1, 5] = np.nan  # the NumPy route's error
    assert f(x, w, QScheme(8, False), None, 64, None) is None
    with pytest.raises(ValueError, match="NaN or Inf"):
        int_linear(x, w, QScheme(8, False))
    x[1, 5] = -np.inf
    with pytest.raises(ValueError, match="NaN or Inf"):
        int_linear(x, w, token_scheme(8))


def test_start_with_a_zero_point_wraps_as_int32_sums():
    # -(128 + z) rowsum(W_g) modulo 2^32 from exact sums, at the int32 edge (K = 2^17 of -128)
    _need_route()
    w = np.full((3, 1 << 17), -128, np.int8)
    w[1] = 127
    packed = kernels.pack_weight(w)
    for z in (-128, -7, 0, 5, 127):
        sums = w.astype(np.int64).sum(1)
        ref = ((-(128 + z) * sums) % (1 << 32)).astype(np.uint32).view(np.int32)
        np.testing.assert_array_equal(packed.start(1, z)[0, :3], ref)


def test_quantize_dynamic_layer_takes_the_fused_route(monkeypatch):
    _need_route()
    tx.manual_seed(0)
    q = quantize_dynamic(nn.Sequential(nn.Linear(96, 40)))
    calls = []
    real = _fused.int_linear_fused
    import tensorix.quant.gemm as gemm

    monkeypatch.setattr(gemm, "int_linear_fused", lambda *a: calls.append(1) or real(*a))
    x = tx.randn(2, 5, 96)
    with tx.no_grad():
        y = q(x)
    assert calls and y.shape == (2, 5, 40)
    monkeypatch.setattr(gemm, "int_linear_fused", lambda *a: None)
    with tx.no_grad():
        np.testing.assert_array_equal(q(x).numpy(), y.numpy())


@pytest.mark.parametrize("act_name", ["per tensor affine (quantize_dynamic's)",
                                      "per token symmetric"])
def test_int4_layer_panels_two_codes_a_byte_same_bits(act_name, rng):
    # a packed int4 layer's VNNI panels hold two codes a byte (half the bytes) and give the
    # bits of the int8 panels of the same codes, on the fused route and the planes route
    # (per-token affine: a zero point a row), M across tiles, K over a block, N off the panels
    _need_route()
    from tensorix.quant.layers import QuantizedLinear

    for act in (ACTS[act_name], QScheme(8, False, "per_channel", axis=0)):
        for m, k, n in ((1, 64, 5), (13, 4128, 70), (64, 512, 33)):
            lin = nn.Linear(k, n)
            q = QuantizedLinear.from_float(lin, QScheme(4, True, "per_channel", axis=0), act)
            x = _input(rng, m, k)
            with tx.no_grad():
                y = q(tx.tensor(x)).numpy()
            w = q._int_weight()
            assert w.packed.panels.dtype == np.uint8 and w.codes is None
            assert w.packed.panels.nbytes == -(-n // 32) * 32 * k // 2
            ref = int_linear(x, IntWeight.from_codes(q._codes(), q.weight_scale.numpy(),
                                                     q.weight_scheme, q.weight_row_sums.numpy()),
                             act, None, q.bias.numpy())
            assert IntWeight.from_codes(q._codes(), q.weight_scale.numpy(),
                                        q.weight_scheme).packed.panels.dtype == np.int8
            np.testing.assert_array_equal(y.view(np.int32), ref.view(np.int32),
                                          err_msg=f"{act} M={m} K={k} N={n}")
