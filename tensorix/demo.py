"""The main demo: ``python -m tensorix.demo``.

Builds tensors, differentiates a function to first and second order, and checks the result
against the closed form.
"""

from __future__ import annotations

import argparse
import sys

import tensorix as tx


def core_demo() -> None:
    print("tensorix", tx.__version__)
    x = tx.linspace(-2.0, 2.0, 5, requires_grad=True)
    y = (x.tanh() * x.exp()).sum()
    (g,) = tx.autograd.grad(y, x, create_graph=True)
    (h,) = tx.autograd.grad(g.sum(), x)
    print("x            =", x.detach())
    print("y = sum(tanh(x) * exp(x)) =", round(y.item(), 6))
    print("dy/dx        =", g.detach())
    print("d2y/dx2 diag =", h)
    t, e = x.detach().tanh(), x.detach().exp()
    closed = e * (t + 1 - t * t)
    err = (g.detach() - closed).abs().max().item()
    print(f"max |dy/dx - closed form| = {err:.2e}")
    a = tx.tensor([[1.0, 2.0], [3.0, 4.0]])
    print("matmul:", a @ a)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="tensorix demo")
    parser.add_argument("--quick", action="store_true", help="a short run (for the tests)")
    parser.parse_args(argv)
    core_demo()
    return 0


if __name__ == "__main__":
    sys.exit(main())
