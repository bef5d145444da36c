"""An ember export graph -> an ONNX ModelProto.

The graph (placeholders, ``call_function`` nodes on ember `Op`s, ``getitem`` of multi-output
ops, one output of a flat tuple; see ``ember.export``) is lowered in a copy, in these steps:

1. sizes: the ``sym_size``/arithmetic nodes of an exported graph become SymInts in the op
   params again, and each op's metadata is recomputed with its shape rule, so every size
   that varies is symbolic (`_unlift_sizes`, `_propagate_metas`);
2. decomposition: an op with no ONNX lowering is replaced by its decomposition into
   primitives (`ember._inductor.passes.decompose_symbolic`, the rewrite the compiler uses,
   which keeps symbolic sizes symbolic);
3. constant folding: what depends on weights only is computed now (`_fold`);
4. lowering: the nodes the user outputs need, one by one, through the table of
   `_registry.LOWERINGS` (ops with an ONNX counterpart -- matmul, linear, softmax, the norm
   statistics, LSTM/GRU cells, attention, pooling -- stay one or a few ONNX nodes).  An op
   that neither lowers nor decomposes fails with `UnsupportedOperatorError` naming it and
   why (`_unsupported`).
"""
import operator
import re

from .._core.meta import TensorMeta
from .._core.op import Op
from .._dynamo.random_ops import draws_random
from .._dynamo.symbolic import sym_max, sym_min
from .._inductor.passes.decompose_symbolic import decompose_symbolic
from ..fx import Graph
from ..fx.node import map_arg
from . import (_control_flow, _ops_elementwise, _ops_indexing, _ops_nn,  # noqa: F401
               _ops_special, _ops_tensor)  # (register their lowerings)
from ._builder import Builder, Value, onnx_dtype
from ._fold import fold_constants, needed_nodes
from ._registry import LOWERINGS, LoweringContext
from ._unsupported import reason_of
from .errors import OnnxExporterError, UnsupportedOperatorError

__all__ = ["GraphInput", "GraphOutput", "convert", "DEFAULT_OPSET", "MIN_OPSET"]

DEFAULT_OPSET = 18
MIN_OPSET = 18   # the lowerings use opset-18 forms (Reduce* axes as inputs, Pad, BitwiseNot)

_MAX_ROUNDS = 16


class GraphInput:
    """A placeholder that becomes an ONNX graph input (``array`` None) or initializer."""

    def __init__(self, node, name, array=None, dim_names=None):
        self.node, self.name, self.array = node, name, array
        self.dim_names = dim_names or {}


class GraphOutput:
    def __init__(self, index, name, dim_names=None):
        self.index, self.name = index, name
        self.dim_names = dim_names or {}


def _is_op_node(n):
    return n.op == "call_function" and isinstance(n.target, Op)


def _is_random(op):
    return draws_random(op) or op.category == "distributions" or op.name == "_rng_uniform"


def _needs_decomposition(n):
    op = n.target
    # a random op's decomposition would freeze one draw into the model
    return _is_op_node(n) and op.name not in LOWERINGS and op.decomp is not None and \
        not _is_random(op) and not n.meta.get("onnx_no_decompose")


def decompose_unlowered(graph):
    """Replace, in place, every op node of ``graph`` with no ONNX lowering by its
    decomposition, until none is left that can be decomposed."""
    for _ in range(_MAX_ROUNDS):
        todo = [n for n in graph.nodes if _needs_decomposition(n)]
        if not todo:
            return
        for node in todo:
            try:
                decompose_symbolic(graph, node)
            except Exception as e:  # noqa: BLE001 - reported with the op when lowering
                node.meta["onnx_no_decompose"] = f"{type(e).__name__}: {e}"


def _metas(v):
    return v if isinstance(v, tuple) else (v,)


def _check_meta(node, opset):
    for m in _metas(node.meta.get("val")):
        if isinstance(m, TensorMeta) and m.dtype.is_complex:
            name = getattr(node.target, "name", node.name)
            raise UnsupportedOperatorError(
                name, opset, None, node=node.name,
                reason="complex tensors have no ONNX lowering here (ONNX Runtime computes "
                       "almost no operator on complex64/complex128)")


def convert(graph, inputs, outputs, *, opset=DEFAULT_OPSET, graph_name="main_graph",
            doc_string="", fold=True):
    """The ModelProto of ``graph`` (an ember.fx Graph, not modified) with the placeholders
    described by ``inputs`` (`GraphInput`, in placeholder order) and the output tuple's
    elements ``outputs`` (`GraphOutput`).  ``fold``: compute what depends on weights
    only once, here, as initializers (`_fold`)."""
    import onnx
    from onnx import helper
    graph, val_map = _copy(graph)
    inputs = [GraphInput(val_map[i.node], i.name, i.array, i.dim_names) for i in inputs]
    _unlift_sizes(graph)
    _propagate_metas(graph)
    decompose_unlowered(graph)
    b = Builder(opset)
    env = {}
    graph_inputs, sym_names = [], {}
    for gi in inputs:
        meta = gi.node.meta.get("val")
        if not isinstance(meta, TensorMeta):
            raise OnnxExporterError(f"ember.onnx.export: the graph input {gi.node.name!r} is not "
                                    f"a tensor ({meta!r}); only tensor inputs can be exported")
        b.reserve(gi.name)
        v = Value(gi.name, meta.shape, meta.dtype)
        env[gi.node] = v
        if gi.array is not None:
            b.initializer(gi.name, gi.array)
            continue
        b.bind_symbols(v)
        dims = []
        for i, d in enumerate(meta.shape):
            if i in gi.dim_names:
                dims.append(gi.dim_names[i])
                if not b.is_static(d):
                    sym_names.setdefault(str(getattr(d, "expr", d)), gi.dim_names[i])
            elif b.is_static(d):
                dims.append(int(d))
            else:
                dims.append(_dim_text(d))
        graph_inputs.append(helper.make_tensor_value_info(gi.name, onnx_dtype(meta.dtype), dims))
    for go in outputs:
        b.reserve(go.name)
    out_node = graph.output_node()
    results = out_node.args[0]
    results = results if isinstance(results, (tuple, list)) else (results,)
    weights = {gi.node: gi.array for gi in inputs if gi.array is not None}
    folded = fold_constants(graph, weights) if fold else weights
    needed = needed_nodes([results[go.index] for go in outputs], folded)
    for node in graph.nodes:
        if node not in needed or node in weights:
            continue
        if node.op == "placeholder":
            if node not in env:
                raise OnnxExporterError(f"ember.onnx.export: no value for graph input "
                                        f"{node.name!r}")
        elif node in folded:
            _initializer_for(b, env, node, folded[node])
        elif node.op == "call_function":
            _lower_node(b, env, node, opset)
        elif node.op == "get_attr":
            raise OnnxExporterError(f"ember.onnx.export: graph node {node.name!r} reads the "
                                    f"attribute {node.target!r}; export graphs lift attributes "
                                    f"to inputs")
    graph_outputs = []
    for go in outputs:
        v = env.get(results[go.index]) if hasattr(results[go.index], "op") else None
        if not isinstance(v, Value):
            raise OnnxExporterError(f"ember.onnx.export: output {go.index} is not a tensor "
                                    f"({results[go.index]!r})")
        b.nodes.append(helper.make_node("Identity", [v.name], [go.name],
                                        name=b.fresh("n_output")))
        dims = []
        for i, d in enumerate(v.shape):
            if i in go.dim_names:
                dims.append(go.dim_names[i])
            elif b.is_static(d):
                dims.append(int(d))
            else:  # an expression over the inputs' dims, written with their names
                dims.append(re.sub(r"\bs\d+\b", lambda m: sym_names.get(m.group(0), m.group(0)),
                                   _dim_text(d)))
        graph_outputs.append(helper.make_tensor_value_info(go.name, onnx_dtype(v.dtype), dims))
    g = helper.make_graph(b.nodes, graph_name, graph_inputs, graph_outputs, b.initializers,
                          doc_string=doc_string or None)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="ember")
    model.ir_version = min(model.ir_version, _max_ir_version(onnx, opset))
    return model


# size nodes of an exported graph, folded back into SymInts (``max(s0, s1)`` from a
# ``sym_max`` node: the builder computes it with ONNX Max on the int64 sizes)
_SIZE_ARITH = (operator.add, operator.sub, operator.mul, operator.floordiv, operator.mod,
               operator.neg, sym_max, sym_min)


def _unlift_sizes(graph):
    """Put symbolic sizes back into the op params.  An exported graph computes them in nodes
    (``sym_size(x, 0)``, ``mul(sym_size, 4)``); here they become the SymInts they stand for
    (expressions over the input dims' symbols), which the builder computes in the ONNX graph
    from ``Shape`` -- and which decompositions can generalise over."""
    value = {}

    def resolve(a):
        return value[a] if a in value else a

    for node in list(graph.nodes):
        if node.op != "call_function":
            continue
        fn = node.target
        if getattr(fn, "__name__", "") == "sym_size" and not isinstance(fn, Op):
            src, dim = node.args[0], node.args[1]
            value[node] = src.meta["val"].shape[dim]
        elif fn in _SIZE_ARITH and not any(isinstance(a.meta.get("val"), TensorMeta)
                                           for a in node.args if hasattr(a, "meta")):
            value[node] = fn(*[resolve(a) for a in node.args])
        else:
            if any(a in value for a in node.all_input_nodes):
                node.args = map_arg(node.args, resolve)
                node.kwargs = map_arg(node.kwargs, resolve)
    for node in reversed(list(value)):
        if not node.users:
            graph.erase_node(node)


def _initializer_for(b, env, node, value):
    metas = _metas(node.meta.get("val"))
    if isinstance(value, tuple):
        env[node] = tuple(Value(b.initializer(b.fresh(f"{node.name}_{i}"), v), m.shape, m.dtype)
                          for i, (v, m) in enumerate(zip(value, metas)))
    else:
        env[node] = Value(b.initializer(b.fresh(node.name), value), metas[0].shape,
                          metas[0].dtype)


def _propagate_metas(graph):
    """Recompute each op node's output metadata with the op's shape rule, from the input
    placeholders' (symbolic) shapes and the params' SymInts: a size that varies must be
    symbolic here, or a lowering that reads it would bake in the example's value.  A node
    whose rule fails keeps the metadata it has."""
    from .._core.meta import DataDependentShape
    for node in graph.nodes:
        if node.op != "call_function":
            continue
        if node.target is operator.getitem:
            src = node.args[0].meta.get("val")
            if isinstance(src, tuple):
                node.meta["val"] = src[node.args[1]]
            continue
        op = node.target
        if not isinstance(op, Op) or op.shape is None:
            continue
        args = map_arg(node.args, lambda a: a.meta.get("val"))
        if any(hasattr(a, "op") for a in node.all_input_nodes
               if not isinstance(a.meta.get("val"), TensorMeta)):
            continue
        try:
            r = op.shape(*args, **node.kwargs)
        except (DataDependentShape, Exception):  # noqa: BLE001 - keep the captured metadata
            continue
        old = node.meta.get("val")
        if op.n_out == 1 and isinstance(old, TensorMeta):
            node.meta["val"] = TensorMeta(r[0], r[1])
        elif isinstance(old, tuple) and len(old) == len(r):
            node.meta["val"] = tuple(TensorMeta(sh, dt) if isinstance(o, TensorMeta) else o
                                     for (sh, dt), o in zip(r, old))


def inline_subgraph(b, subgraph, values, sizes, opset):
    """Lower the body of a higher-order op (an ``ember`` `Subgraph`: its graph takes
    ``(*tensors, *sizes)``) into builder ``b`` with its tensor inputs bound to ``values``
    (`Value`s) and its size inputs to ``sizes`` (ints or SymInts of the enclosing graph);
    returns the `Value`s of its outputs."""
    graph, _ = _copy(subgraph.graph_module.graph)
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    tensors, size_phs = placeholders[:len(values)], placeholders[len(values):]
    env = {}
    for node, v in zip(tensors, values):
        node.meta["val"] = TensorMeta(v.shape, v.dtype)
        env[node] = v
    by_size = dict(zip(size_phs, sizes))
    for node in graph.nodes:
        if node.op == "call_function" and any(a in by_size for a in node.all_input_nodes):
            node.args = map_arg(node.args, lambda a: by_size.get(a, a))
            node.kwargs = map_arg(node.kwargs, lambda a: by_size.get(a, a))
    for node in size_phs:
        if not node.users:
            graph.erase_node(node)
    _unlift_sizes(graph)
    _propagate_metas(graph)
    decompose_unlowered(graph)
    out_node = graph.output_node()
    for node in graph.nodes:
        if node.op == "call_function":
            _lower_node(b, env, node, opset)
    results = out_node.args[0]
    results = results if isinstance(results, (tuple, list)) else (results,)
    return [env[r] for r in results]


def _copy(graph):
    """A copy of ``graph`` (decomposition rewrites it) and the map old node -> new node."""
    g = Graph()
    val_map = {}
    rv, old_out = g.graph_copy(graph, val_map, return_output_node=True)
    g.output(rv)
    return g, val_map


def _max_ir_version(onnx, opset):
    # the IR version that goes with the opset, so older runtimes accept the file
    for ir, op_v in ((8, 17), (8, 18), (9, 20), (10, 22), (11, 23)):
        if opset <= op_v:
            return ir
    return onnx.IR_VERSION


def _dim_text(d):
    from .._inductor import sizes as _sizes
    return str(_sizes.size(d))


def _arg(env, a, node):
    if hasattr(a, "op") and hasattr(a, "users"):  # an fx Node
        v = env.get(a)
        if v is None:
            raise OnnxExporterError(f"ember.onnx.export: graph node {node.name!r} reads "
                                    f"{a.name!r}, which has no ONNX value")
        return v
    if isinstance(a, (list, tuple)) and not hasattr(a, "_fields"):
        return type(a)(_arg(env, x, node) for x in a)
    return a


def _lower_node(b, env, node, opset):
    target = node.target
    if target is operator.getitem:
        src = env[node.args[0]]
        env[node] = src[node.args[1]]
        return
    if not isinstance(target, Op):
        if getattr(target, "__name__", "") == "set_grad_enabled":
            return  # a grad-mode switch of the compile capture: no tensor meaning
        name = getattr(target, "__name__", repr(target))
        raise UnsupportedOperatorError(name, opset, None, node=node.name,
                                       reason="not an ember operator")
    _check_meta(node, opset)
    fn = LOWERINGS.get(target.name)
    if fn is None:
        why = node.meta.get("onnx_no_decompose")
        if _is_random(target):
            reason = ("it draws random numbers, which ONNX's random operators cannot reproduce; "
                      "export the model in eval mode (model.eval()), where dropout draws none")
        elif reason_of(target.name):
            reason = "no ONNX lowering: " + reason_of(target.name)
        elif why:
            reason = f"it has no ONNX lowering and its decomposition could not be generalised " \
                     f"({why})"
        else:
            reason = "it has no ONNX lowering and no decomposition into operators that have one"
        raise UnsupportedOperatorError(target.name, opset, None, node=node.name, reason=reason)
    _lower_with(b, env, node, fn, target.name, opset)


def _lower_with(b, env, node, fn, name, opset):
    meta = node.meta.get("val")
    ctx = LoweringContext(name, meta, opset, node.name)
    args = _arg(env, node.args, node)
    kwargs = {k: _arg(env, v, node) for k, v in node.kwargs.items()}
    out = fn(b, ctx, *args, **kwargs)
    if out is None:
        raise UnsupportedOperatorError(name, opset, None, node=node.name,
                                       reason="this form of the operator (its params or input "
                                              "dtypes) has no ONNX lowering")
    if isinstance(out, tuple):
        metas = _metas(meta)
        env[node] = tuple(None if o is None else Value(o, m.shape, m.dtype)
                          for o, m in zip(out, metas))
    else:
        m = _metas(meta)[0]
        env[node] = Value(out, m.shape, m.dtype)
