"""A mutation fuzzer over the programs of docs/logic.md and examples/: every mutated program
either runs or fails with the language's own error (ParseError or ProgramError) carrying a
line and a column, never with another exception (RecursionError, AttributeError, KeyError,
ZeroDivisionError, OverflowError, NumPy's ValueError, ...).

The mutations are the ones that found internal errors from outside: character insertions,
deletions and swaps, duplicated tokens, deep nesting, Unicode identifiers, huge and tiny
numbers, terms with more indices than einsum has letters. The seed is fixed, so a failure
repeats; the message shows the program."""

import pathlib
import random
import re
import warnings

import tensorix as tx
from tensorix import logic as tl

ROOT = pathlib.Path(__file__).resolve().parents[2]
N_PROGRAMS = 1500

_INSERTS = list("()[]{},.=+-*/^:<>!?'\"#0123456789 \n\tabxyzXYZé_") + [
    "<-", "max=", "not ", "step(", "softmax(", "1e-400", "1e-320", "1e400", "变", "é"]
_NUMBERS = ["1" + "0" * 30, "9" * 5000, "1e-400", "1e-320", "1e400", "0", "0.0", "2e9"]
_NAMES = ["é", "Éa", "变量", "x\u0301", "ℌ", "ß'"]
_TAILS = ["Y = 1e-400", "Y[i] = X[i] / 0", "Y[x] = X[x/1e-400]", "Y[i] = X[i] / 1e-320",
          "Z = [[1, 2], [3]]", "E(" + "1" * 40 + ", 2)", "X[i, é] = X[i]", "Y = 0 ^ -1",
          "Q = (-8) ^ 0.5", "/* open comment"]


def _seeds():
    """The tensor-logic programs quoted in the docs and the examples."""
    out = []
    for path in [ROOT / "docs" / "logic.md", *sorted((ROOT / "examples").glob("logic_*.py"))]:
        out += re.findall(r'"""(.*?)"""', path.read_text(), flags=re.S)
    return [t for t in out if ("<-" in t or "=" in t) and "import" not in t]


def _nested(rng, depth):
    o, c = rng.choice([("(", ")"), ("[", "]"), ("relu(", ")")])
    return o * depth + "X" + c * depth


def _mutate(text, rng):  # noqa: C901 - one branch per mutation kind
    p = rng.randrange(len(text) + 1)
    kind = rng.randrange(9)
    if kind == 0:
        return text[:p] + rng.choice(_INSERTS) + text[p:]
    if kind == 1:
        return text[:p] + text[p + 1:]
    if kind == 2 and len(text) > 1:
        p = min(p, len(text) - 2)
        return text[:p] + text[p + 1] + text[p] + text[p + 2:]
    if kind == 3:
        toks = re.findall(r"\w+|[^\w\s]+|\s+", text)
        j = rng.randrange(len(toks))
        return "".join(toks[:j + 1] + toks[j:])
    if kind == 4:
        return text[:p] + _nested(rng, rng.choice([10, 63, 65, 300, 3000])) + text[p:]
    if kind == 5:
        name = rng.choice(sorted(set(re.findall(r"\b[A-Za-z_]\w*\b", text))))
        return re.sub(rf"\b{name}\b", rng.choice(_NAMES), text, count=rng.randrange(1, 3))
    if kind == 6:
        nums = list(re.finditer(r"\d+(?:\.\d+)?", text))
        if nums:
            m = rng.choice(nums)
            return text[:m.start()] + rng.choice(_NUMBERS) + text[m.end():]
    if kind == 7:
        idx = ", ".join(f"i{k}" for k in range(rng.choice([52, 53, 60])))
        return text + f"\nT[{idx}] = {rng.choice(['X', 'W1', 'Edge'])}[i0]"
    if kind == 8:
        return text + "\n" + rng.choice(_TAILS)
    return text


def _run(text):
    with warnings.catch_warnings():  # non-convergence and float warnings are results here
        warnings.simplefilter("ignore")
        tl.Program(text, dtype=tx.float64).run(max_iters=20)


def test_mutated_programs_fail_only_with_located_language_errors():
    rng = random.Random(20251201)
    seeds = _seeds()
    assert len(seeds) >= 8
    failures, outcomes = [], {"ran": 0, "ParseError": 0, "ProgramError": 0}
    for _ in range(N_PROGRAMS):
        text = rng.choice(seeds)
        for _ in range(rng.choice([1, 1, 2, 3])):
            text = _mutate(text, rng)
        try:
            _run(text)
            outcomes["ran"] += 1
        except tl.TensorLogicError as e:
            outcomes[type(e).__name__] += 1
            if not (isinstance(e.line, int) and e.line >= 1 and isinstance(e.col, int)
                    and e.col >= 1):
                failures.append(f"{type(e).__name__} without a position: {e}\n{text}")
        except Exception as e:  # noqa: BLE001 - any other type is the failure under test
            failures.append(f"{type(e).__name__}: {e}\n{text[-400:]}")
    assert not failures, f"{len(failures)} of {N_PROGRAMS} programs:\n\n" + "\n\n".join(
        failures[:5])
    # the fuzzer explores all three outcomes, not just the parser's front door
    assert min(outcomes.values()) > N_PROGRAMS // 20, outcomes
