"""ember.fx: capture a Module's forward as a Graph, transform it in Python, and get
runnable Python back (PyTorch's torch.fx API).

``symbolic_trace`` records a `Graph` of `Node`s by running forward on `Proxy`
values; `GraphModule` turns a Graph back into a Module with generated code;
`Interpreter`/`Transformer` run or rewrite graphs node by node;
`replace_pattern` rewrites subgraphs; passes live in ``ember.fx.passes``.
"""
from .graph import Graph, PythonCode
from .graph_module import GraphModule
from .interpreter import Interpreter, Transformer
from .node import Node, has_side_effect, map_arg
from .proxy import Attribute, ParameterProxy, Proxy, TraceError
from .subgraph_rewriter import replace_pattern
from .tracer import Tracer, is_fx_tracing, symbolic_trace, wrap
from . import passes  # noqa: F401
from . import experimental  # noqa: F401

__all__ = ["symbolic_trace", "Tracer", "wrap", "Proxy", "Attribute", "ParameterProxy",
           "TraceError", "Graph", "PythonCode", "Node", "GraphModule", "Interpreter",
           "Transformer", "replace_pattern", "map_arg", "has_side_effect", "is_fx_tracing"]
