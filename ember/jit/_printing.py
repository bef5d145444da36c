"""How programs print: ``.graph`` in TorchScript's IR style and ``.code`` as Python-like source.

``.graph`` is a `ProgramGraph`: its ``str`` reads like torch's IR (``%y : Float(5, 5) =
ember::neg(%x)``), one line per op with the output's dtype and shape (``s0`` for a dynamic
size); subgraphs (the branches of ``cond``, the body of ``while_loop``) print after it.
``nodes()``, ``inputs()`` and ``outputs()`` iterate as torch's Graph methods do (over
``ember.fx`` nodes); everything else is the underlying ``ember.fx.Graph``'s
(``fx_graph``, ``find_nodes``, ...).
``.code`` is the method as Python over ember's ops (``ember.ops.neg(x)``), with
parameters and buffers read as ``self.<name>`` and lifted constants as ``CONSTANTS.<name>``.
"""
import operator

import numpy as np

from .._core.op import Op

__all__ = ["ProgramGraph", "program_code"]


def _type_str(val):
    if isinstance(val, tuple):
        return "(" + ", ".join(_type_str(v) for v in val) + ")"
    if isinstance(val, int):
        return "int"
    shape = getattr(val, "shape", None)
    dtype = getattr(val, "dtype", None)
    if shape is None:
        return getattr(val, "__name__", "Tensor")
    dims = ", ".join(getattr(s, "expr", None) if isinstance(getattr(s, "expr", None), str)
                     else str(int(s)) for s in shape)
    return f"{_dtype_name(dtype)}({dims})"


def _dtype_name(dtype):
    if dtype is None:
        return "Tensor"
    return str(getattr(dtype, "name", dtype)).rsplit(".", 1)[-1].capitalize()


def _target_name(t):
    if isinstance(t, Op):
        return "ember::" + t.name
    if t is operator.getitem:
        return "prim::TupleIndex"
    mod = getattr(t, "__module__", "") or ""
    return f"{mod.rsplit('.', 1)[-1]}::{getattr(t, '__name__', repr(t))}"


def _arg_str(a):
    if hasattr(a, "op") and hasattr(a, "name") and hasattr(a, "users"):
        return "%" + a.name
    if isinstance(a, (tuple, list)):
        inner = ", ".join(_arg_str(x) for x in a)
        return f"[{inner}]"
    expr = getattr(a, "expr", None)
    if isinstance(expr, str):
        return expr
    return repr(a)


def graph_text(graph, name="graph", prefix=""):
    lines = []
    subs = []
    inputs = [n for n in graph.nodes if n.op == "placeholder"]
    header = ",\n      ".join(f"%{n.name} : {_type_str(n.meta.get('val'))}" for n in inputs)
    lines.append(f"{name}({header}):")
    for n in graph.nodes:
        if n.op == "placeholder":
            continue
        if n.op == "output":
            outs = n.args[0]
            outs = outs if isinstance(outs, (tuple, list)) else (outs,)
            lines.append(f"  return ({', '.join(_arg_str(o) for o in outs)})")
            continue
        if n.op == "get_attr":
            lines.append(f"  %{n.name} : Graph = prim::GetAttr[name=\"{n.target}\"]()")
            subs.append((n.target, None))
            continue
        args = [_arg_str(a) for a in n.args]
        for k, v in n.kwargs.items():
            if _subgraph_module(v) is not None:
                args.append(f"{k}=%{prefix}{n.name}.{k}")
                subs.append((f"{prefix}{n.name}.{k}", _subgraph_module(v)))
            else:
                args.append(f"{k}={_arg_str(v)}")
        lines.append(f"  %{n.name} : {_type_str(n.meta.get('val'))} = "
                     f"{_target_name(n.target)}({', '.join(args)})")
    return "\n".join(lines) + "\n", subs


class ProgramGraph:
    """A program's graph as ``.graph`` shows it (see the module docstring)."""

    def __init__(self, graph_module):
        self._gm = graph_module
        self.fx_graph = graph_module.graph

    def __getattr__(self, name):
        return getattr(self.__dict__["fx_graph"], name)

    # torch's Graph API: methods returning the graph's nodes, inputs and outputs
    def nodes(self):
        return iter([n for n in self.fx_graph.nodes if n.op not in ("placeholder", "output")])

    def inputs(self):
        return iter([n for n in self.fx_graph.nodes if n.op == "placeholder"])

    def outputs(self):
        out = self.fx_graph.output_node().args[0]
        return iter(out if isinstance(out, (tuple, list)) else (out,))

    def __str__(self):
        text, subs = graph_text(self.fx_graph)
        seen = set()
        while subs:
            target, sub = subs.pop(0)
            if target in seen:
                continue
            seen.add(target)
            if sub is None:
                sub = _get_attr(self._gm, target)
            if hasattr(sub, "graph"):
                t, more = graph_text(sub.graph, name=target, prefix=target + ".")
                text += "\n" + t
                subs += more
        return text

    __repr__ = __str__


def _subgraph_module(v):
    """The GraphModule of a higher-order op's function param (a Subgraph), else None."""
    gm = getattr(type(v), "graph_module", None)
    return v.graph_module if gm is not None else None


def _get_attr(mod, target):
    for part in target.split("."):
        mod = getattr(mod, part)
    return mod


def _state_expr(name, kind="parameter"):
    parts = name.split(".")
    if all(p.isidentifier() for p in parts):
        return "self." + name
    return f"self.get_{'buffer' if kind == 'buffer' else 'parameter'}({name!r})"


def _py_arg(a, names):
    if hasattr(a, "op") and hasattr(a, "users"):
        return names.get(a.name, a.name)
    if isinstance(a, tuple):
        inner = ", ".join(_py_arg(x, names) for x in a)
        return f"({inner},)" if len(a) == 1 else f"({inner})"
    if isinstance(a, list):
        return "[" + ", ".join(_py_arg(x, names) for x in a) + "]"
    expr = getattr(a, "expr", None)
    if isinstance(expr, str):
        return expr
    if isinstance(a, np.dtype) or type(a).__name__ == "dtype":
        return "ember." + str(getattr(a, "name", a)).rsplit(".", 1)[-1]
    return repr(a)


def _target_py(t):
    if isinstance(t, Op):
        return "ember.ops." + t.name
    mod = getattr(t, "__module__", "") or ""
    name = getattr(t, "__name__", repr(t))
    return f"{mod}.{name}" if mod and mod != "builtins" else name


def _body(graph, names, indent, gm, out, mutations=()):
    for n in graph.nodes:
        if n.op in ("placeholder",):
            continue
        if n.op == "output":
            res = n.args[0]
            res = res if isinstance(res, (tuple, list)) else (res,)
            for buf, r in zip(mutations, res):
                out.append(f"{indent}{_state_expr(buf, 'buffer')}.copy_({_py_arg(r, names)})")
            vals = [_py_arg(r, names) for r in res[len(mutations):]]
            ret = vals[0] if len(vals) == 1 else "(" + ", ".join(vals) + ")"
            out.append(f"{indent}return {ret}")
            continue
        if n.op == "get_attr":
            sub = _get_attr(gm, n.target)
            if hasattr(sub, "graph"):
                _function(sub, n.name, indent, out)
            else:
                out.append(f"{indent}{n.name} = self.{n.target}")
            continue
        if n.target is operator.getitem:
            out.append(f"{indent}{n.name} = {_py_arg(n.args[0], names)}[{n.args[1]!r}]")
            continue
        args = [_py_arg(a, names) for a in n.args]
        for k, v in n.kwargs.items():
            sub = _subgraph_module(v)
            if sub is not None:  # a branch or loop body: a nested function before the call
                fname = f"{n.name}_{k}"
                _function(sub, fname, indent, out)
                args.append(f"{k}={fname}")
            else:
                args.append(f"{k}={_py_arg(v, names)}")
        out.append(f"{indent}{n.name} = {_target_py(n.target)}({', '.join(args)})")


def _function(gm, name, indent, out):
    params = [n.name for n in gm.graph.nodes if n.op == "placeholder"]
    out.append(f"{indent}def {name}({', '.join(params)}):")
    _body(gm.graph, {}, indent + "    ", gm, out)


def program_code(program, name="forward", method=True):
    """The ``.code`` of a `Program` (see the module docstring)."""
    gm = program.graph_module
    names = {}
    user = []
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for node, (kind, target) in zip(placeholders, program.input_specs):
        if kind in ("parameter", "buffer"):
            names[node.name] = _state_expr(target, kind)
        elif kind == "constant":
            names[node.name] = "CONSTANTS." + target
        else:
            user.append(f"{node.name}: {_type_str(node.meta.get('val'))}")
    first = ["self"] if method else []
    out = [f"def {name}(" + ",\n    ".join(first + user) + "):"]
    _body(gm.graph, names, "    ", gm, out, program.buffer_mutations)
    return "\n".join(out) + "\n"
