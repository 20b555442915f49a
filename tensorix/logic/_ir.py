"""The program IR: statements, expressions and index expressions.

The text parser and the embedded Python form both build these nodes through the same
constructors (``add``, ``mul``, ``neg``, ``div``, ``power``), which put expressions in one
canonical shape (sums and products flattened, numeric factors folded into one leading
coefficient, negation as a factor of -1). That is what makes "text form == Python form" a plain
equality test on the statements. Source positions (line, text) do not take part in equality.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

__all__ = ["IVar", "IConst", "IAff", "IDiv", "ISlice", "Num", "Ref", "Call", "Sum", "Prod",
           "Pow", "Not", "Cmp", "Equation", "Fact", "Literal", "Query", "Decl", "add", "sub",
           "mul", "div", "neg", "power", "affine", "index_vars", "expr_refs", "fmt_expr",
           "fmt_index", "fmt_ref", "PROJ_OPS", "Where"]

PROJ_OPS = {"=": "sum", "+=": "sum", "|=": "or", "max=": "max", "min=": "min", "avg=": "avg"}


# -- index expressions -----------------------------------------------------------------------

@dataclass(frozen=True)
class IVar:
    """An index variable; ``mark`` is '' (plain), '*' (virtual) or '.' (normalized axis)."""

    name: str
    mark: str = ""


@dataclass(frozen=True)
class IConst:
    """A constant index: an int, or a symbol (a name, resolved to a named constant or to an
    entry of the domain's symbol table)."""

    value: int | str


@dataclass(frozen=True)
class IAff:
    """sum(coef * var) + const, e.g. ``x+dx``, ``t-1``, ``2*x+dx``."""

    terms: tuple  # ((coef, var), ...)
    const: int = 0


@dataclass(frozen=True)
class IDiv:
    """``x/S`` on the left side: integer division (a pooling scatter)."""

    var: str
    div: int | str


@dataclass(frozen=True)
class ISlice:
    """``a:b`` (either end may be None for the axis end)."""

    start: int | None
    stop: int | None


def affine(terms, const=0):
    """The canonical index for sum(coef*var) + const: a plain IVar when that is all it is."""
    merged: dict = {}
    for c, v in terms:
        merged[v] = merged.get(v, 0) + c
    terms = tuple((c, v) for v, c in merged.items() if c != 0)
    if not terms:
        return IConst(int(const))
    if const == 0 and len(terms) == 1 and terms[0][0] == 1:
        return IVar(terms[0][1])
    return IAff(terms, int(const))


def index_vars(ix):
    """Variable names an index expression mentions."""
    if isinstance(ix, IVar):
        return [ix.name]
    if isinstance(ix, IAff):
        return [v for _, v in ix.terms]
    if isinstance(ix, IDiv):
        return [ix.var]
    return []


def fmt_index(ix):
    if isinstance(ix, IVar):
        return ("*" if ix.mark == "*" else "") + ix.name + ("." if ix.mark == "." else "")
    if isinstance(ix, IConst):
        return str(ix.value)
    if isinstance(ix, IAff):
        out = ""
        for c, v in ix.terms:
            sign = "-" if c < 0 else ("+" if out else "")
            mag = "" if abs(c) == 1 else f"{abs(c)}*"
            out += f"{sign}{mag}{v}"
        if ix.const:
            out += f"{'+' if ix.const > 0 else '-'}{abs(ix.const)}"
        return out
    if isinstance(ix, IDiv):
        return f"{ix.var}/{ix.div}"
    if isinstance(ix, ISlice):
        return f"{'' if ix.start is None else ix.start}:{'' if ix.stop is None else ix.stop}"
    return repr(ix)


# -- expressions ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Num:
    value: float


@dataclass(frozen=True)
class Ref:
    """A tensor reference ``Name[i, j]``; ``atom`` when written ``Name(x, y)`` (Boolean)."""

    name: str
    idx: tuple = ()
    atom: bool = False


@dataclass(frozen=True)
class Call:
    """A function call: elementwise, or a normalizer when it is the outermost function."""

    fn: str
    args: tuple
    kwargs: tuple = ()  # ((name, float), ...)


@dataclass(frozen=True)
class Sum:
    terms: tuple


@dataclass(frozen=True)
class Prod:
    factors: tuple


@dataclass(frozen=True)
class Pow:
    base: object
    exp: float


@dataclass(frozen=True)
class Not:
    """A negated body atom of a Datalog rule (stratified negation)."""

    atom: Ref


@dataclass(frozen=True)
class Cmp:
    """A comparison between indices in a rule body: ``x != y``, ``x < y``."""

    op: str
    left: object
    right: object


def _num(x):
    return x if not isinstance(x, (int, float, np.number)) else Num(float(x))


def add(a, b):
    """a + b, flattened."""
    a, b = _num(a), _num(b)
    ta = a.terms if isinstance(a, Sum) else (a,)
    tb = b.terms if isinstance(b, Sum) else (b,)
    return Sum(ta + tb)


def mul(a, b):
    """a * b: products flattened, numbers folded into one leading coefficient."""
    a, b = _num(a), _num(b)
    fs = (a.factors if isinstance(a, Prod) else (a,)) + (b.factors if isinstance(b, Prod)
                                                         else (b,))
    coef, rest = 1.0, []
    for f in fs:
        if isinstance(f, Num):
            coef *= f.value
        else:
            rest.append(f)
    if not rest:
        return Num(coef)
    if coef != 1.0:
        rest.insert(0, Num(coef))
    return rest[0] if len(rest) == 1 else Prod(tuple(rest))


def neg(a):
    return mul(Num(-1.0), a)


def sub(a, b):
    return add(a, neg(b))


def power(a, c):
    """a ^ c; a number is folded, and a ValueError says when that has no finite real value
    (``0 ^ -1``, ``1e-320 ^ -1``, ``(-8) ^ 0.5``)."""
    a = _num(a)
    if isinstance(a, Num):
        try:
            v = a.value ** float(c)
        except (ZeroDivisionError, OverflowError):
            v = None
        if not isinstance(v, float) or (math.isinf(v) and math.isfinite(a.value)):
            if a.value == 0 and float(c) < 0:
                raise ValueError(f"division by zero (0 ^ {float(c):g})")
            raise ValueError(f"{fmt_expr(a)} ^ {float(c):g} has no finite real value")
        return Num(v)
    return Pow(a, float(c))


def div(a, b):
    """a / b (a ValueError when b is a number with no finite reciprocal)."""
    try:
        return mul(a, power(b, -1.0))
    except ValueError:
        raise ValueError(f"division by {fmt_expr(_num(b))} has no finite result") from None


def expr_refs(e, out=None, nested=False):
    """(Ref, nested) pairs in an expression; ``nested`` = inside a call, power or sum factor."""
    out = [] if out is None else out
    if isinstance(e, Ref):
        out.append((e, nested))
    elif isinstance(e, Not):
        out.append((e.atom, nested))
    elif isinstance(e, Prod):
        for f in e.factors:
            expr_refs(f, out, nested)
    elif isinstance(e, Sum):
        for t in e.terms:
            expr_refs(t, out, True)
    elif isinstance(e, Call):
        for a in e.args:
            expr_refs(a, out, True)
    elif isinstance(e, Pow):
        expr_refs(e.base, out, True)
    return out


def fmt_ref(r):
    if r.atom:
        return f"{r.name}({', '.join(fmt_index(i) for i in r.idx)})"
    if not r.idx:
        return r.name
    return f"{r.name}[{', '.join(fmt_index(i) for i in r.idx)}]"


def fmt_expr(e):
    """Text form of an expression (used in messages and explain())."""
    if isinstance(e, Num):
        v = e.value
        return str(int(v)) if float(v).is_integer() else repr(v)
    if isinstance(e, Ref):
        return fmt_ref(e)
    if isinstance(e, Not):
        return "not " + fmt_ref(e.atom)
    if isinstance(e, Cmp):
        return f"{fmt_index(e.left)} {e.op} {fmt_index(e.right)}"
    if isinstance(e, Call):
        kw = "".join(f", {k}={v:g}" for k, v in e.kwargs)
        return f"{e.fn}({', '.join(fmt_expr(a) for a in e.args)}{kw})"
    if isinstance(e, Sum):
        out = fmt_expr(e.terms[0])
        for t in e.terms[1:]:
            s = fmt_expr(t)
            out += f" - {s[1:]}" if s.startswith("-") else f" + {s}"
        return out
    if isinstance(e, Prod):
        parts = []
        for f in e.factors:
            if isinstance(f, Pow) and f.exp == -1.0 and parts:
                b = fmt_expr(f.base)
                parts.append("/ " + (b if isinstance(f.base, (Ref, Call, Num)) else f"({b})"))
                continue
            s = fmt_expr(f)
            if isinstance(f, Num) and f.value == -1.0:
                parts.append("-")
                continue
            parts.append(f"({s})" if isinstance(f, Sum) else s)
        return " ".join(parts).replace("- ", "-", 1) if parts[0] == "-" else " ".join(parts)
    if isinstance(e, Pow):
        b = fmt_expr(e.base)
        b = b if isinstance(e.base, (Ref, Call, Num)) else f"({b})"
        x = e.exp
        return f"{b}^{int(x) if float(x).is_integer() else x}"
    return repr(e)


# -- statements -------------------------------------------------------------------------------

class Where(str):
    """A statement's description in messages (``'Y[i] = X[i]' (line 2)``) that keeps the
    statement's ``line`` and ``col``, so an error built from it can point at the statement."""

    line = 0
    col = 0

    def __new__(cls, text, at):
        self = super().__new__(cls, text)
        self.line, self.col = getattr(at, "line", 0), getattr(at, "col", 0)
        return self

    def reworded(self, text):
        """Another description of the same place (``f"the fact {w}"``)."""
        return Where(text, self)


@dataclass(frozen=True)
class Equation:
    """``lhs op rhs``; ``rule`` when written as a Datalog rule (body = Prod of literals)."""

    lhs: Ref
    op: str
    rhs: object
    rule: bool = False
    line: int = field(default=0, compare=False)
    col: int = field(default=0, compare=False)
    text: str = field(default="", compare=False)

    def where(self):
        src = self.text or f"{fmt_ref(self.lhs)} {self.op} {fmt_expr(self.rhs)}"
        return Where(f"{src!r} (line {self.line})" if self.line else repr(src), self)


@dataclass(frozen=True)
class Fact:
    atom: Ref
    line: int = field(default=0, compare=False)
    col: int = field(default=0, compare=False)
    text: str = field(default="", compare=False)

    def where(self):
        return Where(f"{(self.text or fmt_ref(self.atom))!r}" + (f" (line {self.line})"
                                                                 if self.line else ""), self)


class Literal:
    """``Name = [literal array]`` or ``Name = number`` (a named constant when 0-d)."""

    __slots__ = ("name", "value", "line", "col", "text")

    def __init__(self, name, value, line=0, text="", col=0):
        self.name = name
        self.value = np.asarray(value, dtype=np.float64)
        self.line = line
        self.col = col
        self.text = text

    def __eq__(self, other):
        return (isinstance(other, Literal) and other.name == self.name
                and other.value.shape == self.value.shape
                and bool(np.array_equal(other.value, self.value)))

    def __hash__(self):
        return hash((self.name, self.value.shape))

    def __repr__(self):
        return f"Literal({self.name!r}, {self.value.tolist()!r})"

    def where(self):
        return Where(f"{(self.text or self.name)!r}" + (f" (line {self.line})" if self.line
                                                        else ""), self)


@dataclass(frozen=True)
class Query:
    target: Ref
    line: int = field(default=0, compare=False)
    col: int = field(default=0, compare=False)
    text: str = field(default="", compare=False)


@dataclass(frozen=True)
class Decl:
    """``domain D = 5`` / ``domain D = {A, B}`` / ``relation R(D1, D2)`` /
    ``tensor T[D1, 3]``: ``spec`` is the size/symbols or the per-axis domains."""

    kind: str
    name: str
    spec: tuple
    line: int = field(default=0, compare=False)
    col: int = field(default=0, compare=False)
    text: str = field(default="", compare=False)
