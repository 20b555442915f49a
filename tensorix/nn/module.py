"""``Module``: the stateful shell around ``nn.functional``.

A module owns parameters, buffers and submodules, registered by attribute assignment, and
names them hierarchically (``layer1.weight``) for ``state_dict``. Its ``forward`` is a call to a
function; ``reset_parameters`` initialises; ``extra_repr`` prints its configuration.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator

from .. import dtypes as dt
from ..autograd.grad_mode import no_grad
from ..backend import Device
from ..tensor import Tensor
from .parameter import Buffer, Parameter, _mark, is_parameter

__all__ = ["Module"]


class _Handle:
    """Returned by hook registration; ``remove()`` unregisters."""

    _next = 0

    def __init__(self, table: dict):
        self.table, self.id = table, _Handle._next
        _Handle._next += 1

    def remove(self):
        self.table.pop(self.id, None)


class Module:
    """Base class of all layers. Subclasses set attributes in ``__init__`` and define
    ``forward``.

    Example::

        class MLP(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1, self.fc2 = nn.Linear(4, 8), nn.Linear(8, 2)
            def forward(self, x):
                return self.fc2(self.fc1(x).relu())
    """

    training: bool
    # A wrapper module (CheckpointWrapper, FSDP) names here the attribute that holds the module
    # it wraps: that name is left out of state-dict keys and of the wrapper's own
    # named_parameters, so the wrapped model's checkpoints load into the plain model and back
    # (torch gets the same with state-dict hooks on each wrapper class).
    _wrapped_attr: str | None = None

    def __init__(self):
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = OrderedDict()
        d["_buffers"] = OrderedDict()
        d["_non_persistent"] = set()
        d["_modules"] = OrderedDict()
        d["_forward_pre_hooks"] = OrderedDict()
        d["_forward_hooks"] = OrderedDict()

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"Module [{type(self).__name__}] is missing the required "
                                  "\"forward\" function")

    def __call__(self, *args, **kwargs):
        if not (self._forward_pre_hooks or self._forward_hooks):
            return self.forward(*args, **kwargs)
        return self._call_with_hooks(args, kwargs)

    def _call_with_hooks(self, args, kwargs):
        with_kwargs = self.__dict__.get("_hooks_with_kwargs", ())
        for key, hook in list(self._forward_pre_hooks.items()):
            if key in with_kwargs:
                r = hook(self, args, kwargs)
                if r is not None:
                    if not (isinstance(r, tuple) and len(r) == 2):
                        raise RuntimeError("forward pre-hook must return None or a tuple of "
                                           f"(new_args, new_kwargs), but got {r}.")
                    args, kwargs = r
            else:
                r = hook(self, args)
                if r is not None:
                    args = r if isinstance(r, tuple) else (r,)
        try:
            out = self.forward(*args, **kwargs)
        except Exception:
            always = self.__dict__.get("_hooks_always_call", ())
            for key, hook in list(self._forward_hooks.items()):
                if key in always:
                    hook(self, args, kwargs, None) if key in with_kwargs else \
                        hook(self, args, None)
            raise
        for key, hook in list(self._forward_hooks.items()):
            r = hook(self, args, kwargs, out) if key in with_kwargs else hook(self, args, out)
            if r is not None:
                out = r
        return out

    # -- registration --------------------------------------------------------------------------
    def __setattr__(self, name, value):
        d = self.__dict__
        if "_parameters" not in d:
            raise AttributeError("cannot assign attributes before Module.__init__() call")
        params, buffers, modules = d["_parameters"], d["_buffers"], d["_modules"]
        if is_parameter(value):
            buffers.pop(name, None)
            modules.pop(name, None)
            self.register_parameter(name, value)
        elif isinstance(value, Module):
            params.pop(name, None)
            buffers.pop(name, None)
            d.pop(name, None)
            modules[name] = value
        elif isinstance(value, Buffer):
            params.pop(name, None)
            modules.pop(name, None)
            self.register_buffer(name, value.data, value.persistent)
        elif name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                                "(tensorix.Tensor or None expected)")
            buffers[name] = value
        elif name in params or name in modules:
            if value is not None:
                kind = "parameter" if name in params else "child module"
                raise TypeError(f"cannot assign '{type(value).__name__}' as {kind} '{name}' "
                                "(nn.Parameter, Module or None expected)")
            (params if name in params else modules)[name] = None
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name):
        d = self.__dict__
        for table in ("_parameters", "_buffers", "_modules"):
            if table in d and name in d[table]:
                return d[table][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        for table in (self._parameters, self._buffers, self._modules):
            if name in table:
                del table[name]
                self._non_persistent.discard(name)
                return
        object.__delattr__(self, name)

    def __setstate__(self, state):
        # copy.deepcopy and pickle rebuild the parameter tensors as fresh Tensors: mark them
        # as Parameters again (the marker is an identity set, see parameter.py)
        self.__dict__.update(state)
        for p in self.__dict__.get("_parameters", {}).values():
            if p is not None:
                _mark(p)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._parameters) | set(self._buffers)
                      | set(self._modules))

    def register_parameter(self, name: str, param) -> None:
        """Add a parameter (or None) under ``name``."""
        _check_name(self, name, "parameter")
        if param is not None and not is_parameter(param):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter "
                            f"'{name}' (nn.Parameter or None required)")
        self.__dict__.pop(name, None)
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor, persistent: bool = True) -> None:
        """Add a buffer (saved in state_dict unless ``persistent=False``)."""
        _check_name(self, name, "buffer")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer "
                            f"'{name}' (tensorix.Tensor or None required)")
        self.__dict__.pop(name, None)
        self._buffers[name] = tensor
        (self._non_persistent.discard if persistent else self._non_persistent.add)(name)

    def add_module(self, name: str, module) -> None:
        _check_name(self, name, "module")
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target: str) -> Module:
        mod = self
        for part in target.split(".") if target else []:
            if part not in mod._modules:
                raise AttributeError(f"{type(mod).__name__} has no submodule `{part}`")
            mod = mod._modules[part]
        return mod

    def get_parameter(self, target: str):
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if name not in mod._parameters:
            raise AttributeError(f"{type(mod).__name__} has no parameter `{name}`")
        return mod._parameters[name]

    # -- traversal -----------------------------------------------------------------------------
    def named_modules(self, memo=None, prefix: str = "", remove_duplicate: bool = True):
        """Yield (name, module) for this module and all below it, depth first."""
        memo = set() if memo is None else memo
        stack = [(prefix, self)]
        while stack:
            name, mod = stack.pop()
            if remove_duplicate:
                if id(mod) in memo:
                    continue
                memo.add(id(mod))
            yield name, mod
            children = [(f"{name}.{k}" if name else k, m) for k, m in mod._modules.items()
                        if m is not None]
            stack.extend(reversed(children))

    def modules(self) -> Iterator[Module]:
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        seen = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield name, m

    def children(self):
        for _, m in self.named_children():
            yield m

    def _named_members(self, table, prefix, recurse, remove_duplicate=True):
        seen = set()
        mods = self.named_modules(prefix=prefix) if recurse else [(prefix, self)]
        for mod_prefix, mod in mods:
            for k, v in getattr(mod, table).items():
                if v is None or (remove_duplicate and id(v) in seen):
                    continue
                seen.add(id(v))
                yield (f"{mod_prefix}.{k}" if mod_prefix else k), v

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True):
        """Yield (dotted name, parameter), each shared parameter once (on a wrapper, under the
        state-dict keys: see ``state_key``)."""
        named = self._named_members("_parameters", prefix, recurse, remove_duplicate)
        if self._wrapped_attr is None:
            yield from named
            return
        for name, p in named:
            yield self.state_key(name, prefix), p

    def state_key(self, path: str, prefix: str = "") -> str:
        """The state-dict key of the member at dotted ``path`` (below this module, after
        ``prefix``): the segments naming a wrapped module (a wrapper's ``_wrapped_attr``) left
        out, at any depth. Example: for ``m.blocks[0]`` wrapped in a CheckpointWrapper,
        ``m.state_key("blocks.0._checkpoint_wrapped_module.fc.weight") == "blocks.0.fc.weight"``.
        """
        if prefix and path.startswith(prefix):
            path = path[len(prefix):]
        mod, kept = self, []
        for part in path.split("."):
            if not part:
                continue
            if mod is None or part != mod._wrapped_attr:
                kept.append(part)
            mod = mod._modules.get(part) if mod is not None else None
        return prefix + ".".join(kept)

    def parameters(self, recurse: bool = True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True):
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    # -- state ---------------------------------------------------------------------------------
    def state_dict(self, destination=None, prefix: str = "", keep_vars: bool = False):
        """An ordered mapping from dotted names to parameters and persistent buffers
        (detached unless ``keep_vars``)."""
        out = OrderedDict() if destination is None else destination
        for name, mod in self.named_modules(remove_duplicate=False):
            key = self.state_key(name)
            pre = prefix + (f"{key}." if key else "")
            for k, p in mod._parameters.items():
                if p is not None:
                    out[pre + k] = p if keep_vars else p.detach()
            for k, b in mod._buffers.items():
                if b is not None and k not in mod._non_persistent:
                    out[pre + k] = b if keep_vars else b.detach()
        return out

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Copy tensors from ``state_dict`` into this module's parameters and buffers.

        With ``strict`` a missing or unexpected key raises, listing them all; a shape mismatch
        always raises. With ``assign`` the module takes the state_dict's tensors themselves
        (parameters keep their ``requires_grad``) instead of copying into its own.
        Returns (missing_keys, unexpected_keys).
        """
        own = self.state_dict(keep_vars=True)  # keyed as state_dict is: see state_key
        slots = self._slots() if assign else None
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        errors = []
        for k, target in own.items():
            if k not in state_dict:
                continue
            src = state_dict[k]
            if not isinstance(src, Tensor):
                errors.append(f'While copying the parameter named "{k}", expected a Tensor, '
                              f"got {type(src).__name__}.")
                continue
            if tuple(src.shape) != tuple(target.shape):
                errors.append(f"size mismatch for {k}: copying a param with shape "
                              f"{tuple(src.shape)} from checkpoint, the shape in current model "
                              f"is {tuple(target.shape)}.")
                continue
            if assign:
                self._assign(slots, target, src)
                continue
            with no_grad():
                target.copy_(src)
        if strict and (missing or unexpected):
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: "
                              + ", ".join(f'"{k}"' for k in unexpected) + ".")
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: "
                              + ", ".join(f'"{k}"' for k in missing) + ".")
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t"
                               + "\n\t".join(errors))
        return _IncompatibleKeys(missing, unexpected)

    def _slots(self):
        """{id(tensor): [(table, name, is parameter)]} of every parameter and buffer: where
        ``assign`` puts a loaded tensor (found by identity, since a key need not be a module
        path: see state_key; a tied parameter stays tied)."""
        slots = {}
        for mod in self.modules():
            for table, is_param in ((mod._parameters, True), (mod._buffers, False)):
                for name, t in table.items():
                    if t is not None:
                        slots.setdefault(id(t), []).append((table, name, is_param))
        return slots

    @staticmethod
    def _assign(slots, target, src):
        param = None  # one Parameter for every slot of a tied one
        for table, name, is_param in slots.pop(id(target), ()):
            if is_param and param is None:
                param = Parameter(src, requires_grad=target.requires_grad)
            table[name] = param if is_param else src

    # -- modes and conversion ------------------------------------------------------------------
    def train(self, mode: bool = True):
        if not isinstance(mode, bool):
            raise ValueError("train(): training mode is expected to be boolean")
        for m in self.modules():
            m.__dict__["training"] = mode
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.parameters():
            if p.grad is not None:
                if set_to_none:
                    p.grad = None
                else:
                    p.grad = p.grad.detach() * 0

    def apply(self, fn: Callable[[Module], None]):
        """Call ``fn`` on every submodule (children first) and on self."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def _apply_tensors(self, convert):
        """Convert every parameter (keeping its identity, as optimizers hold it), its grad
        and every buffer."""
        with no_grad():
            for m in self.modules():
                for p in m._parameters.values():
                    if p is not None:
                        new = convert(p)
                        p._data, p._dtype = new._data, new._dtype
                        if p.grad is not None:
                            p.grad = convert(p.grad)
                for k, b in m._buffers.items():
                    if b is not None:
                        m._buffers[k] = convert(b)
        return self

    def to(self, *args, **kwargs):
        """Move/cast parameters and buffers: ``model.to(tensorix.float64)``,
        ``model.to('cuda')``. Only floating tensors change dtype, as in PyTorch."""
        dtype = kwargs.get("dtype")
        device = kwargs.get("device")
        for a in args:
            if isinstance(a, (str, Device)):
                device = a
            elif isinstance(a, Tensor):
                dtype, device = a.dtype, a.device
            else:
                dtype = a
        if dtype is not None:
            dtype = dt.as_dtype(dtype)
            if not (dtype.is_floating_point or dtype.is_complex):
                raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, "
                                f"but got desired dtype={dtype}")

        def convert(t):
            d = dtype if dtype is not None and t.dtype.is_floating_point else None
            return t.to(device=device, dtype=d)

        return self._apply_tensors(convert)

    def float(self):
        return self.to(dt.float32)

    def double(self):
        return self.to(dt.float64)

    def half(self):
        return self.to(dt.float16)

    def bfloat16(self):
        return self.to(dt.bfloat16)

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None):
        return self.to("cuda" if device is None else f"cuda:{device}")

    # -- hooks ---------------------------------------------------------------------------------
    def _add_hook(self, table, hook, prepend, with_kwargs, always_call=False):
        h = _Handle(table)
        table[h.id] = hook
        if prepend:
            table.move_to_end(h.id, last=False)
        for flag, name in ((with_kwargs, "_hooks_with_kwargs"),
                           (always_call, "_hooks_always_call")):
            if flag:
                self.__dict__.setdefault(name, set()).add(h.id)
        return h

    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """``hook(module, args)`` runs before forward and may return replacement args; with
        ``with_kwargs`` it is ``hook(module, args, kwargs)`` and may return ``(args,
        kwargs)``. ``prepend`` runs it before the hooks already registered."""
        return self._add_hook(self._forward_pre_hooks, hook, prepend, with_kwargs)

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False,
                              always_call=False):
        """``hook(module, args, output)`` (``hook(module, args, kwargs, output)`` with
        ``with_kwargs``) runs after forward and may return a new output; ``always_call``
        runs it (with output None) even when forward raises."""
        return self._add_hook(self._forward_hooks, hook, prepend, with_kwargs, always_call)

    # -- repr ----------------------------------------------------------------------------------
    def extra_repr(self) -> str:
        return ""

    def _get_name(self):
        return type(self).__name__

    def __repr__(self):
        lines = []
        extra = self.extra_repr()
        if extra:
            lines.extend(extra.split("\n"))
        for name, m in self._modules.items():
            body = repr(m).replace("\n", "\n  ")
            lines.append(f"({name}): {body}")
        if not lines:
            return f"{self._get_name()}()"
        if len(lines) == 1 and not self._modules:
            return f"{self._get_name()}({lines[0]})"
        return f"{self._get_name()}(\n  " + "\n  ".join(lines) + "\n)"


class _IncompatibleKeys(tuple):
    def __new__(cls, missing, unexpected):
        return super().__new__(cls, (missing, unexpected))

    @property
    def missing_keys(self):
        return self[0]

    @property
    def unexpected_keys(self):
        return self[1]

    def __repr__(self):
        if not self[0] and not self[1]:
            return "<All keys matched successfully>"
        return f"_IncompatibleKeys(missing_keys={self[0]}, unexpected_keys={self[1]})"


def _check_name(mod, name, kind):
    if not isinstance(name, str):
        raise TypeError(f"{kind} name should be a string, got {type(name).__name__}")
    if "." in name or name == "":
        raise KeyError(f"{kind} name can't contain \".\" or be empty, got {name!r}")
    if "_parameters" not in mod.__dict__:
        raise AttributeError(f"cannot assign {kind} before Module.__init__() call")

