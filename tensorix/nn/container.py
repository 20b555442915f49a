"""Containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict."""

from __future__ import annotations

from collections import OrderedDict

from .module import Module
from .parameter import Parameter, is_parameter

__all__ = ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]


def _index(i, n, what):
    if not -n <= i < n:
        raise IndexError(f"{what}: index {i} is out of range for length {n}")
    return i % n


class Sequential(Module):
    """Modules applied in order: ``nn.Sequential(nn.Linear(4, 8), nn.ReLU())`` or from an
    OrderedDict of named modules."""

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], (dict, OrderedDict)):
            for k, m in args[0].items():
                self.add_module(k, m)
        else:
            for i, m in enumerate(args):
                self.add_module(str(i), m)

    def forward(self, x):
        for m in self._modules.values():
            x = m(x)
        return x

    def __getitem__(self, idx):
        mods = list(self._modules.items())
        if isinstance(idx, slice):
            return Sequential(OrderedDict(mods[idx]))
        return mods[_index(idx, len(mods), "Sequential")][1]

    def __setitem__(self, idx, module):
        key = list(self._modules)[_index(idx, len(self._modules), "Sequential")]
        self.add_module(key, module)

    def __delitem__(self, idx):
        keys = list(self._modules)
        for k in (keys[idx] if isinstance(idx, slice) else
                  [keys[_index(idx, len(keys), "Sequential")]]):
            del self._modules[k]
        renumbered = list(self._modules.values())
        self._modules.clear()
        for i, m in enumerate(renumbered):
            self._modules[str(i)] = m

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self


class ModuleList(Module):
    """A list of modules, registered so their parameters are found."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx):
        mods = list(self._modules.values())
        if isinstance(idx, slice):
            return ModuleList(mods[idx])
        return mods[_index(idx, len(mods), "ModuleList")]

    def __setitem__(self, idx, module):
        self.add_module(str(_index(idx, len(self), "ModuleList")), module)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        for m in modules:
            self.append(m)
        return self

    def insert(self, index, module):
        mods = list(self._modules.values())
        mods.insert(index, module)
        self._modules.clear()
        for i, m in enumerate(mods):
            self.add_module(str(i), m)


class _Mapping(Module):
    """The read side of a dict-like container over one of Module's tables (``_table``)."""

    _table = "_modules"

    def __len__(self):
        return len(getattr(self, self._table))

    def __iter__(self):
        return iter(getattr(self, self._table))

    def __contains__(self, key):
        return key in getattr(self, self._table)

    def keys(self):
        return getattr(self, self._table).keys()

    def values(self):
        return getattr(self, self._table).values()

    def items(self):
        return getattr(self, self._table).items()


class ModuleDict(_Mapping):
    """A dict of modules with string keys."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        del self._modules[key]


    def update(self, modules):
        items = modules.items() if hasattr(modules, "items") else modules
        for k, m in items:
            self.add_module(k, m)


class ParameterList(Module):
    """A list of parameters (plain tensors are wrapped as Parameters)."""

    def __init__(self, values=None):
        super().__init__()
        for v in values or []:
            self.append(v)

    def append(self, value):
        self.register_parameter(str(len(self)), value if is_parameter(value)
                                else Parameter(value))
        return self

    def __getitem__(self, idx):
        if isinstance(idx, slice):      # as torch: a new list holding the same Parameters
            return ParameterList(list(self._parameters.values())[idx])
        return self._parameters[str(_index(idx, len(self), "ParameterList"))]

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters.values())

    def extra_repr(self):
        return "\n".join(f"({k}): Parameter containing: [tensorix.{p.dtype.name} of size "
                         f"{'x'.join(map(str, p.shape))}]" for k, p in self._parameters.items())


class ParameterDict(_Mapping):
    """A dict of parameters with string keys."""

    _table = "_parameters"

    def __init__(self, values=None):
        super().__init__()
        for k, v in (values or {}).items():
            self[k] = v

    def __setitem__(self, key, value):
        self.register_parameter(key, value if is_parameter(value) else Parameter(value))

    def __getitem__(self, key):
        return self._parameters[key]

