"""The graph IR: a :class:`Graph` is an ordered list of :class:`Node` s, each one call of a
dispatcher primitive (a :class:`~tensorix.autograd.Function` subclass) or one of the kinds
``placeholder`` (an input), ``get_attr`` (a module's parameter or buffer, read live),
``constant`` (a tensor or value captured by the trace), ``getitem`` (output ``i`` of a
multi-output op), ``data`` (the backend array of a tensor node, for ops that take raw arrays,
such as embedding's backward its indices) and ``output`` (the graph's result).

A node's ``op`` is the Function class for a call and the kind's name otherwise; ``args`` hold
Nodes and Python values (possibly in lists and tuples); ``meta`` holds ``shape``, ``dtype``
and ``device`` of the value it makes (``shape`` may hold symbols, see tensorix.fx.export).
Nodes are kept in program order, so running them front to back is a valid schedule, and every
edit (``insert_*``, ``erase_node``, ``replace_all_uses_with``) keeps that true.

Example::

    g = Graph()
    x = g.placeholder("x", shape=(3,), dtype=tensorix.float32)
    y = g.call(tensorix.ops.elementwise.Mul, (x, x))
    g.output(y)
    print(g)            # the tabular listing
"""

from __future__ import annotations

__all__ = ["Node", "Graph", "KINDS", "map_args", "op_name"]

KINDS = ("placeholder", "get_attr", "constant", "getitem", "data", "output")


def map_args(args, fn):
    """``args`` with every Node replaced by ``fn(node)``, through lists and tuples (arguments
    nest at most a level or two: cat's tensor list, a shape tuple)."""
    if type(args) is Node:
        return fn(args)
    if type(args) in (tuple, list):
        return type(args)(map_args(a, fn) for a in args)
    if type(args) is dict:
        return {k: map_args(v, fn) for k, v in args.items()}
    return args


def _walk(args, out):
    if type(args) is Node:
        out.append(args)
    elif type(args) in (tuple, list):
        for a in args:
            _walk(a, out)
    elif type(args) is dict:
        for a in args.values():
            _walk(a, out)
    return out


def op_name(op) -> str:
    """A node op's printable name: the kind, or the primitive's class name."""
    return op if isinstance(op, str) else op.__name__


class Node:
    """One value of the graph: ``op`` (a Function class or a kind in :data:`KINDS`), ``args``,
    ``target`` (placeholder/get_attr: the name; constant: the value; getitem: the index),
    ``meta`` and the set of ``users`` (nodes whose args refer to it)."""

    __slots__ = ("graph", "name", "op", "args", "target", "meta", "users", "_prev", "_next",
                 "_erased")

    def __init__(self, graph, name, op, args=(), target=None, meta=None):
        self.graph, self.name, self.op, self.target = graph, name, op, target
        self.args = tuple(args)
        self.meta = dict(meta or {})
        self.users: dict[Node, None] = {}  # ordered set
        self._prev = self._next = None
        self._erased = False
        for n in self.inputs:
            n.users[self] = None

    @property
    def inputs(self) -> list:
        """The nodes this one reads, in argument order (with repeats)."""
        return _walk(self.args, [])

    @property
    def is_call(self) -> bool:
        return not isinstance(self.op, str)

    def set_args(self, args):
        """Replace the arguments, keeping ``users`` of the old and new inputs right."""
        for n in self.inputs:
            n.users.pop(self, None)
        self.args = tuple(args)
        for n in self.inputs:
            n.users[self] = None

    def replace_all_uses_with(self, other: Node) -> int:
        """Make every user read ``other`` instead of this node; returns how many changed."""
        users = list(self.users)
        for u in users:
            u.set_args(map_args(u.args, lambda n: other if n is self else n))
        return len(users)

    def format(self) -> str:
        """The node as one line of Python-like code."""
        args = ", ".join(_fmt(a) for a in self.args)
        if self.op == "placeholder":
            return f"{self.name} = placeholder({self.target!r})"
        if self.op == "get_attr":
            return f"{self.name} = self.{self.target}"
        if self.op == "constant":
            return f"{self.name} = constant({_fmt_const(self.target)})"
        if self.op == "getitem":
            return f"{self.name} = {_fmt(self.args[0])}[{self.target}]"
        if self.op == "output":
            return f"return {args}"
        if self.op == "data":
            return f"{self.name} = {_fmt(self.args[0])}.data"
        return f"{self.name} = {op_name(self.op)}({args})"

    def __repr__(self):
        return self.name


def _fmt(a):
    if type(a) is Node:
        return a.name
    if type(a) in (tuple, list):
        inner = ", ".join(_fmt(x) for x in a)
        return f"({inner},)" if type(a) is tuple and len(a) == 1 else \
            (f"({inner})" if type(a) is tuple else f"[{inner}]")
    return repr(a)


def _fmt_const(v):
    shape = getattr(v, "shape", None)
    if shape is not None and getattr(v, "numel", lambda: 2)() > 1:
        return f"<tensor {tuple(shape)} {getattr(v, 'dtype', '')}>"
    return repr(v)


class Graph:
    """An editable, ordered dataflow graph (see the module docstring)."""

    def __init__(self):
        self._root = Node(self, "_root", "root")  # sentinel of the doubly linked node list
        self._root._prev = self._root._next = self._root
        self._names: dict[str, int] = {}
        self._cursor = None  # insert before this node (None: at the end)

    # -- iteration and printing ------------------------------------------------------------
    @property
    def nodes(self) -> list:
        """The nodes in program order (a snapshot list, safe to edit the graph while walking
        it)."""
        out, n = [], self._root._next
        while n is not self._root:
            out.append(n)
            n = n._next
        return out

    def __len__(self):
        return len(self.nodes)

    @property
    def placeholders(self) -> list:
        return [n for n in self.nodes if n.op == "placeholder"]

    @property
    def output_node(self) -> Node | None:
        for n in reversed(self.nodes):
            if n.op == "output":
                return n
        return None

    def call_nodes(self) -> list:
        return [n for n in self.nodes if n.is_call]

    def print_tabular(self, file=None) -> None:
        """Print one row per node: name, op, target, args, shape, dtype (as torch.fx does)."""
        print(self.tabular(), file=file)

    def tabular(self) -> str:
        rows = [("name", "op", "target", "args", "shape", "dtype")]
        for n in self.nodes:
            target = "" if n.is_call or n.op == "constant" else repr(n.target)
            rows.append((n.name, op_name(n.op), target, _fmt(n.args)[:48],
                         str(n.meta.get("shape", "")), str(n.meta.get("dtype", ""))))
        widths = [max(len(r[i]) for r in rows) for i in range(6)]
        lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
        lines.insert(1, "  ".join("-" * w for w in widths))
        return "\n".join(lines)

    @property
    def code(self) -> str:
        """The graph as readable Python-like code, one node a line."""
        names = ", ".join(n.name for n in self.placeholders)
        body = []
        for n in self.nodes:
            if n.op == "placeholder":
                continue
            line = n.format()
            shape = n.meta.get("shape")
            if shape is not None and n.is_call:
                line += f"  # {tuple(shape)} {n.meta.get('dtype', '')}"
            body.append("    " + line)
        return f"def forward({names}):\n" + "\n".join(body)

    def __str__(self):
        return self.code

    # -- building and editing --------------------------------------------------------------
    def _fresh(self, base: str) -> str:
        base = "".join(c if c.isalnum() else "_" for c in base.lower()) or "v"
        if base[0].isdigit():  # a Sequential's "0.weight": names must be identifiers
            base = "p_" + base
        k = self._names.get(base, 0)
        self._names[base] = k + 1
        return base if k == 0 and base not in ("root", "self") else f"{base}_{k}"

    def _link(self, node):
        before = self._cursor if self._cursor is not None else self._root
        prev = before._prev
        node._prev, node._next = prev, before
        prev._next = node
        before._prev = node
        return node

    def create_node(self, op, args=(), target=None, name=None, meta=None) -> Node:
        """Append (or insert at the cursor, see :meth:`inserting_before`) a new node."""
        nm = self._fresh(name or (op if isinstance(op, str) and op != "getitem" else
                                  op_name(op) if op != "getitem" else "getitem"))
        return self._link(Node(self, nm, op, args, target, meta))

    def placeholder(self, name, **meta) -> Node:
        return self.create_node("placeholder", (), name, name=name, meta=meta)

    def get_attr(self, path, **meta) -> Node:
        return self.create_node("get_attr", (), path, name=path.replace(".", "_"), meta=meta)

    def constant(self, value, **meta) -> Node:
        return self.create_node("constant", (), value, name="const", meta=meta)

    def call(self, fn, args, **meta) -> Node:
        return self.create_node(fn, args, meta=meta)

    def getitem(self, node, index, **meta) -> Node:
        return self.create_node("getitem", (node,), index, meta=meta)

    def output(self, result) -> Node:
        return self.create_node("output", (result,))

    class _Cursor:
        def __init__(self, graph, node):
            self.graph, self.node = graph, node

        def __enter__(self):
            self.prev, self.graph._cursor = self.graph._cursor, self.node

        def __exit__(self, *exc):
            self.graph._cursor = self.prev

    def inserting_before(self, node: Node):
        """``with graph.inserting_before(n): graph.call(...)`` creates nodes just before n."""
        return Graph._Cursor(self, node)

    def inserting_after(self, node: Node):
        return Graph._Cursor(self, node._next)

    def erase_node(self, node: Node) -> None:
        """Remove a node nobody uses (raises RuntimeError otherwise)."""
        if node.users:
            raise RuntimeError(f"erase_node: {node.name} still has users "
                               f"{[u.name for u in node.users]}")
        node.set_args(())
        node._prev._next, node._next._prev = node._next, node._prev
        node._erased = True

    def lint(self) -> None:
        """Check program order and use lists (RuntimeError on the first problem)."""
        seen = set()
        for n in self.nodes:
            for i in n.inputs:
                if i not in seen:
                    raise RuntimeError(f"lint: {n.name} reads {i.name} before it is defined")
                if n not in i.users:
                    raise RuntimeError(f"lint: {i.name}.users misses {n.name}")
            seen.add(n)
