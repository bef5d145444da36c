"""The higher-order operators ``cond``, ``while_loop`` and ``map``: one graph node each.

A compiled region records one of these where ``ember.cond``/``ember.while_loop``/
``ember.map`` meet pending values (`ember._dynamo.control_flow`).  Their params hold the
captured functions as `Subgraph` objects (``sub.graph_module`` is the ``ember.fx``
GraphModule); their positional inputs are the tensors the functions read, then the sizes
the sub-graphs use (ints, symbolic in a dynamic graph):

- ``cond(pred, *tensors, *sizes, true_graph=, false_graph=)``: runs one graph on
  ``(*tensors, *sizes)`` by ``pred`` (a one-element tensor);
- ``while_loop(*carried, *additional, *sizes, cond_graph=, body_graph=, n_carried=)``:
  ``body_graph`` maps the carried values to new ones while ``cond_graph`` gives True;
- ``map(*xs, *others, *sizes, body_graph=, n_xs=)``: ``body_graph`` on slice ``i`` of every
  ``xs`` (and the ``others`` whole), its outputs stacked along a new leading dim.

Every one returns a tuple of tensors (``n_out`` is 2, "several outputs": a graph node is
followed by ``operator.getitem`` nodes).  The kernel runs the sub-graphs' kernels on the
arrays (`Subgraph.run_no_grad`); the vjp recomputes the forward with autograd and differentiates it (an unrolled vjp, for
``while_loop`` too, as torch 2.13 does).
"""
from .._core.op import JVP_FROM_VJP, REGISTRY, Op
from .._core.state import STATE
from .._core.tensor import Tensor
from .higher_order_capture import run_on_arrays

__all__ = ["COND", "WHILE_LOOP", "MAP", "truth"]


def truth(pred, what):
    """``bool(pred)`` for a predicate that must be a bool or a one-element bool tensor."""
    if isinstance(pred, Tensor):
        if pred.dtype.name != "bool" or pred.numel() != 1:
            raise RuntimeError(f"{what} must return a boolean scalar tensor or a boolean, but "
                               f"got a tensor of shape {list(pred.shape)} and dtype {pred.dtype}")
        return bool(pred)
    if isinstance(pred, bool):
        return pred
    raise RuntimeError(f"{what} must return a boolean scalar tensor or a boolean, but got "
                       f"{type(pred).__name__}")


# ---- the ops on tensors (kernels run these without autograd, vjps with it) ---------------

def _autograd(graph, *args):
    return graph(*args)


def _no_grad(graph, *args):
    return graph.run_no_grad(*args)


def _cond_impl(run, pred, *rest, true_graph, false_graph):
    graph = true_graph if bool(pred) else false_graph
    return tuple(run(graph, *rest))


def _while_loop_impl(run, *rest, cond_graph, body_graph, n_carried):
    n = len(body_graph.inputs)
    tensors, sizes = rest[:n], rest[n:]
    carried, additional = list(tensors[:n_carried]), tensors[n_carried:]
    moved = False
    while truth(run(cond_graph, *carried, *additional, *sizes)[0], "while_loop's cond_fn"):
        carried = list(run(body_graph, *carried, *additional, *sizes))
        moved = True
    return tuple(c if moved else c.clone() for c in carried)


def _map_impl(run, *rest, body_graph, n_xs):
    from ..ops.shape import stack
    n = len(body_graph.inputs)
    tensors, sizes = rest[:n], rest[n:]
    xs, others = tensors[:n_xs], tensors[n_xs:]
    rows = [run(body_graph, *(x[i] for x in xs), *others, *sizes)
            for i in range(xs[0].shape[0])]
    if not rows:
        raise RuntimeError("map: xs must not be empty along dim 0")
    return tuple(stack([r[k] for r in rows]) for k in range(len(rows[0])))


# ---- kernels, shape rules, vjps -------------------------------------------------------

def _kernel(impl):
    def kernel(xp, *arrays, **params):
        return run_on_arrays(lambda ins: impl(_no_grad, *ins, **params), arrays)
    kernel.__name__ = impl.__name__.replace("_impl", "_kernel")
    return kernel


def _cond_shape(pred, *rest, true_graph, false_graph):
    return tuple(true_graph.out_metas)


def _while_loop_shape(*rest, cond_graph, body_graph, n_carried):
    return tuple((a.shape, a.dtype) for a in rest[:n_carried])


def _map_shape(*rest, body_graph, n_xs):
    n = rest[0].shape[0]
    return tuple(((n,) + tuple(s), d) for s, d in body_graph.out_metas)


def _differentiable(t):
    return isinstance(t, Tensor) and (t.dtype.is_floating_point or t.dtype.is_complex)


def _vjp(impl):
    """The vjp of a higher-order op: run ``impl`` again with autograd on detached copies of
    the inputs and differentiate it (written in ember ops: the graphs' ops)."""
    def vjp(ctx, grads, *inputs, **params):
        from ..autograd import grad as autograd_grad
        grads = grads if isinstance(grads, tuple) else (grads,)
        needs = ctx.needs_input_grad
        create = STATE.grad_enabled
        xs, wanted = [], []
        for i, a in enumerate(inputs):
            if _differentiable(a) and needs[i]:
                a = a.detach().requires_grad_(True)
                wanted.append(i)
            elif isinstance(a, Tensor):
                a = a.detach()
            xs.append(a)
        result = [None] * len(inputs)
        if not wanted:
            return tuple(result)
        prev = STATE.grad_enabled
        STATE.grad_enabled = True
        try:
            outs = impl(_autograd, *xs, **params)
        finally:
            STATE.grad_enabled = prev
        pairs = [(o, g) for o, g in zip(outs, grads) if g is not None and o._requires_grad]
        if not pairs:
            return tuple(result)
        gs = autograd_grad([o for o, _ in pairs], [xs[i] for i in wanted],
                           [g for _, g in pairs], allow_unused=True, create_graph=create)
        for i, g in zip(wanted, gs):
            result[i] = g
        return tuple(result)
    vjp.__name__ = impl.__name__.replace("_impl", "_vjp")
    return vjp


_MARKS = {
    "jvp": JVP_FROM_VJP,
    "batch": "loop fallback, reason: the op runs captured Python functions as graphs",
    "decomp": "a higher-order op: its sub-graphs are lowered, the op runs them",
}


def _declare(name, impl, shape, doc):
    from ..ops.decompositions import no_decomposition
    op = REGISTRY.get(name)
    if op is not None and op.kernel.__name__ == impl.__name__.replace("_impl", "_kernel"):
        return op  # this module imported again (a reload)
    no_decomposition(name, _MARKS["decomp"])
    return Op(name, _kernel(impl), _vjp(impl), shape=shape, n_out=2, save_inputs=True,
              unsupported=dict(_MARKS), doc=doc)


COND = _declare("cond", _cond_impl, _cond_shape,
                "cond(pred, *tensors, *sizes, true_graph, false_graph): the graph pred selects")
WHILE_LOOP = _declare("while_loop", _while_loop_impl, _while_loop_shape,
                      "while_loop(*carried, *additional, *sizes, cond_graph, body_graph, "
                      "n_carried): body_graph while cond_graph holds")
MAP = _declare("map", _map_impl, _map_shape,
               "map(*xs, *others, *sizes, body_graph, n_xs): body_graph per slice, stacked")
