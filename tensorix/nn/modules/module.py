"""``torch.nn.modules.module``'s import path; the classes are defined in
``tensorix.nn.module``."""

from ..module import Module

__all__ = ["Module"]
