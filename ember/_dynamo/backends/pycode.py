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

__all__ = ["python_runner", "python_source", "array_runner"]


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


def _bindings(node, array, bound):
    """Lines binding the symbols placeholder ``node`` defines: a size input's symbol, or
    the symbolic sizes of a tensor input (``array`` is the expression of its array)."""
    val = node.meta.get("val")
    out = []
    if isinstance(val, SymInt) and type(val.expr) is str and val.expr != node.name:
        out.append(f"    {val.expr} = int({node.name})")
        bound.add(val.expr)
    if array is not None:
        for d, s in enumerate(getattr(val, "shape", ())):
            if isinstance(s, SymInt) and type(s.expr) is str and s.expr.isidentifier() \
                    and s.expr not in bound:
                bound.add(s.expr)
                out.append(f"    {s.expr} = {array}.shape[{d}]")
    return out


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
            lines.extend(_bindings(node, f"{node.name}._data", bound))
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


def _is_op(target):
    from ..._core.op import Op
    return isinstance(target, Op)


def array_runner(gm):
    """Like `python_runner`, for graphs run without autograd: the ops' kernels are called
    on the arrays directly (no Tensor per intermediate, no dispatch), as the dispatcher's
    fast path would call them, and elementwise ops on float arrays call the NumPy ufunc
    their kernel would (`direct_calls`).  A kernel error reruns the graph through the dispatcher,
    which raises it as eager mode does."""
    import numpy as np
    from ..._core.tensor import wrap
    from .direct_calls import direct_call
    consts = {"_np": np, "_wrap": wrap, "_arr": _as_array}
    names = {}
    lines = []
    params = []
    bound = set()
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            params.append(node.name)
            val = node.meta.get("val")
            if isinstance(val, SymInt) or not hasattr(val, "shape"):
                names[node] = node.name
                lines.extend(_bindings(node, None, bound))
                continue
            lines.append(f"    a_{node.name} = {node.name}._data")
            names[node] = f"a_{node.name}"
            lines.extend(_bindings(node, f"a_{node.name}", bound))
        elif node.op == "call_function":
            direct = _is_op(node.target) and direct_call(node, names, consts)
            if node.target is operator.getitem:
                lines.append(f"    {node.name} = {names[node.args[0]]}[{node.args[1]}]")
            elif _is_op(node.target) and direct:
                lines.append(f"    {node.name} = {direct}")
            elif _is_op(node.target):
                fn = f"_k_{node.name}"
                consts[fn] = node.target.kernel
                args = ", ".join(names[a] if isinstance(a, Node) else _expr(a, consts)
                                 for a in node.args)
                kw = ", ".join(f"{k}={_expr(v, consts)}" for k, v in node.kwargs.items())
                call = f"{fn}(_np{', ' + args if args else ''}{', ' + kw if kw else ''})"
                if node.target.n_out == 1:
                    lines.append(f"    {node.name} = _arr({call})")
                else:
                    lines.append(f"    {node.name} = tuple(_arr(r) for r in {call})")
            else:
                return python_runner(gm)  # a node that is not an op: the general runner
            names[node] = node.name
        elif node.op == "output":
            outs = node.args[0]
            lines.append("    return (" + "".join(f"_wrap({names[o]}), " for o in outs) + ")")
    src = f"def run_arrays({', '.join(params)}):\n" + "\n".join(lines or ["    return ()"]) + "\n"
    namespace = dict(consts)
    exec(compile(src, f"<ember array graph {id(gm):x}>", "exec"), namespace)
    fast = namespace["run_arrays"]
    slow = []

    from ..._core.state import STATE

    def run(*inputs):
        if not STATE.intercept:  # a mode around the call (autocast, a profiler) sees the ops
            try:
                return fast(*inputs)
            except Exception:
                pass
        if not slow:
            slow.append(python_runner(gm))
        return slow[0](*inputs)
    run.__ember_source__ = src
    return run


def _as_array(r):
    import numpy as np
    return r if type(r) is np.ndarray else np.asanyarray(r)
