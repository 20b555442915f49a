"""``tensorix.backends.cpu``: the CPU backend (NumPy)."""

__all__ = ["get_cpu_capability"]


def get_cpu_capability() -> str:
    """The SIMD level NumPy's kernels were dispatched to (e.g. ``"AVX2"``, ``"AVX512F"``),
    from NumPy's own CPU-feature detection; ``"DEFAULT"`` when none is found."""
    import numpy as np

    found = np.__config__.CONFIG.get("SIMD Extensions", {}).get("found", [])
    # NumPy >= 2.3 names x86 levels (X86_V3 = AVX2, X86_V4 = AVX-512); older NumPy names features
    levels = (("AVX512", ("X86_V4", "AVX512_SKX", "AVX512F", "AVX512_ICL", "AVX512_SPR")),
              ("AVX2", ("X86_V3", "AVX2")), ("ASIMD", ("ASIMD",)), ("VSX", ("VSX",)))
    for label, names in levels:
        if any(n in found for n in names):
            return label
    return "DEFAULT"
