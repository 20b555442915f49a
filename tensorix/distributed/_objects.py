"""Collectives of picklable Python objects, as torch.distributed has them.

They use ``pickle``, exactly as torch does: unpickling runs code chosen by the sender, so use
them only between trusted peers (the ranks of your own job), never on data from elsewhere.
"""

from __future__ import annotations

import pickle

import numpy as np

from ._c10d import Work, _group, _root


def _pack(obj):
    return np.frombuffer(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL), np.uint8)


def _wait(group, started, what):
    requests, finish = started
    Work(group, requests, [finish], what).wait()


def _gather_bytes(group, payload, what):
    """Every rank's bytes, in rank order (two non-blocking steps: the sizes, then the data)."""
    sizes = np.empty(group.size(), np.int64)
    _wait(group, group.comm.iallgather(sizes, np.array([payload.size], np.int64)), what)
    out = np.empty(int(sizes.sum()), np.uint8)
    _wait(group, group.comm.iallgatherv(out, payload, sizes), what)
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    return [out[bounds[r]:bounds[r + 1]] for r in range(group.size())]


def all_gather_object(object_list, obj, group=None):
    """``object_list[r]`` becomes rank r's ``obj`` (pickled: trusted peers only).

    Example: ``out = [None] * world; dist.all_gather_object(out, {"rank": rank})``."""
    g = _group(group, "all_gather_object")
    if len(object_list) != g.size():
        raise ValueError(f"all_gather_object(): expected object_list of {g.size()} entries "
                         f"(got {len(object_list)})")
    blobs = _gather_bytes(g, _pack(obj), "all_gather_object")
    object_list[:] = [pickle.loads(b.tobytes()) for b in blobs]


def gather_object(obj, object_gather_list=None, dst=0, group=None):
    """``dst``'s ``object_gather_list[r]`` becomes rank r's ``obj`` (pickled: trusted peers
    only). Gathered on every rank and kept on ``dst``: these are small control messages."""
    g = _group(group, "gather_object")
    root = _root(g, dst, "gather_object", "dst")
    if g.rank() == root and (object_gather_list is None or
                             len(object_gather_list) != g.size()):
        raise ValueError(f"gather_object(): expected object_gather_list of {g.size()} entries "
                         "on the destination rank")
    blobs = _gather_bytes(g, _pack(obj), "gather_object")
    if g.rank() == root:
        object_gather_list[:] = [pickle.loads(b.tobytes()) for b in blobs]


def broadcast_object_list(object_list, src=0, group=None, device=None):
    """Replace every rank's ``object_list`` entries with ``src``'s (pickled: trusted peers
    only). All ranks pass lists of the same length."""
    g = _group(group, "broadcast_object_list")
    root = _root(g, src, "broadcast_object_list", "src")
    size = np.array([_pack(list(object_list)).size if g.rank() == root else 0], np.int64)
    _wait(g, g.comm.ibroadcast(size, root), "broadcast_object_list")
    payload = _pack(list(object_list)) if g.rank() == root else np.empty(int(size[0]), np.uint8)
    payload = payload.copy()
    _wait(g, g.comm.ibroadcast(payload, root), "broadcast_object_list")
    if g.rank() != root:
        received = pickle.loads(payload.tobytes())
        if len(received) != len(object_list):
            raise ValueError(f"broadcast_object_list(): rank {g.ranks[g.rank()]} passed "
                             f"{len(object_list)} objects, the source {len(received)}")
        object_list[:] = received


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None, src=0,
                        group=None):
    """``scatter_object_output_list[0]`` becomes ``src``'s ``scatter_object_input_list[r]``
    on rank r (pickled: trusted peers only)."""
    g = _group(group, "scatter_object_list")
    root = _root(g, src, "scatter_object_list", "src")
    if not isinstance(scatter_object_output_list, list) or not scatter_object_output_list:
        raise ValueError("scatter_object_list(): expected scatter_object_output_list to be a "
                         "non-empty list")
    objects = [None] * g.size()
    if g.rank() == root:
        if scatter_object_input_list is None or len(scatter_object_input_list) != g.size():
            raise ValueError(f"scatter_object_list(): expected scatter_object_input_list of "
                             f"{g.size()} entries on the source rank")
        objects = list(scatter_object_input_list)
    holder = [objects]
    broadcast_object_list(holder, src, group)
    scatter_object_output_list[0] = holder[0][g.rank()]
