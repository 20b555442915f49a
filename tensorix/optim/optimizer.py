"""The Optimizer base: param groups and per-parameter state; the math is elsewhere.

Each optimizer class declares its ``defaults`` and implements ``_update(group, params)`` by
calling ONE pure update function (``sgd_update``, ``adam_update``, ...) on raw backend arrays,
updating parameters in place. No autograd is recorded (the step runs under ``no_grad``).
"""

from __future__ import annotations

import copy
import functools
from collections import defaultdict

from .. import _threads
from ..autograd.grad_mode import modes, no_grad
from ..backend import cpu, get_device
from ..tensor import Tensor, _make

__all__ = ["Optimizer", "required"]


def check_hparam(opt: str, arg: str, value, ok: bool, expected: str) -> None:
    """Raise ``ValueError("<Optimizer>: invalid <arg> value: <v> (expected <...>)")`` unless
    ``ok``: every optimizer validates its hyperparameters through this one message format."""
    if not ok:
        raise ValueError(f"{opt}: invalid {arg} value: {value!r} (expected {expected})")


def check_nonneg(opt: str, **values) -> None:
    """``check_hparam(opt, name, v, v >= 0, ">= 0")`` for each ``name=v``, in order."""
    for arg, v in values.items():
        check_hparam(opt, arg, v, v >= 0.0, ">= 0")


def check_betas(opt: str, betas, upper_inclusive: bool = False) -> tuple:
    """Validate a ``betas`` pair: each in [0, 1) (or [0, 1] when ``upper_inclusive``)."""
    if not isinstance(betas, (tuple, list)) or len(betas) != 2:
        raise ValueError(f"{opt}: invalid betas value: {betas!r} (expected a pair of floats)")
    for i, b in enumerate(betas):
        ok = 0.0 <= b <= 1.0 if upper_inclusive else 0.0 <= b < 1.0
        check_hparam(opt, f"betas[{i}]", b, ok, "0 <= beta <= 1" if upper_inclusive
                     else "0 <= beta < 1")
    return tuple(betas)


def as_real(arr):
    """A complex array viewed as interleaved (real, imag) floats, as PyTorch's optimizers do
    with ``view_as_real``, so elementwise moment updates treat both parts independently."""
    return arr.view(arr.real.dtype) if arr.dtype.kind == "c" else arr


def decayed_grad(p, g, *, lr, weight_decay, maximize, decoupled=False):
    """The gradient an update steps along: negated for ``maximize``, plus ``weight_decay * p``
    (L2); with ``decoupled`` the decay shrinks ``p`` in place by ``lr * weight_decay`` instead
    (AdamW-style). On raw arrays; ``g`` itself is never modified."""
    if maximize:
        g = -g
    if weight_decay:
        if decoupled:
            p *= 1 - lr * weight_decay
        else:
            g = g + weight_decay * p
    return g


def zero_state(state: dict, p, names) -> dict:
    """On a parameter's first step (empty ``state``): ``step`` = 0 and a zero buffer like ``p``
    for each of ``names``; returns ``state``."""
    if not state:
        xp = p.xp
        state["step"] = 0
        for n in names:
            state[n] = _make(xp.zeros_like(p._data))
    return state


class _Required:
    def __repr__(self):
        return "<required parameter>"


required = _Required()


def replayed(method):
    """An optimizer method whose effects are not ops (``step`` updates parameters in place,
    ``zero_grad`` clears ``.grad``): inside :func:`tensorix.compile` the tracer records the
    call, to replay eagerly on every call, instead of tracing its ops. Every
    :class:`Optimizer` subclass's ``step`` and ``zero_grad`` get it (``__init_subclass__``), a
    user's own too, and every lr scheduler's ``step``; a wrapper that is not a subclass
    (``OffloadOptimizer``) decorates its own. :func:`replayed_function` is the same for a
    function (``clip_grad_norm_``).

    Example: ``step = replayed(step)`` in a class body.
    """
    @functools.wraps(method)
    def call(self, *args, **kwargs):
        return _run_or_record(f"{type(self).__name__}.{method.__name__}()",
                              functools.partial(method, self), args, kwargs)

    call._replayed = True
    return call


def replayed_function(fn):
    """A function whose effects are not ops (``clip_grad_norm_`` scales ``.grad`` in place,
    between ``backward()`` and ``step()``): recorded by a compile trace and replayed on every
    call, as :func:`replayed` methods are. Its arguments are recorded as given: pass tensors
    and lists of them (a generator would be spent at the first call).

    Example: ``clip = replayed_function(clip)``.
    """
    @functools.wraps(fn)
    def call(*args, **kwargs):
        return _run_or_record(f"{fn.__name__}()", fn, args, kwargs)

    call._replayed = True
    return call


def _run_or_record(what, fn, args, kwargs):
    effect = getattr(modes.state.tracer, "effect", None)
    if effect is None:
        return fn(*args, **kwargs)
    return effect(what, fn, args, kwargs)


class Optimizer:
    """Base class: ``Optimizer(params, defaults)`` where ``params`` is an iterable of tensors
    or of dicts (param groups with their own options).

    Example::

        opt = tensorix.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        loss.backward(); opt.step(); opt.zero_grad()
    """

    defaults: dict = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for name in ("step", "zero_grad"):
            method = cls.__dict__.get(name)
            if method is not None and not getattr(method, "_replayed", False):
                setattr(cls, name, replayed(method))

    def __init__(self, params, defaults: dict):
        self.defaults = dict(defaults)
        self.state: dict = defaultdict(dict)  # keyed by parameter tensor (hash is id)
        self.param_groups: list = []
        if isinstance(params, Tensor):
            raise TypeError(f"{type(self).__name__}: params argument given to the optimizer "
                            "should be an iterable of Tensors or dicts, but got a Tensor")
        groups = list(params)
        if not groups:
            raise ValueError(f"{type(self).__name__}: optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for g in groups:
            self.add_param_group(g)

    def add_param_group(self, group: dict) -> None:
        group = dict(group)
        params = group["params"]
        group["params"] = [params] if isinstance(params, Tensor) else list(params)
        for p in group["params"]:
            if not isinstance(p, Tensor):
                raise TypeError(f"{type(self).__name__}: optimizer can only optimize Tensors, "
                                f"got {type(p).__name__}")
            if not p.is_leaf:
                raise ValueError(f"{type(self).__name__}: can't optimize a non-leaf Tensor")
        for k, v in self.defaults.items():
            if v is required and k not in group:
                raise ValueError(f"{type(self).__name__}: parameter group didn't specify a "
                                 f"value of required optimization parameter {k}")
            group.setdefault(k, v)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in group["params"]):
            raise ValueError(f"{type(self).__name__}: some parameters appear in more than one "
                             "parameter group")
        self.param_groups.append(group)

    @replayed
    def zero_grad(self, set_to_none: bool = True) -> None:
        for g in self.param_groups:
            for p in g["params"]:
                if p.grad is not None:
                    if set_to_none:
                        p.grad = None
                    else:
                        p.grad._data[...] = 0

    @replayed
    @no_grad()
    def step(self, closure=None):
        """Update every parameter that has a gradient; returns ``closure()``'s loss if
        given."""
        loss = None
        if closure is not None:
            from ..autograd.grad_mode import enable_grad

            with enable_grad():
                loss = closure()
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            if not params:
                continue
            if self._splittable() and all(get_device(p._data) is cpu for p in params):
                # parts of the list at once on the pool (the same bits: each parameter's
                # update is unchanged); small models' lists stay on this thread
                _threads.over_parts(params, [p._data.size for p in params],
                                    lambda part, group=group: self._update(group, part),
                                    _threads.COSTLY)
            else:
                self._update(group, params)
        return loss

    # True where _update treats each parameter on its own (raw arrays, no shared state
    # across parameters): step() may then run parts of the list at the same time
    _per_parameter = False

    def _update(self, group, params):
        raise NotImplementedError

    def _splittable(self) -> bool:
        """Whether the class that defines the ``_update`` in use declares it per parameter (a
        subclass that overrides ``_update`` is not split unless it says so too)."""
        for klass in type(self).__mro__:
            if "_update" in klass.__dict__:
                return klass.__dict__.get("_per_parameter", False)
        return False

    # -- state dict ----------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """{'state': {index: {name: value}}, 'param_groups': [...]} with parameters replaced by
        their position, like PyTorch (so it can be saved and loaded into a new optimizer)."""
        index, groups, i = {}, [], 0
        for g in self.param_groups:
            ids = []
            for p in g["params"]:
                if id(p) not in index:
                    index[id(p)] = i
                    i += 1
                ids.append(index[id(p)])
            groups.append({**{k: v for k, v in g.items() if k != "params"}, "params": ids})
        state = {}
        for g in self.param_groups:
            for p in g["params"]:
                if p in self.state and self.state[p]:
                    state[index[id(p)]] = {k: _copy_value(v) for k, v in self.state[p].items()}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups):
            raise ValueError(f"{type(self).__name__}: loaded state dict has a different number "
                             "of parameter groups")
        by_index = {}
        for mine, theirs in zip(self.param_groups, groups):
            if len(mine["params"]) != len(theirs["params"]):
                raise ValueError(f"{type(self).__name__}: loaded state dict contains a "
                                 "parameter group that doesn't match the size of optimizer's "
                                 "group")
            by_index.update(zip(theirs["params"], mine["params"]))
            for k, v in theirs.items():
                if k != "params":
                    mine[k] = copy.deepcopy(v)
        self.state = defaultdict(dict)
        for i, st in state_dict["state"].items():
            p = by_index[int(i)]
            self.state[p] = {k: _copy_value(v, like=p) for k, v in st.items()}

    def __repr__(self):
        lines = [f"{type(self).__name__} ("]
        for i, g in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for k in sorted(k for k in g if k != "params"):
                lines.append(f"    {k}: {g[k]}")
        return "\n".join(lines) + "\n)"


def _copy_value(v, like=None):
    """A private copy of a state value; when loading (``like`` = the parameter), per-element
    floating state follows the parameter's dtype and device, as PyTorch's load does (so a
    float32 checkpoint loads into a bf16 model); scalars such as NAdam's mu_product keep
    their precision."""
    if not isinstance(v, Tensor):
        return copy.deepcopy(v)
    t = _make(v._data.copy(), v._dtype)
    if like is None:
        return t
    if (t.dtype.is_floating_point and like.dtype.is_floating_point and t.dtype != like.dtype
            and tuple(t.shape) == tuple(like.shape)):
        t = t.to(like.dtype)
    return t.to(like.device)
