"""``Program``: a tensor-logic program, built from text or from Python, compiled and run.

Pipeline (plan, then execute): statements -> evaluation form (``_normalize``) -> typing
(``_types``: Boolean or real, domains, shapes) -> components in dependency order
(``_analysis``) -> Datalog rules (``_datalog``) and einsum term plans (``_planner``) -> run
(``_runner``). Compilation is cached until the program or its data change.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import dtypes as dt
from .. import ops
from . import _ir as ir
from ._analysis import components, needed
from ._datalog import compile_rules
from ._dsl import Cond, TensorHandle, to_expr
from ._errors import ProgramError, located
from ._explain import explain
from ._functions import function_names
from ._learn import fit
from ._normalize import normalize_equation
from ._parser import parse_program
from ._planner import PlanCache
from ._query import answer
from ._relation import Relation
from ._runner import Runner
from ._types import infer_types

__all__ = ["Program", "Compiled", "parse", "load"]


@dataclass
class Compiled:
    typing: object
    ceqs: list
    comps: list
    rules: dict     # equation uid -> [CRule]

    def heads(self):
        return {e.head for e in self.ceqs}


class Program:
    """A tensor-logic program.

    Build it from text (``Program(text)``, ``P.parse(text)``, ``P.load(path)``) or from Python
    (``P.tensor``, ``P.relation``, ``T[i, j] = ...``, ``P.rule``, ``P.fact``); both forms make
    the same ``P.statements``. ``P.run()`` evaluates every component in dependency order;
    ``P.value(name)`` is a Tensor (real) or a :class:`Relation` (Boolean); ``P.query(...)``
    answers one goal, evaluating only what it needs; ``P.explain()`` prints the plans.

    ``dtype`` is the dtype of real tensors (default: tensorix's default float); ``device`` where
    they live; ``optimize`` the einsum path strategy.

    Example::

        >>> P = tl.Program('''
        ...     Parent(Bob, Charlie)
        ...     Ancestor(Alice, Bob)
        ...     Ancestor(x, y) <- Parent(x, y)
        ...     Ancestor(x, z) <- Ancestor(x, y), Parent(y, z)
        ... ''')
        >>> P.query("Ancestor(Alice, x)")
        {'x': ['Bob', 'Charlie']}
    """

    def __init__(self, text=None, *, dtype=None, device=None, optimize="auto"):
        self.statements = []
        self.dtype = dt.as_dtype(dtype) if dtype is not None else dt.get_default_dtype()
        self.device = device
        self.plans = PlanCache(optimize)
        self._data, self._reldata = {}, {}
        self._param_shapes = {}
        self._converted = {}
        self._version = 0
        self._compiled = None
        self.values = {}
        self.params = {}
        self.report = None
        self.last_magic = None
        if text is not None:
            self.parse(text)

    # -- building ------------------------------------------------------------------------------
    def _changed(self):
        self._version += 1
        self._compiled = None

    def add(self, stmt):
        """Add one IR statement (the Python form's handles call this)."""
        self.statements.append(stmt)
        self._changed()
        return stmt

    def parse(self, text):
        """Add the statements of a program text; returns the program."""
        for s in parse_program(text, function_names()):
            self.add(s)
        return self

    def load(self, path):
        """Add the statements of a program file."""
        with open(path, encoding="utf-8") as f:
            return self.parse(f.read())

    def equation(self, lhs, rhs=None, op="="):
        """``P.equation("Y[i] = relu(W[i,j] X[j])")`` (one statement of text) or
        ``P.equation(Y[i], expr, op="max=")``."""
        if rhs is None and isinstance(lhs, str):
            return self.parse(lhs)
        node = to_expr(lhs)
        if not isinstance(node, ir.Ref):
            raise TypeError("equation(): the left side must be a tensor reference")
        if op not in ir.PROJ_OPS:
            raise ValueError(f"equation(): op must be one of {list(ir.PROJ_OPS)}, got {op!r}")
        return self.add(ir.Equation(node, op, to_expr(rhs)))

    def tensor(self, name, value=None, domains=None):
        """A handle on tensor ``name``; with ``value`` (nested lists or an array) the program
        gets the literal ``name = [...]``; with ``domains`` (domain names or sizes per axis)
        the declaration ``tensor name[...]``."""
        _check_name(name)
        if domains is not None:
            self.add(ir.Decl("tensor", name, tuple(domains)))
        if value is not None:
            if isinstance(value, ops.Tensor):
                value = value.detach().numpy(force=True)
            self.add(ir.Literal(name, np.asarray(value, dtype=np.float64)))
        return TensorHandle(self, name)

    def tensors(self, names):
        """Handles for space-separated names."""
        return tuple(self.tensor(n) for n in names.split())

    def const(self, name, value):
        """A named constant (``Dk = 2``): a number in expressions, an int in index positions."""
        _check_name(name)
        self.add(ir.Literal(name, float(value)))
        return TensorHandle(self, name)

    def relation(self, name, *domains):
        """A handle on Boolean relation ``name``; with domain names it is declared
        (``relation Parent(Person, Person)``)."""
        _check_name(name)
        if domains:
            self.add(ir.Decl("relation", name, tuple(domains)))
        return TensorHandle(self, name)

    def relations(self, names, domains=()):
        return tuple(self.relation(n, *domains) for n in names.split())

    def domain(self, name, spec):
        """Declare a domain: a size (``domain Layer = 3``) or symbols (``{Alice, Bob}``)."""
        spec = (int(spec),) if isinstance(spec, int) else tuple(spec)
        return self.add(ir.Decl("domain", name, spec))

    def fact(self, *atoms):
        """Facts from atoms: ``P.fact(Parent("Bob", "Charlie"))``."""
        for a in atoms:
            node = to_expr(a)
            if not (isinstance(node, ir.Ref) and node.atom):
                raise TypeError("fact(): expected atoms such as Parent('Bob', 'Charlie')")
            self.add(ir.Fact(node))

    def rule(self, head, *body):
        """A Datalog rule ``head <- body...`` (atoms, ``tl.not_(atom)``, comparisons)."""
        h = to_expr(head)
        if not isinstance(h, ir.Ref):
            raise TypeError("rule(): the head must be an atom")
        if not body:
            raise ValueError("rule(): the body needs at least one atom")
        node = None
        for b in body:
            n = b.node if isinstance(b, Cond) else to_expr(b)
            if isinstance(n, ir.Ref):
                n = ir.Ref(n.name, n.idx, True)
            node = n if node is None else ir.mul(node, n)
        return self.add(ir.Equation(ir.Ref(h.name, h.idx, True), "=", node, rule=True))

    def ask(self, target):
        """Add a query statement (the text ``target?``); ``answers()`` evaluates them."""
        return self.add(ir.Query(self._target(target)))

    # -- data ---------------------------------------------------------------------------------
    def set_data(self, name, value):
        """Dense data for tensor ``name`` (array, nested lists or Tensor). A Tensor is used as
        given (so it may require grad)."""
        _check_name(name)
        if isinstance(value, ops.Tensor):
            self._data[name] = value
        else:  # a snapshot: later changes to the caller's array do not leak in
            self._data[name] = np.array(value, dtype=np.float64)
        self._changed()

    def facts(self, name, rows):
        """Tuples of relation ``name``: an iterable of tuples of constants, or an int array of
        shape (n, arity) (ints are the constants themselves)."""
        _check_name(name)
        if isinstance(rows, np.ndarray) and rows.dtype.kind in "iu":
            arr = rows.reshape(len(rows), -1) if rows.ndim == 1 else rows
            cols = [np.ascontiguousarray(arr[:, k], dtype=np.int64) for k in range(arr.shape[1])]
        else:
            rows = [r if isinstance(r, tuple) else (r,) for r in rows]
            if not rows:
                raise ValueError(f"facts(): no tuples for {name!r}")
            arity = len(rows[0])
            cols = [np.array([r[k] for r in rows], dtype=object) for k in range(arity)]
            cols = [c.astype(np.int64) if all(isinstance(x, (int, np.integer)) for x in c)
                    else c for c in cols]
        old = self._reldata.get(name)
        if old is not None:
            if len(old) != len(cols):
                raise ValueError(f"facts(): {name!r} has arity {len(old)}, got {len(cols)}")
            cols = [np.concatenate([a, b]) for a, b in zip(old, cols)]
        self._reldata[name] = cols
        self._changed()

    # -- compiling -----------------------------------------------------------------------------
    def compile(self, params=False):
        """The compiled program (cached until a statement or data change)."""
        key = (self._version, params)
        if self._compiled is not None and self._compiled[0] == key:
            return self._compiled[1]
        eqs = [s for s in self.statements if isinstance(s, ir.Equation)]
        ceqs = []
        for uid, e in enumerate(eqs):
            with located(e):
                ceqs.append(normalize_equation(e, uid))
        # typing needs shapes only: a zero-stride view stands in for Tensor data
        data = {k: (v if isinstance(v, np.ndarray) else np.broadcast_to(np.empty(()),
                                                                          tuple(v.shape)))
                for k, v in self._data.items()}
        shapes = self._param_shapes if params else None
        typing = infer_types(self.statements, ceqs, data, self._reldata, params, shapes)
        comps = components(ceqs, typing.tensors)
        rules = {}
        for e in ceqs:
            if e.boolean:
                with located(e):
                    rules[e.uid] = compile_rules(e, typing.tensors, typing.consts)
        c = Compiled(typing, ceqs, comps, rules)
        self._compiled = (key, c)
        return c

    def _tensor(self, name, value):
        """Data or a literal as a Tensor on the program's device (converted once per value)."""
        if isinstance(value, ops.Tensor):
            return value if self.device is None else value.to(self.device)
        hit = self._converted.get(name)
        if hit is not None and hit[0] is value:
            return hit[1]
        t = ops.tensor(value, dtype=self.dtype, device=self.device)
        self._converted[name] = (value, t)
        return t

    def initial_values(self, compiled, params=None):
        """(values, base): data, literals, facts and parameters; ``base`` holds the data of
        tensors that also have equations (one more contribution, like facts)."""
        heads = compiled.heads()
        values, base = {}, {}
        dense = {s.name: s.value for s in self.statements
                 if isinstance(s, ir.Literal) and s.value.ndim}
        dense.update(self._data)
        for name, v in dense.items():
            (base if name in heads else values)[name] = self._tensor(name, v)
        for name, t in (params or {}).items():
            info = compiled.typing.tensors.get(name)
            if info is not None and tuple(t.shape) != info.shape:
                raise ProgramError(f"shape mismatch: the value given for {name!r} has shape "
                                   f"{tuple(t.shape)} but the program needs {info.shape}")
            values[name] = t
        facts = {}  # grouped once: a scan of the statements per relation or per fact is quadratic
        for s in self.statements:
            if isinstance(s, ir.Fact):
                facts.setdefault(s.atom.name, []).append(s)
        for name, info in compiled.typing.tensors.items():
            if info.kind == "bool":
                values[name] = self._relation(name, info, facts.get(name, ()),
                                              compiled.typing.consts)
        return values, base

    def _relation(self, name, info, facts, consts):
        """The relation of the inline ``facts`` of ``name`` and its ``P.facts()`` data; a named
        constant argument (``N = 3``) is looked up in ``consts``, the typing's table."""
        cols = [[] for _ in info.domains]
        for s in facts:
            args = [int(consts[c]) if isinstance(c, str) and c in consts else c
                    for c in (ix.value for ix in s.atom.idx)]
            try:
                ids = [d.id_of(c) for c, d in zip(args, info.domains)]
            except ProgramError:  # again, naming the fact (not described up front: bulk data)
                ids = [d.id_of(c, s.where()) for c, d in zip(args, info.domains)]
            for col, k in zip(cols, ids):
                col.append(k)
        arrays = [np.array(c, dtype=np.int64) for c in cols]
        data = self._reldata.get(name)
        if data is not None:
            for k, (col, d) in enumerate(zip(data, info.domains)):
                arrays[k] = np.concatenate([arrays[k], _ids(col, d, name)])
        return Relation(name, info.domains, arrays)

    # -- running -------------------------------------------------------------------------------
    def run(self, data=None, *, jacobi=None, datalog="semi-naive", tol=1e-9, max_iters=None,
            init=0.0, targets=None, params=None):
        """Evaluate the program (forward chaining); returns the program.

        Components run in dependency order: non-recursive ones once, recursive Boolean ones
        by semi-naive evaluation (``datalog='naive'`` for the naive fixpoint), recursive real
        ones by Jacobi sweeps from ``init`` until the largest change is <= ``tol`` (or
        ``max_iters``; a RuntimeWarning if it did not converge), index recursion position by
        position. ``jacobi``: a list of tensors to sweep jointly as one recursive component
        (loopy belief propagation over messages), or True for every real tensor.
        ``targets``: evaluate only what these tensors need. ``data``: dense data to set first.
        ``self.report`` tells what each component did.
        """
        for k, v in (data or {}).items():
            self.set_data(k, v)
        if datalog not in ("semi-naive", "naive"):
            raise ValueError(f"run(): datalog must be 'semi-naive' or 'naive', got {datalog!r}")
        if params is None and self.params:
            params = self.params
        compiled = self.compile(params=params is not None)
        values, base = self.initial_values(compiled, params)
        comps = compiled.comps
        if jacobi:
            names = ([n for n, i in compiled.typing.tensors.items() if i.kind == "real"]
                     if jacobi is True else list(jacobi))
            comps = components(compiled.ceqs, compiled.typing.tensors, together=names)
        if targets is not None:
            comps = needed(comps, targets)
        opts = {"datalog": datalog, "tol": tol, "max_iters": max_iters, "init": init}
        runner = Runner(compiled, values, base, self.plans, self.dtype, self.device, opts)
        self.report = runner.run(comps)
        self.values = values
        return self

    def value(self, name):
        """The value of tensor ``name`` after ``run()``: a Tensor or a :class:`Relation`."""
        if not self.values:
            self.run()
        if name not in self.values:
            c = self.compile()
            if name in c.typing.consts:
                return ops.tensor(c.typing.consts[name], dtype=self.dtype)
            raise KeyError(f"no tensor named {name!r} in this program")
        return self.values[name]

    def __getitem__(self, name):
        return self.value(name)

    def _target(self, target):
        if isinstance(target, str):
            text = target.strip().rstrip("?")
            stmts = parse_program(text + "?", function_names())
            if len(stmts) != 1 or not isinstance(stmts[0], ir.Query):
                raise ValueError(f"query(): cannot read {target!r} as a query")
            return stmts[0].target
        node = to_expr(target)
        if not isinstance(node, ir.Ref):
            raise TypeError("query(): expected a tensor reference or an atom")
        return node

    def query(self, target, *, goal_directed=True, **run_options):
        """Answer a query: an atom with constants and variables (``"Ancestor(Alice, x)"``)
        gives {var: [values]} (rows in order; ``True``/``False`` when all arguments are
        constants); a tensor reference gives a Tensor (constants select, variables keep axes).

        Only the components the query depends on run. With ``goal_directed`` a Boolean query
        with constant arguments is answered by the magic-sets rewriting (docs/logic.md), which
        derives only tuples relevant to those constants.
        """
        return answer(self, self._target(target), goal_directed, run_options)

    def answers(self):
        """[(query text, answer)] for the program's query statements (``X?``)."""
        out = []
        for s in self.statements:
            if isinstance(s, ir.Query):
                with located(s):
                    out.append((s.text or ir.fmt_ref(s.target),
                                answer(self, s.target, True, {})))
        return out

    def explain(self):
        """Each component and equation: its einsum subscripts, contraction path, FLOPs and
        semiring, or for Datalog rules the join order and index kind (runs the program first
        if it has not run)."""
        return explain(self)

    def fit(self, loss, **kwargs):
        """Train the program's parameters; see :func:`tensorix.logic.fit`."""
        return fit(self, loss=loss, **kwargs)

    def __repr__(self):
        return f"Program({len(self.statements)} statements)"


def _check_name(name):
    if not (isinstance(name, str) and name.replace("'", "").isidentifier()):
        raise ValueError(f"not a valid tensor name: {name!r}")


def _ids(col, dom, name):
    if col.dtype.kind in "iu":
        if len(col) and (col.min() < 0 or col.max() >= dom.size):
            raise ProgramError(f"relation data for {name!r} has values outside domain "
                               f"{dom.name!r} (0..{dom.size - 1})")
        return col.astype(np.int64)
    return np.array([dom.id_of(c, f"the relation data for {name!r}") for c in col.tolist()],
                    dtype=np.int64)


def parse(text, **kwargs):
    """A :class:`Program` from text."""
    return Program(text, **kwargs)


def load(path, **kwargs):
    """A :class:`Program` from a file."""
    return Program(**kwargs).load(path)

