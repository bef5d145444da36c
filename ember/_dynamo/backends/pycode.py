"""Run an op-level graph fast: the graph becomes one Python function, made once.

``gm(*inputs)`` would work too, but its params are constants: a graph with symbolic sizes
must compute ``view(x, shape=(s0*2, 4))`` from this call's sizes.  `python_runner` binds
each symbol from the placeholder that defines it (``s0 = arg0.shape[0]``), writes the
params that hold symbols as expressions and every other param as a constant, and calls
the ops through the dispatcher (so autograd records them when the graph runs with grad).
"""
import operator

from ...fx.node import Node
from ..symbolic import SymInt

__all__ = ["python_runner", "python_source"]


def _expr(v, consts):
    """Source for param value ``v``: symbols as expressions, anything else a constant."""
    if isinstance(v, SymInt):
        return str(v.expr) if type(v.expr) is str else repr(int(v))
    t = type(v)
    if isinstance(v, (tuple, list)):
        if any(_has_sym(x) for x in v):
            inner = ", ".join(_expr(x, consts) for x in v)
            return f"({inner},)" if isinstance(v, tuple) else f"[{inner}]"
    if t is dict and any(_has_sym(x) for x in v.values()):
        return "{" + ", ".join(f"{k!r}: {_expr(x, consts)}" for k, x in v.items()) + "}"
    name = f"_c{len(consts)}"
    consts[name] = v
    return name


def _has_sym(v):
    if isinstance(v, SymInt):
        return type(v.expr) is str
    if isinstance(v, (tuple, list)):
        return any(_has_sym(x) for x in v)
    if type(v) is dict:
        return any(_has_sym(x) for x in v.values())
    return False


def python_source(gm):
    """(source, globals) of a function running ``gm``'s graph."""
    consts = {}
    names = {}
    lines = []
    params = []
    bound = set()
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            params.append(node.name)
            names[node] = node.name
            val = node.meta.get("val")
            if isinstance(val, SymInt) and type(val.expr) is str and val.expr != node.name:
                lines.append(f"    {val.expr} = int({node.name})")
                bound.add(val.expr)
            for d, s in enumerate(getattr(val, "shape", ())):
                if isinstance(s, SymInt) and type(s.expr) is str and s.expr.isidentifier() \
                        and s.expr not in bound:
                    bound.add(s.expr)
                    lines.append(f"    {s.expr} = {node.name}._data.shape[{d}]")
        elif node.op == "call_function":
            fn = f"_f_{node.name}"
            consts[fn] = node.target
            args = ", ".join(names[a] if isinstance(a, Node) else _expr(a, consts)
                             for a in node.args)
            if node.target is operator.getitem:
                lines.append(f"    {node.name} = {names[node.args[0]]}[{node.args[1]}]")
            else:
                kw = ", ".join(f"{k}={_expr(v, consts)}" for k, v in node.kwargs.items())
                sep = ", " if args and kw else ""
                lines.append(f"    {node.name} = {fn}({args}{sep}{kw})")
            names[node] = node.name
        elif node.op == "output":
            outs = node.args[0]
            lines.append("    return (" + "".join(names[o] + ", " for o in outs) + ")")
    src = f"def run({', '.join(params)}):\n" + "\n".join(lines or ["    return ()"]) + "\n"
    return src, consts


def python_runner(gm):
    """A function ``run(*inputs) -> tuple of outputs`` for ``gm``'s graph."""
    src, consts = python_source(gm)
    code = compile(src, f"<ember graph {id(gm):x}>", "exec")
    namespace = dict(consts)
    exec(code, namespace)
    run = namespace["run"]
    run.__ember_source__ = src
    return run
