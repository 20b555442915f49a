"""Errors of the tensor-logic language: every message names the statement and its line."""

from __future__ import annotations

__all__ = ["TensorLogicError", "ParseError", "ProgramError"]


class TensorLogicError(Exception):
    """Base class of the errors raised by ``tensorix.logic``."""


class ParseError(TensorLogicError):
    """A syntax error in the text form, with its line, column and source line."""

    def __init__(self, msg, line, col, source):
        self.msg, self.line, self.col, self.source = msg, line, col, source
        caret = f"\n    {source}\n    {' ' * max(col - 1, 0)}^" if source else ""
        super().__init__(f"tensor logic: parse error at line {line}, column {col}: {msg}{caret}")


class ProgramError(TensorLogicError, ValueError):
    """A program that parses but is not well formed: unknown tensor, unsafe rule, an index with
    two domains, a shape mismatch, unstratifiable negation, ..."""

    def __init__(self, msg):
        super().__init__(f"tensor logic: {msg}")
