"""Datalog in tensor logic: facts, recursive rules, stratified negation, a goal-directed query
and the evaluation plan. Run: ``python examples/logic_datalog.py``."""

from tensorix import logic as tl

PROGRAM = """
Parent(Ann, Bob), Parent(Bob, Cid), Parent(Cid, Dee), Parent(Ann, Eve), Parent(Eve, Fay)
Ancestor(x, y) <- Parent(x, y)
Ancestor(x, z) <- Ancestor(x, y), Parent(y, z)
Person(x) <- Parent(x, y)
Person(y) <- Parent(x, y)
Unrelated(x, y) <- Person(x), Person(y), not Ancestor(x, y), not Ancestor(y, x), x != y
SameGen(x, y) <- Parent(p, x), Parent(p, y)
SameGen(x, y) <- Parent(px, x), SameGen(px, py), Parent(py, y)
Ancestor(Ann, x)?
"""


def main():
    P = tl.Program(PROGRAM)
    for query, answer in P.answers():
        print(query, "->", answer)
    print("Cid's ancestors:", P.query("Ancestor(x, Cid)")["x"])
    print("same generation as Cid:", P.query("SameGen(Cid, y)")["y"])
    print("unrelated pairs:", len(P.value("Unrelated")))
    print()
    print(P.explain())


if __name__ == "__main__":
    main()
