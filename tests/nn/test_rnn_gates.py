"""The recurrent layers' numba gate loops (kernels/_gates.py, declared on
nn/layers/_recurrence.py's Recurrence): tanh32 and sigmoid32 within their stated ulp bounds,
one step of each loop against the NumPy passes it replaces (forward within the stated bound,
backward bit for bit), whole sequences with and without the loops, float64 gradient checks
through them, and the split over the pool by rows (values against torch at model width:
tests/nn/test_rnn_fused.py)."""

import numpy as np
import pytest

import tensorix as tx
from tensorix import _threads
from tensorix.autograd.dispatch import kernel
from tensorix.kernels import _gates
from tensorix.nn.layers import _recurrence
from tensorix.nn.layers._recurrence import Recurrence, _gru_grads, _lstm_grads, _sigmoid
from tensorix.testing.gradcheck import gradcheck

ROLES = ("lstm_forward", "lstm_backward", "gru_forward", "gru_backward")
# one step's gates and states, kernel against the NumPy passes: float32 ulp of max(1, |v|)
# (measured 4.9 for c = f c_prev + i g, whose three factors each carry up to 2 ulp)
STEP_ULP = 6


def _loops(dtype=tx.float32):
    """The four compiled loops, or skip where numba does not serve (no jit extra)."""
    found = {r: kernel(Recurrence, r, tx.device("cpu"), dtype) for r in ROLES}
    if any(f is None for f in found.values()):
        pytest.skip("numba gate loops not available here")
    return found


def _ulp_of_float32(got, ref):
    ref = np.asarray(ref, np.float64)
    return np.abs(got.astype(np.float64) - ref) / np.spacing(np.abs(ref).astype(np.float32))


def _sweep():
    bits = np.arange(0, 0x7F800000, 4099, dtype=np.uint32).view(np.float32)
    return np.concatenate([bits, -bits, np.linspace(-20, 20, 1 << 18, dtype=np.float32)])


@pytest.mark.parametrize("name,ref,bound", [("tanh32", np.tanh, 2),
                                            ("sigmoid32", lambda v: 1 / (1 + np.exp(-v)), 3)])
def test_float32_activations_within_their_bound(name, ref, bound):
    x = _sweep()
    with np.errstate(all="ignore"):  # the NumPy form computes both branches
        want = ref(x.astype(np.float64))
        got = getattr(_gates, name)(x)
    assert got.dtype == np.float32
    ulp = _ulp_of_float32(got, want)
    worst = int(np.argmax(ulp))
    assert ulp[worst] <= bound, f"{name}({x[worst]!r}) = {got[worst]!r}, exact {want[worst]!r}"
    special = np.float32([0.0, -0.0, np.inf, -np.inf, np.nan, 200.0, -200.0])
    with np.errstate(all="ignore"):  # the NumPy form computes both branches
        out = getattr(_gates, name)(special)
    if name == "tanh32":
        np.testing.assert_array_equal(out, [0.0, -0.0, 1, -1, np.nan, 1, -1])
        assert np.signbit(out[1])
    else:
        np.testing.assert_array_equal(out, [0.5, 0.5, 1, 0, np.nan, 1, 0])


def _numpy_lstm_step(gemm, x, c_prev):
    """Recurrence's NumPy passes for one LSTM step (the reference)."""
    hid = c_prev.shape[1]
    a = gemm + x
    _sigmoid(np, a[:, :2 * hid])
    _sigmoid(np, a[:, 3 * hid:])
    np.tanh(a[:, 2 * hid:3 * hid], out=a[:, 2 * hid:3 * hid])
    c = a[:, hid:2 * hid] * c_prev
    c += a[:, :hid] * a[:, 2 * hid:3 * hid]
    tc = np.tanh(c)
    return a, c, tc, a[:, 3 * hid:] * tc


def _numpy_gru_step(gh, x, h_prev):
    hid = h_prev.shape[1]
    a = np.empty_like(x)
    np.add(x[:, :2 * hid], gh[:, :2 * hid], out=a[:, :2 * hid])
    _sigmoid(np, a[:, :2 * hid])
    a[:, 2 * hid:] = np.tanh(a[:, :hid] * gh[:, 2 * hid:] + x[:, 2 * hid:])
    n = a[:, 2 * hid:]
    return a, (h_prev - n) * a[:, hid:2 * hid] + n


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_one_step_kernel_against_numpy_passes(dtype):
    loops = _loops()
    rng = np.random.default_rng(0)
    n, hid = 7, 33
    eps = np.finfo(dtype).eps

    def close(got, ref, what):
        err = np.abs(got.astype(np.float64) - ref) / np.maximum(1, np.abs(ref)) / (eps / 2)
        assert err.max() <= STEP_ULP, f"{what}: {err.max():.2f} ulp"

    # LSTM: forward within the bound; backward, from the same forward buffers, bit for bit
    gemm, x = (3 * rng.standard_normal((n, 4 * hid))).astype(dtype), \
        rng.standard_normal((n, 4 * hid)).astype(dtype)
    c_prev = (2 * rng.standard_normal((n, hid))).astype(dtype)
    acts, c, tc, h = (np.empty_like(v) for v in (gemm, c_prev, c_prev, c_prev))
    loops["lstm_forward"](acts, gemm, x, c_prev, c, tc, h)
    for got, ref, what in zip((acts, c, tc, h), _numpy_lstm_step(gemm, x, c_prev),
                              ("gates", "c", "tanh(c)", "h")):
        close(got, ref, f"LSTM {what}")
    dh, dc = (rng.standard_normal((n, hid)).astype(dtype) for _ in range(2))
    da, dc_new = np.empty_like(acts), np.empty_like(dc)
    loops["lstm_backward"](da, dc_new, acts, tc, c_prev, dh, dc)
    q = [acts[:, k * hid:(k + 1) * hid] for k in range(4)]
    ref_da, ref_dc = _lstm_grads(*q, tc, c_prev, dh, dc, np.concatenate)
    np.testing.assert_array_equal(da, ref_da)
    np.testing.assert_array_equal(dc_new, ref_dc)

    # GRU
    gh, x = (3 * rng.standard_normal((n, 3 * hid))).astype(dtype), \
        rng.standard_normal((n, 3 * hid)).astype(dtype)
    h_prev = rng.standard_normal((n, hid)).astype(dtype)
    acts, h = np.empty_like(gh), np.empty_like(h_prev)
    loops["gru_forward"](acts, gh, x, h_prev, h)
    ref_acts, ref_h = _numpy_gru_step(gh, x, h_prev)
    close(acts, ref_acts, "GRU gates")
    close(h, ref_h, "GRU h")
    dgi, dgh, dz = np.empty_like(gh), np.empty_like(gh), np.empty_like(h_prev)
    loops["gru_backward"](dgi, dgh, dz, acts, gh, h_prev, dh)
    r, z, nn = (acts[:, k * hid:(k + 1) * hid] for k in range(3))
    ref = _gru_grads(r, z, nn, gh[:, 2 * hid:], h_prev, dh, np.concatenate)
    for got, want in zip((dgi, dgh, dz), ref):
        np.testing.assert_array_equal(got, want)


def _inputs(mode, dtype, t_len=6, n=5, hid=8, seed=0):
    gates = {"LSTM": 4, "GRU": 3}[mode]
    rng = np.random.default_rng(seed)

    def t(*shape, scale=1.0):
        return tx.tensor(scale * rng.standard_normal(shape), dtype=dtype, requires_grad=True)

    return [t(t_len, n, gates * hid), t(n, hid), t(n, hid) if mode == "LSTM" else None,
            t(gates * hid, hid, scale=0.5), t(gates * hid)]


def _run(mode, inputs, reverse):
    out = Recurrence.apply(*inputs, mode, reverse)
    loss = (out[0] * out[0]).sum() + out[1].sum() + (out[2].sum() if mode == "LSTM" else 0)
    grads = tx.autograd.grad(loss, [t for t in inputs if t is not None])
    return [o.detach().numpy() for o in out], [g.numpy() for g in grads]


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
@pytest.mark.parametrize("dtype,tol", [(tx.float32, 2e-5), (tx.float64, 1e-13)])
def test_sequence_with_and_without_the_loops(mode, dtype, tol, monkeypatch):
    _loops(dtype)
    inputs = _inputs(mode, dtype)
    fused = _run(mode, inputs, reverse=True)
    monkeypatch.setattr(_recurrence, "kernel", lambda *a: None)  # the NumPy passes
    plain = _run(mode, inputs, reverse=True)
    for got, want in zip(fused[0] + fused[1], plain[0] + plain[1]):
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_gradcheck_through_the_loops(mode):
    _loops(tx.float64)
    inputs = _inputs(mode, tx.float64, t_len=4, n=3, hid=5, seed=1)
    gradcheck(lambda *a: Recurrence.apply(*a, mode, False), inputs,
              name=f"Recurrence {mode} (numba gates)")


def test_split_by_rows_gives_the_same_bits():
    loops = _loops()
    before = tx.get_num_threads()
    rng = np.random.default_rng(2)
    n, hid = 160, 512  # 160 rows of 2048 gates: two parts of at least COSTLY elements
    gemm, x = (rng.standard_normal((n, 4 * hid)).astype(np.float32) for _ in range(2))
    c_prev = rng.standard_normal((n, hid)).astype(np.float32)

    def step():
        outs = [np.empty_like(gemm)] + [np.empty_like(c_prev) for _ in range(3)]
        _recurrence._by_rows(loops["lstm_forward"], outs[0], gemm, x, c_prev, *outs[1:])
        return outs

    try:
        tx.set_num_threads(2)
        assert _threads.parts_for(n, _threads.COSTLY // (4 * hid)) == 2
        split = step()
        tx.set_num_threads(1)
        whole = step()
    finally:
        tx.set_num_threads(before)
    for got, want in zip(split, whole):
        np.testing.assert_array_equal(got, want)
