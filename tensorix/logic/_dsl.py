"""The embedded Python form: index objects, tensor handles and expression builders.

They build the same IR as the text parser (through the same constructors), so a program
written either way is the same list of statements. Python has no juxtaposition, so joins are
written with ``*``; ``W[i] * X[i]`` is the text ``W[i] X[i]``.

    >>> P = tl.Program()
    >>> i = tl.index("i")
    >>> W, X, Y = P.tensor("W", [0.2, 1.9, -0.7, 3]), P.tensor("X", [0, 1, 1, 0]), P.tensor("Y")
    >>> Y[()] = tl.step(W[i] * X[i])          # the text: Y = step(W[i] X[i])
"""

from __future__ import annotations

from . import _ir as ir

__all__ = ["Index", "Expr", "TensorHandle", "Proj", "index", "indices", "const", "fn",
           "step", "sig", "sigmoid", "relu", "tanh", "exp", "log", "sqrt", "abs_", "sin",
           "cos", "softmax", "lnorm", "norm", "max_of", "min_of", "avg_of", "or_of", "not_",
           "to_index", "to_expr"]


class Index:
    """An index variable (``tl.index("x")``): ``x + dx``, ``t + 1``, ``x // 2``, ``2 * x``,
    ``q.normalized`` (the softmax axis, text ``q.``), ``t.virtual`` (text ``*t``), and the
    comparisons ``x.ne(y)``, ``x < y`` for rule bodies."""

    __slots__ = ("ix",)

    def __init__(self, ix):
        self.ix = ix

    @property
    def name(self):
        return self.ix.name if isinstance(self.ix, ir.IVar) else ir.fmt_index(self.ix)

    def _terms(self):
        if isinstance(self.ix, ir.IVar):
            return [(1, self.ix.name)], 0
        if isinstance(self.ix, ir.IAff):
            return list(self.ix.terms), self.ix.const
        if isinstance(self.ix, ir.IConst) and isinstance(self.ix.value, int):
            return [], self.ix.value
        raise TypeError(f"index arithmetic on {ir.fmt_index(self.ix)!r} is not supported")

    def _lin(self, other, sign):
        t, c = self._terms()
        if isinstance(other, int) and not isinstance(other, bool):
            return Index(ir.affine(t, c + sign * other))
        if isinstance(other, Index):
            t2, c2 = other._terms()
            return Index(ir.affine(t + [(sign * k, v) for k, v in t2], c + sign * c2))
        return NotImplemented

    def __add__(self, other):
        return self._lin(other, 1)

    def __radd__(self, other):
        return self._lin(other, 1)

    def __sub__(self, other):
        return self._lin(other, -1)

    def __rsub__(self, other):
        neg = Index(ir.affine([(-k, v) for k, v in self._terms()[0]], -self._terms()[1]))
        return neg._lin(other, 1)

    def __mul__(self, k):
        if not isinstance(k, int):
            return NotImplemented
        t, c = self._terms()
        return Index(ir.affine([(k * a, v) for a, v in t], k * c))

    __rmul__ = __mul__

    def __floordiv__(self, s):
        if not isinstance(self.ix, ir.IVar):
            raise TypeError("only a plain index can be divided (x // 2)")
        return Index(ir.IDiv(self.ix.name, s))

    __truediv__ = __floordiv__

    @property
    def normalized(self):
        return Index(ir.IVar(self.ix.name, "."))

    @property
    def virtual(self):
        return Index(ir.IVar(self.ix.name, "*"))

    def _cmp(self, op, other):
        return Cond(ir.Cmp(op, self.ix, to_index(other)))

    def ne(self, other):
        return self._cmp("!=", other)

    def eq(self, other):
        return self._cmp("==", other)

    def __lt__(self, other):
        return self._cmp("<", other)

    def __le__(self, other):
        return self._cmp("<=", other)

    def __gt__(self, other):
        return self._cmp(">", other)

    def __ge__(self, other):
        return self._cmp(">=", other)

    def __repr__(self):
        return f"Index({ir.fmt_index(self.ix)})"


class Cond:
    """A comparison or negated atom in a rule body."""

    __slots__ = ("node",)

    def __init__(self, node):
        self.node = node


def index(name):
    """One index variable."""
    return Index(ir.IVar(name))


def indices(names):
    """Index variables from a space-separated string: ``x, y = tl.indices("x y")``."""
    return tuple(index(n) for n in names.split())


class _Const:
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def const(value):
    """A constant index that would otherwise read as a variable (e.g. a lowercase symbol)."""
    return _Const(value)


def to_index(x):
    """IR index of a Python index: Index, int, symbol string, slice or tl.const."""
    if isinstance(x, Index):
        return x.ix
    if isinstance(x, _Const):
        return ir.IConst(x.value)
    if isinstance(x, bool):
        raise TypeError("a bool is not an index")
    if isinstance(x, int):
        return ir.IConst(int(x))
    if isinstance(x, str):
        if not x:
            raise ValueError("an empty string is not an index")
        return ir.IVar(x) if (x[0].islower() or x[0] == "_") else ir.IConst(x)
    if isinstance(x, slice):
        if x.step is not None:
            raise ValueError("slices with a step are not supported")
        return ir.ISlice(x.start, x.stop)
    raise TypeError(f"not an index: {x!r}")


def _idx_tuple(key):
    if key == () or key is None:
        return ()
    if not isinstance(key, tuple):
        key = (key,)
    return tuple(to_index(k) for k in key)


class Expr:
    """A right-side expression; arithmetic builds the IR."""

    __slots__ = ("node",)

    def __init__(self, node):
        self.node = node

    def __add__(self, o):
        return Expr(ir.add(self.node, to_expr(o)))

    def __radd__(self, o):
        return Expr(ir.add(to_expr(o), self.node))

    def __sub__(self, o):
        return Expr(ir.sub(self.node, to_expr(o)))

    def __rsub__(self, o):
        return Expr(ir.sub(to_expr(o), self.node))

    def __mul__(self, o):
        return Expr(ir.mul(self.node, to_expr(o)))

    def __rmul__(self, o):
        return Expr(ir.mul(to_expr(o), self.node))

    def __truediv__(self, o):
        return Expr(ir.div(self.node, to_expr(o)))

    def __rtruediv__(self, o):
        return Expr(ir.div(to_expr(o), self.node))

    def __neg__(self):
        return Expr(ir.neg(self.node))

    def __pow__(self, c):
        if not isinstance(c, (int, float)):
            raise TypeError("the exponent must be a number")
        return Expr(ir.power(self.node, c))

    def __repr__(self):
        return f"Expr({ir.fmt_expr(self.node)})"


def to_expr(x):
    if isinstance(x, Expr):
        return x.node
    if isinstance(x, TensorHandle):
        return ir.Ref(x.name, ())
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return ir.Num(float(x))
    if isinstance(x, Cond):
        return x.node
    raise TypeError(f"cannot use {type(x).__name__} in a tensor equation")


class Proj:
    """A right side with a projection operator other than '=' (``tl.max_of(F[x, y])``)."""

    __slots__ = ("op", "expr")

    def __init__(self, op, expr):
        self.op, self.expr = op, expr


def max_of(e):
    """``M[x // 2] = tl.max_of(F[x])`` is the text ``M[x/2] max= F[x]``."""
    return Proj("max=", e)


def min_of(e):
    return Proj("min=", e)


def avg_of(e):
    return Proj("avg=", e)


def or_of(e):
    return Proj("|=", e)


class TensorHandle(Expr):
    """A named tensor of a program: ``T[i, j]`` reads it, ``T(x, y)`` is a Boolean atom,
    ``T[i, j] = expr`` adds an equation, ``T["A", "B"] = True`` adds a fact."""

    __slots__ = ("program", "name")

    def __init__(self, program, name):
        super().__init__(ir.Ref(name, ()))
        self.program, self.name = program, name

    def __getitem__(self, key):
        return Expr(ir.Ref(self.name, _idx_tuple(key)))

    def __call__(self, *args):
        return Expr(ir.Ref(self.name, tuple(to_index(a) for a in args), True))

    def __setitem__(self, key, value):
        lhs = ir.Ref(self.name, _idx_tuple(key))
        if value is True:
            if not all(isinstance(i, ir.IConst) for i in lhs.idx):
                raise ValueError("T[...] = True states a fact: every index must be a constant")
            self.program.add(ir.Fact(ir.Ref(self.name, lhs.idx, True)))
            return
        op = "="
        if isinstance(value, Proj):
            op, value = value.op, value.expr
        self.program.add(ir.Equation(lhs, op, to_expr(value)))

    def __repr__(self):
        return f"TensorHandle({self.name!r})"


def fn(name, x, **kwargs):
    """Call any registered function: ``tl.fn("leaky", X[i], a=0.1)``."""
    return Expr(ir.Call(name, (to_expr(x),), tuple((k, float(v)) for k, v in kwargs.items())))


def step(x):
    return fn("step", x)


def sig(x, **kw):
    return fn("sig", x, **kw)


def sigmoid(x, **kw):
    return fn("sigmoid", x, **kw)


def relu(x):
    return fn("relu", x)


def tanh(x):
    return fn("tanh", x)


def exp(x):
    return fn("exp", x)


def log(x):
    return fn("log", x)


def sqrt(x):
    return fn("sqrt", x)


def abs_(x):
    return fn("abs", x)


def sin(x):
    return fn("sin", x)


def cos(x):
    return fn("cos", x)


def softmax(x):
    return fn("softmax", x)


def lnorm(x):
    return fn("lnorm", x)


def norm(x):
    return fn("norm", x)


def not_(atom):
    """A negated body atom: ``tl.not_(Parent(x, y))``."""
    node = to_expr(atom)
    if not isinstance(node, ir.Ref):
        raise TypeError("not_() takes an atom")
    return Cond(ir.Not(ir.Ref(node.name, node.idx, True)))
