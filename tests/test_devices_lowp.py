"""The storage-only formats (fp8 / fp6 / fp4 / E8M0) on every device, bit for bit against the CPU.

CuPy has no such dtypes, so on CUDA they are uint8 codes (tensorix/ops/_codes.py, docs/gpu.md):
every supported op must give the CPU's codes exactly (compared as bytes), and every other op
must refuse clearly instead of computing on the codes. The ``device`` fixture runs the CUDA
case on a GPU where there is one, else on the CuPy stand-in (which refuses these dtypes as
CuPy does).
"""

import warnings

import numpy as np
import pytest

import tensorix as tx

NAMES = [d.name for d in tx.dtypes.STORAGE_ONLY]
# values around every format's edges: signed zeros, subnormals, rounding ties, overflow, inf
VALUES = [0.0, -0.0, 1.0, -2.0, 0.5, 3.3, -0.1, 448.0, 464.0, 465.0, 57344.0, 1e9, -1e9,
          float("inf"), float("-inf"), 2.0 ** -9, 2.0 ** -10, 1e-3, 6.0, 7.5, 28.0, 0.25,
          1 + 2.0 ** -4 + 2.0 ** -30, 2.0 ** -127, 1.5 * 2.0 ** 100]


def codes(t):
    """The bytes of a tensor's values, on the host (for any device)."""
    arr = t.detach().cpu().numpy()
    return np.ascontiguousarray(arr).view(np.uint8).reshape(-1).tolist()


def same(got, want):
    assert got.dtype is want.dtype and tuple(got.shape) == tuple(want.shape)
    assert codes(got) == codes(want)


def _data(name, n=None):
    vals = VALUES + ([float("nan")] if name.startswith("float8") else [])
    return np.array(vals[:n] if n else vals, dtype=np.float64)


@pytest.fixture(params=NAMES)
def fmt(request):
    return getattr(tx, request.param)


@pytest.fixture
def pair(fmt, device):
    """(CPU tensor, the same values made on ``device``) of shape (4, 6) from float64 data."""
    host = tx.tensor(_data(fmt.name)[:24].reshape(4, 6), dtype=fmt)
    return host, host.to(device)


# -- creation and transfer ---------------------------------------------------------------------
def test_creation(fmt, device):
    for fn, args in ((tx.zeros, (2, 3)), (tx.ones, ((2, 3),)), (tx.full, ((2, 3), 3.3)),
                     (tx.full, ((5,), -0.1))):
        got = fn(*args, dtype=fmt, device=device)
        assert str(got.device).startswith(device)
        same(got, fn(*args, dtype=fmt))
    src = tx.tensor(_data(fmt.name), dtype=fmt, device=device)
    same(tx.zeros_like(src), tx.zeros(src.shape, dtype=fmt))
    same(tx.ones_like(src), tx.ones(src.shape, dtype=fmt))
    same(tx.full_like(src, 0.3), tx.full(src.shape, 0.3, dtype=fmt))
    assert tx.empty_like(src).dtype is fmt and tx.empty(3, dtype=fmt, device=device).shape == (3,)


def test_tensor_from_data_rounds_as_the_cpu(fmt, device):
    data = _data(fmt.name)
    want = tx.tensor(data, dtype=fmt)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for src in (data, data.tolist(), data.astype(np.float32), tx.tensor(data),
                    tx.tensor(data).to(device), tx.tensor(data, dtype=tx.float32).to(device)):
            want_src = tx.tensor(src.cpu() if isinstance(src, tx.Tensor) else src, dtype=fmt)
            same(tx.tensor(src, dtype=fmt, device=device), want_src)
        same(tx.tensor(data, dtype=fmt, device=device), want)
        same(tx.as_tensor(want.to(device)), want)
        same(tx.tensor(want.to(device)), want)


def test_transfers_and_host_views(pair, device):
    host, dev = pair
    same(dev, host)
    same(dev.cpu(), host)
    same(dev.to("cpu").to(device).to("cpu"), host)
    if device == "cuda":
        same(host.cuda(), host)
        assert dev._data.dtype == np.uint8 and dev.is_cuda
    assert dev.cpu().numpy().dtype == host.dtype.np
    assert np.array_equal(np.asarray(dev.numpy(force=True)).view(np.uint8),
                          host.numpy().view(np.uint8))
    assert repr(dev.cpu()) == repr(host)
    flat = [repr(t).replace("\n", "").replace(" ", "") for t in (dev, host)]
    assert flat[0].replace(",device='cuda:0'", "") == flat[1]
    np.testing.assert_array_equal(np.array(dev.tolist()), np.array(host.tolist()))
    a, b = dev[1, 2].item(), host[1, 2].item()
    assert a == b or (np.isnan(a) and np.isnan(b))


# -- casts -------------------------------------------------------------------------------------
SOURCES = [tx.float64, tx.float32, tx.float16, tx.bfloat16, tx.int64, tx.int32, tx.bool,
           tx.complex64]


@pytest.mark.parametrize("src", SOURCES, ids=lambda d: d.name)
def test_cast_to_format(fmt, device, src):
    data = _data(fmt.name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        x = tx.tensor(data if src.is_floating_point or src.is_complex else
                      np.clip(np.nan_to_num(data), -1e6, 1e6), dtype=src)
    for convert in (lambda t: t.to(fmt), lambda t: t.type(fmt)):
        same(convert(x.to(device)), convert(x))


@pytest.mark.parametrize("dst", SOURCES + list(tx.dtypes.STORAGE_ONLY), ids=lambda d: d.name)
def test_cast_from_format(pair, dst):
    host, dev = pair
    try:
        want = host.to(dst)
    except TypeError as e:  # ml_dtypes has no such cast (e.g. E8M0 from float8): same error
        with pytest.raises(TypeError, match=str(e)[:30]):
            dev.to(dst)
        return
    same(dev.to(dst), want)
    if dst is tx.float32:
        same(dev.float(), host.float())
        same(dev.double(), host.double())


# -- movement (bytes only) ----------------------------------------------------------------------
MOVES = {
    "view": lambda t: t.view(6, 4),
    "view_dtype": lambda t: t.view(tx.uint8),
    "reshape": lambda t: t.reshape(-1),
    "permute": lambda t: t.permute(1, 0),
    "transpose": lambda t: t.transpose(0, 1),
    "T_contiguous": lambda t: t.T.contiguous(),
    "clone": lambda t: t.clone(),
    "unsqueeze_expand": lambda t: t[None].expand(2, 4, 6),
    "cat": lambda t: tx.cat([t, t[:2]]),
    "stack": lambda t: tx.stack([t, t], dim=1),
    "split": lambda t: t.split(2, dim=1)[1],
    "chunk": lambda t: t.chunk(2)[0],
    "getitem_basic": lambda t: t[1:3, ::2],
    "getitem_int": lambda t: t[2],
    "getitem_array": lambda t: t[tx.tensor([3, 0, 3], device=t.device)],
    "getitem_mask": lambda t: t[tx.tensor([True, False, True, True], device=t.device)],
    "index_select": lambda t: t.index_select(1, tx.tensor([5, 0], device=t.device)),
    "gather": lambda t: t.gather(0, tx.zeros(2, 6, dtype=tx.int64, device=t.device)),
    "flip": lambda t: t.flip(0),
    "roll": lambda t: t.roll(1, 1),
    "tril": lambda t: t.tril(),
    "where": lambda t: tx.where(tx.ones(4, 6, dtype=tx.bool, device=t.device).tril(), t,
                                t.flip(1)),
    "masked_fill": lambda t: t.masked_fill(tx.eye(4, 6, dtype=tx.bool, device=t.device), 2.5),
    "index_put": lambda t: t.index_put((tx.tensor([0, 2], device=t.device),), t[1:3]),
}


@pytest.mark.parametrize("op", list(MOVES))
def test_movement_and_indexing(pair, op):
    host, dev = pair
    same(MOVES[op](dev), MOVES[op](host))


def test_writes(pair, device):
    host, dev = pair
    for src in (tx.tensor(np.linspace(-3, 3, 6)), tx.tensor(np.linspace(-3, 3, 6)).to(host.dtype)):
        a, b = host.clone(), dev.clone()
        a[1] = src
        b[1] = src.to(device)
        a[2, 3], b[2, 3] = 0.75, 0.75
        a[0].copy_(src)
        b[0].copy_(src.to(device))
        same(b, a)
    a, b = host.clone(), dev.clone()
    same(b.fill_(1.75), a.fill_(1.75))
    same(b.zero_(), a.zero_())


def test_safetensors_round_trip(pair, device, tmp_path):
    host, dev = pair
    tx.save({"w": dev, "v": dev[1:3]}, tmp_path / "w.safetensors")
    back = tx.load(tmp_path / "w.safetensors")
    same(back["w"], host)
    same(back["v"], host[1:3])
    same(tx.load(tmp_path / "w.safetensors", map_location=device)["w"], host)


# -- math: decoded to float32, computed, encoded (the CPU rounds once from float32 too) --------
MATH = {
    "add": lambda t: t + t.flip(0),
    "add_scalar": lambda t: t + 1.5,
    "sub": lambda t: t - 0.25,
    "mul": lambda t: t * t.flip(1),
    "div": lambda t: t / 3.0,
    "neg": lambda t: -t,
    "exp": lambda t: t.exp(),
    "log": lambda t: t.log(),
    "maximum": lambda t: tx.maximum(t, t.flip(0)),
    "minimum": lambda t: tx.minimum(t, t.flip(0)),
    "eq": lambda t: t == t.flip(0),
    "ne": lambda t: t != 1.0,
    "lt": lambda t: t < t.flip(1),
    "ge": lambda t: t >= 0.5,
    "isnan": lambda t: t.isnan(),
    "isinf": lambda t: t.isinf(),
    "isfinite": lambda t: t.isfinite(),
    "sum": lambda t: t[:, :3].sum(),
    "sum_dim": lambda t: t[:, 1:4].sum(1),
    "equal": lambda t: tx.tensor(tx.equal(t, t.clone())),
    # the order primitives compare the decoded values, the values move as codes
    "sort": lambda t: t.sort()[0],
    "argmax": lambda t: t.argmax(1),
    "median": lambda t: t.median(1)[0],
}


def same_but_nan_sign(got, want):
    """``same``, except that a NaN may carry either sign: the CPU's ml_dtypes loops and
    NumPy's (or a GPU's) float32 arithmetic propagate NaN signs differently."""
    assert got.dtype is want.dtype and tuple(got.shape) == tuple(want.shape)
    g, w = (np.array(codes(t)) for t in (got, want))
    if want.dtype.is_floating_point:
        nan = np.isnan(want.detach().float().numpy().reshape(-1))
        assert np.array_equal(np.isnan(got.detach().cpu().float().numpy().reshape(-1)), nan)
        g, w = g[~nan], w[~nan]
    assert g.tolist() == w.tolist()


@pytest.mark.parametrize("op", list(MATH))
def test_math_matches_cpu(pair, op):
    host, dev = pair
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        same_but_nan_sign(MATH[op](dev), MATH[op](host))


# -- everything else refuses on CUDA, naming the op, the dtype and the device ---------------------
REFUSED = {
    "abs": lambda t: t.abs(),
    "matmul": lambda t: t @ t.T,
    "cumsum": lambda t: t.cumsum(0),
    "clamp": lambda t: t.clamp(0, 1),
    "relu": lambda t: tx.relu(t),
    "accumulating index_put": lambda t: t.index_put((tx.tensor([0, 0], device=t.device),),
                                                    t[:2], accumulate=True),
}


@pytest.mark.parametrize("op", list(REFUSED))
def test_other_ops_refuse_codes(pair, device, op):
    host, dev = pair
    # inf and nan in the data warn on the CPU (pytest restores the filters after the test)
    warnings.simplefilter("ignore", RuntimeWarning)
    if device == "cpu":  # the CPU computes them through ml_dtypes
        assert REFUSED[op](host).dtype is host.dtype
        return
    msg = f"not supported for {host.dtype.name} tensors on cuda:0 .*cast first, e.g. x.float()"
    with pytest.raises(TypeError, match=msg):
        REFUSED[op](dev)
    # the advice works: computing on the float32 values gives the CPU's float32 result
    same(REFUSED[op](dev.float()), REFUSED[op](host.float()))


def test_autograd_refused_on_codes(fmt, cuda):
    x = tx.ones(3, dtype=fmt, device=cuda).requires_grad_()
    with pytest.raises(RuntimeError, match=f"autograd is not supported for {fmt.name} tensors "
                                           "on cuda:0"):
        x.reshape(3, 1)
    with tx.no_grad():
        assert x.reshape(3, 1).dtype is fmt


def test_mixed_formats_refused(cuda):
    a = tx.ones(3, dtype=tx.float8_e4m3fn, device=cuda)
    b = tx.ones(3, dtype=tx.float8_e5m2, device=cuda)
    with pytest.raises(TypeError, match="promotion for float8 types is not supported"):
        a + b


def test_dtype_views_and_random(fmt, device):
    u = tx.tensor(np.arange(0, 250, 7, dtype=np.uint8), device=device)
    same(u.view(fmt), u.cpu().view(fmt))
    same(u.view(fmt).view(tx.int8), u.cpu().view(tx.int8))
    for fn in (tx.rand, tx.randn):
        tx.manual_seed(3)
        got = fn(5, dtype=fmt, device=device)
        tx.manual_seed(3)
        same(got, fn(5, dtype=fmt))
