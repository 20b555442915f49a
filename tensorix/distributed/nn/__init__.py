"""Differentiable collectives (``tensorix.distributed.nn.functional``)."""

from . import functional

__all__ = ["functional"]
