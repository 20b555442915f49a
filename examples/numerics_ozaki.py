"""Evidence for the Ozaki schemes (spec 5.3): componentwise error max|C - AB| / (|A||B|) of
FP64 GEMM emulated from exact int8 products, against the number of slices (scheme I) and of CRT
moduli (scheme II), next to native float64 matmul; also wide-range inputs and a complex case.

A, B are 32x32 N(0,1) from numpy.random.default_rng(42); the reference is the exact product
(Python integers) rounded once. Run: ``python examples/numerics_ozaki.py`` (``--n 64``).
"""

import argparse

import numpy as np

from tensorix import numerics as nx


def tables(n=32, seed=42, wide=False):
    rng = np.random.default_rng(seed)
    A, B = rng.standard_normal((n, n)), rng.standard_normal((n, n))
    if wide:
        A = A * np.exp2(rng.integers(-20, 21, (n, n)))
        B = B * np.exp2(rng.integers(-20, 21, (n, n)))
    exact = nx.exact_matmul(A, B)
    err = lambda C: nx.componentwise_error(C, A, B, exact)  # noqa: E731
    native = err(A @ B)
    one = [(S, S * (S + 1) // 2, err(nx.ozaki_gemm(A, B, "I", slices=S))) for S in range(3, 10)]
    two = [(N, N, err(nx.ozaki_gemm(A, B, "II", moduli=N)))
           for N in (6, 8, 10, 12, 13, 14, 15, 16, 18)]
    return native, one, two


def complex_case(n=32, seed=1):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))
    B = rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))
    Ar = np.concatenate([A.real, -A.imag], 1)
    Br = np.concatenate([B.real, B.imag])
    C = nx.ozaki_gemm(A, B, "II", moduli=16)
    return nx.componentwise_error(C.real, Ar, Br), nx.componentwise_error((A @ B).real, Ar, Br)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=32)
    n = ap.parse_args().n
    for wide in (False, True):
        native, one, two = tables(n, wide=wide)
        print(f"\n{'Wide-range' if wide else 'N(0,1)'} {n}x{n}: native float64 matmul "
              f"{native:.2e}\n")
        print("| Ozaki-I slices (GEMMs) | " + " | ".join(f"{s} ({g})" for s, g, _ in one) +
              " |\n|---|" + "---|" * len(one))
        print("| error | " + " | ".join(f"{e:.1e}" for *_, e in one) + " |\n")
        print("| Ozaki-II moduli | " + " | ".join(str(m) for m, *_ in two) + " |\n|---|" +
              "---|" * len(two))
        print("| error | " + " | ".join(f"{e:.1e}" for *_, e in two) + " |")
    ours, native = complex_case(n)
    print(f"\nComplex {n}x{n}, real part, Ozaki-II N=16: {ours:.2e} (native {native:.2e})")


if __name__ == "__main__":
    main()
