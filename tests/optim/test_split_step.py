"""Optimizer steps over parts of the parameter list at once on the library's pool
(Optimizer.step with ``_threads.over_parts``): the same bits as one thread."""

import numpy as np
import pytest

import tensorix as tx
from tensorix import _threads


def _run(make_opt, steps=3):
    rng = np.random.default_rng(0)
    params = [tx.nn.Parameter(tx.tensor(rng.standard_normal(s).astype(np.float32)))
              for s in ((40, 30), (30,), (7, 7, 3), (200,), (1,))]
    opt = make_opt(params)
    for k in range(steps):
        for i, p in enumerate(params):
            p.grad = tx.tensor(np.random.default_rng([k, i]).standard_normal(p.shape)
                               .astype(np.float32))
        opt.step()
    return [p.detach().numpy().copy() for p in params]


OPTIMIZERS = {
    "sgd": lambda ps: tx.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True),
    "adam": lambda ps: tx.optim.Adam(ps, lr=1e-2, weight_decay=0.1),
    "adamw": lambda ps: tx.optim.AdamW(ps, lr=1e-2),
}


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_split_step_is_bit_identical(name, monkeypatch, counted_parts):
    monkeypatch.setattr(_threads, "COSTLY", 8)  # every list splits
    split = _run(OPTIMIZERS[name])
    assert counted_parts and set(counted_parts) == {2}
    tx.set_num_threads(1)
    whole = _run(OPTIMIZERS[name])
    for a, b in zip(split, whole):
        assert np.array_equal(a, b)


def test_over_parts_balances_and_covers_the_list(counted_parts):
    seen = []
    sizes = [5, 1, 1, 1, 6, 2]
    _threads.over_parts(list(range(6)), sizes, lambda part: seen.append(list(part)), 1)
    assert counted_parts == [2] and sorted(sum(seen, [])) == list(range(6))
    assert sorted(sum(sizes[i] for i in part) for part in seen) == [8, 8]
    seen.clear()
    _threads.over_parts([0, 1], [3, 4], lambda part: seen.append(list(part)), 100)
    assert seen == [[0, 1]] and counted_parts == [2]  # too small: one call, this thread


def test_a_subclass_that_overrides_update_is_not_split(monkeypatch, counted_parts):
    monkeypatch.setattr(_threads, "COSTLY", 8)
    calls = []

    class Clipped(tx.optim.SGD):
        def _update(self, group, params):  # looks at all parameters at once
            calls.append(len(params))
            super()._update(group, params)

    _run(lambda ps: Clipped(ps, lr=0.1), steps=1)
    assert calls == [5] and counted_parts == []
