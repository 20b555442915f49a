"""Symbolic sizes for ``tensorix.export``: while export traces with dynamic dims, a traced
tensor's sizes are :class:`SymInt` s, ints (the traced value) that carry an expression in
the sizes of the graph's nodes. Arithmetic keeps the expression; every decision Python takes
on one (a comparison, ``bool``, ``min``/``max``, ``int()``, ``len()``) is recorded as a
:class:`Guard` that the exported program checks on each call, as Dynamo's SymInts do.

Expressions are small tuples: ``("dim", node_name, i)`` (size ``i`` of a node, resolved to
the node's symbolic shape once the traces are merged), ``("const", v)``, ``(op, a, b)`` and
``("neg", a)``. Decisions taken inside a primitive are not recorded: the op decides again
when the program runs.

Example::

    ep = tensorix.export(lambda x: x * 2 if x.shape[0] > 4 else x + 1, (tensorix.randn(3),),
                         dynamic_shapes=({0: "n"},))
    print(ep.guards)       # [n <= 4]
"""

from __future__ import annotations

import math
import operator

__all__ = ["SymInt", "Guard"]

_ARITH = {"+": operator.add, "-": operator.sub, "*": operator.mul, "//": operator.floordiv,
          "%": operator.mod}
_REL = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
        "==": operator.eq, "!=": operator.ne}
_NEGATE = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}


def _expr(v):
    return v.expr if type(v) is SymInt else ("const", v)


class SymInt(int):
    """A size seen by Python during an export trace: ``int(self)``'s value at this trace, and
    ``expr``; comparisons record guards with ``tracer.guard``."""

    def __new__(cls, value, expr, tracer):
        self = int.__new__(cls, value)
        self.expr, self.tracer = expr, tracer
        return self

    __hash__ = int.__hash__

    def _value(self) -> int:
        return int.__int__(self)

    # -- arithmetic stays symbolic -------------------------------------------------------
    def _arith(self, op, other, reflected=False):
        if type(other) is bool or not isinstance(other, int):
            if isinstance(other, float):  # a float result escapes tracking: fix the size
                v = self.concrete()
                return _ARITH[op](other, v) if reflected else _ARITH[op](v, other)
            return NotImplemented
        if type(other) is int and (other == 1 and op == "*" or
                                   other == 0 and (op == "+" or op == "-" and not reflected)):
            return self  # 1 * n, n + 0: the start values of products and sums
        a, b = (other, self) if reflected else (self, other)
        value = _ARITH[op](int(a) if type(a) is not SymInt else a._value(),
                           int(b) if type(b) is not SymInt else b._value())
        return SymInt(value, (op, _expr(a), _expr(b)), self.tracer)

    def __add__(self, other):
        return self._arith("+", other)

    def __radd__(self, other):
        return self._arith("+", other, True)

    def __sub__(self, other):
        return self._arith("-", other)

    def __rsub__(self, other):
        return self._arith("-", other, True)

    def __mul__(self, other):
        return self._arith("*", other)

    def __rmul__(self, other):
        return self._arith("*", other, True)

    def __floordiv__(self, other):
        return self._arith("//", other)

    def __rfloordiv__(self, other):
        return self._arith("//", other, True)

    def __mod__(self, other):
        return self._arith("%", other)

    def __rmod__(self, other):
        return self._arith("%", other, True)

    def __neg__(self):
        return SymInt(-self._value(), ("neg", self.expr), self.tracer)

    def __pos__(self):
        return self

    # -- decisions are guards ------------------------------------------------------------
    def _compare(self, op, other):
        if type(other) is bool or not isinstance(other, (int, float)):
            return NotImplemented
        outcome = _REL[op](self._value(), other._value() if type(other) is SymInt else other)
        self.tracer.guard((op, self.expr, _expr(other)), outcome)
        return outcome

    def __lt__(self, other):
        return self._compare("<", other)

    def __le__(self, other):
        return self._compare("<=", other)

    def __gt__(self, other):
        return self._compare(">", other)

    def __ge__(self, other):
        return self._compare(">=", other)

    def __eq__(self, other):
        return self._compare("==", other)

    def __ne__(self, other):
        return self._compare("!=", other)

    def __bool__(self):
        return self._compare("!=", 0)

    def concrete(self) -> int:
        """The plain value, with the guard that the size equals it (the program may use it
        in any way from here on, as ``int()``, ``float()``, ``/`` and ``len()`` do)."""
        self._compare("==", self._value())
        return self._value()

    def __int__(self):
        return self.concrete()

    __index__ = __int__

    def __float__(self):
        return float(self.concrete())

    def __truediv__(self, other):
        return self.concrete() / other

    def __rtruediv__(self, other):
        return other / self.concrete()

    def __pow__(self, other, mod=None):
        return pow(self.concrete(), other, mod)

    def __rpow__(self, other):
        return other ** self.concrete()


def _evaluate(e, env):
    kind = e[0]
    if kind == "const":
        return e[1]
    if kind == "sym":
        return e[1] if isinstance(e[1], int) else e[1].evaluate(env)
    if kind == "neg":
        return -_evaluate(e[1], env)
    return _ARITH[kind](_evaluate(e[1], env), _evaluate(e[2], env))


def _format(e, nested=False):
    kind = e[0]
    if kind in ("const", "sym"):
        text = repr(e[1])
        return f"({text})" if nested and " " in text else text
    if kind == "neg":
        return f"-{_format(e[1], True)}"
    text = f"{_format(e[1], True)} {kind} {_format(e[2], True)}"
    return f"({text})" if nested else text


def _symbols(e, out):
    if e[0] == "sym" and not isinstance(e[1], int):
        out.update(e[1].terms)
    elif e[0] not in ("const", "sym"):
        for a in e[1:]:
            _symbols(a, out)
    return out


def resolve(e, size_of):
    """``e`` with each ``("dim", node, i)`` replaced by ``("sym", size_of(node, i))`` (an int
    or a SymExpr)."""
    if e[0] == "dim":
        return ("sym", size_of(e[1], e[2]))
    if e[0] == "const":
        return e
    return (e[0],) + tuple(resolve(a, size_of) for a in e[1:])


def _poly(e):
    """``e`` as a polynomial ``{monomial (sorted symbol names): coefficient}``, or None where
    it is not one (``//`` and ``%`` that do not divide exactly)."""
    kind = e[0]
    if kind == "const" or kind == "sym" and isinstance(e[1], int):
        return {(): e[1]} if e[1] else {}
    if kind == "sym":
        x = e[1]
        if x.kind == "prod":
            return {tuple(sorted(x.terms)): x.coef}
        return _add({(): x.coef}, {(s,): c for s, c in x.terms.items()})
    parts = [_poly(a) for a in e[1:]]
    if any(p is None for p in parts):
        return None
    if kind == "neg":
        return {m: -c for m, c in parts[0].items()}
    a, b = parts
    if kind == "+":
        return _add(a, b)
    if kind == "-":
        return _add(a, {m: -c for m, c in b.items()})
    if kind == "*":
        out = {}
        for ma, ca in a.items():
            for mb, cb in b.items():
                out = _add(out, {tuple(sorted(ma + mb)): ca * cb})
        return out
    # a // b, a % b: exact when a is an integer multiple k of b (k * b // b, k * b % b)
    ks = {ca / b.get(m, 0.0) if b.get(m) else None for m, ca in a.items()} | \
        {None for m in b if m not in a}
    if len(ks) == 1 and b and (k := ks.pop()) is not None and float(k).is_integer():
        return ({(): int(k)} if k else {}) if kind == "//" else {}
    return None


def _add(a, b):
    out = dict(a)
    for m, c in b.items():
        out[m] = out.get(m, 0) + c
        if not out[m]:
            del out[m]
    return out


def _interval(poly, ranges):
    """Bounds of a polynomial over the symbols' ranges (all sizes are >= 0)."""
    lo = hi = 0
    for mono, c in poly.items():
        a = math.prod(max(ranges[s][0], 0) for s in mono)
        b = math.prod(ranges[s][1] for s in mono)
        lo, hi = (lo + c * a, hi + c * b) if c >= 0 else (lo + c * b, hi + c * a)
    return lo, hi


class Guard:
    """``lhs op rhs``, an expression in the symbols that held when the program was traced:
    ``check(env)`` is whether it holds for the symbols' values ``env``."""

    def __init__(self, op, lhs, rhs):
        self.op, self.lhs, self.rhs = op, lhs, rhs
        self.symbols = sorted(_symbols(rhs, _symbols(lhs, set())))

    @classmethod
    def from_trace(cls, expr, outcome):
        op, lhs, rhs = expr
        return cls(op if outcome else _NEGATE[op], lhs, rhs)

    def always(self, ranges) -> bool:
        """Whether the guard holds for every value of its symbols in ``ranges`` ({name:
        (min, max)}), so need not be checked (``n >= 0``, ``2*n == n + n``)."""
        diff = _poly(("-", self.lhs, self.rhs))
        if diff is None:
            return False
        lo, hi = _interval(diff, ranges)
        return {"<": hi < 0, "<=": hi <= 0, ">": lo > 0, ">=": lo >= 0,
                "==": not diff, "!=": lo > 0 or hi < 0}[self.op]

    def check(self, env) -> bool:
        return _REL[self.op](_evaluate(self.lhs, env), _evaluate(self.rhs, env))

    def __repr__(self):
        return f"{_format(self.lhs)} {self.op} {_format(self.rhs)}"

    def __eq__(self, other):
        return isinstance(other, Guard) and repr(self) == repr(other)

    def __hash__(self):
        return hash(repr(self))
