"""Cutting graphs: copy a set of nodes into a new graph (:func:`extract`) and split a joint
forward-backward graph into a forward that also returns what backward needs and a backward
that reads it (:func:`split_joint`, the partition AOTAutograd makes).
"""

from __future__ import annotations

from .graph import Graph, Node, map_args

__all__ = ["extract", "split_joint"]


def extract(nodes, inputs, result) -> Graph:
    """A new graph of ``nodes`` (program order), reading each of ``inputs`` (nodes of the
    old graph) through a placeholder of the same name, returning ``result`` (a structure of
    old nodes). Constants and get_attrs an extracted node reads are copied along."""
    g = Graph()
    env: dict = {}
    for n in inputs:
        env[n] = g.placeholder(n.name, **n.meta)

    def get(n):
        new = env.get(n)
        if new is None:
            if n.op not in ("constant", "get_attr"):
                raise RuntimeError(f"extract: {n.name} is read but neither extracted nor an "
                                   "input")
            new = env[n] = g.create_node(n.op, (), n.target, name=n.name, meta=n.meta)
        return new

    for n in nodes:
        if n in env:
            continue
        env[n] = g.create_node(n.op, map_args(n.args, get), n.target, name=n.name,
                               meta=n.meta)
    g.output(map_args(result, get))
    return g


def split_joint(graph: Graph, tangents: list, n_fwd_outputs: int):
    """Split ``graph`` (output: ``(forward outputs..., gradients...)`` flattened, the first
    ``n_fwd_outputs`` being the forward's) at the ``tangents`` placeholders.

    Returns ``(forward, backward, n_saved)``: ``forward(inputs) -> (*outputs, *saved)``,
    ``backward(*saved, *tangents) -> (*gradients)``.
    """
    tangent_set = set(tangents)
    on_bwd: set = set()
    for n in graph.nodes:
        if n in tangent_set or any(i in on_bwd for i in n.inputs):
            on_bwd.add(n)
    out = graph.output_node.args[0]
    fwd_out, grads = list(out[:n_fwd_outputs]), list(out[n_fwd_outputs:])
    if any(type(o) is Node and o in on_bwd for o in fwd_out):
        raise RuntimeError("split_joint: a forward output depends on a tangent")
    fwd_nodes = [n for n in graph.nodes if n not in on_bwd and n.op not in ("output",)
                 and n.op != "placeholder"]
    bwd_nodes = [n for n in graph.nodes if n in on_bwd and n.op not in ("placeholder", "output")]
    saved = []
    for n in bwd_nodes:
        for i in n.inputs:
            if i not in on_bwd and i.op not in ("constant", "get_attr") and i not in saved:
                saved.append(i)
    for gnode in grads:  # a gradient that is a forward value (or an input) is saved too
        if type(gnode) is Node and gnode not in on_bwd and \
                gnode.op not in ("constant", "get_attr") and gnode not in saved:
            saved.append(gnode)
    inputs = [n for n in graph.placeholders if n not in tangent_set]
    forward = extract(fwd_nodes, inputs, tuple(fwd_out) + tuple(saved))
    backward = extract(bwd_nodes, saved + list(tangents), tuple(grads))
    return forward, backward, len(saved)
