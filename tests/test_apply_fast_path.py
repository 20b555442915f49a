"""Function.apply wraps a fresh forward result inline (the per-op hot path): the Tensor it
builds must be the one tensor._make builds, slot for slot."""

import numpy as np

import tensorix as tx
from tensorix.tensor import Tensor, _make


def _slots(t):
    return {s: getattr(t, s, "<unset>") for s in Tensor.__slots__ if s != "__weakref__"}


def test_inline_wrap_matches_make():
    a, b = tx.ones(3), tx.ones(3)
    for mode in (tx.no_grad, tx.enable_grad):
        with mode():
            out = a + b
        ref = _make(np.full(3, 2.0, np.float32))
        got, want = _slots(out), _slots(ref)
        assert got.pop("_data").tolist() == want.pop("_data").tolist()
        v1, v2 = got.pop("_version"), want.pop("_version")
        assert v1 == v2 == [0] and v1 is not v2
        assert got == want


def test_no_grad_ctx_has_no_edges():
    a = tx.ones(3, requires_grad=True)
    with tx.no_grad():
        out = a * 2
    assert out.grad_fn is None and not out.requires_grad
    out = tx.where(a > 0, a, a)  # three arguments, recorded
    assert out.grad_fn.needs_input_grad == (False, True, True)


def test_forward_errors_translated_and_grad_mode_restored_in_both_modes():
    import pytest

    a, b = tx.ones(3, requires_grad=True), tx.ones(4)
    for mode, on in ((tx.no_grad, False), (tx.enable_grad, True)):
        with mode():
            with pytest.raises(RuntimeError, match="must match the size"):
                a + b
            assert tx.is_grad_enabled() is on
            inner = []

            class Peek(tx.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    inner.append(tx.is_grad_enabled())  # forward never records
                    return x._data * 2

            assert Peek.apply(a).requires_grad is on and inner == [False]
            assert tx.is_grad_enabled() is on
