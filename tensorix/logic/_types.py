"""Typing: which tensors are Boolean relations, and the domain and size of every index.

Every tensor axis and every (equation, variable) pair is a *slot*; a variable written plainly at
an axis joins the two slots (union-find), so one class of slots is one domain. Each class then
collects its evidence (declared domain names, sizes of data and literals, constants) and gets
a :class:`Domain`; contradictions are errors that name the equation and its line. Sizes that
only follow from index arithmetic (``Image[x+dx]``: "valid" range), slices and left-side
division (``P[x/2]``: ceil(n/2)) are inferred in a second pass.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import _ir as ir
from ._domains import Domain
from ._errors import ProgramError, located

__all__ = ["TensorInfo", "Typing", "infer_types"]


@dataclass
class TensorInfo:
    name: str
    kind: str          # 'bool' (sparse relation) or 'real' (dense tensor)
    arity: int
    source: str        # 'data' | 'literal' | 'facts' | 'equations' | 'param' | 'declared'
    domains: list = None

    @property
    def shape(self):
        return tuple(d.size for d in self.domains)


@dataclass
class Typing:
    consts: dict       # named constants -> float
    tensors: dict      # name -> TensorInfo
    ceqs: list
    domains: list


class _UF:
    def __init__(self):
        self.parent = {}

    def find(self, x):
        p = self.parent.setdefault(x, x)
        while p != x:
            self.parent[x] = self.parent.setdefault(p, p)
            x, p = p, self.parent[p]
        return x

    def union(self, a, b):
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[rb] = ra


def _tslot(name, k):
    return ("T", name, k)


def _vslot(uid, v):
    return ("V", uid, v)


def _describe_slot(slot, ceqs):
    if slot[0] == "T":
        return f"{slot[1]} (axis {slot[2]})"
    return f"index {slot[2]!r} in {ceqs[slot[1]].where()}"


class _Typer:
    def __init__(self, stmts, ceqs, data, reldata, params, shapes=None):
        self.stmts, self.ceqs, self.data, self.reldata = stmts, ceqs, data, reldata
        self.shapes = shapes or {}
        self.params = params
        self.uf = _UF()
        self.cons = []          # (slot, kind, value, provenance)
        self.arity = {}         # name -> (n, where)
        self.kind = {}          # name -> ('bool' | 'real', why)
        self.source = {}
        self.decl_domains = {}  # domain name -> Decl
        self.consts = {}
        self.affine = []        # (uid, IAff, tensor, axis)
        self.divs = []          # (uid, var, S, head slot)
        self.direct = {}        # var slot -> the tensor axes it is written at
        self.weak = set()       # classes whose size is only max(int constant) + 1

    # -- evidence ----------------------------------------------------------------------------
    def link(self, tslot, vslot):
        """A variable written plainly at a tensor axis: one domain (remembered for messages)."""
        self.uf.union(tslot, vslot)
        self.direct.setdefault(vslot, set()).add(tslot)

    def note_arity(self, name, n, where):
        old = self.arity.get(name)
        if old is None:
            self.arity[name] = (n, where)
        elif old[0] != n:
            raise ProgramError(f"tensor {name!r} is used with {old[0]} indices in {old[1]} and "
                               f"with {n} in {where}", at=_placed(where, old[1]))

    def note_kind(self, name, kind, why):
        old = self.kind.get(name)
        if old is None:
            self.kind[name] = (kind, why)
        elif old[0] != kind:
            a, b = ("a Boolean relation", "a real tensor")
            if old[0] == "real":
                a, b = b, a
            raise ProgramError(f"{name!r} is used as {a} ({old[1]}) and as {b} ({why})",
                               at=_placed(why, old[1]))

    def collect_statements(self):
        for s in self.stmts:  # named constants first: a fact may use one defined below it
            if isinstance(s, ir.Literal) and s.value.ndim == 0:
                self.consts[s.name] = float(s.value)
        for s in self.stmts:
            with located(s):
                self.statement(s)

    def statement(self, s):
        """Evidence from one literal, fact or declaration."""
        if isinstance(s, ir.Literal):
            if s.value.ndim == 0:
                return
            w = s.where()
            self.note_arity(s.name, s.value.ndim, w)
            self.note_kind(s.name, "real", w.reworded(f"the literal {w}"))
            self.source.setdefault(s.name, "literal")
            for k, n in enumerate(s.value.shape):
                self.cons.append((_tslot(s.name, k), "size", n, w.reworded(f"the literal {w}")))
        elif isinstance(s, ir.Fact):
            w, name = s.where(), s.atom.name
            if self.arity.get(name, (None,))[0] != len(s.atom.idx) or \
                    self.kind.get(name, (None,))[0] != "bool":  # not for every fact: bulk data
                self.note_arity(name, len(s.atom.idx), w)
                self.note_kind(name, "bool", w.reworded(f"the fact {w}"))
            self.source.setdefault(name, "facts")
            for k, ix in enumerate(s.atom.idx):
                if not isinstance(ix, ir.IConst):
                    raise ProgramError(f"a fact has constants only; {w} has the variable "
                                       f"{ir.fmt_index(ix)!r}")
                self.cons.append((_tslot(s.atom.name, k), "const", self.const_value(ix.value),
                                  w))
        elif isinstance(s, ir.Decl):
            self.declaration(s)

    def declaration(self, d):
        text = d.text or (f"{d.kind} {d.name}" + ("({})" if d.kind == "relation" else "[{}]")
                          .format(", ".join(map(str, d.spec))))
        where = ir.Where(f"the declaration {text!r}" + (f" (line {d.line})" if d.line else ""),
                         d)
        if d.kind == "domain":
            self.decl_domains[d.name] = (d, where)
            return
        self.note_arity(d.name, len(d.spec), where)
        self.note_kind(d.name, "bool" if d.kind == "relation" else "real", where)
        self.source.setdefault(d.name, "declared")
        for k, ax in enumerate(d.spec):
            kind = "size" if isinstance(ax, int) else "name"
            self.cons.append((_tslot(d.name, k), kind, ax, where))

    def collect_data(self):
        for name, arr in self.data.items():
            self.note_arity(name, arr.ndim, f"the data for {name!r}")
            self.note_kind(name, "real", f"the data for {name!r}")
            self.source[name] = "data"
            for k, n in enumerate(arr.shape):
                self.cons.append((_tslot(name, k), "size", n,
                                  f"the data for {name!r} (shape {tuple(arr.shape)})"))
        for name, shape in self.shapes.items():
            where = f"the initial value of {name!r} (shape {tuple(shape)})"
            self.note_arity(name, len(shape), where)
            self.note_kind(name, "real", where)
            for k, n in enumerate(shape):
                self.cons.append((_tslot(name, k), "size", int(n), where))
        for name, cols in self.reldata.items():
            where = f"the relation data for {name!r}"
            self.note_arity(name, len(cols), where)
            self.note_kind(name, "bool", where)
            self.source.setdefault(name, "facts")
            for k, col in enumerate(cols):
                self.cons.append((_tslot(name, k), "values", col, where))

    def collect_equations(self):
        for e in self.ceqs:
            with located(e):
                self.collect_equation(e)

    def collect_equation(self, e):
        """Evidence from one equation: arities, kinds, the axes its indices are written at."""
        where = e.where()
        self.note_arity(e.head, len(e.lhs), where)
        self.source[e.head] = "equations"
        if e.rule or e.src.lhs.atom:
            self.note_kind(e.head, "bool", f"the rule {where}" if e.rule else where)
        for k, it in enumerate(e.lhs):
            slot = _tslot(e.head, k)
            if it[0] == "var":
                self.link(slot, _vslot(e.uid, it[1]))
            elif it[0] == "const":
                self.cons.append((slot, "const", self.const_value(it[1]), where))
            else:
                self.divs.append((e.uid, it[1], it[2], slot))
        for r in self._refs(e):
            self.link_ref(e, r)
        for c in e.cmps:
            vs = [ix.name for ix in (c.left, c.right) if isinstance(ix, ir.IVar)]
            if len(vs) == 2:
                self.uf.union(_vslot(e.uid, vs[0]), _vslot(e.uid, vs[1]))

    @staticmethod
    def _refs(e):
        out = []
        for t in e.terms:
            for f in t.factors:
                out += [f.ref] if f.kind == "ref" else [r for r, _ in ir.expr_refs(f.expr)]
        return out + list(e.negs)

    def const_value(self, c):
        if isinstance(c, str) and c in self.consts:
            v = self.consts[c]
            return int(v) if float(v).is_integer() else v
        return c

    def link_ref(self, e, r):
        where = e.where()
        self.note_arity(r.name, len(r.idx), where)
        if r.atom:
            self.note_kind(r.name, "bool", f"{ir.fmt_ref(r)} in {where}")
        for k, ix in enumerate(r.idx):
            slot = _tslot(r.name, k)
            if isinstance(ix, ir.IVar):
                self.link(slot, _vslot(e.uid, ix.name))
            elif isinstance(ix, ir.IConst):
                self.cons.append((slot, "const", self.const_value(ix.value), where))
            elif isinstance(ix, ir.IAff):
                self.affine.append((e.uid, ix, r.name, k))
            elif isinstance(ix, ir.IDiv):
                raise ProgramError(f"division {ir.fmt_index(ix)!r} is only allowed on the left "
                                   f"side, in {where}")

    # -- Boolean or real ----------------------------------------------------------------------
    def rule_like(self, e):
        """Can this equation run in the Datalog engine (OR of joins of Boolean atoms)?"""
        if e.rule:
            return True
        if e.op not in ("sum", "or") or e.power is not None or e.normalizer:
            return False
        if e.fn is not None and e.fn != ("step", ()):
            return False
        for t in e.terms:
            if t.coef <= 0 or not t.factors:
                return False
            for f in t.factors:
                if f.kind != "ref" or self.kind.get(f.ref.name, ("",))[0] != "bool":
                    return False
                if not all(isinstance(ix, (ir.IVar, ir.IConst)) for ix in f.ref.idx):
                    return False
        return True

    def classify(self):
        heads = {}
        for e in self.ceqs:
            heads.setdefault(e.head, []).append(e)
        changed = True
        while changed:
            changed = False
            for h, eqs in heads.items():
                if h in self.kind:
                    continue
                if all(self.rule_like(e) and e.fn == ("step", ()) for e in eqs):
                    self.kind[h] = ("bool", f"step() of Boolean joins in {eqs[0].where()}")
                    changed = True
        for h in heads:
            self.kind.setdefault(h, ("real", "its equations"))
        for e in self.ceqs:
            e.boolean = self.kind[e.head][0] == "bool" and self.rule_like(e)
            if e.rule and not e.boolean:
                raise ProgramError(f"rule {e.where()} reads a real tensor; write it as a tensor "
                                   "equation with step()", at=e)
            for t in e.terms:
                for f in t.factors:
                    f.sparse = (f.kind == "ref" and self.kind.get(f.ref.name, ("",))[0] == "bool"
                                and all(isinstance(ix, (ir.IVar, ir.IConst))
                                        for ix in f.ref.idx))

    def check_known(self):
        for e in self.ceqs:
            for r in self._refs(e):
                if r.name in self.source or r.name in self.consts and not r.idx:
                    continue
                if self.params and not r.atom:
                    self.source[r.name] = "param"
                    self.kind.setdefault(r.name, ("real", "a parameter"))
                    continue
                raise ProgramError(f"unknown tensor {r.name!r} in {e.where()}: it has no "
                                   "data, literal, facts, declaration or equation", at=e)

    # -- domains -------------------------------------------------------------------------------
    def unify_named(self):
        first = {}
        for slot, kind, value, _ in self.cons:
            if kind == "name":
                if value not in first:
                    first[value] = slot
                self.uf.union(first[value], slot)

    def resolve(self):
        groups = {}
        for slot in list(self.uf.parent):
            groups.setdefault(self.uf.find(slot), [slot])
        for slot in list(self.uf.parent):
            r = self.uf.find(slot)
            if slot not in groups[r]:
                groups[r].append(slot)
        for slot, *_ in self.cons:
            r = self.uf.find(slot)
            groups.setdefault(r, [slot])
            if slot not in groups[r]:
                groups[r].append(slot)
        by_root = {r: [] for r in groups}
        for c in self.cons:
            by_root[self.uf.find(c[0])].append(c)
        self.dom = {}
        for r, slots in groups.items():
            resolver = _ClassResolver(self, slots, by_root[r])
            with located(resolver.at()):
                self.dom[r] = resolver.domain()

    def size_of(self, slot, strong=False):
        """The size of a slot's domain; with ``strong``, None while it is only the lower
        bound that integer constants give (``X[0, k]`` alone does not fix X's size)."""
        r = self.uf.find(slot)
        d = self.dom.get(r)
        return None if d is None or (strong and r in self.weak) else d.size

    def set_size(self, slot, n, why):
        r = self.uf.find(slot)
        d = self.dom.get(r)
        if d is None or r in self.weak:
            if d is not None and n < d.size:
                raise ProgramError(f"{why} gives size {n}, but a constant {d.size - 1} is used "
                                   "on that axis")
            self.dom[r] = Domain(d.name if d is not None else self._auto_name(r), n)
            self.weak.discard(r)
            return True
        if d.size != n:
            raise ProgramError(f"shape mismatch: {why} needs size {n} but the domain has "
                               f"size {d.size}")
        return False

    def _auto_name(self, root):
        return f"{root[1]}.{root[2]}" if root[0] == "T" else f"eq{root[1]}.{root[2]}"

    def infer_sizes(self):
        """Sizes that follow from slices, index arithmetic and left-side division."""
        changed = True
        while changed:
            changed = self._slices() | self._affine() | self._divs()

    def _slices(self):
        changed = False
        for e in self.ceqs:
            for v, (name, k, start, stop) in e.slices.items():
                n = self.size_of(_tslot(name, k), True)
                if n is None or self.size_of(_vslot(e.uid, v), True) is not None:
                    continue
                a = start or 0
                b = n if stop is None else (stop if stop >= 0 else n + stop)
                with located(e):
                    changed |= self.set_size(_vslot(e.uid, v), max(b - a, 0),
                                             f"the slice {a}:{b} of {name} in {e.where()}")
        return changed

    def _affine(self):
        changed = False
        for uid, ix, name, k in self.affine:
            if any(v in self.ceqs[uid].slices for _, v in ix.terms):
                continue  # a slice's size is the slice's length
            with located(self.ceqs[uid]):
                changed |= self._affine_one(uid, ix, name, k)
        return changed

    def _affine_one(self, uid, ix, name, k):
        """Size a variable from its one unknown-size use in ``x + c`` against the axis size."""
        n = self.size_of(_tslot(name, k), True)
        unknown = [(c, v) for c, v in ix.terms if self.size_of(_vslot(uid, v), True) is None]
        if n is None or len(unknown) != 1 or unknown[0][0] != 1:
            return False
        hi = ix.const + sum(c * (self.size_of(_vslot(uid, v)) - 1) for c, v in ix.terms
                            if (c, v) != unknown[0] and c > 0)
        size = n - hi
        if size <= 0:
            raise ProgramError(f"index {unknown[0][1]!r} has no valid range in "
                               f"{self.ceqs[uid].where()}: {name} has size {n}")
        return self.set_size(_vslot(uid, unknown[0][1]), size,
                             f"the valid range of {ir.fmt_index(ix)} in "
                             f"{self.ceqs[uid].where()}")

    def _divs(self):
        changed = False
        for uid, v, s, slot in self.divs:
            with located(self.ceqs[uid]):
                changed |= self._div(uid, v, s, slot)
        return changed

    def _div(self, uid, v, s, slot):
        """Size a left-side ``x/S`` axis from x's size."""
        n = self.size_of(_vslot(uid, v), True)
        s = self.const_value(s)
        if isinstance(s, str) or int(s) <= 0:
            raise ProgramError(f"the divisor in {v}/{s} must be a positive integer or a "
                               f"named constant, in {self.ceqs[uid].where()}")
        if n is None or self.size_of(slot, True) is not None:
            return False
        return self.set_size(slot, -(-n // int(s)), f"{v}/{s} in "
                             f"{self.ceqs[uid].where()}")

    # -- results ------------------------------------------------------------------------------
    def equation_sizes(self):
        for e in self.ceqs:
            vars_ = set(e.lhs_vars())
            for t in e.terms:
                vars_.update(t.vars())
            for n_ in e.negs:
                vars_.update(v for ix in n_.idx for v in ir.index_vars(ix))
            for v in vars_:
                n = self.size_of(_vslot(e.uid, v))
                if n is None:
                    raise ProgramError(self._unknown_size_msg(e, v), at=e)
                e.sizes[v] = n
            self.masks(e)

    def _unknown_size_msg(self, e, v):
        if v in e.lhs_vars() and not any(v in t.vars() for t in e.terms):
            return (f"index {v!r} on the left side of {e.where()} appears in no right-side "
                    "tensor, so its domain is unknown (an unsafe rule): bind it on the right "
                    "or declare the tensor's domains")
        return (f"cannot infer the size of index {v!r} in {e.where()}: no tensor with a known "
                "shape uses it plainly; declare it")

    def masks(self, e):
        lhs = {it[1] for it in e.lhs if it[0] == "var"}
        for uid, ix, name, k in self.affine:
            if uid != e.uid or len(ix.terms) != 1 or ix.terms[0][0] != 1:
                continue
            v = ix.terms[0][1]
            if v in lhs and ix.const != 0:
                e.masks.append((v, ix.const, self.size_of(_tslot(name, k))))

    def tensors(self):
        out = {}
        for name, (n, _) in self.arity.items():
            if name in self.consts and n == 0:
                continue
            kind = self.kind.get(name, ("real", ""))[0]
            doms = []
            for k in range(n):
                r = self.uf.find(_tslot(name, k))
                d = self.dom.get(r)
                if d is None or d.size < 0:
                    raise ProgramError(f"cannot infer the size of axis {k} of {name!r}; "
                                       "give data or declare it (tensor T[...])",
                                       at=self.arity[name][1])
                doms.append(d)
            out[name] = TensorInfo(name, kind, n, self.source.get(name, "param"), doms)
        return out

    def run(self):
        self.collect_statements()
        self.collect_data()
        self.collect_equations()
        self.check_known()
        self.classify()
        self.unify_named()
        self.resolve()
        self.infer_sizes()
        self.equation_sizes()
        tensors = self.tensors()
        doms = []
        for d in self.dom.values():
            if d is not None and all(d is not x for x in doms):
                doms.append(d)
        return Typing(self.consts, tensors, self.ceqs, doms)


class _ClassResolver:
    """The domain of one class of slots from its evidence (or None while unknown)."""

    def __init__(self, typer, slots, cons):
        self.t, self.slots, self.cons = typer, slots, cons

    def at(self):
        """A statement of this class to point at: an equation using it, else the first
        evidence with a position."""
        for s in self.slots:
            if s[0] == "V":
                return self.t.ceqs[s[1]]
        return next((w for *_, w in self.cons if getattr(w, "line", 0)), None)

    def blame(self, groups=()):
        """An equation variable of this class to name in a message: preferably one written
        directly at an axis of each group of conflicting slots."""
        vs = [s for s in self.slots if s[0] == "V"]
        for s in vs:
            direct = self.t.direct.get(s, set())
            if groups and all(direct & g for g in groups):
                return _describe_slot(s, self.t.ceqs)
        return _describe_slot(vs[0], self.t.ceqs) if vs else None

    def names(self):
        names, slots = {}, {}
        for slot, kind, value, where in self.cons:
            if kind == "name":
                names.setdefault(value, f"{_describe_slot(slot, self.t.ceqs)} in {where}")
                slots.setdefault(value, set()).add(slot)
        if len(names) > 1:
            (a, wa), (b, wb) = list(names.items())[:2]
            who = self.blame([slots[a], slots[b]]) or _describe_slot(self.slots[0], self.t.ceqs)
            raise ProgramError(f"{who} is used with two different domains: {a!r} ({wa}) and "
                               f"{b!r} ({wb})")
        return next(iter(names), None)

    def consts(self):
        syms, ints = {}, 0  # a dict keeps first-seen order with O(1) membership
        int_where = sym_where = None
        for _slot, kind, value, where in self.cons:
            vals = value if kind == "values" else ([value] if kind == "const" else [])
            if kind == "values" and getattr(value, "dtype", None) is not None and \
                    value.dtype.kind in "iu":
                if len(value):
                    ints = max(ints, int(value.max()) + 1)
                    int_where = int_where or where
                continue
            for c in vals:
                if isinstance(c, str):
                    syms.setdefault(c)
                    sym_where = sym_where or where
                else:
                    if int(c) < 0:
                        raise ProgramError(f"negative constant {c} in {where}")
                    ints = max(ints, int(c) + 1)
                    int_where = int_where or where
        syms = list(syms)
        if syms and int_where:
            raise ProgramError(f"a domain mixes symbols ({syms[0]!r} in {sym_where}) and "
                               f"integers (in {int_where})")
        return syms, ints

    def sizes(self):
        seen, slots = {}, {}
        for slot, kind, value, where in self.cons:
            if kind == "size":
                seen.setdefault(int(value), (slot, where))
                slots.setdefault(int(value), set()).add(slot)
        if len(seen) > 1:
            (a, (sa, wa)), (b, (sb, wb)) = list(seen.items())[:2]
            who = self.blame([slots[a], slots[b]])
            head = f"shape mismatch: {who}" if who else "shape mismatch"
            raise ProgramError(f"{head} has size {a} from {_describe_slot(sa, self.t.ceqs)} "
                               f"({wa}) but size {b} from {_describe_slot(sb, self.t.ceqs)} "
                               f"({wb})")
        return next(iter(seen), None)

    def domain(self):
        name = self.names()
        syms, ints = self.consts()
        size = self.sizes()
        root = self.t.uf.find(self.slots[0])
        dname = name or self.t._auto_name(root)
        decl = self.t.decl_domains.get(name) if name else None
        if decl is not None:
            spec = decl[0].spec
            if len(spec) == 1 and isinstance(spec[0], int) and not syms:
                size = self._agree(size, spec[0], decl[1])
            else:
                extra = [s for s in syms if s not in spec]
                if extra:
                    raise ProgramError(f"constant {extra[0]!r} is not in domain {name!r} "
                                       f"declared in {decl[1]}")
                syms = list(spec)
        if syms:
            if size is not None and size < len(syms):
                raise ProgramError(f"domain {dname!r} has {len(syms)} symbols but a tensor "
                                   f"axis of size {size} ({self.blame() or dname})")
            return Domain(dname, size if size is not None else len(syms), syms)
        if size is None and ints:
            size = ints
            self.t.weak.add(root)
        elif size is not None and ints > size:
            raise ProgramError(f"constant {ints - 1} is outside domain {dname!r} of size "
                               f"{size} ({self.blame() or dname})")
        return None if size is None else Domain(dname, size)

    def _agree(self, size, declared, where):
        if size is not None and size != declared:
            raise ProgramError(f"shape mismatch: {self.blame() or 'a tensor axis'} has size "
                               f"{size} but is declared with size {declared} in {where}")
        return declared


def _placed(where, other):
    """Of two descriptions of the places in a conflict, one that has a text position."""
    return where if getattr(where, "line", 0) else other


def infer_types(stmts, ceqs, data, reldata, params=False, shapes=None):
    """Typing of a program: Boolean/real kinds, domains, shapes, per-equation index sizes.
    ``shapes``: known shapes of parameters (from their initial values)."""
    return _Typer(stmts, ceqs, data, reldata, params, shapes).run()
