"""A graph as JSON and back: nodes in order, each with its op name (an `ember._core.op.REGISTRY`
key), arguments (node references and tagged literals) and metadata."""
import operator

from ..._core.op import REGISTRY, Op
from ..._dynamo import symbolic
from ...fx import Graph, GraphModule
from ._verify import verify_graph
from ._values import decode_meta, decode_value, encode_meta, encode_size, encode_value

__all__ = ["encode_graph", "decode_graph", "lookup_op"]

# targets that are not Ops: the tuple projection after a multi-output op, grad-mode
# switches the compile capture records, and the size arithmetic of exported graphs
# (``sym_size(x, dim)`` and ``operator`` nodes over it, `ember.export.sizes`)
_GETITEM = "getitem"
_SET_GRAD = "set_grad_enabled"
SIZE_OPS = {"operator.add": operator.add, "operator.sub": operator.sub,
            "operator.mul": operator.mul, "operator.floordiv": operator.floordiv,
            "operator.mod": operator.mod, "operator.neg": operator.neg,
            "sym_max": symbolic.sym_max, "sym_min": symbolic.sym_min}
_SIZE_NAMES = {f: n for n, f in SIZE_OPS.items()}


def _sym_size():
    from ..sizes import sym_size
    return sym_size


def _value_targets():
    """The nodes of values read from inputs (``item_at``, the unbacked ``u0``) and of the
    runtime checks of what the program assumed of them (``assert_size``)."""
    from ..sizes import assert_size, item_at
    return {"item_at": item_at, "assert_size": assert_size}


def _set_grad_target():
    from ..._dynamo.graph_build import set_grad_enabled
    return set_grad_enabled


# operators declared on first use: the function that declares each
def _declare_view_dtype():
    from ...ops.views import _view_dtype_op
    return _view_dtype_op()


_LAZY = {"view_dtype": _declare_view_dtype}


def lookup_op(name, where):
    """The registered Op called ``name``; an unknown name is a RuntimeError naming it."""
    if isinstance(name, str) and name not in REGISTRY and name in _LAZY:
        _LAZY[name]()
    op = REGISTRY.get(name) if isinstance(name, str) else None
    if op is None:
        raise RuntimeError(f"{where}: the program calls operator {name!r}, which this version "
                           f"of ember does not have (not in ember._core.op.REGISTRY)")
    return op


def _target_name(node):
    t = node.target
    if isinstance(t, Op):
        return getattr(t, "name")
    if t is operator.getitem:
        return _GETITEM
    if getattr(t, "__name__", None) == _SET_GRAD and "_dynamo" in getattr(t, "__module__", ""):
        return _SET_GRAD
    if t is _sym_size():
        return "sym_size"
    for name, fn in _value_targets().items():
        if t is fn:
            return name
    if t in _SIZE_NAMES:
        return _SIZE_NAMES[t]
    raise ValueError(f"ember.export.save: node {node.name} calls {t!r}, which is not an ember "
                     f"operator; only graphs of ember ops can be saved")


def encode_graph(graph, ctx=None):
    """The JSON form of an fx Graph of ember ops (placeholders, call_function, output);
    ``ctx``: how array literals and sub-graphs are encoded (`encode_value`)."""
    nodes = []

    def name_of(v):
        return v.name if hasattr(v, "op") and hasattr(v, "graph") else None

    for n in graph.nodes:
        entry = {"name": n.name, "op": n.op}
        if n.op == "placeholder":
            pass
        elif n.op == "call_function":
            entry["target"] = _target_name(n)
            entry["args"] = [encode_value(a, name_of, ctx) for a in n.args]
            entry["kwargs"] = {k: encode_value(v, name_of, ctx) for k, v in n.kwargs.items()}
        elif n.op == "output":
            entry["args"] = [encode_value(a, name_of, ctx) for a in n.args]
        else:
            raise ValueError(f"ember.export.save: node {n.name} is a {n.op!r} node; a program "
                             f"file holds placeholder, call_function and output nodes only")
        val = n.meta.get("val")
        meta = encode_meta(val)
        if meta is not None:
            entry["meta"] = meta
        elif val is int:  # a size computed in the graph
            entry["meta"] = "int"
        elif isinstance(val, int) and not isinstance(val, bool):  # a sub-graph's size input
            entry["meta"] = {"int": encode_size(val)}
        stack = n.meta.get("nn_module_stack")
        if stack:
            entry["nn_module_stack"] = [[k, fqn, ty if isinstance(ty, str) else ty.__qualname__]
                                        for k, (fqn, ty) in stack.items()]
        nodes.append(entry)
    return nodes


def _decode_stack(obj, where):
    """``[[key, fqn, class name], ...]`` (outermost first) back to the node's dict."""
    if not isinstance(obj, list) or not all(
            isinstance(t, list) and len(t) == 3 and all(isinstance(x, str) for x in t)
            for t in obj):
        raise ValueError(f"{where}: nn_module_stack must be a list of [key, fqn, class name] "
                         f"string triples, got {obj!r:.100}")
    return {k: (fqn, ty) for k, fqn, ty in obj}


def decode_graph(nodes_json, hints, where, ctx=None):
    """An fx GraphModule built from `encode_graph`'s JSON; ``hints`` bind the size symbols
    to example values (the SymInts of the metadata need one)."""
    if not isinstance(nodes_json, list):
        raise ValueError(f"{where}: the graph's nodes must be a list")
    graph = Graph()
    nodes = {}
    for i, e in enumerate(nodes_json):
        at = f"{where}, node {i}"
        if not isinstance(e, dict) or not isinstance(e.get("name"), str) or \
                not e["name"].isidentifier():
            raise ValueError(f"{at}: malformed node {e!r:.200}")
        name, kind = e["name"], e.get("op")
        if name in nodes:
            raise ValueError(f"{at}: node name {name!r} is defined twice")
        args = e.get("args", [])
        kwargs = e.get("kwargs", {})
        if not isinstance(args, list) or not isinstance(kwargs, dict):
            raise ValueError(f"{at}: args must be a list and kwargs an object")
        if kind == "placeholder":
            node = graph.placeholder(name)
        elif kind == "call_function":
            t = e.get("target")
            if t == _GETITEM:
                target = operator.getitem
            elif t == _SET_GRAD:
                target = _set_grad_target()
            elif t == "sym_size":
                target = _sym_size()
            elif t in ("item_at", "assert_size"):
                target = _value_targets()[t]
            elif t in SIZE_OPS:
                target = SIZE_OPS[t]
            else:
                target = lookup_op(t, at)
            node = graph.create_node(
                "call_function", target,
                tuple(decode_value(a, nodes, hints, at, ctx) for a in args),
                {str(k): decode_value(v, nodes, hints, at, ctx) for k, v in kwargs.items()},
                name=name)
        elif kind == "output":
            if len(args) != 1:
                raise ValueError(f"{at}: the output node takes one argument")
            node = graph.output(decode_value(args[0], nodes, hints, at, ctx))
        else:
            raise ValueError(f"{at}: unknown node kind {kind!r}")
        if e.get("meta") == "int":
            node.meta["val"] = int
        elif "meta" in e:
            node.meta["val"] = decode_meta(e["meta"], hints, at)
        if "nn_module_stack" in e:
            node.meta["nn_module_stack"] = _decode_stack(e["nn_module_stack"], at)
        nodes[name] = node
    if not nodes_json or nodes_json[-1].get("op") != "output":
        raise ValueError(f"{where}: the graph does not end with an output node")
    gm = GraphModule({}, graph)
    verify_graph(gm, where)
    return gm
