"""Tensor logic (Domingos, 2025): neural, symbolic and statistical models as tensor equations.

A program is a set of equations ``Lhs[idx] = f(terms)``: joins by juxtaposition, implicit sums
over indices missing on the left, an outer nonlinearity, Datalog rules, facts and queries.
Boolean relations are stored sparsely and reasoned over to a fixpoint (semi-naive evaluation
with hash/sort-merge joins); real tensors are dense and contracted by ``tensorix.einsum``, so
programs learn through tensorix autograd. See docs/logic.md for the tutorial and the grammar.

    >>> from tensorix import logic as tl
    >>> P = tl.Program('''
    ...     W = [0.2, 1.9, -0.7, 3]
    ...     X = [0, 1, 1, 0]
    ...     Y = step(W[i] X[i])
    ... ''')
    >>> P.value("Y")
    tensor(1.)
"""

from ._domains import Domain
from ._dsl import (
    Expr,
    Index,
    TensorHandle,
    abs_,
    avg_of,
    const,
    cos,
    exp,
    fn,
    index,
    indices,
    lnorm,
    log,
    max_of,
    min_of,
    norm,
    not_,
    or_of,
    relu,
    sig,
    sigmoid,
    sin,
    softmax,
    sqrt,
    step,
    tanh,
)
from ._embed import EmbeddingResult, embed
from ._errors import ParseError, ProgramError, TensorLogicError
from ._functions import register_function
from ._learn import FitResult, fit, parameters
from ._relation import Relation
from ._runner import ComponentReport, RunReport
from .program import Program, load, parse

__all__ = ["Program", "parse", "load", "Relation", "Domain", "RunReport", "ComponentReport",
           "TensorLogicError", "ParseError", "ProgramError", "register_function", "index",
           "indices", "const", "Index", "Expr", "TensorHandle", "fn", "step", "sig", "sigmoid",
           "relu", "tanh", "exp", "log", "sqrt", "abs_", "sin", "cos", "softmax", "lnorm",
           "norm", "max_of", "min_of", "avg_of", "or_of", "not_", "fit", "FitResult",
           "parameters", "embed", "EmbeddingResult"]
