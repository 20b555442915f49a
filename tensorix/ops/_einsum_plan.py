"""Einsum parsing and planning: equation and shapes in, a printable contraction plan out.

Everything here works on label strings and shapes only, never on arrays, so a plan can be built,
printed and cached before any data exists (plan, then execute). The pipeline:

1. ``split_args`` turns the call forms (``'ij,jk->ik', a, b``; ``'ij,jk', [a, b]``; torch's
   sublists ``a, [0, 1], b, [1, 2], [0, 2]``) into one equation string and the operands;
2. ``parse`` checks the equation against the shapes and gives every dimension a one-character
   label (ellipsis dimensions get fresh labels), with the output made explicit;
3. ``make_plan`` prepares each operand (take diagonals of repeated labels, drop size-1 dims
   that broadcast), asks opt_einsum for a pairwise contraction order and turns it into steps,
   each with its operand labels, result labels, result shape and FLOP count.
"""

from __future__ import annotations

import string
from dataclasses import dataclass, field

from opt_einsum import paths as _oe_paths
from opt_einsum.parser import get_symbol

__all__ = ["split_args", "parse", "make_plan", "EinsumPlan", "PlanStep", "OperandPrep",
           "STRATEGIES"]

_LETTERS = string.ascii_letters
STRATEGIES = tuple(sorted(_oe_paths._PATH_OPTIONS))  # the names opt_einsum accepts


def _err(msg):
    return RuntimeError(f"einsum(): {msg}")


# -- call forms ------------------------------------------------------------------------------

def _sublist_term(sub, what):
    """A torch/numpy sublist ([0, 1, Ellipsis]) as subscript text; ints 0-25 are 'A'-'Z' and
    26-51 'a'-'z' as in NumPy, so the implicit output keeps integer order."""
    if not isinstance(sub, (list, tuple)):
        raise TypeError(f"einsum(): the sublist of {what} must be a list of ints, got "
                        f"{type(sub).__name__}")
    out = []
    for s in sub:
        if s is Ellipsis:
            out.append("...")
        elif isinstance(s, int) and not isinstance(s, bool) and 0 <= s < 52:
            out.append(chr(ord("A") + s) if s < 26 else chr(ord("a") + s - 26))
        else:
            raise ValueError(f"einsum(): sublist entries of {what} must be integers in [0, 52) "
                             f"or Ellipsis, got {s!r}")
    return "".join(out)


def split_args(args):
    """(equation, operands) from any supported call form."""
    if not args:
        raise TypeError("einsum(): expected an equation string and operands")
    if isinstance(args[0], str):
        ops = args[1:]
        if len(ops) == 1 and isinstance(ops[0], (list, tuple)):
            ops = tuple(ops[0])
        return args[0], list(ops)
    rest, ops, terms = list(args), [], []
    while len(rest) >= 2:
        ops.append(rest.pop(0))
        terms.append(_sublist_term(rest.pop(0), f"operand {len(ops) - 1}"))
    eq = ",".join(terms)
    if rest:
        eq += "->" + _sublist_term(rest[0], "the output")
    return eq, ops


# -- parsing ---------------------------------------------------------------------------------

def _tokenize(term, where, equation):
    """Labels of one subscript and the position of its ellipsis (None without one)."""
    labels, ell, i = [], None, 0
    while i < len(term):
        c = term[i]
        if c == ".":
            if term[i:i + 3] != "...":
                raise _err(f"invalid '.' in the subscript {term!r} of {where} in equation "
                           f"{equation!r}: an ellipsis must be written '...'")
            if ell is not None:
                raise _err(f"the subscript {term!r} of {where} in equation {equation!r} has "
                           "more than one ellipsis")
            ell, i = len(labels), i + 3
            continue
        if c not in _LETTERS:
            raise _err(f"invalid subscript {c!r} in {term!r} ({where}) of equation "
                       f"{equation!r}; subscripts must be letters in [a-zA-Z]")
        labels.append(c)
        i += 1
    return labels, ell


def _fresh_labels(n, used):
    out, k = [], 0
    pool = [c for c in _LETTERS if c not in used]
    while len(out) < n:
        if pool:
            out.append(pool.pop(0))
        else:
            sym = get_symbol(52 + k)
            k += 1
            if sym not in used:
                out.append(sym)
    return out


@dataclass
class Parsed:
    inputs: tuple          # label string per operand (repeated labels kept)
    output: str
    sizes: dict            # label -> broadcast size
    names: dict            # label -> how errors and plans name it
    equation: str          # canonical 'ab,bc->ac'


def _expand_ellipses(toks, shapes, terms, equation):
    ell_nd = []
    for k, ((labels, ell), shape) in enumerate(zip(toks, shapes)):
        nd = len(shape)
        if ell is None and len(labels) != nd:
            raise _err(f"operand {k} has {nd} dimensions (shape {list(shape)}) but its "
                       f"subscript {terms[k]!r} in equation {equation!r} names {len(labels)} "
                       "and has no ellipsis")
        if ell is not None and len(labels) > nd:
            raise _err(f"operand {k} has {nd} dimensions (shape {list(shape)}) but its "
                       f"subscript {terms[k]!r} names {len(labels)} besides the ellipsis")
        ell_nd.append(0 if ell is None else nd - len(labels))
    n_ell = max(ell_nd, default=0)
    ell_labels = _fresh_labels(n_ell, set(equation))
    inputs = []
    for (labels, ell), e in zip(toks, ell_nd):
        if ell is not None:
            labels = labels[:ell] + ell_labels[n_ell - e:] + labels[ell:]
        inputs.append("".join(labels))
    return inputs, ell_labels


def _output(rhs, arrow, toks, ell_labels, equation):
    seen = [c for labels, _ in toks for c in labels]
    if not arrow:  # implicit: broadcast dims first, then labels seen once, sorted
        once = sorted(c for c in set(seen) if seen.count(c) == 1)
        return "".join(ell_labels) + "".join(once)
    labels, ell = _tokenize(rhs, "the output", equation)
    for i, c in enumerate(labels):
        if c not in seen:
            raise _err(f"output subscript {c!r} does not appear in any input subscript of "
                       f"equation {equation!r}")
        if c in labels[:i]:
            raise _err(f"output subscript {c!r} appears more than once in the output of "
                       f"equation {equation!r}")
    if ell is not None:
        labels = labels[:ell] + ell_labels + labels[ell:]
    return "".join(labels)


def _sizes(inputs, shapes, names):
    sizes, where = {}, {}
    for k, (labels, shape) in enumerate(zip(inputs, shapes)):
        own = {}
        for c, d in zip(labels, shape):
            if c in own and own[c] != d:
                raise _err(f"subscript {names[c]} is repeated in operand {k} but its dimensions "
                           f"have different sizes {own[c]} and {d}")
            own[c] = d
            if c not in sizes or sizes[c] == 1:
                sizes[c], where[c] = d, k
            elif d not in (1, sizes[c]):
                raise _err(f"subscript {names[c]} has size {d} in operand {k} but size "
                           f"{sizes[c]} in operand {where[c]} (shapes {list(shapes[where[c]])} "
                           f"and {list(shape)}); sizes must match or be 1")
    return sizes


def parse(equation, shapes):
    """Check ``equation`` against ``shapes``; labels for every dimension, output explicit."""
    if not isinstance(equation, str):
        raise TypeError(f"einsum(): the equation must be a str, got {type(equation).__name__}")
    eq = equation.replace(" ", "")
    if eq.count("->") > 1:
        raise _err(f"equation {equation!r} has more than one '->'")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if not shapes:
        raise _err("must provide at least one operand")
    if len(terms) != len(shapes):
        raise _err(f"the equation {equation!r} has {len(terms)} input subscripts but "
                   f"{len(shapes)} operands were given")
    toks = [_tokenize(t, f"operand {k}", equation) for k, t in enumerate(terms)]
    inputs, ell_labels = _expand_ellipses(toks, shapes, terms, equation)
    output = _output(rhs, arrow, toks, ell_labels, equation)
    names = {c: repr(c) for c in set("".join(inputs))}
    names.update({c: f"{c!r} ('...' dimension {i})" for i, c in enumerate(ell_labels)})
    sizes = _sizes(inputs, shapes, names)
    return Parsed(tuple(inputs), output, sizes, names, ",".join(inputs) + "->" + output)


# -- planning --------------------------------------------------------------------------------

@dataclass
class OperandPrep:
    """How one operand is brought to unique, non-broadcast labels before contracting."""

    labels_in: str            # as written (repeats allowed)
    diagonal: str | None      # unique labels when a diagonal is taken, else None
    shape: tuple | None       # the shape after dropping broadcast size-1 dims, else None
    labels: str               # the labels the contraction sees


@dataclass
class PlanStep:
    """One contraction: ids of its operands (SSA: inputs are 0..n-1, results count on),
    their labels, the result's labels and shape, its FLOPs and the kernel that runs it."""

    a: int
    b: int | None
    sa: str
    sb: str | None
    out: str
    shape: tuple
    flops: int
    kernel: str
    result: int
    positions: tuple = ()

    @property
    def equation(self):
        return (self.sa if self.b is None else f"{self.sa},{self.sb}") + "->" + self.out


@dataclass
class EinsumPlan:
    """A printable contraction plan: ``path`` (opt_einsum's linear format), ``steps``,
    ``flops`` against ``naive_flops``, and the ``largest_intermediate`` (elements)."""

    equation: str
    input_shapes: tuple
    output_shape: tuple
    sizes: dict
    prep: tuple
    path: list
    steps: list
    naive_flops: int
    flops: int
    largest_intermediate: int
    semiring: str = "sum-product"
    optimize: object = "auto"
    names: dict = field(default_factory=dict)

    @property
    def speedup(self) -> float:
        return self.naive_flops / max(self.flops, 1)

    def __str__(self):
        shapes = ", ".join(str(tuple(s)) for s in self.input_shapes)
        lines = [
            f"einsum plan: {self.equation}",
            f"  semiring: {self.semiring}   optimize: {self.optimize!r}",
            f"  operand shapes: {shapes} -> {tuple(self.output_shape)}",
            f"  naive FLOPs: {self.naive_flops:.4g}   planned FLOPs: {self.flops:.4g}   "
            f"speedup: {self.speedup:.4g}x",
            f"  largest intermediate: {self.largest_intermediate:,} elements",
        ]
        diag = [f"{p.labels_in}->{p.diagonal}" for p in self.prep if p.diagonal is not None]
        if diag:
            lines.append(f"  diagonals taken first: {', '.join(diag)}")
        lines.append(f"  {'step':>4}  {'operands':<10} {'contraction':<24} {'result shape':<16} "
                     f"{'FLOPs':>10}  kernel")
        for i, s in enumerate(self.steps):
            lines.append(f"  {i:>4}  {str(s.positions):<10} {s.equation:<24} "
                         f"{str(tuple(s.shape)):<16} {s.flops:>10.4g}  {s.kernel}")
        return "\n".join(lines)

    __repr__ = __str__


def _prepare(parsed, shapes):
    preps = []
    for labels, shape in zip(parsed.inputs, shapes):
        unique = "".join(dict.fromkeys(labels))
        own = dict(zip(labels, shape))
        keep = "".join(c for c in unique if not (own[c] == 1 and parsed.sizes[c] != 1))
        preps.append(OperandPrep(labels, unique if unique != labels else None,
                                 tuple(own[c] for c in keep) if keep != unique else None, keep))
    return tuple(preps)


def _linear_path(optimize, inputs, output, sizes):
    n = len(inputs)
    if optimize is False or optimize is None:
        return [(0,)] if n == 1 else [(0, 1)] * (n - 1)
    if isinstance(optimize, (list, tuple)):
        path = list(optimize[1:] if optimize and optimize[0] == "einsum_path" else optimize)
        return [tuple(c) for c in path]
    if n == 1:
        return [(0,)]
    if n == 2:
        return [(0, 1)]
    sets = [frozenset(s) for s in inputs]
    if optimize is True:
        optimize = "auto"
    if isinstance(optimize, str):
        fn = _oe_paths._PATH_OPTIONS.get(optimize.lower())
        if fn is None:
            raise ValueError(f"einsum(): unknown optimize strategy {optimize!r}; expected one "
                             f"of {list(STRATEGIES)}, False (left to right), a path or an "
                             "opt_einsum PathOptimizer")
        return [tuple(c) for c in fn(sets, frozenset(output), sizes, None)]
    if callable(optimize):
        return [tuple(c) for c in optimize(sets, frozenset(output), sizes, None)]
    raise TypeError(f"einsum(): optimize must be a strategy name, a bool, a path or a "
                    f"PathOptimizer, got {type(optimize).__name__}")


def _check_contraction(c, live, k):
    ok = (len(c) >= 1 and len(set(c)) == len(c)
          and all(isinstance(p, int) and 0 <= p < len(live) for p in c))
    if not ok:
        raise ValueError(f"einsum(): contraction {k} of the path, {c!r}, must name distinct "
                         f"operand positions in [0, {len(live)})")


def _prod(xs):
    n = 1
    for x in xs:
        n *= x
    return n


def _step_out(sa, sb, keep, final_out):
    """Result labels: the requested output for the last step, else the layout the kernels
    produce without a copy (batch, then a-only, then b-only labels)."""
    if final_out is not None:
        return final_out
    if sb is None:
        return "".join(c for c in sa if c in keep)
    if any(c in sb and c not in keep for c in sa):  # a contraction: matmul layout
        batch = [c for c in sa if c in sb and c in keep]
        afree = [c for c in sa if c in keep and c not in sb]
        bfree = [c for c in sb if c in keep and c not in sa]
        return "".join(batch + afree + bfree)
    return "".join(c for c in sa if c in keep) + "".join(c for c in sb if c in keep and
                                                          c not in sa)


def _kernel(sa, sb, out, semiring):
    reduced = any(c not in out for c in sa + (sb or ""))
    if sb is None:
        kind = "reduce" if reduced else "view"
    elif any(c in sb and c not in out for c in sa):
        batch = any(c in sb and c in out for c in sa)
        kind = "bmm" if batch else "matmul"
    else:
        kind = "reduce+mul" if reduced else "mul"
    return semiring.kernel_name(kind) if semiring is not None else kind


def _flops(sa, sb, out, sizes):
    """Multiply-adds counted as two: (operands - 1) products per point of the joint index
    space, plus one addition per point when something is summed."""
    labels = set(sa) | set(sb or "")
    reduced = any(c not in out for c in labels)
    return _prod(sizes[c] for c in labels) * ((0 if sb is None else 1) + (1 if reduced else 0))


def _build_steps(path, preps, output, sizes, semiring):
    live = list(range(len(preps)))
    labels = {i: p.labels for i, p in enumerate(preps)}
    steps, nxt = [], len(preps)
    for k, c in enumerate(path):
        _check_contraction(c, live, k)
        pos = sorted(c)
        ids = [live[p] for p in pos]
        for p in reversed(pos):
            live.pop(p)
        others = "".join(labels[i] for i in live)
        cur = ids[0]
        fold = ids[1:] or [None]  # a tuple of k operands folds left to right in k - 1 steps
        for m, b in enumerate(fold):
            rest = others + "".join(labels[j] for j in ids[m + 2:])
            last = not live and m == len(fold) - 1
            sa, sb = labels[cur], (None if b is None else labels[b])
            out = _step_out(sa, sb, set(output) | set(rest), output if last else None)
            steps.append(PlanStep(cur, b, sa, sb, out, tuple(sizes[x] for x in out),
                                  _flops(sa, sb, out, sizes), _kernel(sa, sb, out, semiring),
                                  nxt, tuple(c)))
            labels[nxt], cur, nxt = out, nxt, nxt + 1
        live.append(cur)
    if len(live) != 1:
        raise ValueError(f"einsum(): the contraction path leaves {len(live)} operands "
                         "uncontracted; it must reduce them to one")
    if not steps or steps[-1].out != output:  # an empty path on one operand
        a = live[0]
        steps.append(PlanStep(a, None, labels[a], None, output,
                              tuple(sizes[x] for x in output), 0,
                              _kernel(labels[a], None, output, semiring), nxt, (0,)))
    return steps


def make_plan(parsed, shapes, optimize="auto", semiring=None):
    """The plan for a parsed equation: operand preparation, path, steps and costs."""
    preps = _prepare(parsed, shapes)
    path = _linear_path(optimize, [p.labels for p in preps], parsed.output, parsed.sizes)
    steps = _build_steps(path, preps, parsed.output, parsed.sizes, semiring)
    all_labels = "".join(parsed.inputs)
    naive = _flops(all_labels, None, parsed.output, parsed.sizes)
    if len(shapes) > 1:  # an n-ary product costs n - 1 multiplications per point
        naive = _prod(parsed.sizes[c] for c in set(all_labels)) * (
            len(shapes) - 1 + (1 if set(all_labels) - set(parsed.output) else 0))
    largest = max((_prod(s.shape) for s in steps), default=1)
    return EinsumPlan(parsed.equation, tuple(tuple(s) for s in shapes),
                      tuple(parsed.sizes[c] for c in parsed.output), dict(parsed.sizes), preps,
                      [tuple(c) for c in path], steps, naive, sum(s.flops for s in steps),
                      largest, getattr(semiring, "name", "sum-product"), optimize,
                      dict(parsed.names))
