"""A GEMM whose readers permute it is written in the permuted layout (tensorix._compile.
layouts): attention's head merge is then a view, and the values and gradients are eager's."""

import numpy as np
import pytest

import tensorix as tx
from tensorix.ops import movement


def _attention(q, k, v):
    b, h, t, d = q.shape
    att = (q @ k.transpose(-2, -1)).softmax(-1)
    return (att @ v).transpose(1, 2).reshape(b, t, h * d)


def _inputs(dt=np.float32):
    r = np.random.default_rng(0)
    return [tx.from_numpy(r.standard_normal((2, 3, 5, 4)).astype(dt)).requires_grad_(True)
            for _ in range(3)]


@pytest.fixture
def copies(monkeypatch):
    count = [0]
    orig = movement.Reshape.copy

    def copy(data, shape):
        count[0] += 1
        return orig(data, shape)

    monkeypatch.setattr(movement.Reshape, "copy", staticmethod(copy))
    return count


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_head_merge_is_a_view_and_values_match_eager(copies, dt):
    q, k, v = _inputs(dt)
    eager = _attention(q, k, v)
    fn = tx.compile(_attention, options={"kernels": "numpy"})
    with tx.no_grad():
        fn(q, k, v)  # the compile's trace runs eagerly (and may copy)
        copies[0] = 0
        out = fn(q, k, v)
    assert copies[0] == 0  # the reshape after the permute is a view of the GEMM's buffer
    # the same GEMMs, stored with another row stride: the same bits
    assert np.array_equal(out.numpy(), eager.detach().numpy())


def test_gradients_through_the_permuted_layout_match_eager():
    q, k, v = _inputs(np.float64)
    w = tx.from_numpy(np.random.default_rng(1).standard_normal((2, 5, 12)))
    (_attention(q, k, v) * w).sum().backward()
    expected = [t.grad.numpy().copy() for t in (q, k, v)]
    q2, k2, v2 = (tx.from_numpy(t.detach().numpy().copy()).requires_grad_(True)
                  for t in (q, k, v))
    fn = tx.compile(lambda a, b, c: (_attention(a, b, c) * w).sum())
    for _ in range(2):  # the trace, then the compiled forward and backward
        for t in (q2, k2, v2):
            t.grad = None
        fn(q2, k2, v2).backward()
    for t, e in zip((q2, k2, v2), expected):
        np.testing.assert_allclose(t.grad.numpy(), e, rtol=1e-12, atol=1e-12)


def test_other_readers_keep_the_plain_gemm():
    from tensorix._compile.layouts import permuted_reader
    from tensorix.fx import symbolic_trace

    q, k, v = _inputs()

    def two_readers(a, b):
        y = a @ b
        return y.transpose(1, 2), y.sum()

    def last_dim_moves(a, b):
        return (a @ b).transpose(2, 3)

    for f, expected in ((two_readers, None), (last_dim_moves, None),
                        (lambda a, b: (a @ b).transpose(1, 2), (0, 2, 1, 3))):
        gm = symbolic_trace(f, q, v.transpose(-2, -1).detach())
        mm = next(n for n in gm.graph.nodes if getattr(n.op, "__name__", "") == "MatMul")
        assert permuted_reader(mm) == expected


def test_reshape_of_a_strided_input_is_numpys_view(copies):
    """A Reshape the strides allow is NumPy's view (no copy); one they do not is eager's
    copy; the values are eager's either way, and a view output shares its input's version
    counter as Reshape's views do."""
    x = tx.from_numpy(np.arange(2 * 3 * 12, dtype=np.float32).reshape(2, 3, 12))

    def heads(t):
        s = t * 1.0  # folded away by the passes: s is the input
        return s[..., 4:8].reshape(2, 3, 2, 2), s[..., 1:3].reshape(2, 6), s

    fn = tx.compile(heads, options={"kernels": "numpy"})
    fn(x)
    copies[0] = 0
    view, copied, s = fn(x)
    assert copies[0] == 1  # the second reshape has no view: eager's copy
    e_view, e_copied, _ = heads(x)
    assert np.array_equal(view.numpy(), e_view.numpy())
    assert np.array_equal(copied.numpy(), e_copied.numpy())
    assert np.shares_memory(view._data, s._data)
    assert view._base is not None and view._version is view._base._version
    assert not np.shares_memory(copied._data, s._data) and copied._base is None
    steps = [st for g in (next(iter(fn.entries.values())).graph,) for st in g._steps]
    assert sum(st[0] == "reshape" for st in steps) == 2  # both ran the executor's reshape


def test_executor_resolvers_rebuild_nested_arguments():
    """The executor's argument resolvers (made once per step) give what the generic walk
    gives: slots replaced inside tuples and lists, constants kept, types kept."""
    from tensorix._compile.executor import _resolve, _resolver, _Slot

    env = ["a", "b", "c", "d"]
    for args in [(_Slot(0), 3), ([_Slot(1), _Slot(2)], -1), ((_Slot(3),), [4, 5]),
                 ((_Slot(0), (1, _Slot(2))), "x", [_Slot(1)]), ({"k": _Slot(2)}, None)]:
        got = _resolver(args)(env)
        assert got == _resolve(args, env) and type(got) is type(args)
        assert [type(g) for g in got] == [type(a) if type(a) is not _Slot else str
                                          for a in args]


def test_permute_is_numpys_view_sharing_the_version():
    """A Permute step is NumPy's transposed view made as Permute's: eager's values, a view
    of its input sharing the version counter, and its gradient eager's."""
    x = tx.from_numpy(np.arange(2 * 3 * 4, dtype=np.float64).reshape(2, 3, 4))

    def moved(t):
        s = t * 1.0  # folded away by the passes: s is the input
        return s.permute(2, 0, 1), s

    fn = tx.compile(moved, options={"kernels": "numpy"})
    fn(x)
    view, s = fn(x)
    assert np.array_equal(view.numpy(), x.numpy().transpose(2, 0, 1))
    assert np.shares_memory(view._data, s._data)
    assert view._base is not None and view._version is view._base._version
    steps = next(iter(fn.entries.values())).graph._steps
    assert sum(st[0] == "permute" for st in steps) == 1
    w = tx.from_numpy(np.random.default_rng(0).standard_normal((4, 2, 3)))
    y = x.detach().requires_grad_(True)
    g = tx.compile(lambda t: ((t * 2.0).permute(2, 0, 1) * w).sum())
    for _ in range(2):
        y.grad = None
        g(y).backward()
    np.testing.assert_allclose(y.grad.numpy(), 2.0 * w.numpy().transpose(1, 2, 0),
                               rtol=1e-15, atol=0)
