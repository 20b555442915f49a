"""The elementwise primitives the compiler can fuse, each as an expression template in three
dialects: ``py`` (scalar Python for numba's loops), ``np`` (whole-array NumPy for the
fallback) and ``cu`` (scalar CUDA C for CuPy kernels).

A template is a function ``(args, extra) -> str``: ``args`` are the operand expressions (for
the tensor arguments, in order), ``extra`` the call's non-tensor arguments (gelu's
``approximate``). :func:`fusable` says whether a node's op is here and its non-tensor
arguments are ones the template knows.
"""

from __future__ import annotations

import math

__all__ = ["TEMPLATES", "fusable", "expr"]

_SQRT1_2 = repr(1 / math.sqrt(2))
_K, _C = repr(math.sqrt(2 / math.pi)), repr(0.044715)
_INV_SQRT_2PI = repr(1 / math.sqrt(2 * math.pi))


def _binary(sym):
    return {d: (lambda a, e, s=sym: f"({a[0]} {s} {a[1]})") for d in ("py", "np", "cu")}


def _unary(fn, np_fn=None, cu_fn=None):
    return {"py": lambda a, e: f"math.{fn}({a[0]})",
            "np": lambda a, e: f"{np_fn or 'np.' + fn}({a[0]})",
            "cu": lambda a, e: f"{cu_fn or fn}({a[0]})"}


def _same(template):
    """One template for all three dialects, with ``{exp}``/``{erf}``/``{tanh}`` spelled per
    dialect."""
    spell = {"py": {"exp": "math.exp", "erf": "math.erf", "tanh": "math.tanh"},
             "np": {"exp": "np.exp", "erf": "_erf", "tanh": "np.tanh"},
             "cu": {"exp": "exp", "erf": "erf", "tanh": "tanh"}}
    return {d: (lambda a, e, d=d: template(a, e).format(**spell[d])) for d in spell}


def _gelu(a, e):
    x = a[0]
    if e[0] == "tanh":
        return f"(0.5 * {x} * (1.0 + {{tanh}}({_K} * ({x} + {_C} * {x} * {x} * {x}))))"
    return f"({x} * (0.5 + 0.5 * {{erf}}({x} * {_SQRT1_2})))"


def _gelu_tanh_grad(a, e):
    g, x = a
    t = f"{{tanh}}({_K} * ({x} + {_C} * {x} * {x} * {x}))"
    return (f"({g} * (0.5 * (1.0 + {t}) + 0.5 * {x} * (1.0 - {t} * {t}) * {_K} * "
            f"(1.0 + 3.0 * {_C} * {x} * {x})))")


def _cmp(sym):
    return _binary(sym)


TEMPLATES = {
    "Add": _binary("+"), "Sub": _binary("-"), "Mul": _binary("*"), "Div": _binary("/"),
    "Lt": _cmp("<"), "Le": _cmp("<="), "Gt": _cmp(">"), "Ge": _cmp(">="),
    "Eq": _cmp("=="), "Ne": _cmp("!="),
    "Neg": {d: (lambda a, e: f"(-{a[0]})") for d in ("py", "np", "cu")},
    "Exp": _unary("exp"), "Log": _unary("log"), "Tanh": _unary("tanh"),
    "Sqrt": _unary("sqrt"), "Sin": _unary("sin"), "Cos": _unary("cos"),
    "Expm1": _unary("expm1"), "Log1p": _unary("log1p"),
    "Erf": _unary("erf", np_fn="_erf"),
    "Abs": {"py": lambda a, e: f"abs({a[0]})", "np": lambda a, e: f"np.abs({a[0]})",
            "cu": lambda a, e: f"fabs({a[0]})"},
    "Rsqrt": {"py": lambda a, e: f"(1.0 / math.sqrt({a[0]}))",
              "np": lambda a, e: f"(1.0 / np.sqrt({a[0]}))",
              "cu": lambda a, e: f"rsqrt({a[0]})"},
    "Reciprocal": {d: (lambda a, e: f"(1.0 / {a[0]})") for d in ("py", "np", "cu")},
    "Sigmoid": _same(lambda a, e: f"(1.0 / (1.0 + {{exp}}(-{a[0]})))"),
    "Silu": _same(lambda a, e: f"({a[0]} / (1.0 + {{exp}}(-{a[0]})))"),
    "Relu": {"py": lambda a, e: f"(0.0 if {a[0]} < 0 else {a[0]})",
             "np": lambda a, e: f"np.where({a[0]} < 0, 0, {a[0]})",
             "cu": lambda a, e: f"({a[0]} < 0 ? 0 : {a[0]})"},
    "Where": {"py": lambda a, e: f"({a[1]} if {a[0]} else {a[2]})",
              "np": lambda a, e: f"np.where({a[0]}, {a[1]}, {a[2]})",
              "cu": lambda a, e: f"({a[0]} ? {a[1]} : {a[2]})"},
    "LogicalNot": {"py": lambda a, e: f"(not {a[0]})", "np": lambda a, e: f"(~{a[0]})",
                   "cu": lambda a, e: f"(!{a[0]})"},
    "Gelu": _same(_gelu),
    # a broadcast is a load: the kernel indexes the unexpanded input (its layout kind)
    "Expand": {d: (lambda a, e: a[0]) for d in ("py", "np", "cu")},
    "GeluTanhBackward": _same(_gelu_tanh_grad),
}

# the non-tensor arguments each template understands (anything else stays unfused)
_EXTRA_OK = {"Gelu": lambda e: len(e) == 1 and e[0] in ("none", "tanh"),
             "Expand": lambda e: True}


def fusable(node) -> bool:
    """Whether call node ``node`` is an elementwise primitive with a template here."""
    if not node.is_call or node.op.__name__ not in TEMPLATES:
        return False
    from ..fx.graph import Node

    extra = [a for a in node.args if type(a) is not Node]
    check = _EXTRA_OK.get(node.op.__name__)
    return check(extra) if check else not extra


def expr(node, operands, dialect) -> str:
    """The expression of ``node`` over ``operands`` (one string per tensor argument)."""
    from ..fx.graph import Node

    extra = [a for a in node.args if type(a) is not Node]
    return TEMPLATES[node.op.__name__][dialect](operands, extra)
