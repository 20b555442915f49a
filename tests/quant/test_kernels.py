"""Integer kernels: exact int8 GEMM on adversarial values (both routes and both devices),
int4 packing, int4 GEMM, and bad input."""

import numpy as np
import pytest

import tensorix as tx
from tensorix.quant import kernels
from tensorix.quant.kernels import int4_mm, int_mm, pack_int4, unpack_int4


def _ref(a, b):
    return a.astype(np.int64) @ b.astype(np.int64)


CASES = {
    "all_minus_128": lambda rng, m, k, n: (np.full((m, k), -128), np.full((k, n), -128)),
    "extremes": lambda rng, m, k, n: (rng.choice([-128, 127], (m, k)),
                                      rng.choice([-128, 127], (k, n))),
    "random": lambda rng, m, k, n: (rng.integers(-128, 128, (m, k)),
                                    rng.integers(-128, 128, (k, n))),
}


ROUTES = ["vnni", "avx2", "portable", "blas"]


def _set_route(name, monkeypatch):
    # vnni: the AVX-512 VNNI tiles where the CPU has them; avx2: the AVX2 packed tiles (CPUs
    # with AVX2 and no VNNI); portable: the numba 4 x 2 / 2 x 2 tiles of CPUs without either;
    # blas: the float32-chunk route (no numba, and CuPy)
    if name != "blas":
        if not kernels.compiled_available():
            pytest.skip("numba is not installed")
        kern = kernels._compiled()
        if name == "vnni" and kernels._vnni() is None:
            pytest.skip("this CPU has no AVX-512 VNNI")
        if name == "avx2" and not kern.avx2():
            pytest.skip("this CPU has no AVX2")
        if name in ("avx2", "portable"):
            monkeypatch.setitem(kernels._state, "vnni", False)
        if name == "portable":
            monkeypatch.setitem(kernels._state, "avx2", False)
    else:
        monkeypatch.setattr(kernels, "compiled_available", lambda: False)


@pytest.fixture(params=ROUTES)
def route(request, monkeypatch):
    _set_route(request.param, monkeypatch)
    return request.param


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("m,k,n", [(1, 4096, 33), (5, 3000, 8), (64, 1025, 17), (2, 1, 1)])
def test_int_mm_exact(route, case, m, k, n, rng):
    a, b = (v.astype(np.int8) for v in CASES[case](rng, m, k, n))
    out = int_mm(tx.tensor(a), tx.tensor(b))
    assert out.dtype == tx.int32
    np.testing.assert_array_equal(out.numpy(), _ref(a, b))


def test_int_mm_k_limit_reaches_int32_edge(route):
    # K = 2^17 - 1 products of -128 * -128: 2^31 - 2^14, just below int32's max
    k = kernels.K_MAX - 1
    a = tx.full((1, k), -128, dtype=tx.int8)
    assert int_mm(a, a.T).item() == k * 128 * 128


def test_int_mm_weight_transpose_view(rng):
    w = rng.integers(-128, 128, (40, 64)).astype(np.int8)
    x = rng.integers(-128, 128, (3, 64)).astype(np.int8)
    np.testing.assert_array_equal(int_mm(tx.tensor(x), tx.tensor(w).T).numpy(), _ref(x, w.T))


@pytest.fixture(params=["vnni", "avx2"])
def packed_route(request, monkeypatch):
    _set_route(request.param, monkeypatch)
    return request.param


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("m,k,n", [(1, 4096, 50), (2, 1040, 13), (3, 33, 9), (4, 4096, 48),
                                   (7, 3001, 33), (64, 1025, 17), (9, 1, 3), (70, 2050, 65)])
def test_int_mm_packed_weight_exact(packed_route, case, m, k, n, rng):
    # the micro-kernels on a packed weight: full row tiles and the shorter tiles of the last
    # rows (batches 1-3: only those); padding N to the panel width and K to pairs / quads adds
    # nothing; K over the VNNI kernel's K block runs several passes
    a, b = (v.astype(np.int8) for v in CASES[case](rng, m, k, n))
    packed = kernels.pack_weight(np.ascontiguousarray(b.T))
    assert packed.kind == packed_route
    np.testing.assert_array_equal(kernels._int_mm_raw(a, b, packed), _ref(a, b))


def test_int_mm_packed_random_shapes(packed_route):
    # random shapes: M 1..70, odd K, N off the panel width; a strided (non-contiguous) input
    rng = np.random.default_rng(16)
    for _ in range(12):
        m, k, n = int(rng.integers(1, 71)), int(rng.integers(1, 1500)) | 1, \
            int(rng.integers(1, 100))
        a = rng.integers(-128, 128, (m, 2 * k)).astype(np.int8)[:, ::2]
        w = rng.integers(-128, 128, (n, k)).astype(np.int8)
        packed = kernels.pack_weight(w)
        np.testing.assert_array_equal(kernels._int_mm_raw(a, w.T, packed), _ref(a, w.T),
                                      err_msg=f"M={m} K={k} N={n}")


def test_int_mm_packed_reaches_int32_edge(packed_route):
    k = kernels.K_MAX - 1
    a = np.full((11, k), -128, np.int8)  # an 8-row and a 3-row VNNI tile, 4 + 4 + 3 on AVX2
    packed = kernels.pack_weight(a[:1])
    assert (kernels._int_mm_raw(a, a[:1].T, packed) == k * 128 * 128).all()
    a[:, ::2] = 127  # the shifted sums of the VNNI route leave int32 and wrap back
    w = np.full((1, k), -128, np.int8)
    np.testing.assert_array_equal(kernels._int_mm_raw(a, w.T, kernels.pack_weight(w)),
                                  _ref(a, w.T))


def test_quantized_linear_repacks_after_load_state_dict(rng):
    from tensorix import nn
    from tensorix.quant import quantize_dynamic

    a, b = quantize_dynamic(nn.Sequential(nn.Linear(64, 32))), \
        quantize_dynamic(nn.Sequential(nn.Linear(64, 32)))
    x = tx.tensor(rng.standard_normal((8, 64)).astype(np.float32))
    a(x), b(x)  # both pack their weights
    a.load_state_dict(b.state_dict())  # copies the codes in place
    np.testing.assert_array_equal(a(x).numpy(), b(x).numpy())


def test_int_mm_device(device, rng):
    a = rng.integers(-128, 128, (6, 2100)).astype(np.int8)
    b = rng.integers(-128, 128, (2100, 9)).astype(np.int8)
    b[:, 0] = -128
    a[0] = -128
    out = int_mm(tx.tensor(a, device=device), tx.tensor(b, device=device))
    assert out.device.type == device
    np.testing.assert_array_equal(out.cpu().numpy(), _ref(a, b))


def test_pack_int4_roundtrip_and_layout(rng):
    q = rng.integers(-8, 8, (5, 6)).astype(np.int8)
    p = pack_int4(tx.tensor(q))
    assert p.dtype == tx.uint8 and tuple(p.shape) == (5, 3)
    lo, hi = q[:, 0::2] & 0xF, q[:, 1::2] & 0xF
    np.testing.assert_array_equal(p.numpy(), (lo | (hi << 4)).astype(np.uint8))
    np.testing.assert_array_equal(unpack_int4(p).numpy(), q)
    assert p.numpy().nbytes * 2 == q.nbytes


def test_int4_mm(device, rng):
    x = rng.integers(-128, 128, (3, 256)).astype(np.int8)
    w = rng.integers(-8, 8, (10, 256)).astype(np.int8)
    w[0] = -8
    out = int4_mm(tx.tensor(x, device=device), pack_int4(tx.tensor(w, device=device)))
    np.testing.assert_array_equal(out.cpu().numpy(), _ref(x, w.T))


def test_bad_input(monkeypatch):
    with pytest.raises(TypeError, match="int_mm\\(\\): argument 'a' must be an int8 Tensor"):
        int_mm(tx.ones(2, 2), tx.ones(2, 2, dtype=tx.int8))
    with pytest.raises(ValueError, match="cannot be multiplied"):
        int_mm(tx.ones(2, 3, dtype=tx.int8), tx.ones(2, 2, dtype=tx.int8))
    with pytest.raises(ValueError, match="must be 2-d"):
        int_mm(tx.ones(2, dtype=tx.int8), tx.ones(2, 2, dtype=tx.int8))
    with pytest.raises(ValueError, match="K = 4 is too large"):
        monkeypatch.setattr(kernels, "K_MAX", 3)
        int_mm(tx.ones(1, 4, dtype=tx.int8), tx.ones(4, 1, dtype=tx.int8))
    with pytest.raises(ValueError, match="\\[-8, 7\\]"):
        pack_int4(tx.tensor([8, 0], dtype=tx.int8))
    with pytest.raises(ValueError, match="must be even"):
        pack_int4(tx.tensor([1, 0, 1], dtype=tx.int8))
    with pytest.raises(ValueError, match="K = 4 but the packed weight holds 6"):
        int4_mm(tx.ones(1, 4, dtype=tx.int8), tx.ones(2, 3, dtype=tx.uint8))


@pytest.mark.parametrize("backend,route", [("int8", "_int_mm_raw"), ("f32", "_blas")])
def test_ozaki_products_run_on_int_mm(backend, route, monkeypatch, rng):
    # numerics.ozaki has no int8 GEMM of its own: its exact products are int_mm's routes
    from tensorix import numerics as nx

    calls = []
    real = getattr(kernels, route)
    monkeypatch.setattr(kernels, route, lambda *a: calls.append(1) or real(*a))
    A, B = rng.standard_normal((5, 40)), rng.standard_normal((40, 3))
    out = nx.ozaki_gemm(A, B, "II", moduli=12, backend_gemm=backend)
    assert len(calls) == 12  # one exact product per modulus, bit-equal to float64 products
    np.testing.assert_array_equal(out, nx.ozaki_gemm(A, B, "II", moduli=12, backend_gemm="f64"))


def test_runtime_nbytes_counts_the_kernels_copies():
    # int8 activations: after a call the layer also holds the packed panels (as many bytes
    # as its int8 codes on AVX2); packed int4 codes are unpacked to int8 for the kernel too
    from tensorix import nn
    from tensorix.quant import QScheme
    from tensorix.quant.layers import QuantizedLinear

    # (on the VNNI kernel, which reads only its panels, the int4 codes' int8 copy is let go
    # once packed, and made again only for a route that reads the codes)
    lin, x = nn.Linear(64, 32), tx.randn(4, 64)
    vnni = kernels.compiled_available() and kernels._vnni() is not None
    for bits, extra_codes in ((8, 0), (4, 0 if vnni else 32 * 64)):
        q = QuantizedLinear.from_float(lin, QScheme(bits, True, "per_channel", axis=0),
                                       QScheme(8, False))
        stored = q.weight_nbytes() + q.weight_row_sums.numpy().nbytes
        assert q.runtime_nbytes() == stored  # nothing made before the first call
        with tx.no_grad():
            y = q(x)
        w = q._int_weight()
        panels = 0 if w.packed is None else w.packed.nbytes
        assert q.runtime_nbytes() == stored + panels + extra_codes
        assert (w.codes is None) == (bits == 4 and vnni)
        np.testing.assert_array_equal(w.int8(), q._codes())  # made again on demand
        with tx.no_grad():
            np.testing.assert_array_equal(q(x).numpy(), y.numpy())
    wo = QuantizedLinear.from_float(lin, QScheme(8, True, "per_channel", axis=0))
    with tx.no_grad():
        wo(x)
    assert wo.runtime_nbytes() == wo.weight_nbytes()  # weight-only: the stored codes alone


def test_int_mm_groups_exact():
    # the VNNI kernel's per-group planes (one pass over a weight packed whole) against int64
    # products group by group: M 1..70, groups of 4..256 k, N off the panel width
    if kernels.pack_weight(np.zeros((1, 4), np.int8)) is None or kernels._vnni() is None:
        pytest.skip("no VNNI kernel on this CPU")
    rng = np.random.default_rng(61)
    for group, n_groups in ((4, 3), (32, 5), (128, 9), (256, 3), (1028, 2)):
        m, n = int(rng.integers(1, 71)), int(rng.integers(1, 100))
        k = group * n_groups
        a = rng.integers(-128, 128, (m, k)).astype(np.int8)
        w = rng.integers(-128, 128, (n, k)).astype(np.int8)
        w[0] = -128
        a[0] = -128
        planes = kernels._int_mm_groups(a, kernels.pack_weight(w), group)
        assert planes.shape == (n_groups, m, n)
        for c in range(n_groups):
            sl = slice(c * group, (c + 1) * group)
            np.testing.assert_array_equal(planes[c], _ref(a[:, sl], w[:, sl].T),
                                          err_msg=f"group {group}, plane {c}, M={m} N={n}")
    packed = kernels.pack_weight(np.ones((3, 24), np.int8))
    assert kernels._int_mm_groups(np.ones((2, 24), np.int8), packed, 6) is None  # off quads


def test_int_mm_scaled_same_bits_as_the_numpy_rescale():
    # the VNNI tiles' fused rescale against gemm.int_linear's NumPy passes (convert, times
    # s_a, times s_b, groups summed in order) on the exact int32 sums: groups of 4..20000 k
    # (longer than one K block: sums kept between blocks), one zero point; groups off the
    # kernel's quads of k (odd K) are left to the planes route
    if kernels._vnni() is None or not kernels.compiled_available():
        pytest.skip("no VNNI kernel on this CPU")
    rng = np.random.default_rng(62)
    for group, n_groups, z in ((4, 3, None), (128, 9, None), (8192, 2, None), (20000, 1, 7),
                               (1001, 1, 3), (256, 3, -128)):
        m, n = int(rng.integers(1, 71)), int(rng.integers(1, 100))
        k = group * n_groups
        a = rng.integers(-128, 128, (m, k)).astype(np.int8)
        w = rng.integers(-128, 128, (n, k)).astype(np.int8)
        s_a = rng.random((m, n_groups)).astype(np.float32)
        s_b = rng.random((n_groups, n)).astype(np.float32)
        za = None if z is None else np.array([[z]], np.int32)
        if group % 4:
            assert kernels._int_mm_scaled(a, kernels.pack_weight(w), group, s_a, s_b, za) \
                is None
            continue
        out = kernels._int_mm_scaled(a, kernels.pack_weight(w), group, s_a, s_b, za)
        ref = None
        for c in range(n_groups):
            sl = slice(c * group, (c + 1) * group)
            acc = _ref(a[:, sl], w[:, sl].T) - (z or 0) * w[:, sl].sum(1, dtype=np.int64)
            part = acc.astype(np.int32).astype(np.float32)
            part *= s_a[:, c, None]
            part *= s_b[c][None, :]
            ref = part if ref is None else ref + part
        np.testing.assert_array_equal(out, ref, err_msg=f"group {group} x {n_groups}")
