"""Algebraic simplification by rewrite rules over the graph's primitives.

A rule is a pattern (nested tuples of an op name and sub-patterns: ``"?x"`` binds any node,
``("const", v)`` matches a one-element constant equal to ``v``, ``"#c"`` binds any
one-element constant's value) and a replacement built from the bindings. A rule applies only
where the replacement keeps the node's shape and dtype, so a rewrite never changes what users
see. :func:`simplify` applies them by equality saturation (:mod:`tensorix.fx.egraph`): every
rule, and the :data:`EQUALITIES` (commutativity...) that open more matches, grow an e-graph of
equal terms, and the cheapest program is extracted.

Each rule carries an ``example``, a function of tensors that contains the pattern: the tests
run every rule on random inputs against eager.

Example::

    simplify(gm.graph)      # x * 1 -> x, -(-x) -> x, log(exp(x)) -> x, (3*x)*0.25 -> x*0.75
"""

from __future__ import annotations

from dataclasses import dataclass

from ..tensor import Tensor
from .graph import Graph, Node

__all__ = ["Rule", "RULES", "EQUALITIES", "simplify", "apply_once"]


@dataclass(frozen=True)
class Rule:
    name: str
    pattern: tuple
    replacement: object  # a pattern over the bindings, or "?x"
    example: object  # fn(*tensors) that contains the pattern, for the tests
    arity: int = 1  # how many tensor inputs ``example`` takes
    # the replacement makes the root's shape and dtype whatever the bound values' are (it
    # reorders the same operands), so the bound values need not have the root's
    any_meta: bool = False


def _scalar(node):
    """The value of a one-element, non-live constant node, else None."""
    if type(node) is not Node or node.op != "constant" or node.meta.get("live"):
        return None
    return _scalar_value(node.target)


def _scalar_value(t):
    """The value of a one-element real host tensor, else None."""
    if not isinstance(t, Tensor) or t._data.size != 1 or t._dtype.is_complex:
        return None
    return float(t._data.reshape(()).item()) if type(t._data).__module__ == "numpy" else None


def _match(pattern, node, env) -> bool:
    if isinstance(pattern, str):
        if pattern.startswith("?"):
            bound = env.get(pattern)
            if bound is not None:
                return bound is node
            env[pattern] = node
            return True
        if pattern.startswith("#"):
            value = _scalar(node)
            if value is None:
                return False
            env[pattern] = (value, node)
            return True
        return False
    head = pattern[0]
    if head == "const":
        value = _scalar(node)
        return value is not None and value == pattern[1]
    if type(node) is not Node or not node.is_call or node.op.__name__ != head:
        return False
    args = [a for a in node.args if type(a) is Node]
    if len(args) != len(node.args) or len(args) != len(pattern) - 1:
        return False  # only all-tensor calls (the binary and unary math ops)
    return all(_match(p, a, env) for p, a in zip(pattern[1:], args))


def _build(graph, repl, env, like):
    """Create the replacement's nodes before ``like`` (the matched root)."""
    if isinstance(repl, str):
        return env[repl] if repl.startswith("?") else env[repl][1]
    head = repl[0]
    if head == "fold":  # ("fold", fn, "#a", "#b"): a new constant from bound ones
        fn, names = repl[1], repl[2:]
        values = [env[n][1].target for n in names]
        value = fn(*values)
        return graph.constant(value.detach(), shape=tuple(value.shape), dtype=value.dtype,
                              device=value.device)
    args = tuple(_build(graph, r, env, like) for r in repl[1:])
    op = _OPS[head]
    return graph.call(op, args, **like.meta)


def _ops():
    from ..ops import elementwise as e

    return {"Add": e.Add, "Sub": e.Sub, "Mul": e.Mul, "Div": e.Div, "Neg": e.Neg,
            "Exp": e.Exp, "Log": e.Log, "Pow": e.Pow}


class _LazyOps(dict):
    def __missing__(self, key):
        self.update(_ops())
        return dict.__getitem__(self, key)


_OPS = _LazyOps()


def _mul(a, b):
    return a * b


def _add(a, b):
    return a + b


RULES = (
    Rule("mul-one", ("Mul", "?x", ("const", 1.0)), "?x", lambda x: x * 1.0),
    Rule("one-mul", ("Mul", ("const", 1.0), "?x"), "?x",
         lambda x: x.new_ones(()) * x),
    Rule("add-zero", ("Add", "?x", ("const", 0.0)), "?x", lambda x: x + 0.0),
    Rule("zero-add", ("Add", ("const", 0.0), "?x"), "?x",
         lambda x: x.new_zeros(()) + x),
    Rule("sub-zero", ("Sub", "?x", ("const", 0.0)), "?x", lambda x: x - 0.0),
    Rule("div-one", ("Div", "?x", ("const", 1.0)), "?x", lambda x: x / 1.0),
    Rule("pow-one", ("Pow", "?x", ("const", 1.0)), "?x", lambda x: x ** 1.0),
    Rule("pow-two", ("Pow", "?x", ("const", 2.0)), ("Mul", "?x", "?x"), lambda x: x ** 2.0),
    Rule("neg-neg", ("Neg", ("Neg", "?x")), "?x", lambda x: x.neg().neg()),
    Rule("log-exp", ("Log", ("Exp", "?x")), "?x", lambda x: (x * 0.5).exp().log()),
    Rule("add-neg", ("Add", "?x", ("Neg", "?y")), ("Sub", "?x", "?y"),
         lambda x, y: x + (-y), 2),
    Rule("sub-neg", ("Sub", "?x", ("Neg", "?y")), ("Add", "?x", "?y"),
         lambda x, y: x - (-y), 2),
    Rule("neg-sub", ("Neg", ("Sub", "?x", "?y")), ("Sub", "?y", "?x"),
         lambda x, y: -(x - y), 2),
    Rule("mul-neg-one", ("Mul", "?x", ("const", -1.0)), ("Neg", "?x"), lambda x: x * -1.0),
    # constants gathered: (x * a) * b = x * (a * b), one multiply fewer (reassociation: the
    # result may differ from eager in the last bit, as under -ffast-math)
    Rule("mul-mul-const", ("Mul", ("Mul", "?x", "#a"), "#b"),
         ("Mul", "?x", ("fold", _mul, "#a", "#b")), lambda x: (x * 3.0) * 0.25),
    Rule("add-add-const", ("Add", ("Add", "?x", "#a"), "#b"),
         ("Add", "?x", ("fold", _add, "#a", "#b")), lambda x: (x + 3.0) + 0.25),
)


def _same_meta(a: Node, b: Node) -> bool:
    return a.meta.get("shape") == b.meta.get("shape") and a.meta.get("dtype") is \
        b.meta.get("dtype")


# equalities that simplify nothing by themselves but let the rules above match more terms:
# safe in the e-graph (both sides are kept), a loop in a rewrite system. All are exact.
EQUALITIES = (
    Rule("add-comm", ("Add", "?x", "?y"), ("Add", "?y", "?x"), lambda x, y: x + y, 2, True),
    Rule("mul-comm", ("Mul", "?x", "?y"), ("Mul", "?y", "?x"), lambda x, y: x * y, 2, True),
    Rule("neg-mul", ("Mul", ("Neg", "?x"), "?y"), ("Neg", ("Mul", "?x", "?y")),
         lambda x, y: (-x) * y, 2, True),
    Rule("neg-div", ("Div", ("Neg", "?x"), "?y"), ("Neg", ("Div", "?x", "?y")),
         lambda x, y: (-x) / y, 2, True),
)


def simplify(graph: Graph, rules=None) -> int:
    """Simplify by equality saturation over ``rules`` (default: :data:`RULES` and
    :data:`EQUALITIES`) with extraction of the cheapest equal program
    (:mod:`tensorix.fx.egraph`); returns the number of nodes replaced."""
    from .egraph import saturate

    return saturate(graph, rules)


def apply_once(graph: Graph, rules) -> int:
    """One sweep applying, at each node, the first rule that matches (no cost, no repeat):
    what the tests use to check each rule's two sides on random inputs. A rewrite whose result
    would change the node's shape or dtype (a broadcast or a promotion by the constant) is
    skipped."""
    done = 0
    for node in graph.nodes:
        if node._erased or not node.is_call or not node.users:
            continue
        for rule in rules:
            env: dict = {}
            if not _match(rule.pattern, node, env):
                continue
            # built nodes copy the root's meta, so that must be what they make: every bound
            # node has the root's shape and dtype (constants are one-element)
            if not rule.any_meta and not all(_same_meta(v, node) for k, v in env.items()
                                             if k[0] == "?"):
                continue
            with graph.inserting_before(node):
                new = _build(graph, rule.replacement, env, node)
            node.replace_all_uses_with(new)
            done += 1
            break
    return done
