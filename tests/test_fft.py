"""``tensorix.fft``, ``tensorix.stft`` and ``tensorix.istft`` against torch 2.x: values and
dtypes for every transform, norm and size/dim variant; gradients of real and complex inputs
against torch; float64 numerical gradient checks (first and second order) of every transform;
the frequency helpers and shifts; the STFT pair (values, gradients to signal and window,
round trip, errors); the "cuda" device path."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tensorix as tx
from tensorix.testing import assert_close, gradcheck, gradgradcheck

torch = pytest.importorskip("torch")

C2C = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn"]
R2C = ["rfft", "ihfft", "rfft2", "ihfft2", "rfftn", "ihfftn"]
C2R = ["irfft", "hfft", "irfft2", "hfft2", "irfftn", "hfftn"]
ALL = C2C + R2C + C2R
NORMS = [None, "backward", "ortho", "forward"]


def _variants(name):
    """Keyword variants per arity: defaults, another dim (order matters for the real ones),
    padding and trimming sizes."""
    if name.endswith("n") or name.endswith("2"):
        extra = [{"s": (3, 8)}, {"s": (5, 2), "dim": (2, 0)}, {"dim": (-1, 0)}]
        return [{}] + extra + ([{"dim": (1,)}, {"s": (7,)}] if name.endswith("n") else [])
    return [{}, {"dim": 0}, {"n": 7}, {"n": 3, "dim": 1}]


def _input(rng, name, complex_, dtype):
    x = rng.standard_normal((4, 6, 5))
    if complex_:
        x = x + 1j * rng.standard_normal((4, 6, 5))
        return x.astype(np.complex64 if dtype == "float32" else np.complex128)
    return x.astype(dtype)


def _inputs_of(name):
    return [False] if name in R2C else [False, True]


def _torch_out(t):
    return t.resolve_conj().detach().numpy()


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_values_and_dtypes_against_torch(name, dtype, rng):
    for complex_ in _inputs_of(name):
        x = _input(rng, name, complex_, dtype)
        for kw in _variants(name):
            for norm in NORMS:
                got = getattr(tx.fft, name)(tx.tensor(x), norm=norm, **kw)
                want = getattr(torch.fft, name)(torch.tensor(x), norm=norm, **kw)
                assert str(got.dtype) == str(want.dtype).replace("torch.", "tensorix."), \
                    (name, kw, norm)
                assert_close(got, _torch_out(want), dtype=getattr(tx, dtype),
                             rtol=1e-4 if dtype == "float32" else None,
                             atol=1e-4 if dtype == "float32" else None,
                             what=f"{name}({kw}, norm={norm})")


def test_integer_input_goes_to_the_default_dtype():
    got = tx.fft.fft(tx.arange(6))
    want = torch.fft.fft(torch.arange(6))
    assert got.dtype is tx.complex64
    assert_close(got, want.numpy(), dtype=tx.float32)


def _weights(rng, shape, complex_):
    w = rng.standard_normal(shape)
    return w + 1j * rng.standard_normal(shape) if complex_ else w


@pytest.mark.parametrize("name", ALL)
def test_gradients_against_torch(name, rng):
    """Loss ``Re(sum(w * out))`` with a random (complex) ``w``: the gradient of a real input
    and the conjugate Wirtinger gradient of a complex one, as torch defines them."""
    for complex_ in _inputs_of(name):
        x = _input(rng, name, complex_, "float64")
        for kw in _variants(name):
            for norm in NORMS:
                xt = torch.tensor(x, requires_grad=True)
                out_t = getattr(torch.fft, name)(xt, norm=norm, **kw)
                w = _weights(rng, tuple(out_t.shape), out_t.is_complex())
                (out_t * torch.tensor(w)).real.sum().backward()
                xx = tx.tensor(x, requires_grad=True)
                out = getattr(tx.fft, name)(xx, norm=norm, **kw)
                (out * tx.tensor(w)).real.sum().backward()
                assert_close(xx.grad, xt.grad, what=f"grad {name}({kw}, {norm})")


def _as_real_fn(name, complex_, **kw):
    """The transform as a map of real float64 tensors (complex inputs given as real and
    imaginary parts, complex outputs seen as real pairs) for the numerical check."""
    def fn(*parts):
        x = tx.complex(*parts) if complex_ else parts[0]
        out = getattr(tx.fft, name)(x, **kw)
        return tx.view_as_real(out) if out.dtype.is_complex else out
    return fn


@pytest.mark.parametrize("name", ALL)
def test_numerical_gradcheck(name, rng):
    for complex_ in _inputs_of(name):
        shape = (3, 4, 5)
        parts = [tx.tensor(rng.standard_normal(shape), requires_grad=True)
                 for _ in range(2 if complex_ else 1)]
        for kw in _variants(name)[:3]:
            for norm in ("backward", "ortho", "forward"):
                fn = _as_real_fn(name, complex_, norm=norm, **kw)
                gradcheck(fn, parts, name=f"{name}({kw}, {norm})")


@pytest.mark.parametrize("name", ["fft", "rfft", "irfft", "hfft", "ihfft", "rfftn", "irfftn"])
def test_second_order_gradcheck(name, rng):
    """The backward is built from the same primitives, so it is differentiable again."""
    complex_ = name not in R2C
    parts = [tx.tensor(rng.standard_normal((3, 6)), requires_grad=True)
             for _ in range(2 if complex_ else 1)]

    def fn(*p):  # a nonlinear function of the transform, so second derivatives are not zero
        out = _as_real_fn(name, complex_, norm="ortho")(*p)
        return out * out
    gradgradcheck(fn, parts, name=name)


def test_round_trips(rng):
    x = tx.tensor(rng.standard_normal((3, 8, 7)))
    assert_close(tx.fft.ifftn(tx.fft.fftn(x)).real, x.numpy())
    assert_close(tx.fft.irfftn(tx.fft.rfftn(x), s=x.shape), x.numpy())
    assert_close(tx.fft.irfft(tx.fft.rfft(x, norm="ortho"), n=7, norm="ortho"), x.numpy())
    assert_close(tx.fft.hfft(tx.fft.ihfft(x), n=7), x.numpy())


# -- frequencies and shifts -----------------------------------------------------------------------
@pytest.mark.parametrize("n", [0, 1, 4, 7])
def test_fftfreq_and_rfftfreq(n):
    for d in (1.0, 0.25):
        assert_close(tx.fft.fftfreq(n, d), torch.fft.fftfreq(n, d).numpy(), dtype=tx.float32)
        assert_close(tx.fft.rfftfreq(n, d), torch.fft.rfftfreq(n, d).numpy(), dtype=tx.float32)
    f = tx.fft.fftfreq(n, dtype=tx.float64, requires_grad=True)
    assert f.dtype is tx.float64 and f.requires_grad and tx.fft.rfftfreq(n).dtype is tx.float32


@pytest.mark.parametrize("dim", [None, 0, (1,), (0, 1), -1])
def test_fftshift_and_ifftshift(dim):
    x = np.arange(35.0).reshape(5, 7)
    for name in ("fftshift", "ifftshift"):
        got = getattr(tx.fft, name)(tx.tensor(x), dim=dim)
        want = getattr(torch.fft, name)(torch.tensor(x), dim=dim)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    back = tx.fft.ifftshift(tx.fft.fftshift(tx.tensor(x), dim), dim)
    np.testing.assert_array_equal(back.numpy(), x)


def test_fftshift_gradient():
    x = tx.tensor(np.arange(5.0), requires_grad=True)
    (tx.fft.fftshift(x) * tx.tensor(np.arange(5.0))).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.fft.ifftshift(np.arange(5.0)))


# -- errors ---------------------------------------------------------------------------------------
def test_errors_name_the_op_and_argument():
    x = tx.randn(4, 6)
    with pytest.raises(RuntimeError, match=r"fft\(\): Invalid normalization mode: 'foo'"):
        tx.fft.fft(x, norm="foo")
    with pytest.raises(RuntimeError, match=r"fft\(\): Invalid number of data points \(0\)"):
        tx.fft.fft(x, n=0)
    with pytest.raises(RuntimeError, match=r"rfft\(\): expects a real input tensor"):
        tx.fft.rfft(x.to(tx.complex64))
    with pytest.raises(RuntimeError, match=r"fft\(\): Unsupported dtype float16"):
        tx.fft.fft(x.half())
    with pytest.raises(RuntimeError, match=r"fftn\(\): When given, dim and shape"):
        tx.fft.fftn(x, s=(3, 4), dim=(0,))
    with pytest.raises(RuntimeError, match=r"fftn\(\): FFT dims must be unique"):
        tx.fft.fftn(x, dim=(0, 0))
    with pytest.raises(IndexError, match=r"fft\(\): dimension out of range"):
        tx.fft.fft(x, dim=5)
    with pytest.raises(RuntimeError, match=r"irfft\(\): Invalid number of data points \(0\)"):
        tx.fft.irfft(tx.ones(1, dtype=tx.complex64))
    with pytest.raises(TypeError, match=r"fft\(\): argument 'input' must be a Tensor"):
        tx.fft.fft([1.0, 2.0])
    with pytest.raises(TypeError, match=r"fft\(\): argument 'n' must be an int"):
        tx.fft.fft(x, n=2.5)


def test_empty_dim_list_copies():
    x = tx.randn(3)
    y = tx.fft.fftn(x, dim=())
    assert y.dtype is tx.complex64 and y.shape == (3,)
    assert_close(y.real, x.numpy())


# -- the "cuda" device (a GPU where there is one, else the CuPy stand-in) -------------------------
@pytest.mark.parametrize("name", ["fft", "rfft", "irfft", "fftn", "hfft"])
def test_on_device_values_and_grads_match_cpu(name, device, rng):
    x = rng.standard_normal((3, 6)) + (0 if name in R2C else 1j * rng.standard_normal((3, 6)))
    grads = []
    for dev in ("cpu", device):
        xx = tx.tensor(x, device=dev, requires_grad=True)
        out = getattr(tx.fft, name)(xx, norm="ortho")
        assert out.device.type == dev
        (out.abs() if out.dtype.is_complex else out).pow(2).sum().backward()
        grads.append((out.detach().cpu().numpy(), xx.grad.cpu().numpy()))
    assert_close(grads[1][0], grads[0][0])
    assert_close(grads[1][1], grads[0][1])


# -- stft / istft ---------------------------------------------------------------------------------
STFT_CASES = [{}, {"hop_length": 3, "win_length": 10}, {"center": False},
              {"normalized": True}, {"onesided": False}, {"pad_mode": "constant"},
              {"hop_length": 5, "pad_mode": "replicate"}]


def _window(kw):
    return np.hanning(kw.get("win_length", 16) + 2)[1:-1]


@pytest.mark.parametrize("kw", STFT_CASES)
@pytest.mark.parametrize("batched", [False, True])
def test_stft_istft_values_against_torch(kw, batched, rng):
    x = rng.standard_normal((2, 50) if batched else (50,))
    w = _window(kw)
    got = tx.stft(tx.tensor(x), 16, window=tx.tensor(w), return_complex=True, **kw)
    want = torch.stft(torch.tensor(x), 16, window=torch.tensor(w), return_complex=True, **kw)
    assert_close(got, want.numpy(), what="stft")
    ikw = {k: v for k, v in kw.items() if k != "pad_mode"}
    for length in (None, 41):
        back = tx.istft(got, 16, window=tx.tensor(w), length=length, **ikw)
        ref = torch.istft(want, 16, window=torch.tensor(w), length=length, **ikw)
        assert_close(back, ref.numpy(), what=f"istft(length={length})")
    if kw.get("center", True):  # the round trip restores the signal
        assert_close(tx.istft(got, 16, window=tx.tensor(w), length=50, **ikw), x)


def test_stft_complex_input_and_istft_return_complex(rng):
    x = rng.standard_normal(40) + 1j * rng.standard_normal(40)
    w = np.hanning(16)
    got = tx.stft(tx.tensor(x), 16, hop_length=4, window=tx.tensor(w), return_complex=True)
    want = torch.stft(torch.tensor(x), 16, hop_length=4, window=torch.tensor(w),
                      return_complex=True)
    assert_close(got, want.numpy())
    back = tx.istft(got, 16, hop_length=4, window=tx.tensor(w), return_complex=True,
                    length=40)
    assert_close(back, x)


def test_stft_gradients_to_signal_and_window(rng):
    x, w = rng.standard_normal((2, 40)), rng.uniform(0.5, 1.5, 12)
    kw = {"hop_length": 4, "win_length": 12, "return_complex": True}
    cot = None
    grads = []
    for lib, make in ((torch, torch.tensor), (tx, tx.tensor)):
        xs, ws = make(x, requires_grad=True), make(w, requires_grad=True)
        s = lib.stft(xs, 16, window=ws, **kw)
        if cot is None:
            cot = rng.standard_normal(tuple(s.shape)) + 1j * rng.standard_normal(tuple(s.shape))
        y = lib.istft(s * make(cot), 16, hop_length=4, win_length=12, window=ws, length=40)
        ((s * make(cot)).real.sum() + (y * y).sum()).backward()
        grads.append((xs.grad.numpy(), ws.grad.numpy()))
    assert_close(grads[1][0], grads[0][0], what="grad of the signal")
    assert_close(grads[1][1], grads[0][1], what="grad of the window")


def test_stft_istft_numerical_gradcheck(rng):
    x = tx.tensor(rng.standard_normal(30), requires_grad=True)
    w = tx.tensor(rng.uniform(0.5, 1.5, 8), requires_grad=True)

    def fn(x, w):
        s = tx.stft(x, 8, hop_length=2, window=w, return_complex=True)
        return tx.view_as_real(s).sum() + tx.istft(s * s.abs(), 8, hop_length=2, window=w)
    gradcheck(fn, [x, w], name="stft/istft")


def test_stft_warnings_and_errors(rng):
    x = tx.tensor(rng.standard_normal(50))
    with pytest.raises(RuntimeError, match="stft requires the return_complex parameter"):
        tx.stft(x, 16, window=tx.ones(16, dtype=tx.float64))
    with pytest.warns(UserWarning, match="A window was not provided"):
        plain = tx.stft(x, 16, return_complex=True)
    assert_close(plain, torch.stft(torch.tensor(x.numpy()), 16, window=torch.ones(
        16, dtype=torch.float64), return_complex=True).numpy())
    with pytest.warns(UserWarning, match="return_complex=False is deprecated"):
        old = tx.stft(x, 16, window=tx.ones(16, dtype=tx.float64), return_complex=False)
    assert tuple(old.shape) == (9, 13, 2)
    with pytest.raises(RuntimeError, match=r"expected a 1D window tensor of size equal to "
                                           r"win_length=16"):
        tx.stft(x, 16, window=tx.ones(8), return_complex=True)
    with pytest.raises(RuntimeError, match=r"stft\(\): expected hop_length > 0"):
        tx.stft(x, 16, hop_length=0, window=tx.ones(16), return_complex=True)
    with pytest.raises(RuntimeError, match="Cannot have onesided output"):
        tx.stft(x.to(tx.complex128), 16, window=tx.ones(16), onesided=True,
                return_complex=True)
    spec = tx.stft(x, 16, window=tx.ones(16, dtype=tx.float64), return_complex=True)
    with pytest.raises(RuntimeError, match="istft requires a complex-valued input"):
        tx.istft(spec.real, 16, window=tx.ones(16))
    with pytest.raises(RuntimeError, match=r"istft\(\): window overlap add min"):
        tx.istft(spec, 16, window=tx.zeros(16, dtype=tx.float64))
    with pytest.warns(UserWarning, match="shorter than the length parameter"):
        longer = tx.istft(spec, 16, window=tx.ones(16, dtype=tx.float64), length=60)
    assert tuple(longer.shape) == (60,)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tx.istft(spec, 16, window=tx.ones(16, dtype=tx.float64), length=45)


def test_stft_istft_on_device(device, rng):
    x = rng.standard_normal((2, 40))
    w = np.hanning(16)
    outs = []
    for dev in ("cpu", device):
        xx = tx.tensor(x, device=dev, requires_grad=True)
        s = tx.stft(xx, 16, hop_length=4, window=tx.tensor(w, device=dev), return_complex=True)
        y = tx.istft(s * s.abs(), 16, hop_length=4, window=tx.tensor(w, device=dev), length=40)
        assert y.device.type == dev
        y.pow(2).sum().backward()
        outs.append((y.detach().cpu().numpy(), xx.grad.cpu().numpy()))
    assert_close(outs[1][0], outs[0][0])
    assert_close(outs[1][1], outs[0][1])


# -- window functions (torch keeps them at the top level, for stft) -------------------------------
WINDOWS = ["hann_window", "hamming_window", "blackman_window", "bartlett_window",
           "kaiser_window"]


@pytest.mark.parametrize("name", WINDOWS)
def test_windows_against_torch(name):
    for length in (0, 1, 2, 5, 8):
        for periodic in (True, False):
            got = getattr(tx, name)(length, periodic, dtype=tx.float64)
            want = getattr(torch, name)(length, periodic, dtype=torch.float64)
            assert_close(got, want, what=f"{name}({length}, {periodic})")
    default = getattr(tx, name)(6, requires_grad=True)
    assert default.dtype is tx.float32 and default.requires_grad and default.is_leaf
    assert_close(default.detach(), getattr(torch, name)(6), dtype=tx.float32)
    with pytest.raises(RuntimeError, match=rf"{name}\(\): expects floating point dtypes"):
        getattr(tx, name)(4, dtype=tx.int64)
    with pytest.raises(RuntimeError, match=rf"{name}\(\): requires non-negative"):
        getattr(tx, name)(-1)


def test_window_parameters_against_torch():
    assert_close(tx.hamming_window(7, False, 0.5, 0.5, dtype=tx.float64),
                 torch.hamming_window(7, False, 0.5, 0.5, dtype=torch.float64))
    assert_close(tx.kaiser_window(9, True, 3.5, dtype=tx.float64),
                 torch.kaiser_window(9, True, 3.5, dtype=torch.float64))
