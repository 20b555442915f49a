"""Graph capture: the graph IR, tracing at the dispatcher, the interpreter, and the passes.

``symbolic_trace(module_or_fn, *example_args)`` returns a :class:`GraphModule`; its ``graph``
is a :class:`Graph` of :class:`Node` s whose ops are the dispatcher's primitives. See
docs/compile.md for a tour, and tensorix/fx/README.md for what lives where.
"""

from .graph import Graph, Node, map_args
from .graph_module import GraphModule, Interpreter, joint_trace, symbolic_trace
from .tracer import GraphBreak, Tracer

__all__ = ["Graph", "Node", "GraphModule", "Interpreter", "Tracer", "GraphBreak",
           "symbolic_trace", "joint_trace", "map_args"]
