"""Errors of the tensor-logic language: every message names the statement and its line.

Each error carries ``line`` and ``col`` (1-based) where it concerns a place in a program's
text: a parse error the offending token, a program error the start of the statement it names
(``None`` for programs built in Python, whose statements have no text position).
"""

from __future__ import annotations

__all__ = ["TensorLogicError", "ParseError", "ProgramError", "located"]


class TensorLogicError(Exception):
    """Base class of the errors raised by ``tensorix.logic``."""

    line = None
    col = None


class ParseError(TensorLogicError):
    """A syntax error in the text form, with its line, column and source line."""

    def __init__(self, msg, line, col, source):
        self.msg, self.line, self.col, self.source = msg, line, col, source
        caret = f"\n    {source}\n    {' ' * max(col - 1, 0)}^" if source else ""
        super().__init__(f"tensor logic: parse error at line {line}, column {col}: {msg}{caret}")


class ProgramError(TensorLogicError, ValueError):
    """A program that parses but is not well formed: unknown tensor, unsafe rule, an index with
    two domains, a shape mismatch, unstratifiable negation, ...

    ``at``: the statement (or its ``where()`` description) the error is about, for ``line``
    and ``col``; a message that does not already name that line gets it appended."""

    def __init__(self, msg, at=None):
        self.msg = msg
        super().__init__(msg)
        self.locate(at)

    def locate(self, at):
        """Take the position of statement ``at`` unless the error already has one (the
        innermost statement is the most precise); returns the error."""
        if self.line is None and at is not None:
            src = getattr(at, "src", at)  # a normalized equation points at its statement
            line, col = getattr(src, "line", 0), getattr(src, "col", 0)
            if line:
                self.line, self.col = line, max(col, 1)
        return self

    def __str__(self):
        if self.line is not None and f"(line {self.line}" not in self.msg:
            return f"tensor logic: {self.msg} (at line {self.line}, column {self.col})"
        return f"tensor logic: {self.msg}"


class located:  # lowercase: it reads as a function, ``with located(stmt):``
    """ProgramErrors raised inside take the position of ``stmt`` if they have none: the
    statement being compiled or evaluated is the one to point at. (A class, not a generator
    context manager: it wraps every statement, facts included, so it must cost little.)"""

    __slots__ = ("stmt",)

    def __init__(self, stmt):
        self.stmt = stmt

    def __enter__(self):
        return self

    def __exit__(self, kind, error, tb):
        if isinstance(error, ProgramError):
            error.locate(self.stmt)
        return False
