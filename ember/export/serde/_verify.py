"""Checking a loaded graph before anything runs it: every op's shape rule, applied to the
metadata of its inputs, must accept the arguments and give the recorded result (dtype,
rank, static sizes).  A damaged or hand-edited file fails here with a ValueError naming
the node, instead of failing later inside a kernel."""
import functools
import inspect
import operator

from ..._core.meta import DataDependentShape, TensorMeta
from ..._core.op import Op

__all__ = ["verify_graph", "verify_signature"]


def _is_node(v):
    return hasattr(v, "op") and hasattr(v, "graph")


def _metas(v, where, node):
    if _is_node(v):
        val = v.meta.get("val")
        if val is None:
            raise ValueError(f"{where}: node {node.name} reads {v.name}, which has no metadata")
        return val
    if isinstance(v, tuple) and not hasattr(v, "_fields"):
        return tuple(_metas(x, where, node) for x in v)
    if isinstance(v, list):
        return [_metas(x, where, node) for x in v]
    return v


def _static(s):
    return type(s) is int


def _agrees(rule, recorded):
    if isinstance(recorded, tuple):
        return isinstance(rule, tuple) and len(rule) == len(recorded) and all(
            _agrees(r, m) for r, m in zip(rule, recorded))
    if not isinstance(recorded, TensorMeta) or not isinstance(rule, tuple) or len(rule) != 2:
        return recorded is None
    shape, dtype = rule
    return dtype == recorded.dtype and len(shape) == len(recorded.shape) and all(
        a == b for a, b in zip(shape, recorded.shape) if _static(a) and _static(b))


def _check_getitem(node, where):
    src, i = node.args if len(node.args) == 2 else (None, None)
    if node.kwargs or not _is_node(src) or type(i) is not int:
        raise ValueError(f"{where}: node {node.name}: getitem takes a node and an index")
    val = src.meta.get("val")
    if isinstance(val, tuple) and not 0 <= i < len(val):
        raise ValueError(f"{where}: node {node.name}: output {i} of {src.name}, which has "
                         f"{len(val)}")


@functools.lru_cache(maxsize=None)
def _signature(kernel):
    try:
        return inspect.signature(kernel)
    except (TypeError, ValueError):
        return None


def _check_call(op, node, where):
    """The arguments fit the kernel's signature (``kernel(xp, *inputs, **params)``), where
    it spells its parameters out."""
    sig = _signature(op.kernel)
    if sig is None:
        return
    try:
        sig.bind(None, *node.args, **node.kwargs)
    except TypeError as e:
        raise ValueError(f"{where}: node {node.name} ({op.name}): {e}") from None


def _check_size_node(node, where):
    """``sym_size(tensor, dim)`` and the ``operator`` arithmetic over sizes."""
    from ._graph import SIZE_OPS, _sym_size
    args = node.args
    if node.target is _sym_size():
        ok = len(args) == 2 and _is_node(args[0]) and \
            isinstance(args[0].meta.get("val"), TensorMeta) and type(args[1]) is int and \
            -args[0].meta["val"].ndim <= args[1] < args[0].meta["val"].ndim
    elif node.target in SIZE_OPS.values():
        arity = 1 if node.target is operator.neg else 2
        ok = len(args) == arity and all(
            (_is_node(a) and a.meta.get("val") is int) or type(a) is int for a in args)
    else:
        return  # grad-mode switches take a bool and give nothing
    if node.kwargs or not ok:
        raise ValueError(f"{where}: node {node.name}: malformed size computation "
                         f"{node.target.__name__}{tuple(args)}")


def verify_graph(gm, where):
    """Raise ValueError at the first node whose arguments its op's shape rule rejects, or
    whose recorded metadata the rule contradicts."""
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        if node.target is operator.getitem:
            _check_getitem(node, where)
            continue
        op = node.target
        if not isinstance(op, Op):
            _check_size_node(node, where)
            continue
        if op.shape is None:
            continue
        _check_call(op, node, where)
        args = _metas(node.args, where, node)
        kwargs = {k: _metas(v, where, node) for k, v in node.kwargs.items()}
        try:
            rule = op.shape(*args, **kwargs)
        except DataDependentShape:
            continue
        except Exception as e:  # noqa: BLE001 - any rejection is the file's fault
            raise ValueError(f"{where}: node {node.name} ({op.name}) does not type-check: "
                             f"{type(e).__name__}: {e}") from None
        if not _agrees(rule, node.meta.get("val")):
            raise ValueError(f"{where}: node {node.name} ({op.name}) records "
                             f"{node.meta.get('val')} but its inputs give {rule}")


def verify_signature(ep, where):
    """The specs name weights the file holds, and as many graph inputs and outputs as the
    graph has."""
    from ..graph_signature import InputKind, OutputKind
    sig = ep.graph_signature
    placeholders = [n for n in ep.graph.nodes if n.op == "placeholder"]
    graph_inputs = [s for s in sig.input_specs if not hasattr(s.arg, "value")]
    if len(graph_inputs) != len(placeholders):
        raise ValueError(f"{where}: {len(graph_inputs)} input specs for {len(placeholders)} "
                         f"placeholders")
    for s, p in zip(graph_inputs, placeholders):
        if getattr(s.arg, "name", None) != p.name:
            raise ValueError(f"{where}: input spec {s.arg} does not name placeholder {p.name}")
        if s.kind in (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR) and \
                s.target not in ep.state_dict and s.target not in ep.constants:
            raise ValueError(f"{where}: input {p.name} reads {s.target!r}, which the file's "
                             f"state_dict and constants do not hold")
    out = next(n for n in ep.graph.nodes if n.op == "output")
    outs = out.args[0] if isinstance(out.args[0], (tuple, list)) else (out.args[0],)
    graph_outputs = [s for s in sig.output_specs if not hasattr(s.arg, "value")]
    if len(graph_outputs) != len(outs):
        raise ValueError(f"{where}: {len(graph_outputs)} output specs for {len(outs)} graph "
                         f"outputs")
    for s in graph_outputs:
        if s.kind is OutputKind.BUFFER_MUTATION and s.target not in ep.state_dict and \
                s.target not in ep.constants:
            raise ValueError(f"{where}: output mutates buffer {s.target!r}, which the file "
                             f"does not hold")
