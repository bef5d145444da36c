"""A pending graph as an op-level ``ember.fx`` GraphModule: what backends receive.

Placeholders come first, one per tensor input (``meta["val"]`` a TensorMeta whose dynamic
sizes are `SymInt` with a symbol as expression), then one per Python number made an input
(``meta["val"]`` its type).  Each op is a ``call_function`` node on the `Op` with the
kernel's positional args and params; an op with several outputs is followed by
``operator.getitem`` nodes.  Where grad mode changes between ops (a ``no_grad`` block
inside the region), a ``set_grad_enabled`` node says so, for backends that run the graph
with autograd.
"""
import operator

from .._core.meta import TensorMeta
from ..fx import Graph, GraphModule
from ..nn.modules.module import Module
from .symbolic import SymInt, render

__all__ = ["build_graph_module", "set_grad_enabled", "symbolic_value"]


def set_grad_enabled(mode):
    """Graph node: grad mode from here on (``torch._C._set_grad_enabled`` in torch's graphs)."""
    from .._core.state import STATE
    STATE.grad_enabled = bool(mode)


def symbolic_value(v, leaf_values, symbols):
    """``v`` (a param or scalar) with SymInts rendered for the graph: a SymInt over symbols
    (its ``expr`` a string) or a plain int."""
    t = type(v)
    if isinstance(v, SymInt):
        if type(v.expr) is not tuple:
            return v
        r = render(v.expr, leaf_values, symbols)
        return r if type(r) is int else SymInt(int(v), r)
    if isinstance(v, (tuple, list)):
        return (tuple if isinstance(v, tuple) else list)(
            symbolic_value(x, leaf_values, symbols) for x in v)
    if t is dict:
        return {k: symbolic_value(x, leaf_values, symbols) for k, x in v.items()}
    r = getattr(v, "_ember_render_", None)
    if r is not None:  # a param holding sizes inside (a higher-order op's Subgraph)
        return r(lambda x: symbolic_value(x, leaf_values, symbols))
    return v


def _sym_shape(shape, symbols, values=None):
    """``shape`` with sizes over symbols as SymInts whose expr names them; with ``values``
    (leaf values), computed sizes too (``(s0 * 2)``), else those are ints."""
    out = []
    for s in shape:
        if isinstance(s, SymInt) and s.expr in symbols:
            out.append(SymInt(int(s), symbols[s.expr]))
        elif values is not None and isinstance(s, SymInt) and type(s.expr) is tuple:
            r = render(s.expr, values, symbols)
            out.append(r if type(r) is int else SymInt(int(s), r))
        else:
            out.append(int(s))
    return tuple(out)


def build_graph_module(trace, spec, grad_nodes, input_names=None, computed_sizes=False):
    """The GraphModule of ``spec`` (see `ember._dynamo.graph_key.spec_of`); with
    ``computed_sizes``, metadata shapes keep sizes computed from symbols symbolic."""
    from .._core.state import STATE
    g = Graph()
    leaf_values = trace.session.leaf_values
    symbols = spec.symbols
    env = {}
    for n, k in enumerate(spec.inputs):
        name = (input_names or {}).get(k) or f"arg{n}"
        p = g.placeholder(name)
        shape, dtype, rg = trace.input_metas[k]
        p.meta["val"] = TensorMeta(_sym_shape(shape, symbols), dtype)
        p.meta["requires_grad"] = rg
        env[("i", k)] = p
    for name, lf in spec.size_inputs:
        p = g.placeholder(name)
        p.meta["val"] = SymInt(leaf_values[lf], name)
    for n, pos in enumerate(spec.scalar_inputs):
        p = g.placeholder(f"scalar{n}")
        x = trace.scalars[pos]
        p.meta["val"] = int if isinstance(x, SymInt) else type(x)
        env[("s", pos)] = p
    grad = STATE.grad_enabled
    for i in spec.ops:
        rec = trace.ops[i]
        if grad_nodes and rec.grad != grad:
            g.call_function(set_grad_enabled, (rec.grad,))
            grad = rec.grad
        args = []
        for r in rec.args:
            if r[0] in ("v", "i") or r in env:
                args.append(env[r])
            elif r[0] == "s":
                args.append(symbolic_value(trace.scalars[r[1]], leaf_values, symbols))
            else:
                args.append(r[1])
        params = {k: symbolic_value(v, leaf_values, symbols) for k, v in rec.params.items()}
        node = g.create_node("call_function", rec.op, tuple(args), params,
                             name=rec.op.name)
        metas = [trace.metas[rec.out + j] for j in range(rec.n_out)]
        vals = [TensorMeta(_sym_shape(s, symbols, leaf_values if computed_sizes else None), d)
                for s, d in metas]
        if rec.op.n_out == 1:
            node.meta["val"] = vals[0]
            env[("v", rec.out)] = node
        else:
            node.meta["val"] = tuple(vals)
            for j in range(rec.n_out):
                item = g.call_function(operator.getitem, (node, j))
                item.meta["val"] = vals[j]
                env[("v", rec.out + j)] = item
    if grad_nodes and grad != STATE.grad_enabled:
        g.call_function(set_grad_enabled, (STATE.grad_enabled,))
    g.output(tuple(env[("v", j)] for j in spec.outputs))
    return GraphModule(Module(), g)
