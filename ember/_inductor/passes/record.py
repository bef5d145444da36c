"""Record ember operator calls into an fx graph (a DispatchMode).

The decompose pass runs ``op.decomp`` on stand-in tensors under this mode to get the
primitives it calls as graph nodes; tests use `record_graph` to build op-level graphs of
the format ``ember.compile`` hands a backend, from a plain function and example tensors.
"""
import operator

import numpy as np

from ..._core import meta as _meta
from ..._core.dispatch import DispatchMode
from ..._core.op import REGISTRY
from ..._core.tensor import Tensor

__all__ = ["Recorder", "record_graph"]


class Recorder(DispatchMode):
    """Appends one ``call_function`` node per operator call to ``graph``.

    ``env`` maps ``id(tensor)`` to the node that produced it; a tensor the recorder has
    not seen (a constant a decomposition built from shapes alone) becomes a ``tensor``
    creation node holding a copy of its data.  In-place variants are recorded as their
    out-of-place op, and the written tensor is rebound to the new node (graphs are
    functional)."""

    def __init__(self, graph, env):
        self.graph = graph
        self.env = env
        self.keep = []  # tensors stay alive while recorded: their ids stay unique

    def node_of(self, t):
        n = self.env.get(id(t))
        if n is None:
            data = np.array(t._data, copy=True)
            n = self.graph.call_function(REGISTRY["tensor"], (), {
                "data": data, "dtype": data.dtype})
            n.meta["val"] = _meta.meta_of(t)
            self.bind(t, n)
        return n

    def bind(self, t, node):
        self.env[id(t)] = node
        self.keep.append(t)

    def _arg(self, a):
        if isinstance(a, Tensor):
            return self.node_of(a)
        if isinstance(a, (list, tuple)):
            return type(a)(self._arg(x) for x in a)
        return a

    def __ember_dispatch__(self, op, args, kwargs):
        base = getattr(op, "base", None)
        out = op(*args, **kwargs)
        target = base if base is not None else op
        node = self.graph.call_function(target, self._arg(tuple(args)),
                                        {k: self._arg(v) for k, v in kwargs.items()})
        if isinstance(out, (tuple, list)):
            node.meta["val"] = tuple(_meta.meta_of(o) for o in out)
            for i, o in enumerate(out):
                item = self.graph.call_function(operator.getitem, (node, i))
                item.meta["val"] = _meta.meta_of(o)
                if isinstance(o, Tensor):
                    self.bind(o, item)
        else:
            node.meta["val"] = _meta.meta_of(out)
            self.bind(out, node)
        if base is not None:  # the written input now is the new value
            self.bind(args[0], node)
        return out


def record_graph(fn, *inputs):
    """``(GraphModule, outputs)``: ``fn(*inputs)`` recorded op by op, one placeholder per
    input (tensors, or Python scalars which stay constants in the recorded calls)."""
    from ...fx import Graph, GraphModule
    from ...nn import Module
    g = Graph()
    env = {}
    rec = Recorder(g, env)
    for i, x in enumerate(inputs):
        p = g.placeholder(f"arg{i}")
        p.meta["val"] = _meta.meta_of(x) if isinstance(x, Tensor) else type(x)
        if isinstance(x, Tensor):
            rec.bind(x, p)
    with rec:
        out = fn(*inputs)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    g.output(tuple(rec.node_of(o) for o in outs))
    return GraphModule(Module(), g), out
