"""Constant folding on the ember graph, before lowering: a node whose tensor inputs are all
weights (parameters, buffers, constants, or nodes folded already) is run once, eagerly, and
its result becomes an initializer -- BatchNorm's scale and shift, transposed weights, the
reshapes of biases.  torch's exporter folds constants too (``do_constant_folding``)."""
import operator

import numpy as np

from .._core.op import Op
from .._core.tensor import Tensor, wrap
from .._dynamo.random_ops import draws_random
from .._inductor import sizes as _sizes

__all__ = ["fold_constants", "needed_nodes"]

# folding these would bake a draw or a data-dependent size into the model
_NEVER = {"_rng_uniform"}
_MAX_BYTES = 1 << 26   # a folded value larger than this stays computed in the graph


def _static(v):
    if isinstance(v, (list, tuple)):
        return all(_static(x) for x in v)
    if isinstance(v, dict):
        return all(_static(x) for x in v.values())
    if isinstance(v, int) and not isinstance(v, bool):
        return isinstance(_sizes.size(v), int)
    return True


def _is_node(a):
    return hasattr(a, "op") and hasattr(a, "users")


def _as_tensor(v):
    return wrap(np.array(v)) if isinstance(v, np.ndarray) else v


def fold_constants(graph, consts):
    """{node: ndarray, or tuple for several outputs} for every node computable from
    ``consts`` ({placeholder node: ndarray}) alone; includes ``consts``."""
    from ..autograd import no_grad
    from ..fx.node import map_arg
    values = dict(consts)
    for node in graph.nodes:
        if node.op != "call_function":
            continue
        ins = node.all_input_nodes
        if not ins or any(a not in values for a in ins):
            continue
        if node.target is operator.getitem:
            src = values[node.args[0]]
            if isinstance(src, tuple):
                values[node] = src[node.args[1]]
            continue
        op = node.target
        if not isinstance(op, Op) or op.name in _NEVER or draws_random(op) or \
                op.category == "distributions":
            continue
        if not _static(node.args) or not _static(node.kwargs):
            continue
        args = map_arg(node.args, lambda a: _as_tensor(values[a]))
        kwargs = map_arg(node.kwargs, lambda a: _as_tensor(values[a]))
        try:
            with no_grad():
                out = op(*args, **kwargs)
        except Exception:  # noqa: BLE001 - the node is then lowered as usual
            continue
        outs = out if isinstance(out, (tuple, list)) else (out,)
        if not all(isinstance(o, Tensor) for o in outs) or \
                sum(o.numel() * o.element_size() for o in outs) > _MAX_BYTES:
            continue
        arrays = tuple(np.array(o.detach().numpy()) for o in outs)
        values[node] = arrays if isinstance(out, (tuple, list)) else arrays[0]
    return values


def needed_nodes(results, stop):
    """The nodes the values ``results`` depend on, not looking past nodes in ``stop``."""
    seen = set()
    todo = [r for r in results if _is_node(r)]
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        if n in stop:
            continue
        todo.extend(n.all_input_nodes)
    return seen
