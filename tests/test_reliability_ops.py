"""Silent wrong answers and leaked errors in ops (issue 11, sections 3, 4 and 6), each against
torch: index checks, dims of 0-d tensors (driven by the op registry), broadcast and in-place
errors, index dtypes, mixed-dtype products, NaN through linalg and class-label checks."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import tensorix as tx
import tensorix.nn.functional as F
from tensorix.testing import all_opinfos
from tensorix.testing.registry import Sample

from ._harness import outputs, torch_args, tx_args

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _raises_like(tx_fn, torch_fn):
    """Both raise, and tensorix's exception is an instance of torch's type (so an ``except``
    written for torch catches it); returns tensorix's exception."""
    with pytest.raises(Exception) as want:
        torch_fn()
    with pytest.raises(type(want.value)) as got:
        tx_fn()
    return got.value


# -- embedding indices ---------------------------------------------------------------------
@pytest.mark.parametrize("index", [-1, -5, 5])
def test_embedding_index_out_of_range(index):
    w = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    err = _raises_like(lambda: F.embedding(tx.tensor([0, index]), tx.tensor(w)),
                       lambda: TF.embedding(torch.tensor([0, index]), torch.tensor(w)))
    assert "embedding" in str(err) and "out of range" in str(err)


@pytest.mark.parametrize("padding_idx", [5, 7, -6])
def test_embedding_padding_idx_out_of_range(padding_idx):
    w = np.ones((5, 3), np.float32)
    err = _raises_like(
        lambda: F.embedding(tx.tensor([1]), tx.tensor(w), padding_idx=padding_idx),
        lambda: TF.embedding(torch.tensor([1]), torch.tensor(w), padding_idx=padding_idx))
    assert "padding_idx" in str(err).lower()
    with pytest.raises(Exception, match="adding_idx"):
        F.embedding_bag(tx.tensor([[1]]), tx.tensor(w), padding_idx=padding_idx)


def test_embedding_negative_padding_idx_counts_from_the_end():
    w = np.random.default_rng(1).standard_normal((5, 3))
    wt, tt = tx.tensor(w, requires_grad=True), torch.tensor(w, requires_grad=True)
    idx = [[0, 4, 4, 2]]
    a = F.embedding(tx.tensor(idx), wt, padding_idx=-1)
    b = TF.embedding(torch.tensor(idx), tt, padding_idx=-1)
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy())
    a.sum().backward()
    b.sum().backward()
    np.testing.assert_allclose(wt.grad.numpy(), tt.grad.numpy())


# -- dims of 0-d tensors, for every registered op that takes a dim --------------------------
_DIM_NAMES = {"dim", "dim0", "dim1", "dim2", "dims", "start_dim", "end_dim", "dimension",
              "source", "destination"}


def _dim_slots(info, sample):
    """Positions (ints) and keywords (strs) of ``sample`` that hold an int dim."""
    try:
        params = list(inspect.signature(info.op).parameters)
    except (TypeError, ValueError):
        return []

    def is_dim(name, v):
        return name in _DIM_NAMES and isinstance(v, int) and not isinstance(v, bool)
    slots = [i for i, a in enumerate(sample.args) if i < len(params) and is_dim(params[i], a)]
    return slots + [k for k, v in sample.kwargs.items() if is_dim(k, v)]


def _zero_d(a):
    """Every array of a sample argument made 0-d (its first element)."""
    if isinstance(a, np.ndarray):
        return np.asarray(a.reshape(-1)[0]) if a.size else a
    if isinstance(a, list):
        return [_zero_d(e) for e in a]
    return a


def _zero_d_cases():
    cases = []
    for info in all_opinfos():
        if info.torch is False:
            continue
        seen = set()
        for sample in info.samples(np.random.default_rng(0), tx.float64):
            slots = _dim_slots(info, sample)
            key = tuple(map(str, slots))
            if slots and key not in seen:
                seen.add(key)
                cases.append(pytest.param(info, sample, slots, id=f"{info.name}-{key}"))
    return cases


@pytest.mark.parametrize("info,sample,slots", _zero_d_cases())
@pytest.mark.parametrize("dim", [-2, -1, 0, 1, 3])
def test_dims_of_a_0d_tensor_follow_torch(info, sample, slots, dim):
    """torch treats a 0-d tensor as having dims -1 and 0 only (some ops: none); any other dim
    is an IndexError. A silently accepted dim would reduce or permute the wrong thing."""
    args = [_zero_d(a) for a in sample.args]
    kwargs = {k: _zero_d(v) for k, v in sample.kwargs.items()}
    for s in slots:
        if isinstance(s, int):
            args[s] = dim
        else:
            kwargs[s] = dim
    case = Sample(tuple(args), kwargs)
    targs, tkwargs = torch_args(case, tx.float64)
    xargs, xkwargs = tx_args(case, tx.float64)
    try:
        want = info.torch_fn()(*targs, **tkwargs)
    except IndexError:
        with pytest.raises(IndexError, match=r"(?i)dim"):
            info.op(*xargs, **xkwargs)
        return
    except Exception:  # noqa: BLE001 - torch refuses the sample for another reason
        pytest.skip("torch refuses this 0-d sample for a reason other than the dim")
    got = info.op(*xargs, **xkwargs)
    for g, w in zip(outputs(got, info.output), outputs(want, info.output)):
        np.testing.assert_allclose(np.asarray(g.numpy()), w.detach().numpy())


def test_0d_sum_mean_transpose_refuse_dims_outside_minus1_0():
    s, t = tx.tensor(3.0), torch.tensor(3.0)
    for fn in (lambda x: x.sum(dim=5), lambda x: x.mean(1), lambda x: x.transpose(0, 3),
               lambda x: x.sum(dim=(0, 1)), lambda x: x.prod(-2), lambda x: x.std(dim=1)):
        err = _raises_like(lambda: fn(s), lambda: fn(t))
        assert "range of [-1, 0]" in str(err)
    assert float(s.sum(dim=-1)) == 3.0 and s.transpose(0, -1).shape == ()


# methods with the same name and signature on torch and tensorix tensors
_DIM_METHODS = {
    "split": lambda x, d: x.split(1, d), "chunk": lambda x, d: x.chunk(1, d),
    "tensor_split": lambda x, d: x.tensor_split(1, d), "narrow": lambda x, d: x.narrow(d, 0, 1),
    "unflatten": lambda x, d: x.unflatten(d, (1,)), "softmax": lambda x, d: x.softmax(d),
    "log_softmax": lambda x, d: x.log_softmax(d), "logsumexp": lambda x, d: x.logsumexp(d),
    "std": lambda x, d: x.std(d), "cumsum": lambda x, d: x.cumsum(d),
    "flip": lambda x, d: x.flip(d), "squeeze": lambda x, d: x.squeeze(d),
    "unsqueeze": lambda x, d: x.unsqueeze(d), "select": lambda x, d: x.select(d, 0),
    "argmax": lambda x, d: x.argmax(d), "sort": lambda x, d: x.sort(d)[0],
    "topk": lambda x, d: x.topk(1, d)[0], "roll": lambda x, d: x.roll(1, d),
    "movedim": lambda x, d: x.movedim(d, 0), "flatten": lambda x, d: x.flatten(d),
    "norm": lambda x, d: x.norm(dim=d), "renorm": lambda x, d: x.renorm(2, d, 1.0),
}


@pytest.mark.parametrize("name", sorted(_DIM_METHODS))
@pytest.mark.parametrize("dim", [-2, -1, 0, 1])
def test_0d_dim_methods_follow_torch(name, dim):
    fn = _DIM_METHODS[name]
    try:
        want = fn(torch.tensor(2.0), dim)
    except Exception as e:  # noqa: BLE001 - torch's error type is the reference
        with pytest.raises(type(e)):
            fn(tx.tensor(2.0), dim)
        return
    got = fn(tx.tensor(2.0), dim)
    for g, w in zip(got if isinstance(got, tuple) else (got,),
                    want if isinstance(want, tuple) else (want,)):
        np.testing.assert_allclose(g.numpy(), w.numpy())


# -- broadcast mismatches and writes into expanded tensors ----------------------------------
_BINARY = {
    "add": lambda m, x, y: x + y, "mul": lambda m, x, y: x * y, "pow": lambda m, x, y: x ** y,
    "eq": lambda m, x, y: x == y, "and": lambda m, x, y: (x > 0) & (y > 0),
    "where": lambda m, x, y: m.where(x > 0, x, y), "maximum": lambda m, x, y: m.maximum(x, y),
    "atan2": lambda m, x, y: m.atan2(x, y), "lerp": lambda m, x, y: m.lerp(x, y, 0.5),
    "addcmul": lambda m, x, y: m.addcmul(x, y, y), "fmod": lambda m, x, y: m.fmod(x, y),
    "hypot": lambda m, x, y: m.hypot(x, y), "logaddexp": lambda m, x, y: m.logaddexp(x, y),
    "clamp": lambda m, x, y: m.clamp(x, min=y),
    "masked_fill": lambda m, x, y: x.masked_fill(y > 0, 1.0),
}


@pytest.mark.parametrize("name", sorted(_BINARY))
@pytest.mark.parametrize("shapes", [((3,), (5,)), ((2, 3), (4,)), ((4, 1, 3), (2, 5, 3))])
def test_broadcast_mismatch_is_torch_runtime_error(name, shapes):
    """torch raises RuntimeError (code written for torch catches it), not NumPy's ValueError,
    and names the sizes and the dim."""
    fn = _BINARY[name]
    a, b = shapes
    err = _raises_like(lambda: fn(tx, tx.ones(a), tx.ones(b)),
                       lambda: fn(torch, torch.ones(a), torch.ones(b)))
    assert isinstance(err, RuntimeError) and not isinstance(err, ValueError)
    assert "must match the size of tensor b" in str(err)


def _mismatch_cases():
    """Every registered op whose first sample holds two arrays of one shape; the second gets
    one more element along its last dim, so the two no longer broadcast."""
    cases = []
    for info in all_opinfos():
        if info.torch is False:
            continue
        for sample in info.samples(np.random.default_rng(0), tx.float64):
            pos = [i for i, a in enumerate(sample.args)
                   if isinstance(a, np.ndarray) and a.ndim >= 1]
            if len(pos) >= 2 and sample.args[pos[0]].shape == sample.args[pos[1]].shape:
                args = list(sample.args)
                first = args[pos[0]]
                args[pos[1]] = np.concatenate([first, first[..., :1]], axis=-1)
                cases.append(pytest.param(info, Sample(tuple(args), sample.kwargs),
                                          id=info.name))
                break
    return cases


@pytest.mark.parametrize("info,sample", _mismatch_cases())
def test_registry_ops_with_mismatched_shapes_raise_torch_type(info, sample):
    """Where torch raises RuntimeError for operands that do not fit, tensorix does too, and
    no op lets NumPy's ValueError out where torch raises something else."""
    targs, tkwargs = torch_args(sample, tx.float64)
    xargs, xkwargs = tx_args(sample, tx.float64)
    try:
        info.torch_fn()(*targs, **tkwargs)
        torch_error = None
    except Exception as e:  # noqa: BLE001 - torch's error type is the reference
        torch_error = e
    try:
        info.op(*xargs, **xkwargs)
    except Exception as e:  # noqa: BLE001 - compared with torch's below
        if isinstance(torch_error, RuntimeError):
            assert isinstance(e, RuntimeError), f"{info.name}: {e!r}"
        if isinstance(e, ValueError):
            assert isinstance(torch_error, ValueError), f"{info.name}: {e!r}"
        return
    assert not isinstance(torch_error, RuntimeError), f"{info.name} accepted {sample}"


@pytest.mark.parametrize("write", [lambda x: x.add_(1), lambda x: x.mul_(2),
                                   lambda x: x.copy_(x.clone()),
                                   lambda x: x.__setitem__((slice(None), 0), 1.0)])
def test_write_into_expanded_tensor_is_torch_runtime_error(write):
    err = _raises_like(lambda: write(tx.ones(3).expand(2, 3)),
                       lambda: write(torch.ones(3).expand(2, 3)))
    assert "clone()" in str(err)


@pytest.mark.parametrize("shape,write", [((2, 3), lambda x: x.fill_(2.0)),
                                         ((2, 3), lambda x: x.zero_()),
                                         ((1, 3), lambda x: x.add_(1))])
def test_write_into_read_only_expand_is_a_clear_runtime_error(shape, write):
    """torch writes through these expands (one value, or no shared elements); NumPy's
    broadcast views are read-only, so tensorix refuses with a RuntimeError naming the op,
    never NumPy's ValueError."""
    write(torch.ones(3).expand(*shape))
    with pytest.raises(RuntimeError, match=r"_\(\): cannot write into an expanded tensor"):
        write(tx.ones(3).expand(*shape))


# -- int32 indices --------------------------------------------------------------------------
_INDEX_OPS = {
    "gather": lambda m, x, i, i1: x.gather(1, i),
    "scatter": lambda m, x, i, i1: x.scatter(1, i, x[:, :1] * 2),
    "scatter_add": lambda m, x, i, i1: x.scatter_add(1, i, x[:, :1] * 3),
    "scatter_reduce": lambda m, x, i, i1: x.scatter_reduce(1, i, x[:, :1] * 3, "amax"),
    "index_select": lambda m, x, i, i1: x.index_select(0, i1),
    "index_add": lambda m, x, i, i1: x.index_add(0, i1, x[:2] * 2),
    "index_put": lambda m, x, i, i1: x.index_put((i1,), x[0] * 5),
    "getitem": lambda m, x, i, i1: x[i1],
    "take_along_dim": lambda m, x, i, i1: x.take_along_dim(i, 1),  # torch refuses int32
    "embedding": lambda m, x, i, i1: m.nn.functional.embedding(i1, x),
}


@pytest.mark.parametrize("name", sorted(_INDEX_OPS))
def test_int32_indices_follow_torch(name):
    """Values and gradients with an int32 index equal torch's; where torch refuses int32,
    tensorix refuses it with torch's error type."""
    fn = _INDEX_OPS[name]
    x = np.random.default_rng(3).standard_normal((3, 3))
    idx, idx1 = np.array([[2], [0], [1]], np.int32), np.array([2, 0], np.int32)
    tt = torch.tensor(x, requires_grad=True)
    try:
        want = fn(torch, tt, torch.from_numpy(idx), torch.from_numpy(idx1))
    except Exception as e:  # noqa: BLE001 - torch's error type is the reference
        with pytest.raises(type(e)):
            fn(tx, tx.tensor(x), tx.tensor(idx), tx.tensor(idx1))
        return
    xt = tx.tensor(x, requires_grad=True)
    got = fn(tx, xt, tx.tensor(idx), tx.tensor(idx1))
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy())
    seed = np.random.default_rng(4).standard_normal(tuple(want.shape))
    want.backward(torch.tensor(seed))
    got.backward(tx.tensor(seed))
    np.testing.assert_allclose(xt.grad.numpy(), tt.grad.numpy())


# -- products of two dtypes -----------------------------------------------------------------
def _mk(m, dtype, *shape):
    d = {"f32": "float32", "f64": "float64", "i64": "int64", "i32": "int32", "f16": "float16",
         "bf16": "bfloat16"}[dtype]
    return m.ones(*shape, dtype=getattr(m, d))


_PRODUCTS = {
    "matmul 2d": lambda m, a, b: _mk(m, a, 2, 2) @ _mk(m, b, 2, 2),
    "matmul 1d": lambda m, a, b: _mk(m, a, 2) @ _mk(m, b, 2),
    "matmul 1d@2d": lambda m, a, b: _mk(m, a, 2) @ _mk(m, b, 2, 2),
    "matmul batched": lambda m, a, b: _mk(m, a, 3, 2, 2) @ _mk(m, b, 2, 2),
    "matmul 0d": lambda m, a, b: _mk(m, a, 2) @ _mk(m, b, 1)[0],
    "mm": lambda m, a, b: m.mm(_mk(m, a, 2, 2), _mk(m, b, 2, 2)),
    "bmm": lambda m, a, b: m.bmm(_mk(m, a, 1, 2, 2), _mk(m, b, 1, 2, 2)),
    "mv": lambda m, a, b: m.mv(_mk(m, a, 2, 2), _mk(m, b, 2)),
    "dot": lambda m, a, b: m.dot(_mk(m, a, 2), _mk(m, b, 2)),
    "addmm input": lambda m, a, b: m.addmm(_mk(m, b, 2, 2), _mk(m, a, 2, 2), _mk(m, a, 2, 2)),
    "addmm mat2": lambda m, a, b: m.addmm(_mk(m, a, 2, 2), _mk(m, a, 2, 2), _mk(m, b, 2, 2)),
    "baddbmm": lambda m, a, b: m.baddbmm(_mk(m, a, 1, 2, 2), _mk(m, a, 1, 2, 2),
                                         _mk(m, b, 1, 2, 2)),
    "tensordot": lambda m, a, b: m.tensordot(_mk(m, a, 2, 2), _mk(m, b, 2, 2)),
    "inner": lambda m, a, b: m.inner(_mk(m, a, 2), _mk(m, b, 2)),
    "multi_dot": lambda m, a, b: m.linalg.multi_dot([_mk(m, a, 2, 2), _mk(m, b, 2, 2)]),
    "vecdot": lambda m, a, b: m.linalg.vecdot(_mk(m, a, 2), _mk(m, b, 2)),
    "linalg.cross": lambda m, a, b: m.linalg.cross(_mk(m, a, 3), _mk(m, b, 3)),
    "linear weight": lambda m, a, b: m.nn.functional.linear(_mk(m, a, 2, 2), _mk(m, b, 2, 2)),
    "linear bias": lambda m, a, b: m.nn.functional.linear(_mk(m, a, 2, 2), _mk(m, a, 2, 2),
                                                          _mk(m, b, 2)),
    "bilinear": lambda m, a, b: m.nn.functional.bilinear(_mk(m, a, 1, 2), _mk(m, a, 1, 2),
                                                         _mk(m, b, 1, 2, 2)),
    "conv1d": lambda m, a, b: m.nn.functional.conv1d(_mk(m, a, 1, 1, 3), _mk(m, b, 1, 1, 2)),
    "conv2d": lambda m, a, b: m.nn.functional.conv2d(_mk(m, a, 1, 1, 3, 3),
                                                     _mk(m, b, 1, 1, 2, 2)),
    "conv2d bias": lambda m, a, b: m.nn.functional.conv2d(
        _mk(m, a, 1, 1, 3, 3), _mk(m, a, 1, 1, 2, 2), _mk(m, b, 1)),
    "conv_transpose2d": lambda m, a, b: m.nn.functional.conv_transpose2d(
        _mk(m, a, 1, 1, 3, 3), _mk(m, b, 1, 1, 2, 2)),
    # torch promotes these (elementwise products underneath): so does tensorix
    "outer": lambda m, a, b: m.outer(_mk(m, a, 2), _mk(m, b, 2)),
    "addr": lambda m, a, b: m.addr(_mk(m, a, 2, 2), _mk(m, a, 2), _mk(m, b, 2)),
    "kron": lambda m, a, b: m.kron(_mk(m, a, 2), _mk(m, b, 2)),
}
_PAIRS = [("f32", "f64"), ("f64", "f32"), ("f32", "i64"), ("i64", "f32"), ("i32", "i64"),
          ("f32", "f16"), ("bf16", "f32"), ("i64", "i64"), ("f64", "f64")]


@pytest.mark.parametrize("pair", _PAIRS, ids=["-".join(p) for p in _PAIRS])
@pytest.mark.parametrize("name", sorted(_PRODUCTS))
def test_products_of_two_dtypes_follow_torch(name, pair):
    """torch refuses a float32 @ float64 product (RuntimeError) rather than promoting, so a
    float64 tensor cannot silently turn a float32 model into float64; where torch computes
    (one dtype, or an op that promotes), tensorix gives the same dtype and values."""
    fn = _PRODUCTS[name]
    try:
        want = fn(torch, *pair)
    except Exception as e:  # noqa: BLE001 - torch's error type is the reference
        if pair[0] == pair[1]:
            pytest.skip(f"torch refuses one dtype, {pair[0]}, for another reason: {e}")
        with pytest.raises(RuntimeError, match=r"(?i)dtype|dimension"):
            fn(tx, *pair)
        return
    got = fn(tx, *pair)
    assert got.dtype.name == str(want.dtype).removeprefix("torch.")
    np.testing.assert_allclose(got.float().numpy(), want.float().numpy())


# -- cross_entropy targets ------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 5)])
def test_cross_entropy_float_class_labels_suggest_long(shape):
    rng = np.random.default_rng(5)
    x = rng.standard_normal(shape)
    labels = rng.integers(0, 3, (shape[0],) + shape[2:])
    err = _raises_like(
        lambda: F.cross_entropy(tx.tensor(x), tx.tensor(labels.astype(np.float64))),
        lambda: TF.cross_entropy(torch.tensor(x), torch.tensor(labels.astype(np.float64))))
    assert "long()" in str(err) and "cross_entropy" in str(err)
    # the same labels as int64 work, and equal torch
    np.testing.assert_allclose(
        F.cross_entropy(tx.tensor(x), tx.tensor(labels)).item(),
        TF.cross_entropy(torch.tensor(x), torch.tensor(labels)).item(), rtol=1e-12)


def test_cross_entropy_probability_targets_keep_working():
    rng = np.random.default_rng(6)
    x, p = rng.standard_normal((4, 3)), rng.dirichlet(np.ones(3), 4)
    xt, tt = tx.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    a = F.cross_entropy(xt, tx.tensor(p), label_smoothing=0.1)
    b = TF.cross_entropy(tt, torch.tensor(p), label_smoothing=0.1)
    np.testing.assert_allclose(a.item(), b.item(), rtol=1e-12)
    a.backward()
    b.backward()
    np.testing.assert_allclose(xt.grad.numpy(), tt.grad.numpy(), rtol=1e-10)


# -- reductions at their degenerate points: values and gradients against torch ---------------
def _fn(name):
    """``name`` looked up in torch.nn.functional / tensorix.nn.functional for module ``m``."""
    return lambda m, *a, **k: getattr(TF if m is torch else F, name)(*a, **k)


_ZERO_ROW = np.array([[0.0, 0.0, 0.0], [1.0, 2.0, 3.0]])
_CONST_ROW = np.array([[1.0, 2.0, 3.0], [5.0, 5.0, 5.0]])
_NEG_INF = np.array([[-np.inf, 0.0, 1.0], [-np.inf, -np.inf, -np.inf]])
_DEGENERATE = {
    "std expand": (lambda m, x: x.expand(2, 3).std(dim=1), [np.ones(3)]),
    "std constant row": (lambda m, x: x.std(dim=1), [_CONST_ROW]),
    "std all equal": (lambda m, x: x.std(), [np.ones((2, 3))]),
    "std correction=0": (lambda m, x: x.std(dim=1, correction=0), [_CONST_ROW]),
    "std keepdim": (lambda m, x: x.std(dim=0, keepdim=True), [_CONST_ROW.T]),
    "std_mean": (lambda m, x: m.std_mean(x, dim=1)[0], [_CONST_ROW]),
    "std no dof": (lambda m, x: x.std(dim=1), [np.ones((2, 1))]),
    "var constant row": (lambda m, x: x.var(dim=1), [_CONST_ROW]),
    "norm zero row": (lambda m, x: x.norm(dim=1), [_ZERO_ROW]),
    "norm p=1": (lambda m, x: x.norm(p=1, dim=1), [_ZERO_ROW]),
    "norm p=3": (lambda m, x: x.norm(p=3, dim=1), [_ZERO_ROW]),
    "norm p=inf": (lambda m, x: x.norm(p=float("inf"), dim=1), [_ZERO_ROW]),
    "vector_norm": (lambda m, x: m.linalg.vector_norm(x, dim=1), [_ZERO_ROW]),
    "matrix_norm fro": (lambda m, x: m.linalg.matrix_norm(x), [np.zeros((2, 3))]),
    "linalg.norm": (lambda m, x: m.linalg.norm(x), [np.zeros((2, 3))]),
    "dist": (lambda m, x, y: m.dist(x, y), [np.ones((2, 3))] * 2),
    "dist p=3": (lambda m, x, y: m.dist(x, y, 3), [np.ones((2, 3))] * 2),
    "pdist": (lambda m, x: _fn("pdist")(m, x), [np.ones((2, 3))]),
    "pairwise_distance": (lambda m, x, y: _fn("pairwise_distance")(m, x, y),
                          [np.ones((2, 3))] * 2),
    "normalize": (lambda m, x: _fn("normalize")(m, x, dim=1), [_ZERO_ROW]),
    "cosine_similarity": (lambda m, x, y: _fn("cosine_similarity")(m, x, y),
                          [_ZERO_ROW, _ZERO_ROW[::-1].copy()]),
    "cosine_similarity zeros": (lambda m, x, y: _fn("cosine_similarity")(m, x, y),
                                [np.zeros((2, 3))] * 2),
    "layer_norm": (lambda m, x: _fn("layer_norm")(m, x, (3,)), [_CONST_ROW]),
    "batch_norm": (lambda m, x: _fn("batch_norm")(m, x, None, None, training=True),
                   [np.ones((2, 3))]),
    "group_norm": (lambda m, x: _fn("group_norm")(m, x.reshape(2, 3, 1), 1),
                   [np.ones((2, 3))]),
    "instance_norm": (lambda m, x: _fn("instance_norm")(m, x.reshape(1, 2, 3)),
                      [np.ones((2, 3))]),
    "rms_norm": (lambda m, x: _fn("rms_norm")(m, x, (3,)), [np.zeros((2, 3))]),
    "logsumexp -inf": (lambda m, x: m.logsumexp(x, 1), [_NEG_INF]),
    "log_softmax -inf": (lambda m, x: _fn("log_softmax")(m, x, 1), [_NEG_INF]),
    "softmax -inf": (lambda m, x: _fn("softmax")(m, x, 1), [_NEG_INF]),
    "logcumsumexp -inf": (lambda m, x: m.logcumsumexp(x, 1), [_NEG_INF]),
    "logaddexp -inf": (lambda m, x, y: m.logaddexp(x, y), [_NEG_INF] * 2),
    "atan2 origin": (lambda m, x, y: m.atan2(x, y), [np.zeros((2, 3))] * 2),
    "hypot origin": (lambda m, x, y: m.hypot(x, y), [np.zeros((2, 3))] * 2),
    "renorm zero": (lambda m, x: x.renorm(2, 0, 1.0), [np.zeros((2, 3))]),
    "xlogy zeros": (lambda m, x, y: m.xlogy(x, y), [np.zeros((2, 3))] * 2),
}


def _value_and_grads(m, fn, arrays):
    xs = [m.tensor(a, requires_grad=True) for a in arrays]
    y = fn(m, *xs)
    seed = np.random.default_rng(7).standard_normal(tuple(y.shape))
    grads = m.autograd.grad(y, xs, m.tensor(seed), allow_unused=True)
    return y.detach().numpy(), [None if g is None else g.numpy() for g in grads]


@pytest.mark.filterwarnings("ignore:.*degrees of freedom is <= 0")  # 'std no dof', both warn
@pytest.mark.parametrize("name", sorted(_DEGENERATE))
def test_degenerate_points_match_torch(name):
    """Values AND gradients at zero spread, zero norm, -inf logits and the origin: a NaN
    gradient there turns a whole training run into NaN (e.g. a constant feature under std)."""
    fn, arrays = _DEGENERATE[name]
    want, want_grads = _value_and_grads(torch, fn, arrays)
    got, got_grads = _value_and_grads(tx, fn, arrays)
    np.testing.assert_allclose(got, want, atol=1e-12, err_msg=f"{name}: value")
    for k, (g, w) in enumerate(zip(got_grads, want_grads)):
        if w is None:
            assert g is None or not np.any(g), f"{name}: gradient {k} is not zero"
            continue
        np.testing.assert_allclose(g, w, atol=1e-12, err_msg=f"{name}: gradient {k}")


def test_constant_feature_keeps_training_finite():
    """The issue's scenario: a standardised constant feature must not make the loss NaN."""
    x = tx.tensor(np.c_[np.ones(8), np.arange(8.0)], requires_grad=True)
    z = (x - x.mean(0)) / (x.std(0) + 1e-5)
    (z ** 2).sum().backward()
    assert np.isfinite(x.grad.numpy()).all()


# -- NaN and inf through linalg -------------------------------------------------------------
_NONFINITE = {
    "nan at (0, 0)": [[np.nan, 1.0], [2.0, 3.0]],
    "nan at (0, 1)": [[1.0, np.nan], [2.0, 3.0]],
    "nan at (1, 1)": [[1.0, 2.0], [3.0, np.nan]],
    "all nan": [[np.nan, np.nan], [np.nan, np.nan]],
    "inf": [[np.inf, 1.0], [2.0, 3.0]],
}
def _eye2(m, A):
    """2 I like ``A`` (a finite batch neighbour, which must stay finite)."""
    return 2 * m.eye(2, dtype=A.dtype, device=A.device)


_LINALG = {
    "det": lambda m, A: m.linalg.det(A),
    "det batch": lambda m, A: m.linalg.det(m.stack([A, _eye2(m, A)])),
    "slogdet": lambda m, A: m.linalg.slogdet(A),
    "logdet": lambda m, A: m.logdet(A),
    "inv": lambda m, A: m.linalg.inv(A),
    "inv batch": lambda m, A: m.linalg.inv(m.stack([A, _eye2(m, A)])),
    "solve": lambda m, A: m.linalg.solve(A, m.ones(2, 1, dtype=A.dtype, device=A.device)),
    "matrix_power -1": lambda m, A: m.linalg.matrix_power(A, -1),
    "matrix_exp": lambda m, A: m.linalg.matrix_exp(A),
    "cholesky": lambda m, A: m.linalg.cholesky(A),
    "eigvalsh": lambda m, A: m.linalg.eigvalsh(A),
    "svd": lambda m, A: m.linalg.svd(A)[1],
    "svdvals": lambda m, A: m.linalg.svdvals(A),
    "pinv": lambda m, A: m.linalg.pinv(A),
    "matrix_rank": lambda m, A: m.linalg.matrix_rank(A),
    "cond": lambda m, A: m.linalg.cond(A),
}


@pytest.mark.parametrize("case", sorted(_NONFINITE))
@pytest.mark.parametrize("name", sorted(_LINALG))
def test_linalg_of_nonfinite_matrices_follows_torch(name, case, device):
    """NaN in, NaN out (the whole inverse/solution, as torch's LU), never a finite det or a
    'singular' error, no RuntimeWarning; where torch's factorisation fails (Cholesky, SVD of
    NaN) a LinAlgError, which is a RuntimeError, never NumPy's ValueError."""
    fn, A = _LINALG[name], np.array(_NONFINITE[case])
    try:
        want = fn(torch, torch.tensor(A))
    except RuntimeError as e:
        with pytest.raises(RuntimeError) as got:
            fn(tx, tx.tensor(A).to(device))
        assert not isinstance(got.value, ValueError), got.value
        assert isinstance(e, torch.linalg.LinAlgError) == isinstance(got.value,
                                                                  tx.linalg.LinAlgError)
        return
    got = fn(tx, tx.tensor(A).to(device))
    for g, w in zip(got if isinstance(got, tuple) else (got,),
                    want if isinstance(want, tuple) else (want,)):
        np.testing.assert_allclose(g.cpu().numpy(), w.numpy(), equal_nan=True, atol=1e-12,
                                   err_msg=f"{name} of {case}")
