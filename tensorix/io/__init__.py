"""Weights and checkpoints: safetensors files written atomically, no pickle.

``save``/``load`` (also ``tensorix.serialization``, as in torch) take state dicts, NumPy
arrays, or any nesting of dicts, lists, tuples, numbers, strings, arrays and tensors;
``save_checkpoint``/``load_checkpoint`` capture a whole training run (model, optimizer,
scheduler, data-loader position, step, RNG states) for bit-identical resumption.
"""

from .checkpoint import load_checkpoint, save_checkpoint
from .safetensors import CheckpointError, read_safetensors, write_safetensors
from .serialization import load, save

__all__ = ["save", "load", "save_checkpoint", "load_checkpoint", "CheckpointError",
           "read_safetensors", "write_safetensors"]
