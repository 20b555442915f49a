"""Test support: the op registry, the oracle helper and the numerical gradient check.

Shipped inside the package so that every op family registers its test entry beside its code
family, and so users can check their own custom Functions with :func:`gradcheck`.
"""

from .gradcheck import gradcheck, gradgradcheck
from .oracle import assert_close, tolerance
from .registry import REGISTRY, OpInfo, Sample, all_opinfos, register

__all__ = ["OpInfo", "Sample", "REGISTRY", "register", "all_opinfos", "gradcheck",
           "gradgradcheck", "assert_close", "tolerance"]
