"""``ember.cond``, ``ember.while_loop`` and ``ember.map``: control flow that stays in one graph.

``cond(pred, true_fn, false_fn, operands)`` returns ``true_fn(*operands)`` if ``pred`` holds,
else ``false_fn(*operands)`` (torch.cond).  ``while_loop(cond_fn, body_fn, carried_inputs)``
runs ``carried = body_fn(*carried)`` while ``cond_fn(*carried)`` holds and returns the
carried values (torch.while_loop).  ``map(f, xs, *args)`` applies ``f`` to each slice of
``xs`` (a tensor or a tuple/list/dict of tensors) along dim 0, with ``args`` whole, and
stacks the results (``torch._higher_order_ops.map.map``).

Eagerly they are plain Python: ``cond`` runs only the chosen branch, the loops loop.
Inside a compiled region, where branching in Python on a pending value would need that
value (a graph break, an error under ``fullgraph=True``) and a branch taken on a tensor
input would bake that input's value into the graph, each function is captured once as a
sub-graph and ONE higher-order node is recorded
(`ember._dynamo.higher_order_ops`), so the graph stays whole and export keeps the control
flow.  A function that cannot be a sub-graph (it needs a value, writes to a tensor from
outside, draws random numbers) runs as Python instead: ``cond`` then records both branches
and selects elementwise (``where``), the loops break the graph.  As in torch, the functions
must be free of side effects; the branches of ``cond`` must return tensors of the same
shapes and dtypes, and ``body_fn`` the shapes and dtypes of the carried values.
"""
from .._core.meta import TensorMeta
from .._core.tensor import Tensor
from .higher_order_capture import build_subgraphs, capture, flatten, unflatten
from .higher_order_ops import COND, MAP, WHILE_LOOP, truth
from .trace import CannotCapture

__all__ = ["cond", "while_loop", "map"]

_builtin_map = map


def _session_of(tensors):
    """The capture session recording any of ``tensors`` (a pending one's, else the compiled
    region's), or None eagerly."""
    for t in tensors:
        if isinstance(t, Tensor):
            lz = t.__dict__.get("_lazy")
            if lz is not None:
                return lz.trace.session
    from .session import current_session
    return current_session()


def _describe(meta):
    shape, dtype = meta
    return f"shape {[int(s) for s in shape]} and dtype {dtype}"


# ---- cond ------------------------------------------------------------------------------

def cond(pred, true_fn, false_fn, operands=(), **kwargs):
    """Run ``true_fn(*operands)`` if ``pred`` else ``false_fn(*operands)`` (see the module
    docstring).  ``pred``: a bool or a tensor with one element."""
    if kwargs:
        raise TypeError(f"cond() got unexpected keyword arguments {sorted(kwargs)}")
    if not callable(true_fn) or not callable(false_fn):
        raise RuntimeError("cond: expected true_fn and false_fn to be callable")
    if not isinstance(operands, (tuple, list)):
        raise RuntimeError(f"cond: operands must be a tuple or list of tensors, got "
                           f"{type(operands).__name__}")
    session = None
    if isinstance(pred, Tensor):
        if pred.numel() != 1:
            raise RuntimeError(f"cond: expected pred to be a bool or a tensor with a single "
                               f"element, got a tensor of shape {list(pred.shape)}")
        # in a compiled region a tensor predicate is a graph value even when it is computed
        # (an input): the node keeps both branches, so the graph serves either value
        session = _session_of([pred])
    elif not isinstance(pred, (bool, int)):
        raise RuntimeError(f"cond: expected pred to be a bool or a tensor, got "
                           f"{type(pred).__name__}")
    if session is not None:
        try:
            return _cond_node(session, pred, true_fn, false_fn, list(operands))
        except CannotCapture:
            if "_lazy" in pred.__dict__:
                return _cond_select(pred, true_fn, false_fn, operands)
    return (true_fn if pred else false_fn)(*operands)


def _check_branches(spec_t, spec_f, metas_t, metas_f):
    if spec_t != spec_f:
        raise RuntimeError("cond: true_fn and false_fn must return the same structure of "
                           "outputs")
    for i, (a, b) in enumerate(zip(metas_t, metas_f)):
        if tuple(a[0]) != tuple(b[0]) or a[1] != b[1]:
            raise RuntimeError(f"cond: output {i} of the branches differs: true_fn gives "
                               f"{_describe(a)}, false_fn {_describe(b)}")


def _cond_node(session, pred, true_fn, false_fn, operands):
    """One ``cond`` node with both branches as sub-graphs."""
    sub_t, out_t, spec_t = capture(session, true_fn, operands, "cond's true_fn",
                                   mutation_is_error=True)
    sub_f, out_f, spec_f = capture(session, false_fn, operands, "cond's false_fn",
                                   seed=sub_t.lifted, mutation_is_error=True)
    _check_branches(spec_t, spec_f, [sub_t.metas[j] for j in out_t],
                    [sub_f.metas[j] for j in out_f])
    tensors = [a for a in operands if isinstance(a, Tensor)] + sub_f.lifted
    (g_t, g_f), sizes = build_subgraphs([(sub_t, out_t), (sub_f, out_f)],
                                        sub_f.placeholder_metas, session.leaf_values)
    outs = COND(pred, *tensors, *sizes, true_graph=g_t, false_graph=g_f)
    return unflatten(spec_t, iter(outs))


def _cond_select(pred, true_fn, false_fn, operands):
    """Both branches recorded, the result selected elementwise: for branches that cannot be
    sub-graphs."""
    from ..ops.pointwise import where
    t_out, t_spec = flatten(true_fn(*operands), "cond's true_fn")
    f_out, f_spec = flatten(false_fn(*operands), "cond's false_fn")
    _check_branches(t_spec, f_spec, [(a.shape, a.dtype) for a in t_out],
                    [(b.shape, b.dtype) for b in f_out])
    p = pred.reshape(())
    return unflatten(t_spec, iter([where(p, a, b) for a, b in zip(t_out, f_out)]))


# ---- while_loop ------------------------------------------------------------------------

def while_loop(cond_fn, body_fn, carried_inputs):
    """Run ``body_fn(*carried_inputs)`` while ``cond_fn(*carried_inputs)`` returns a True
    boolean scalar tensor (or True); returns the last carried values, a tuple (see the
    module docstring).  ``body_fn`` must return as many tensors (or ints) as
    ``carried_inputs``, of the same shapes and dtypes."""
    if not callable(cond_fn) or not callable(body_fn):
        raise RuntimeError("while_loop: expected cond_fn and body_fn to be callable")
    if not isinstance(carried_inputs, (tuple, list)):
        raise RuntimeError(f"while_loop: carried_inputs must be a tuple or list, got "
                           f"{type(carried_inputs).__name__}")
    carried = tuple(carried_inputs)
    for i, c in enumerate(carried):
        if not isinstance(c, (Tensor, int)) or isinstance(c, bool):
            raise RuntimeError(f"while_loop: carried_inputs must be tensors or ints, but "
                               f"carried input {i} is a {type(c).__name__}")
    session = _session_of(carried)
    if session is not None and carried and all(isinstance(c, Tensor) for c in carried):
        try:
            return _while_loop_node(session, cond_fn, body_fn, list(carried))
        except CannotCapture:
            pass  # runs as Python below: the graph breaks where the loop needs a value
    moved = False
    while truth(cond_fn(*carried), "while_loop: cond_fn"):
        carried = _check_body(body_fn(*carried), [_meta(c) for c in carried_inputs])
        moved = True
    if not moved:  # the outputs never alias the inputs (torch clones them too)
        carried = tuple(c.clone() if isinstance(c, Tensor) else c for c in carried)
    return carried


def _meta(c):
    return (tuple(c.shape), c.dtype) if isinstance(c, Tensor) else (None, type(c))


def _check_body(out, metas):
    """The body's outputs as a tuple, checked against the carried values' ``metas``."""
    if isinstance(out, Tensor) and len(metas) == 1:
        out = (out,)
    if not isinstance(out, (tuple, list)):
        raise RuntimeError(f"while_loop: body_fn must return a tuple of tensors, got "
                           f"{type(out).__name__}")
    if len(out) != len(metas):
        raise RuntimeError(f"while_loop: body_fn must return as many values as "
                           f"carried_inputs ({len(metas)}), got {len(out)}")
    for i, (o, m) in enumerate(zip(out, metas)):
        if m[0] is None:  # an int carry
            if not isinstance(o, int):
                raise RuntimeError(f"while_loop: body_fn output {i} must be an int like "
                                   f"carried input {i}, got {type(o).__name__}")
            continue
        om = _meta(o) if isinstance(o, Tensor) else None
        if om is None or tuple(om[0]) != tuple(m[0]) or om[1] != m[1]:
            got = _describe(om) if om is not None else type(o).__name__
            raise RuntimeError(f"while_loop: body_fn output {i} has {got}, but carried input "
                               f"{i} has {_describe(m)}: body_fn must keep the shapes and "
                               f"dtypes of carried_inputs")
    return tuple(out)


def _while_loop_node(session, cond_fn, body_fn, carried):

    def pred_of(*args):
        p = cond_fn(*args)
        if not isinstance(p, Tensor):
            raise CannotCapture("while_loop's cond_fn returned a Python value")
        return p

    sub_c, out_c, _ = capture(session, pred_of, carried, "while_loop's cond_fn")
    shape, dtype = sub_c.metas[out_c[0]]
    n = 1
    for s in shape:
        n *= int(s)
    if dtype.name != "bool" or n != 1:
        raise RuntimeError(f"while_loop: cond_fn must return a boolean scalar tensor or a "
                           f"boolean, but got a tensor of shape {[int(s) for s in shape]} and "
                           f"dtype {dtype}")
    sub_b, out_b, spec_b = capture(session, body_fn, carried, "while_loop's body_fn",
                                   seed=sub_c.lifted)
    metas = [_meta(c) for c in carried]
    if spec_b == "T" and len(carried) != 1 or spec_b != "T" and (
            spec_b[0] not in (tuple, list) or any(s != "T" for s in spec_b[1])):
        raise RuntimeError("while_loop: body_fn must return a tuple of tensors")
    if len(out_b) != len(carried):
        raise RuntimeError(f"while_loop: body_fn must return as many values as "
                           f"carried_inputs ({len(carried)}), got {len(out_b)}")
    for i, (j, m) in enumerate(zip(out_b, metas)):
        om = sub_b.metas[j]
        if tuple(om[0]) != tuple(m[0]) or om[1] != m[1]:
            raise RuntimeError(f"while_loop: body_fn output {i} has {_describe(om)}, but "
                               f"carried input {i} has {_describe(m)}: body_fn must keep "
                               f"the shapes and dtypes of carried_inputs")
    (g_c, g_b), sizes = build_subgraphs([(sub_c, out_c), (sub_b, out_b)],
                                        sub_b.placeholder_metas, session.leaf_values)
    return tuple(WHILE_LOOP(*carried, *sub_b.lifted, *sizes, cond_graph=g_c, body_graph=g_b,
                            n_carried=len(carried)))


# ---- map ---------------------------------------------------------------------------------

def map(f, xs, *args):
    """Apply ``f(slice, *args)`` to each slice of ``xs`` along dim 0 and stack the results
    (see the module docstring)."""
    if not callable(f):
        raise RuntimeError("map: expected f to be callable")
    flat_xs, xs_spec = flatten(xs, "map's xs")
    if not flat_xs:
        raise RuntimeError("map: expected xs to hold at least one tensor")
    for i, x in enumerate(flat_xs):
        if x.dim() == 0:
            raise RuntimeError(f"map: xs must be tensors with a leading dim to map over, but "
                               f"xs tensor {i} is a 0-dim tensor")
        if int(x.shape[0]) != int(flat_xs[0].shape[0]):
            raise RuntimeError(f"map: the tensors of xs must have the same size along dim 0, "
                               f"but tensor 0 has {int(flat_xs[0].shape[0])} and tensor {i} "
                               f"has {int(x.shape[0])}")
    n = int(flat_xs[0].shape[0])
    if n == 0:
        raise RuntimeError("map: xs must not be empty along dim 0")
    session = _session_of(list(flat_xs) + list(args))
    if session is not None:
        try:
            return _map_node(session, f, flat_xs, xs_spec, args)
        except CannotCapture:
            pass
    from ..ops.shape import stack
    rows = [flatten(f(unflatten(xs_spec, iter([x[i] for x in flat_xs])), *args), "map's f")
            for i in range(n)]
    spec = rows[0][1]
    return unflatten(spec, iter([stack([r[0][k] for r in rows])
                                 for k in range(len(rows[0][0]))]))


def _map_node(session, f, flat_xs, xs_spec, args):
    nx = len(flat_xs)

    def body(*a):
        return f(unflatten(xs_spec, iter(a[:nx])), *a[nx:])

    slices = [TensorMeta(tuple(x.shape[1:]), x.dtype) for x in flat_xs]
    sub, outs, spec = capture(session, body, slices + list(args), "map's f")
    tensors = list(flat_xs) + [a for a in args if isinstance(a, Tensor)] + sub.lifted
    (g,), sizes = build_subgraphs([(sub, outs)], sub.placeholder_metas, session.leaf_values)
    res = MAP(*tensors, *sizes, body_graph=g, n_xs=nx)
    return unflatten(spec, iter(res))


_ = _builtin_map
