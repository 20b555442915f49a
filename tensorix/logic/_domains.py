"""Domains: the finite sets index variables range over.

An integer domain is 0..size-1 and its constants are the integers themselves. A symbol domain
has a symbol table: constants (``Alice``, ``"Bob"``) map to ids 0..n-1 in order of first
appearance (declared symbols first), so relations store int64 columns and answers map back.
"""

from __future__ import annotations

from ._errors import ProgramError

__all__ = ["Domain"]


class Domain:
    """A named finite domain: ``size`` elements, ``symbols`` (a list) for a symbol domain."""

    __slots__ = ("name", "size", "symbols", "_ids")

    def __init__(self, name, size, symbols=None):
        self.name = name
        self.size = int(size)
        self.symbols = None if symbols is None else list(symbols)
        self._ids = None if symbols is None else {s: k for k, s in enumerate(self.symbols)}

    @property
    def symbolic(self):
        return self.symbols is not None

    def id_of(self, c, where=""):
        """The int id of constant ``c`` (ProgramError when it is not in the domain)."""
        if self._ids is not None:
            k = self._ids.get(c)
            if k is None:
                raise ProgramError(f"constant {c!r} is not in domain {self.name!r}"
                                   + (f", in {where}" if where else ""), at=where)
            return k
        if isinstance(c, str) or not 0 <= int(c) < self.size:
            raise ProgramError(f"constant {c!r} is outside domain {self.name!r} "
                               f"(0..{self.size - 1})" + (f", in {where}" if where else ""),
                               at=where)
        return int(c)

    def has(self, c):
        if self._ids is not None:
            return c in self._ids
        return not isinstance(c, str) and 0 <= int(c) < self.size

    def value_of(self, k):
        """The constant with id ``k`` (a symbol, or the int itself)."""
        return self.symbols[k] if self.symbols is not None else int(k)

    def values_of(self, ids):
        if self.symbols is None:
            return [int(k) for k in ids]
        return [self.symbols[k] for k in ids]

    def __repr__(self):
        kind = f"{len(self.symbols)} symbols" if self.symbols is not None else "int"
        return f"Domain({self.name!r}, size={self.size}, {kind})"
