"""The autograd engine, grad modes, hooks and the Function API, checked against torch where it
is installed (float64, so values agree to rounding)."""

from __future__ import annotations

import sys
import time

import numpy as np
import pytest

import tensorix as tx
from tensorix.autograd import Function, once_differentiable

try:
    import torch
except ImportError:  # the oracle tests skip cleanly without torch
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is the oracle")


def _np(t):
    return t.detach().numpy() if isinstance(t, tx.Tensor) else t.detach().cpu().numpy()


def _pair(arr):
    """The same float64 values as a tensorix leaf and a torch leaf, both requiring grad."""
    return (tx.tensor(arr, requires_grad=True),
            torch.tensor(arr, dtype=torch.float64, requires_grad=True))


def _close(a, b, tol=1e-10):
    np.testing.assert_allclose(_np(a), _np(b), rtol=tol, atol=tol)


# -- backward and grad against torch ------------------------------------------------------------

COMPOSITES = {
    "poly": lambda x, y: (x * y + x.exp() / (y * y + 1)).sum(),
    "tanh_matmul": lambda x, y: ((x @ y.transpose(0, 1)).tanh() ** 2).mean(),
    "log_broadcast": lambda x, y: ((x * x + 1).log() * y[0]).sum() - (x / 3).sum(),
    "shared": lambda x, y: ((x * y).exp() * (x * y) + (x * y).sqrt()).sum(),
}


@needs_torch
@pytest.mark.parametrize("name", sorted(COMPOSITES))
def test_composite_gradients_match_torch(name, rng):
    f = COMPOSITES[name]
    (x, tx_x), (y, ty) = _pair(rng.random((3, 4)) + 0.5), _pair(rng.random((3, 4)) + 0.5)
    out, ref = f(x, y), f(tx_x, ty)
    out.backward()
    ref.backward()
    _close(out, ref)
    _close(x.grad, tx_x.grad)
    _close(y.grad, ty.grad)


@needs_torch
def test_nonscalar_output_with_gradient(rng):
    (x, tx_x), g = _pair(rng.random((2, 3))), rng.random((2, 3))
    (x.exp() * x).backward(gradient=tx.tensor(g))
    (tx_x.exp() * tx_x).backward(gradient=torch.tensor(g))
    _close(x.grad, tx_x.grad)


def test_nonscalar_output_needs_gradient():
    x = tx.ones(2, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match="implicitly created only for scalar outputs"):
        (x * 2).backward()
    with pytest.raises(RuntimeError, match="mismatch in shape"):
        (x * 2).backward(tx.ones(3))


def test_backward_of_tensor_without_grad():
    with pytest.raises(RuntimeError, match="does not require grad and does not have a grad_fn"):
        tx.ones(2).sum().backward()
    with pytest.raises(RuntimeError, match="'inputs' argument to backward.. cannot be empty"):
        (tx.ones(2, requires_grad=True) * 2).sum().backward(inputs=[])


@needs_torch
def test_multiple_roots_and_shared_subgraph(rng):
    (x, tx_x) = _pair(rng.random(4))

    def parts(x):
        h = x.exp()  # shared by both roots
        return (h * x).sum(), h * h

    a, b = parts(x)
    ta, tb = parts(tx_x)
    g = rng.random(4)
    tx.autograd.backward([a, b], [None, tx.tensor(g)])
    torch.autograd.backward([ta, tb], [None, torch.tensor(g)])
    _close(x.grad, tx_x.grad)


def test_grad_accumulates_across_backward_calls():
    x = tx.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    first = x.grad
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 8.0])
    assert x.grad is first  # accumulated in place, as PyTorch does


def test_grad_does_not_alias_between_leaves():
    a, b = tx.zeros(2, requires_grad=True), tx.zeros(2, requires_grad=True)
    (a + b).sum().backward()  # add hands one gradient to both inputs
    a.grad.add_(1)
    np.testing.assert_allclose(b.grad.numpy(), [1.0, 1.0])


def test_grad_only_on_leaves_and_retained():
    x = tx.tensor([1.0, 2.0], requires_grad=True)
    h = x * 3
    k = h * 2
    h.retain_grad()
    k.sum().backward()
    assert x.is_leaf and not h.is_leaf
    assert h.retains_grad and not k.retains_grad
    np.testing.assert_allclose(h.grad.numpy(), [2.0, 2.0])
    assert k.grad is None
    np.testing.assert_allclose(x.grad.numpy(), [6.0, 6.0])
    with pytest.raises(RuntimeError, match="can't retain_grad on a tensor that has"):
        tx.ones(2).retain_grad()


def test_second_backward_needs_retain_graph():
    x = tx.tensor([1.0, 2.0], requires_grad=True)
    s = x.exp().sum()
    s.backward(retain_graph=True)
    s.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="ExpBackward: trying to backward through the graph "
                                           "a second time"):
        s.backward()


def test_graph_without_saved_tensors_runs_twice():
    a, b = tx.ones(2, requires_grad=True), tx.ones(2, requires_grad=True)
    y = a + b  # like PyTorch: nothing saved, nothing freed, no error
    y.backward(tx.ones(2))
    y.backward(tx.ones(2))
    np.testing.assert_allclose(a.grad.numpy(), [2.0, 2.0])


def test_100k_op_chain_is_iterative():
    x = tx.tensor(1.0, requires_grad=True)
    step = tx.tensor(1.0)
    y = x
    start = time.perf_counter()
    for _ in range(100_000):
        y = y + step
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(200)  # a recursive walk could not get through
    try:
        y.backward()
    finally:
        sys.setrecursionlimit(limit)
    elapsed = time.perf_counter() - start
    assert x.grad.item() == 1.0 and y.item() == 100_001.0
    assert y.grad_fn.name() == "AddBackward"
    del y  # freeing the chain must not recurse either
    # about 1 s on an idle 2-core machine; the bound leaves room for a loaded one
    assert elapsed < 20, f"100,000-op chain took {elapsed:.1f} s"


@needs_torch
def test_third_and_fourth_derivatives():
    x = tx.tensor(1.5, requires_grad=True)
    tx_x = torch.tensor(1.5, dtype=torch.float64, requires_grad=True)
    g, tg = x ** 4, tx_x ** 4
    for _order in range(4):
        (g,) = tx.autograd.grad(g, x, create_graph=True)
        (tg,) = torch.autograd.grad(tg, tx_x, create_graph=True)
        _close(g, tg)
    np.testing.assert_allclose(g.item(), 24.0)


@needs_torch
def test_mixed_second_derivative(rng):
    (x, tx_x), (y, ty) = _pair(rng.random(3)), _pair(rng.random(3))
    for a, b, m in ((x, y, tx), (tx_x, ty, torch)):
        (gx,) = m.autograd.grad((a * a * b.exp()).sum(), a, create_graph=True)
        gx.sum().backward()
    _close(y.grad, ty.grad)
    _close(x.grad, tx_x.grad)


def test_grad_unused_and_materialize():
    x, z = tx.ones(2, requires_grad=True), tx.ones(2, requires_grad=True)
    y = (x * 2).sum()
    with pytest.raises(RuntimeError, match="input 1 was not used in the graph"):
        tx.autograd.grad(y, [x, z], retain_graph=True)
    gx, gz = tx.autograd.grad(y, [x, z], allow_unused=True, retain_graph=True)
    assert gz is None and x.grad is None
    gx, gz = tx.autograd.grad(y, [x, z], materialize_grads=True)
    np.testing.assert_allclose(gz.numpy(), [0.0, 0.0])
    np.testing.assert_allclose(gx.numpy(), [2.0, 2.0])
    with pytest.raises(RuntimeError, match="input 0 does not require grad"):
        tx.autograd.grad(y, tx.ones(2))


@needs_torch
def test_grad_of_intermediate_and_grad_outputs(rng):
    (x, tx_x), g = _pair(rng.random(3)), rng.random(3)
    outs = []
    for a, m, wrap in ((x, tx, tx.tensor), (tx_x, torch, torch.tensor)):
        h = a.exp()
        y = h * a
        outs.append(m.autograd.grad(y, [h, a], grad_outputs=wrap(g)))
    for mine, ref in zip(*outs):
        _close(mine, ref)


@needs_torch
def test_backward_inputs_restricts_accumulation(rng):
    (x, tx_x), (y, ty) = _pair(rng.random(3)), _pair(rng.random(3))
    for a, b in ((x, y), (tx_x, ty)):
        h = a * b
        h.retain_grad()
        (h * a).sum().backward(inputs=[a, h])
    assert y.grad is None and ty.grad is None
    _close(x.grad, tx_x.grad)


# -- grad modes ---------------------------------------------------------------------------------

def test_no_grad_context_and_decorators():
    x = tx.ones(2, requires_grad=True)
    with tx.no_grad():
        assert not tx.is_grad_enabled()
        assert (x * 2).grad_fn is None
        with tx.enable_grad():
            assert (x * 2).requires_grad
    assert tx.is_grad_enabled()

    @tx.no_grad
    def bare(t):
        return t * 2

    @tx.no_grad()
    def called(t):
        return t * 2

    assert not bare(x).requires_grad and not called(x).requires_grad
    assert bare.__name__ == "bare"


def test_set_grad_enabled_three_ways():
    x = tx.ones(2, requires_grad=True)
    with tx.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert tx.is_grad_enabled()

    @tx.set_grad_enabled(False)
    def f(t):
        return t * 2

    assert tx.is_grad_enabled()  # decorating changes nothing by itself
    assert not f(x).requires_grad and tx.is_grad_enabled()
    tx.set_grad_enabled(False)
    assert not tx.is_grad_enabled() and not (x * 2).requires_grad
    tx.set_grad_enabled(True)
    assert (x * 2).requires_grad
    with pytest.raises(TypeError, match="argument 'mode' must be bool"):
        tx.set_grad_enabled(1)


def test_inference_mode():
    x = tx.ones(2, requires_grad=True)
    with tx.inference_mode():
        assert tx.is_inference_mode_enabled() and not tx.is_grad_enabled()
        assert not (x * 2).requires_grad
    with tx.inference_mode(mode=False):
        assert (x * 2).requires_grad
    assert not tx.is_inference_mode_enabled()

    @tx.inference_mode()
    def f(t):
        return t * 2

    assert not f(x).requires_grad


def test_modes_restore_after_exception():
    with pytest.raises(ValueError), tx.no_grad():
        raise ValueError
    assert tx.is_grad_enabled()


# -- tensor autograd API ------------------------------------------------------------------------

def test_detach_and_requires_grad():
    x = tx.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    d = y.detach()
    assert not d.requires_grad and d.is_leaf and d.grad_fn is None
    d.add_(1)  # shares memory and the version counter
    assert y._version_value == 1
    np.testing.assert_allclose(y.detach().numpy(), [3.0, 5.0])
    with pytest.raises(RuntimeError, match="can't detach views in-place"):
        (x * 1)[0:1].detach_()
    y.detach_()
    assert y.is_leaf and not y.requires_grad
    with pytest.raises(RuntimeError, match="only floating point and complex tensors"):
        tx.tensor([1, 2]).requires_grad_()
    with pytest.raises(RuntimeError, match="only change requires_grad of leaf"):
        (x * 2).requires_grad_(False)
    assert x.requires_grad_(False) is x and not x.requires_grad
    x.requires_grad = True
    assert x.requires_grad


def test_grad_fn_name_and_next_functions():
    x = tx.ones(2, requires_grad=True)
    y = (x * 2).exp()
    assert y.grad_fn.name() == "ExpBackward"
    assert "ExpBackward" in repr(y.grad_fn)
    ((mul, nr),) = y.grad_fn.next_functions
    assert mul.name() == "MulBackward" and nr == 0
    (acc, _), (none, _) = mul.next_functions
    assert acc.name() == "AccumulateGrad" and acc.variable is x
    assert none is None  # the lifted constant 2 needs no gradient
    mul.metadata["tag"] = 1
    assert mul.metadata == {"tag": 1}


@needs_torch
def test_hooks_on_leaf_and_nonleaf_match_torch():
    seen = {}
    for m in (tx, torch):
        x = m.tensor([1.0, 2.0], requires_grad=True)
        calls = []
        x.register_hook(lambda g, calls=calls: calls.append(g.detach().numpy().copy()))
        h = x * x  # x reaches the hook along two edges: it must see the sum, once
        h.register_hook(lambda g: g * 10)
        h.retain_grad()  # registered after the doubling hook
        h.sum().backward()
        seen[m.__name__] = (calls, _np(h.grad), _np(x.grad))
    mine, ref = seen["tensorix"], seen["torch"]
    assert len(mine[0]) == len(ref[0]) == 1
    np.testing.assert_allclose(mine[0][0], ref[0][0])
    np.testing.assert_allclose(mine[1], ref[1])
    np.testing.assert_allclose(mine[2], ref[2])


def test_hook_replacement_and_removal():
    x = tx.tensor([1.0, 2.0], requires_grad=True)
    handle = x.register_hook(lambda g: g * 0 + 7)
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [7.0, 7.0])
    handle.remove()
    x.grad = None
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        tx.ones(2).register_hook(lambda g: g)


def test_node_pre_and_post_hooks():
    x = tx.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    log = []
    y.grad_fn.register_prehook(lambda gout: (gout[0] * 2,))
    h = y.grad_fn.register_hook(lambda gin, gout: log.append(len(gin)))
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [6.0, 6.0])
    assert log == [2]
    h.remove()


# -- custom Functions (the examples of PyTorch's "Extending torch.autograd") ---------------------

def _exp_fn(m):
    class Exp(m.autograd.Function):
        @staticmethod
        def forward(ctx, i):
            result = i.exp()
            ctx.save_for_backward(result)
            return result

        @staticmethod
        def backward(ctx, grad_output):
            (result,) = ctx.saved_tensors
            return grad_output * result

    return Exp


def _linear_fn(m):
    class LinearFunction(m.autograd.Function):
        @staticmethod
        def forward(ctx, input, weight, bias=None):
            ctx.save_for_backward(input, weight, bias)
            output = input @ weight.transpose(0, 1)
            if bias is not None:
                output = output + bias
            return output

        @staticmethod
        def backward(ctx, grad_output):
            input, weight, bias = ctx.saved_tensors
            grad_input = grad_weight = grad_bias = None
            if ctx.needs_input_grad[0]:
                grad_input = grad_output @ weight
            if ctx.needs_input_grad[1]:
                grad_weight = grad_output.transpose(0, 1) @ input
            if bias is not None and ctx.needs_input_grad[2]:
                grad_bias = grad_output.sum(0)
            return grad_input, grad_weight, grad_bias

    return LinearFunction


def _mul_constant_fn(m):
    class MulConstant(m.autograd.Function):
        @staticmethod
        def forward(ctx, tensor, constant):
            ctx.constant = constant
            return tensor * constant

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output * ctx.constant, None

    return MulConstant


def _cube_fn(m):
    class MyCube(m.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            dx = 3 * x ** 2
            result = x ** 3
            ctx.save_for_backward(x, dx)
            return result, dx

        @staticmethod
        def backward(ctx, grad_output, grad_dx):
            x, dx = ctx.saved_tensors
            return grad_output * dx + grad_dx * 6 * x

    return MyCube


@needs_torch
def test_custom_functions_match_torch(rng):
    (x, tx_x), (w, tw), (b, tb) = (_pair(rng.random((4, 3))), _pair(rng.random((2, 3))),
                                   _pair(rng.random(2)))
    for m, (a, ww, bb) in ((tx, (x, w, b)), (torch, (tx_x, tw, tb))):
        out = _linear_fn(m).apply(a, ww, bb)
        out = _exp_fn(m).apply(_mul_constant_fn(m).apply(out, 0.5))
        out.sum().backward()
    for mine, ref in ((x, tx_x), (w, tw), (b, tb)):
        _close(mine.grad, ref.grad)


@needs_torch
def test_custom_function_multiple_outputs_double_backward():
    x, tx_x = _pair(np.array([0.5, -1.5]))
    grads = []
    for m, a in ((tx, x), (torch, tx_x)):
        result, dx = _cube_fn(m).apply(a)
        (g,) = m.autograd.grad((result + dx).sum(), a, create_graph=True)
        (gg,) = m.autograd.grad(g.sum(), a)
        grads.append((g, gg))
    _close(grads[0][0], grads[1][0])
    _close(grads[0][1], grads[1][1])


def test_needs_input_grad_non_tensor_args_and_no_grad():
    seen = []

    class Scale(Function):
        @staticmethod
        def forward(ctx, x, factor, y):
            seen.append(ctx.needs_input_grad)
            return x._data * factor + y._data

        @staticmethod
        def backward(ctx, g):
            return g * 2.0, None, g

    x, y = tx.ones(2, requires_grad=True), tx.ones(2)
    out = Scale.apply(x, 2.0, y)
    out.sum().backward()
    with tx.no_grad():
        Scale.apply(x, 2.0, y)
    assert seen == [(True, False, False), (False, False, False)]
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0])


def test_mark_non_differentiable_and_materialize_grads():
    calls = []

    class MaxWithIndex(Function):
        @staticmethod
        def forward(ctx, x):
            idx = int(np.argmax(x._data))
            ctx.idx, ctx.n = idx, x._data.shape[0]
            value = tx.tensor(x._data[idx])
            index = tx.tensor(idx)
            ctx.mark_non_differentiable(index)
            return value, index

        @staticmethod
        def backward(ctx, g_value, g_index):
            calls.append(g_index)
            out = np.zeros(ctx.n)
            out[ctx.idx] = 1.0
            return tx.tensor(out) * g_value

    x = tx.tensor([1.0, 3.0, 2.0], requires_grad=True)
    value, index = MaxWithIndex.apply(x)
    assert value.requires_grad and not index.requires_grad
    value.backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.0, 1.0, 0.0])
    assert calls[0].item() == 0  # materialized zeros for the output that got no gradient

    class TwoClones(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x.clone(), x.clone()

        @staticmethod
        def backward(ctx, g1, g2):
            calls.append((g1, g2))
            return g1 if g2 is None else g1 + g2

    x.grad = None
    a, _ = TwoClones.apply(x)
    a.sum().backward()
    assert calls[-1][1] is None
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 1.0, 1.0])


def test_saved_tensor_modified_in_place_is_an_error():
    class Square(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x._data ** 2

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = tx.ones(2, requires_grad=True)
    h = x * 1
    y = Square.apply(h)
    h.add_(1)
    with pytest.raises(RuntimeError, match=r"SquareBackward: one of the variables needed for "
                                           r"gradient computation has been modified by an "
                                           r"inplace operation.*is at version 1; expected "
                                           r"version 0"):
        y.sum().backward()


def test_backward_returning_wrong_things():
    class TooMany(Function):
        @staticmethod
        def forward(ctx, x):
            return x._data * 1

        @staticmethod
        def backward(ctx, g):
            return g, g

    class NotATensor(Function):
        @staticmethod
        def forward(ctx, x):
            return x._data * 1

        @staticmethod
        def backward(ctx, g):
            return 3

    x = tx.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="TooManyBackward returned an incorrect number of "
                                           "gradients .expected 1, got 2."):
        TooMany.apply(x).sum().backward()
    with pytest.raises(RuntimeError, match="returned a gradient of type int for input 0"):
        NotATensor.apply(x).sum().backward()
    with pytest.raises(TypeError, match="save_for_backward can only save Tensors or None"):
        class SavesInt(Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(3)
                return x._data

        SavesInt.apply(x)


def test_once_differentiable():
    class Cube(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x._data ** 3

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            assert not tx.is_grad_enabled()  # the body runs with recording off
            return 3 * x * x * g

    x = tx.tensor([1.0, 2.0], requires_grad=True)
    Cube.apply(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 12.0])
    (g,) = tx.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), [3.0, 12.0])
    with pytest.raises(RuntimeError, match="CubeBackward: trying to differentiate twice a "
                                           "function that was marked with "
                                           "@once_differentiable"):
        g.sum().backward()
    h = x * 1
    with pytest.raises(RuntimeError, match="marked with @once_differentiable"):
        (g2,) = tx.autograd.grad(Cube.apply(h).sum(), h, create_graph=True)
        tx.autograd.grad(g2.sum(), x)
    assert x.is_leaf and x.grad_fn is None


# -- anomaly mode -------------------------------------------------------------------------------

def _log_at_zero():
    x = tx.tensor([0.0, 1.0], requires_grad=True)
    return x, (x.log() + x).sum()


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy's divide-by-zero in LogBackward
def test_anomaly_names_the_op_and_its_forward_trace():
    x, y = _log_at_zero()
    y.backward()  # without anomaly mode: a silent inf
    assert np.isinf(x.grad.numpy()[0])
    with tx.autograd.detect_anomaly():
        assert tx.autograd.is_anomaly_enabled()
        x, y = _log_at_zero()
        with pytest.raises(RuntimeError, match="Function 'LogBackward' returned nan or inf "
                                               "values in its 0th output") as err:
            y.backward()
    assert "_log_at_zero" in str(err.value) and "x.log()" in str(err.value)
    assert not tx.autograd.is_anomaly_enabled()
    tx.autograd.set_detect_anomaly(True, check_nan=False)
    x, y = _log_at_zero()
    y.backward()  # traces kept, NaN check off
    assert np.isinf(x.grad.numpy()[0])


def test_anomaly_annotates_errors_raised_in_backward():
    class Fails(Function):
        @staticmethod
        def forward(ctx, x):
            return x._data * 1

        @staticmethod
        def backward(ctx, g):
            raise ValueError("broken backward")

    with tx.autograd.detect_anomaly():
        y = Fails.apply(tx.ones(2, requires_grad=True)).sum()
        with pytest.raises(ValueError, match="broken backward") as err:
            y.backward()
    notes = "".join(getattr(err.value, "__notes__", []))
    assert "FailsBackward" in notes and "Fails.apply" in notes
