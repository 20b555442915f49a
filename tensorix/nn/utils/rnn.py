"""Sequence helpers for recurrent models."""

from __future__ import annotations

from ...ops.creation import full
from ...ops.shape import cat, stack
from ...tensor import Tensor

__all__ = ["pad_sequence"]


def pad_sequence(sequences, batch_first=False, padding_value=0.0,
                 padding_side="right") -> Tensor:
    """Stack variable-length tensors (L_i, *) into (L_max, B, *) (or (B, L_max, *) with
    ``batch_first``), padding with ``padding_value`` on ``padding_side``."""
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got "
                         f"{padding_side}.")
    seqs = list(sequences)
    if not seqs:
        raise RuntimeError("received an empty list of sequences")
    longest = max(s.shape[0] for s in seqs)
    rest = tuple(seqs[0].shape[1:])
    padded = []
    for s in seqs:
        gap = longest - s.shape[0]
        if gap:
            fill = full((gap,) + rest, padding_value, dtype=s.dtype, device=s.device)
            s = cat([s, fill] if padding_side == "right" else [fill, s])
        padded.append(s)
    out = stack(padded)
    return out if batch_first else out.transpose(0, 1)
