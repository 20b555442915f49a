"""Views: memory sharing, the shared version counter, strides and contiguity against torch, a
property test of random view chains (values against NumPy, writes through the view landing in
the base, strides and is_contiguous() against torch), in-place writes through views with
autograd, and the argument errors of every view op."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorix as tx
from tensorix.testing import assert_close, gradcheck, gradgradcheck


def _torch():
    return pytest.importorskip("torch")


def _shares(view, base):
    return np.shares_memory(view.numpy(force=True), base.numpy(force=True))


# -- the property test ---------------------------------------------------------------------------
# Each step draws a view op that applies to the current shape and runs it three times: on the
# tensorix view, on a torch view of the same chain, and on NumPy arrays of the values and of the
# element ids (so a write through the view has a known footprint in the base).

def _expand_args(draw, shape):
    ones = [i for i, s in enumerate(shape) if s == 1]
    if not ones:
        return None
    target = list(shape)
    target[draw(st.sampled_from(ones))] = draw(st.integers(0, 3))
    return (tuple(target),)


def _narrow_args(draw, dim, n):
    start = draw(st.integers(0, n))
    return dim, start, draw(st.integers(0, n - start))


def _step(draw, shape):
    """One view op (kind, args) valid for ``shape``, or None."""
    nd = len(shape)
    kinds = ["unsqueeze", "expand"]
    if nd >= 1:
        kinds += ["select", "narrow", "slice", "movedim", "unfold", "flatten", "squeeze"]
    if nd >= 2:
        kinds += ["transpose", "permute", "diagonal", "t_or_mT"]
    kind = draw(st.sampled_from(kinds))
    dim = draw(st.integers(0, max(nd - 1, 0)))
    n = shape[dim] if nd else 0

    def ints(lo, hi):
        return draw(st.integers(lo, hi))

    args = {
        "select": lambda: (dim, ints(-n, n - 1)) if n else None,
        "narrow": lambda: _narrow_args(draw, dim, n),
        "slice": lambda: (dim, ints(0, 3), ints(0, n + 1), ints(1, 3)),
        "unfold": lambda: (dim, ints(0, n), ints(1, 3)),
        "transpose": lambda: (dim, ints(-nd, nd - 1)),
        "permute": lambda: (tuple(draw(st.permutations(range(nd)))),),
        "movedim": lambda: (dim, ints(0, nd - 1)),
        "diagonal": lambda: (ints(-3, 3), dim,
                             draw(st.integers(0, nd - 1).filter(lambda d: d != dim))),
        "unsqueeze": lambda: (ints(-nd - 1, nd),),
        "squeeze": lambda: (dim,),
        "expand": lambda: _expand_args(draw, shape),
        "flatten": lambda: (dim, ints(dim, nd - 1)),
        "t_or_mT": lambda: (),
    }[kind]()
    return None if args is None else (kind, args)


def _np_unfold(a, dim, size, step):
    win = np.lib.stride_tricks.sliding_window_view(a, size, axis=dim)
    return np.take(win, np.arange(0, win.shape[dim], step), axis=dim)


def _apply_np(a, kind, args):
    """The same view op on a NumPy array (copies are fine: only values are compared)."""
    if kind == "select":
        dim, i = args
        return a[(slice(None),) * dim + (i,)]
    if kind == "narrow":
        dim, start, n = args
        return a[(slice(None),) * dim + (slice(start, start + n),)]
    if kind == "slice":
        dim, start, stop, step = args
        return a[(slice(None),) * dim + (slice(start, stop, step),)]
    if kind == "unfold":
        return _np_unfold(a, *args)
    if kind == "diagonal":
        return np.diagonal(a, *args)
    if kind == "flatten":
        s, e = args
        return a.reshape(a.shape[:s] + (int(np.prod(a.shape[s:e + 1])),) + a.shape[e + 1:])
    if kind == "t_or_mT":
        return np.swapaxes(a, -1, -2)
    fns = {"transpose": np.swapaxes, "permute": np.transpose, "movedim": np.moveaxis,
           "unsqueeze": np.expand_dims, "squeeze": lambda x, d: np.squeeze(x, d) if
           x.shape[d] == 1 else x, "expand": np.broadcast_to}
    return fns[kind](a, *args)


def _apply_tensor(t, kind, args):
    """The view op on a tensorix or torch tensor (the same method names)."""
    if kind == "slice":
        dim, start, stop, step = args
        return t[(slice(None),) * dim + (slice(start, stop, step),)]
    if kind == "t_or_mT":
        return t.t() if t.ndim == 2 else t.mT
    if kind == "expand":
        return t.expand(*args)
    return getattr(t, kind)(*args)


@st.composite
def _chains(draw):
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=1, max_size=4)))
    steps, cur = [], np.zeros(shape)
    for _ in range(draw(st.integers(1, 4))):
        step = _step(draw, cur.shape)
        if step is not None:
            steps.append(step)
            cur = _apply_np(cur, *step)
    return shape, steps


@settings(max_examples=150, deadline=None)
@given(_chains())
def test_random_view_chains_match_numpy_and_torch(case):
    torch = _torch()
    shape, steps = case
    vals = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape) * 1.5 - 3
    base, tbase = tx.tensor(vals), torch.tensor(vals)
    view, tview, ref, ids = base, tbase, vals, np.arange(vals.size).reshape(shape)
    repeats = False
    for kind, args in steps:
        repeats |= kind == "expand" and any(n > 1 for n, m in zip(args[0], view.shape) if m == 1)
        view, tview = _apply_tensor(view, kind, args), _apply_tensor(tview, kind, args)
        ref, ids = _apply_np(ref, kind, args), _apply_np(ids, kind, args)
    what = f"{shape} {steps}"
    assert tuple(view.shape) == ref.shape == tuple(tview.shape), what
    assert_close(view, ref, what=what)
    shared = tview.untyped_storage().data_ptr() == tbase.untyped_storage().data_ptr()
    if view.numel() == 0:
        return
    assert view.stride() == tview.stride(), what
    assert view.is_contiguous() == tview.is_contiguous(), what
    assert _shares(view, base) == shared, what
    if not shared:
        return
    assert view._version is base._version, what
    if len(np.unique(ids)) != ids.size:  # overlapping windows can't be written elementwise
        return
    if repeats:
        return  # what comes of a repeating expand is read-only (see the test below)
    new = np.random.default_rng(len(steps)).standard_normal(view.shape)
    version = base._version[0]
    view[...] = tx.tensor(new)
    expected = vals.copy().reshape(-1)
    expected[ids.reshape(-1)] = new.reshape(-1)
    assert_close(base, expected.reshape(shape), what=f"write through {what}")
    assert base._version[0] > version, what


# -- memory sharing and the version counter --------------------------------------------------------
@pytest.mark.parametrize("make", [
    lambda x: x.diagonal(), lambda x: x.unfold(1, 2, 1), lambda x: x.flatten(),
    lambda x: x.unflatten(1, (2, 2)), lambda x: x.narrow(1, 1, 2), lambda x: x.select(0, 1),
    lambda x: x.t(), lambda x: x.T, lambda x: x.mT, lambda x: x.movedim(0, 1),
    lambda x: x.swapaxes(0, 1), lambda x: x.swapdims(1, 0), lambda x: x.unbind(1)[2],
    lambda x: x[1:, ::2], lambda x: x[None, ..., 1], lambda x: tx.moveaxis(x, 1, 0),
])
def test_views_share_memory_and_version(make):
    x = tx.arange(12.).reshape(3, 4)
    v = make(x)
    assert v._base is x._base
    assert v._version is x._version
    assert _shares(v, x)
    before = x.clone()
    v.mul_(0)
    assert x._version[0] == 1
    assert (x.numpy() != before.numpy()).any()


def test_flatten_copies_only_when_strides_forbid_a_view():
    x = tx.arange(24.).reshape(2, 3, 4)
    assert _shares(x.flatten(1), x)
    y = x.transpose(0, 1)
    assert not _shares(y.flatten(), y)
    assert _shares(y.flatten(2), y)  # merging a contiguous tail stays a view
    assert tuple(tx.tensor(3.).flatten().shape) == (1,)
    assert x.flatten(1, 1) is x


def test_view_as_real_and_complex_share_memory():
    z = tx.tensor([1 + 2j, 3 - 4j, 5j])
    r = tx.view_as_real(z)
    assert r.shape == (3, 2) and r.stride() == (2, 1) and _shares(r, z)
    r[1, 1] = 7.0
    assert z[1].item() == 3 + 7j
    c = tx.view_as_complex(r)
    assert _shares(c, z) and c.dtype == tx.complex64
    assert tx.view_as_complex(tx.zeros(2, 2, dtype=tx.float64)).dtype == tx.complex128


def test_unbind_gives_views_and_gradients():
    torch = _torch()
    x = np.random.default_rng(0).standard_normal((3, 4))
    a = tx.tensor(x, requires_grad=True)
    ta = torch.tensor(x, requires_grad=True)
    parts, tparts = a.unbind(1), ta.unbind(1)
    assert len(parts) == 4 and all(p.shape == (3,) for p in parts)
    (parts[0] * 2 + parts[3] * parts[1]).sum().backward()
    (tparts[0] * 2 + tparts[3] * tparts[1]).sum().backward()
    assert_close(a.grad, ta.grad)


def test_strides_against_torch():
    torch = _torch()
    x, tx_ = tx.zeros(2, 3, 4, 5), torch.zeros(2, 3, 4, 5)
    for fn in [lambda t: t.diagonal(1, 1, 3), lambda t: t.unfold(2, 2, 2),
               lambda t: t.permute(3, 1, 0, 2).unfold(0, 3, 1), lambda t: t.select(2, 1).t()
               if t.ndim == 2 else t.select(2, 1).mT, lambda t: t[:, 1:, ::2].diagonal(0, 0, 2),
               lambda t: t.movedim((0, 1), (3, 2)).flatten(0, 1),
               lambda t: t.transpose(0, 1).unflatten(2, (2, 2))]:
        v, tv = fn(x), fn(tx_)
        assert v.shape == tuple(tv.shape)
        assert v.stride() == tv.stride()
        assert v.is_contiguous() == tv.is_contiguous()


# -- in-place through views, with autograd -------------------------------------------------------
@pytest.mark.parametrize("make", [
    lambda t: t.diagonal(), lambda t: t.unfold(1, 2, 2), lambda t: t.select(1, 2),
    lambda t: t.narrow(0, 1, 2), lambda t: t.t()[1:], lambda t: t[None, 1:, None, ::3],
    lambda t: t.movedim(1, 0)[::2],
])
def test_inplace_through_a_view_reaches_the_base_gradient(make):
    torch = _torch()
    x = np.random.default_rng(1).standard_normal((3, 4))
    a, ta = tx.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    b, tb = a * 1.0, ta * 1.0
    make(b).mul_(3.0)
    make(tb).mul_(3.0)
    (b * b).sum().backward()
    (tb * tb).sum().backward()
    assert_close(b.detach(), tb.detach())
    assert_close(a.grad, ta.grad)


def test_expand_views_are_writable_unless_they_repeat_memory():
    x = tx.zeros(3, 1)
    e = x.expand(3, 1)
    assert e is x  # nothing to expand
    v = x.unsqueeze(0).expand(1, 3, 1)
    v[0, 1, 0] = 2.0
    assert x[1, 0].item() == 2.0
    with pytest.raises(RuntimeError, match="cannot write into an expanded tensor"):
        x.expand(3, 4)[0, 0] = 1.0  # a NumPy broadcast view is read-only: a torch-type error


def test_write_into_leaf_view_under_grad_is_an_error():
    x = tx.zeros(3, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match="view of a leaf Variable"):
        x.diagonal().add_(1.0)


# -- gradients of the strided views --------------------------------------------------------------
def test_unfold_overlapping_windows_accumulate_gradients():
    torch = _torch()
    x = np.random.default_rng(2).standard_normal((2, 7))
    a, ta = tx.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    w = np.random.default_rng(3).standard_normal((2, 3, 3))
    (a.unfold(1, 3, 2) * tx.tensor(w)).sum().backward()
    (ta.unfold(1, 3, 2) * torch.tensor(w)).sum().backward()
    assert_close(a.grad, ta.grad)


@pytest.mark.parametrize("fn", [
    lambda t: t.diagonal(-1, 0, 2), lambda t: t.unfold(2, 2, 1),
    lambda t: t.transpose(0, 1).unfold(1, 2, 2), lambda t: t[:, ::2].diagonal(1, -1, -2),
])
def test_strided_views_on_noncontiguous_inputs_gradcheck(fn):
    x = tx.tensor(np.random.default_rng(4).standard_normal((3, 4, 5)), requires_grad=True)
    gradcheck(lambda t: fn(t) ** 2, [x])
    gradgradcheck(lambda t: fn(t) ** 2, [x])


# -- argument errors -------------------------------------------------------------------------------
X = tx.zeros(4, 5, 3)


@pytest.mark.parametrize("fn,exc,msg", [
    (lambda: X.flatten(2, 1), RuntimeError, "start_dim cannot come after end_dim"),
    (lambda: X.flatten(0, 3), IndexError, r"flatten\(\): dimension out of range"),
    (lambda: X.unflatten(1, (2, 2)), RuntimeError,
     r"unflatten\(\): Provided sizes \[2, 2\] don't multiply up to the size of dim 1 \(5\)"),
    (lambda: X.unflatten(1, ()), RuntimeError, "sizes must be non-empty"),
    (lambda: X.narrow(1, 6, 1), IndexError,
     r"start out of range \(expected to be in range of \[-5, 5\], but got 6\)"),
    (lambda: X.narrow(1, 3, 4), RuntimeError,
     r"start \(3\) \+ length \(4\) exceeds dimension size \(5\)"),
    (lambda: X.narrow(1, 2, -1), RuntimeError, "length must be non-negative"),
    (lambda: tx.tensor(1.).narrow(0, 0, 1), RuntimeError, "cannot be applied to a 0-dim"),
    (lambda: X.select(1, 5), IndexError,
     r"select\(\): index 5 out of range for tensor of size \[4, 5, 3\] at dimension 1"),
    (lambda: X.select(3, 0), IndexError, r"select\(\): dimension out of range"),
    (lambda: X.unfold(1, 6, 1), RuntimeError,
     "maximum size for tensor at dimension 1 is 5 but size is 6"),
    (lambda: X.unfold(1, 2, 0), RuntimeError, "step is 0 but must be > 0"),
    (lambda: X.unfold(1, -1, 1), RuntimeError, "size is -1 but must be >= 0"),
    (lambda: X.diagonal(0, 1, 1), RuntimeError, "diagonal dimensions cannot be identical 1, 1"),
    (lambda: X.diagonal(0, 0, 3), IndexError, r"diagonal\(\): dimension out of range"),
    (lambda: X.t(), RuntimeError, r"t\(\) expects a tensor with <= 2 dimensions, but self is 3D"),
    (lambda: X.movedim((0, 1), (2,)), RuntimeError,
     r"source \(\[0, 1\] dims\) should contain the same number of dims as destination"),
    (lambda: X.movedim((0, 0), (1, 2)), RuntimeError, r"repeated dim in `source` \(\[0, 0\]\)"),
    (lambda: X.movedim((0, 1), (1, 1)), RuntimeError, "repeated dim in `destination`"),
    (lambda: X.unbind(3), IndexError, r"unbind\(\): dimension out of range"),
    (lambda: X.swapaxes(0, 3), IndexError, r"transpose\(\): dimension out of range"),
    (lambda: tx.view_as_real(X), RuntimeError, "only supported for complex tensors"),
    (lambda: tx.view_as_complex(tx.zeros(3, 4)), RuntimeError, "last dimension of size 2"),
    (lambda: tx.view_as_complex(tx.zeros(2, 3).t()), RuntimeError,
     "last dimension with stride 1"),
    (lambda: tx.view_as_complex(tx.zeros(3, 3, 3)[..., :2]), RuntimeError,
     "stride divisible by 2"),
    (lambda: tx.view_as_complex(tx.zeros(3, 2, dtype=tx.int64)), RuntimeError,
     "only supported for float and double tensors"),
    (lambda: X[::-1], ValueError, "step must be greater than zero"),
    (lambda: X.view(-1, 7), RuntimeError, "is invalid for input of size 60"),
    (lambda: X.transpose(0, 1).view(-1), RuntimeError, "use .reshape"),
])
def test_view_errors(fn, exc, msg):
    with pytest.raises(exc, match=msg):
        fn()


def test_unfold_and_flatten_of_0d():
    torch = _torch()
    for size in (0, 1):
        assert tuple(tx.tensor(5.).unfold(0, size, 1).shape) == tuple(
            torch.tensor(5.).unfold(0, size, 1).shape)
    with pytest.raises(RuntimeError, match="maximum size for tensor at dimension 0 is 1"):
        tx.tensor(5.).unfold(0, 2, 1)
    assert tx.tensor(5.).t().shape == ()
