"""Weights and checkpoints: safetensors files written atomically, no pickle."""

from .safetensors import CheckpointError, read_safetensors, write_safetensors
from .serialization import load, save

__all__ = ["save", "load", "CheckpointError", "read_safetensors", "write_safetensors"]
