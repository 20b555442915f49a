"""Text form: a tokenizer and a recursive-descent parser producing the IR of ``_ir``.

Statements end at a newline (outside brackets, and unless the line ends with an operator or
a comma) or at a '.' followed by white space. Comments: ``#`` and ``//`` to the end of the line.
Names starting with a lowercase letter (or '_') are index variables; names starting with an
uppercase letter, quoted strings and integers are constants. See docs/logic.md for the grammar.
"""

from __future__ import annotations

import re

from . import _ir as ir
from ._errors import ParseError

__all__ = ["parse_program", "tokenize"]

_CONT = {"<-", ":-", "←", ",", "=", "+", "-", "*", "/", "+=", "|=", "max=", "min=", "avg=",
         "(", "[", "{"}
_NUM = r"[0-9]+\.[0-9]+(?:[eE][+-]?[0-9]+)?|[0-9]+(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?"
# One pattern for every token, tried at each position (a scan per token, not per character).
# Names are identifiers as in Python (letters of any script, digits, '_'); the case of the first
# letter tells a variable from a constant, so it must have one.
_TOKEN = re.compile(rf"""
    (?P<space>[^\S\n]+)
  | (?P<newline>\n)
  | (?P<comment>\#[^\n]*|//[^\n]*|/\*.*?\*/)
  | (?P<open_comment>/\*)
  | (?P<num>{_NUM})
  | (?P<name>[^\W\d]\w*['′]*)
  | (?P<str>"[^"\n]*"|'[^'\n]*')
  | (?P<open_str>["'])
  | (?P<op><-|:-|\+=|\|=|!=|==|<=|>=|[][(){{}},=?+*/^:.<>!←¬-])
""", re.VERBOSE | re.DOTALL)
MAX_NESTING = 64  # brackets deeper than this are an error, not a RecursionError
MAX_INT = 2**63 - 1  # integers are int64 constants, ids and sizes
PROJ = {"=", "+=", "|=", "max=", "min=", "avg="}
RULE = {"<-", ":-", "←"}
CMP = {"!=", "==", "<", "<=", ">", ">="}
NEG = {"not", "!", "¬"}


class Tok:
    __slots__ = ("kind", "value", "line", "col", "pos")

    def __init__(self, kind, value, line, col, pos):
        self.kind, self.value, self.line, self.col, self.pos = kind, value, line, col, pos

    def __repr__(self):
        return f"{self.kind}:{self.value!r}@{self.line}:{self.col}"


class _Lexer:
    def __init__(self, text):
        self.text, self.toks, self.depth = text, [], 0
        self.line, self.line_start = 1, 0

    def error(self, msg, i):
        """A ParseError at text position ``i`` (on the current line)."""
        j = self.text.find("\n", self.line_start)
        source = self.text[self.line_start:j if j >= 0 else len(self.text)]
        return ParseError(msg, self.line, i - self.line_start + 1, source)

    def emit(self, kind, value, i):
        self.toks.append(Tok(kind, value, self.line, i - self.line_start + 1, i))

    def end_statement(self, i):
        if self.toks and self.toks[-1].kind != "NL":
            self.emit("NL", "", i)

    def newline(self, i):
        if self.depth == 0 and self.toks and not (self.toks[-1].kind == "OP"
                                                   and self.toks[-1].value in _CONT):
            self.end_statement(i)
        self.line += 1
        self.line_start = i + 1

    def run(self):
        text, n, i = self.text, len(self.text), 0
        while i < n:
            m = _TOKEN.match(text, i)
            if m is None:
                raise self.error(f"unexpected character {text[i]!r}", i)
            kind, end = m.lastgroup, m.end()
            if kind == "newline":
                self.newline(i)
            elif kind == "comment":
                k = text.rfind("\n", i, end)
                if k >= 0:  # a /* comment */ over several lines
                    self.line += text.count("\n", i, end)
                    self.line_start = k + 1
            elif kind == "num":
                end = self.number(m)
            elif kind == "name":
                end = self.name(m)
            elif kind == "str":
                self.emit("STR", text[i + 1:end - 1], i)
            elif kind == "op":
                self.op(m.group(), i)
            elif kind != "space":  # an opening /* or quote with no end
                what = "/* comment" if kind == "open_comment" else "string"
                raise self.error(f"unterminated {what}", i)
            i = end
        self.end_statement(n)
        self.emit("EOF", "", n)
        return self.toks

    def number(self, m):
        text, i, end = self.text, m.start(), m.end()
        if self.depth and text.startswith(".", end) and "." not in m.group() and not (
                end + 1 < len(text) and (text[end + 1].isalnum() or text[end + 1] == ".")):
            end += 1  # "1." inside brackets is the number 1.0
        self.emit("NUM", text[i:end], i)
        return end

    def name(self, m):
        word, i, end = m.group(), m.start(), m.end()
        if not (word[0] == "_" or word[0].islower() or word[0].isupper()):
            raise self.error(f"the name {word!r} starts with a letter that has no case (a "
                             "lowercase initial makes a variable, an uppercase one a constant)",
                             i)
        if word in ("max", "min", "avg") and self.text.startswith("=", end) and \
                not self.text.startswith("==", end):
            self.emit("OP", word + "=", i)
            return end + 1
        self.emit("NAME", word.replace("′", "'"), i)
        return end

    def op(self, o, i):
        if o == "." and self.depth == 0 and (i + 1 >= len(self.text)
                                             or self.text[i + 1].isspace()):
            self.end_statement(i)  # '. ' ends a statement, Datalog style
            return
        self.depth += o in "([{"
        if self.depth > MAX_NESTING:
            raise self.error(f"brackets nested more than {MAX_NESTING} deep", i)
        self.depth -= o in ")]}" and self.depth > 0
        self.emit("OP", o, i)


def tokenize(text):
    """The token list of a program text (NAME, NUM, STR, OP, NL for statement ends, EOF)."""
    return _Lexer(text).run()


def _stamp(stmt, line, col, text):
    """The statement with its source position and text (frozen dataclasses are set in
    place)."""
    object.__setattr__(stmt, "line", line)
    object.__setattr__(stmt, "col", col)
    object.__setattr__(stmt, "text", text)
    return stmt


def _is_var(name):
    return name[0].islower() or name[0] == "_"


class _Parser:
    def __init__(self, text, functions):
        self.text, self.toks, self.k = text, tokenize(text), 0
        self.functions = functions
        self.lines = text.split("\n")  # the lexer counts lines at '\n' only

    # -- token helpers --
    @property
    def tok(self):
        return self.toks[self.k]

    def peek(self, d=1):
        return self.toks[min(self.k + d, len(self.toks) - 1)]

    def at(self, kind, value=None):
        t = self.tok
        return t.kind == kind and (value is None or t.value == value)

    def at_op(self, *values):
        return self.tok.kind == "OP" and self.tok.value in values

    def next(self):
        t = self.tok
        self.k += 1
        return t

    def error(self, msg, tok=None, found=True):
        """A ParseError at ``tok`` (default: the current token); ``found`` names it."""
        t = tok or self.tok
        line = self.lines[t.line - 1] if 0 < t.line <= len(self.lines) else ""
        if found:
            what = {"NL": "end of statement", "EOF": "end of input"}.get(t.kind, repr(t.value))
            msg = f"{msg}, found {what}"
        return ParseError(msg, t.line, t.col, line)

    def sep(self, close):
        """After a list item: a ',' or the closing bracket."""
        if self.at_op(close):
            return
        if not self.at_op(","):
            raise self.error(f"expected ',' or {close!r}")
        self.next()

    def items(self, close, item):
        """``item()`` results separated by ',' up to the ``close`` bracket, which is consumed
        (the opening one already is)."""
        out = []
        while not self.at_op(close):
            out.append(item())
            self.sep(close)
        self.next()
        return out

    def minus(self):
        """Consume an optional leading '-'; returns the sign, -1 or 1."""
        if self.at_op("-"):
            self.next()
            return -1
        return 1

    def expect(self, value):
        if not self.at_op(value):
            raise self.error(f"expected {value!r}")
        return self.next()

    # -- program --
    def program(self):
        out = []
        while not self.at("EOF"):
            if self.at("NL"):
                self.next()
                continue
            start = self.tok
            stmts = self.statement()
            if not (self.at("NL") or self.at("EOF")):
                raise self.error("expected the end of the statement")
            end = self.tok.pos
            src = " ".join(self.text[start.pos:end].split())
            out.extend(_stamp(s, start.line, start.col, src) for s in stmts)
        return out

    def statement(self):
        t = self.tok
        if t.kind == "NAME" and t.value in ("domain", "relation", "tensor") and \
                self.peek().kind == "NAME":
            return [self.declaration()]
        if t.kind != "NAME":
            raise self.error("expected a tensor name at the start of a statement")
        head = self.head()
        if self.at_op("?"):
            self.next()
            return [ir.Query(head)]
        if self.at("OP") and self.tok.value in RULE:
            self.next()
            body = self.rule_body()
            return [ir.Equation(ir.Ref(head.name, head.idx, True), "=", body, rule=True)]
        if self.at("OP") and self.tok.value in PROJ:
            op = self.next().value
            return [self.equation(head, op)]
        if head.atom and (self.at_op(",") or self.at("NL") or self.at("EOF")):
            facts = [head]
            while self.at_op(","):
                self.next()
                facts.append(self.atom_or_ref(self.next_name()))
            return [ir.Fact(a) for a in facts]
        raise self.error("expected '=', '<-', '?' or a list of facts after "
                         f"{ir.fmt_ref(head)!r}")

    def next_name(self):
        if not self.at("NAME"):
            raise self.error("expected a name")
        return self.next().value

    def declaration(self):
        kind, name = self.next().value, self.next().value
        if kind == "domain":
            self.expect("=")
            if self.at("NUM"):
                return ir.Decl("domain", name, (self.integer(self.next()),))
            self.expect("{")
            syms = [self.const_value()]
            while self.at_op(","):
                self.next()
                syms.append(self.const_value())
            self.expect("}")
            return ir.Decl("domain", name, tuple(syms))
        close = ")" if kind == "relation" else "]"
        self.expect("(" if kind == "relation" else "[")
        axes = []
        while not self.at_op(close):
            t = self.next()
            if t.kind not in ("NAME", "NUM"):
                raise self.error("expected a domain name or a size", t)
            axes.append(self.integer(t) if t.kind == "NUM" else t.value)
            if not self.at_op(close):
                self.expect(",")
        self.next()
        return ir.Decl(kind, name, tuple(axes))

    def const_value(self):
        t = self.next()
        if t.kind == "NUM":
            return self.integer(t)
        if t.kind in ("NAME", "STR"):
            return t.value
        raise self.error("expected a constant", t)

    # -- heads, atoms and references --
    def head(self):
        name = self.next().value
        return self.atom_or_ref(name)

    def atom_or_ref(self, name):
        if self.at_op("("):
            self.next()
            return ir.Ref(name, tuple(self.items(")", self.atom_arg)), True)
        if self.at_op("["):
            self.next()
            return ir.Ref(name, tuple(self.items("]", self.index)), False)
        return ir.Ref(name, (), False)

    def atom_arg(self):
        t = self.tok
        if t.kind == "NAME":
            self.next()
            return ir.IVar(t.value) if _is_var(t.value) else ir.IConst(t.value)
        if t.kind == "STR":
            self.next()
            return ir.IConst(t.value)
        if t.kind == "NUM" or (t.kind == "OP" and t.value == "-"):
            return ir.IConst(self.signed_int())
        raise self.error("expected a variable or a constant in an atom")

    def signed_int(self):
        sign = self.minus()
        return sign * self.integer(self.next())

    def integer(self, t):
        """The value of integer token ``t`` (a ParseError for anything else, or for an
        integer too large for int64)."""
        if t.kind != "NUM" or not t.value.isdigit():
            raise self.error("expected an integer", t)
        if len(t.value) > 19 or int(t.value) > MAX_INT:
            raise self.error(f"the integer is too large (at most {MAX_INT})", t, found=False)
        return int(t.value)

    def index(self):
        if self.at_op(":"):
            self.next()
            stop = self.signed_int() if self.at("NUM") or self.at_op("-") else None
            return ir.ISlice(None, stop)
        mark = ""
        if self.at_op("*"):
            self.next()
            mark = "*"
        if self.at("STR"):
            return ir.IConst(self.next().value)
        if self.at("NAME") and not _is_var(self.tok.value):
            return ir.IConst(self.next().value)
        if (self.at("NUM") or self.at_op("-")) and self._slice_ahead():
            start = self.signed_int()
            self.expect(":")
            stop = self.signed_int() if self.at("NUM") or self.at_op("-") else None
            return ir.ISlice(start, stop)
        ix = self.affine_index()
        if self.at_op("/"):
            self.next()
            if not isinstance(ix, ir.IVar):
                raise self.error("only a variable can be divided in an index ('x/2')")
            t = self.next()
            if t.kind not in ("NUM", "NAME"):
                raise self.error("expected an integer or a constant name after '/'", t)
            if t.kind == "NUM" and self.integer(t) == 0:
                raise self.error("division by zero in an index", t)
            ix = ir.IDiv(ix.name, self.integer(t) if t.kind == "NUM" else t.value)
        if self.at_op("."):
            self.next()
            mark = "."
        if mark and isinstance(ix, ir.IVar):
            ix = ir.IVar(ix.name, mark)
        return ix

    def _slice_ahead(self):
        d = 2 if self.at_op("-") else 1
        return self.peek(d).kind == "OP" and self.peek(d).value == ":"

    def affine_index(self):
        terms, const, sign = [], 0, self.minus()
        while True:
            t = self.next()
            if t.kind == "NUM":
                if not t.value.isdigit():
                    raise self.error("index arithmetic takes integers", t)
                value = self.integer(t)
                if self.at_op("*") or self.at("NAME"):
                    if self.at_op("*"):
                        self.next()
                    v = self.next()
                    if v.kind != "NAME" or not _is_var(v.value):
                        raise self.error("expected an index variable after a coefficient", v)
                    terms.append((sign * value, v.value))
                else:
                    const += sign * value
            elif t.kind == "NAME" and _is_var(t.value):
                terms.append((sign, t.value))
            else:
                raise self.error("expected an index variable or an integer", t)
            if not self.at_op("+", "-"):
                break
            sign = 1 if self.next().value == "+" else -1
        if abs(const) > MAX_INT or any(abs(c) > MAX_INT for c, _ in terms):
            raise self.error(f"the index constant is too large (at most {MAX_INT})",
                             found=False)
        return ir.affine(terms, const)

    # -- equations and rules --
    def equation(self, head, op):
        if head.idx == () and not head.atom and (self.at_op("[") or self._number_only()):
            return ir.Literal(head.name, self.literal()[0])
        rhs = self.expr()
        return ir.Equation(head, op, rhs)

    def _number_only(self):
        d = 1 if self.at_op("-") else 0
        return self.peek(d).kind == "NUM" and self.peek(d + 1).kind in ("NL", "EOF")

    def literal(self):
        """(nested lists, shape) of a literal tensor: every element of a list has the shape
        of the first (a ragged literal is an error at the element that breaks it)."""
        if not self.at_op("["):
            sign = self.minus()
            t = self.next()
            if t.kind != "NUM":
                raise self.error("expected a number in a literal tensor", t)
            return sign * float(t.value), ()
        self.next()
        values, shape = [], None
        while not self.at_op("]"):
            start = self.tok
            value, s = self.literal()
            if shape is not None and s != shape:
                raise self.error(f"a ragged literal: this element has shape {s}, the first "
                                 f"has shape {shape}", start, found=False)
            values.append(value)
            shape = s
            self.sep("]")
        self.next()
        return values, (len(values),) + (shape or ())

    def rule_body(self):
        lits = [self.body_literal()]
        while self.at_op(","):
            self.next()
            lits.append(self.body_literal())
        body = lits[0]
        for b in lits[1:]:
            body = ir.mul(body, b)
        return body

    def body_literal(self):
        t = self.tok
        if (t.kind == "NAME" and t.value == "not") or (t.kind == "OP" and t.value in NEG):
            self.next()
            a = self.atom_or_ref(self.next_name())
            return ir.Not(ir.Ref(a.name, a.idx, True))
        if t.kind == "NAME" and not (self.peek().kind == "OP" and self.peek().value in "(["):
            left = self.index()
            if not (self.at("OP") and self.tok.value in CMP):
                raise self.error("expected an atom or a comparison in a rule body")
            op = self.next().value
            return ir.Cmp(op, left, self.index())
        a = self.atom_or_ref(self.next_name())
        return ir.Ref(a.name, a.idx, True)

    # -- right-hand expressions --
    def expr(self):
        e = self.mterm()
        while self.at_op("+", "-"):
            op = self.next().value
            t = self.mterm()
            e = ir.add(e, t) if op == "+" else ir.sub(e, t)
        return e

    def _starts_primary(self):
        t = self.tok
        return t.kind in ("NAME", "NUM") or (t.kind == "OP" and t.value == "(")

    def mterm(self):
        e = self.unary()
        while True:
            if self.at_op("*"):
                self.next()
                e = ir.mul(e, self.unary())
            elif self.at_op("/"):
                t = self.next()
                e = self.fold(ir.div, e, self.unary(), t)
            elif self._starts_primary():
                e = ir.mul(e, self.unary())
            else:
                return e

    def fold(self, op, a, b, tok):
        """``op(a, b)``, whose constant folding can fail (``X / 0``, ``2 ^ 1e400``): a
        ParseError at ``tok``."""
        try:
            return op(a, b)
        except ValueError as e:
            raise self.error(str(e), tok, found=False) from None

    def unary(self):
        negate = False  # a loop, not recursion: '- - - x' can be long
        while self.at_op("-", "+"):
            negate ^= self.next().value == "-"
        e = self.power()
        return ir.neg(e) if negate else e

    def power(self):
        base = self.primary()
        if self.at_op("^"):
            self.next()
            sign = self.minus()
            t = self.next()
            if t.kind != "NUM":
                raise self.error("expected a number as the exponent", t)
            return self.fold(ir.power, base, sign * float(t.value), t)
        return base

    def primary(self):
        t = self.next()
        if t.kind == "NUM":
            return ir.Num(float(t.value))
        if t.kind == "OP" and t.value == "(":
            e = self.expr()
            self.expect(")")
            return e
        if t.kind == "NAME" and t.value in NEG and self.at("NAME"):
            a = self.atom_or_ref(self.next_name())
            return ir.Not(ir.Ref(a.name, a.idx, True))
        if t.kind == "NAME":
            if self.at_op("(") and t.value in self.functions:
                return self.call(t.value)
            return self.atom_or_ref(t.value)
        raise self.error("expected a number, a tensor, a call or '('", t)

    def call(self, fn):
        self.expect("(")
        args, kwargs = [], []
        while not self.at_op(")"):
            if self.at("NAME") and self.peek().kind == "OP" and self.peek().value == "=":
                k = self.next().value
                self.next()
                sign = self.minus()
                v = self.next()
                if v.kind != "NUM":
                    raise self.error(f"expected a number for the keyword {k!r}", v)
                kwargs.append((k, sign * float(v.value)))
            else:
                args.append(self.expr())
            self.sep(")")
        self.next()
        return ir.Call(fn, tuple(args), tuple(kwargs))


def parse_program(text, functions):
    """Statements of a program text; ``functions`` = names parsed as calls."""
    return _Parser(text, functions).program()
