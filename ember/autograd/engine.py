"""The backward engine: runs Nodes in dependency order, iteratively.

`run_backward` counts, for every Node reachable from the roots, how many edges
lead into it; a Node runs once all its gradient contributions have arrived
(ready Nodes run newest first, as PyTorch's engine does).  No recursion, so deep
graphs need no recursion limit.  Gradients are summed with ember's ``add``, so
with ``create_graph=True`` the backward pass is itself recorded.
"""
import heapq
import operator
import sys as _sys
import threading

import numpy as _np

from .._core.device import namespace_of
from .._core.meta_device import contiguous_strides_permuted
from .._core.node import AccumulateGrad, Node, grad_accumulator
from .._core.state import SHARED, STATE
from .._core.tensor import Tensor, _version_of, wrap
from .anomaly_mode import _CHECK_NAN

from .grad_dtype import leaf_grad_dtype

__all__ = ["run_backward", "current_graph_task_keeps_graph", "queue_callback"]


class _GraphTask(threading.local):
    keep_graph = True  # outside any backward, as torch's default
    callbacks = None  # the running backward's end-of-backward callbacks (None: none runs)


_TASK = _GraphTask()


def queue_callback(callback):
    """Run ``callback()`` when the backward running in this thread ends (torch's
    ``Variable._execution_engine.queue_callback``); outside a backward it raises."""
    if _TASK.callbacks is None:
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    _TASK.callbacks.append(callback)


def current_graph_task_keeps_graph():
    """Whether the backward running in this thread retains the graph (True outside one)."""
    return _TASK.keep_graph

_ndarray = _np.ndarray
_node_release = Node.release


def _root_edge(t):
    if t.grad_fn is not None:
        return (t.grad_fn, t._output_nr)
    if not t._requires_grad:
        raise RuntimeError("element 0 of tensors does not require grad and does not have a "
                           "grad_fn")
    return (grad_accumulator(t), 0)


def _input_edge(t):
    if t.grad_fn is not None:
        return (t.grad_fn, t._output_nr)
    if not t._requires_grad:
        raise RuntimeError("One of the differentiated Tensors does not require grad")
    return (grad_accumulator(t), 0)


def _fit(g, meta):
    """Bring a vjp result to its input's shape and dtype (sum broadcast dims, drop imag)."""
    shape, dtype = meta
    if g._data.shape != shape:
        g = g.sum_to_size(shape)
    if g._data.dtype != dtype:
        if g._data.dtype.kind == "c" and dtype.kind != "c":
            g = g.real
        from .._core.dtype import FROM_NP
        g = g.to(FROM_NP[dtype])
    return g


def _accumulate(buf, i, g):
    old = buf[i]
    buf[i] = g if old is None else old + g


def run_backward(roots, grad_roots, retain_graph, create_graph, inputs=None, accumulate=True,
                 allow_unused=False):
    """Backpropagate ``grad_roots`` from ``roots``.

    With ``inputs`` and ``accumulate=False`` (``autograd.grad``) returns their gradients
    instead of accumulating into ``.grad``; with ``accumulate=True`` only those inputs'
    ``.grad`` are written (``backward(inputs=...)``).
    """
    root_edges = [_root_edge(t) for t in roots]
    order = _execution_order(root_edges)
    capture = None
    needed = None
    targets = ()
    if inputs is not None:
        capture = {}
        for k, t in enumerate(inputs):
            capture.setdefault(_input_edge(t), []).append(k)
        targets = {e[0] for e in capture}
        needed = _needed(order, targets)
    results = [None] * (len(inputs) if inputs is not None else 0)

    buffers = {}
    for (n, nr), g in zip(root_edges, grad_roots):
        buf = buffers.get(n)
        if buf is None:
            buf = buffers[n] = [None] * n.n_out
        _accumulate(buf, nr, g)

    # (node, output_nr) slots whose gradient is a sum the engine made itself: nothing else
    # refers to that tensor, so later contributions are added into it in place
    owned = set() if not create_graph else None
    prev_grad = STATE.grad_enabled
    STATE.grad_enabled = create_graph
    prev_keep, _TASK.keep_graph = _TASK.keep_graph, bool(retain_graph)
    prev_callbacks, _TASK.callbacks = _TASK.callbacks, []
    try:
        for node in order:
            if needed is not None and node not in needed and node not in targets:
                continue  # no path to an input: torch runs none of it, hooks included
            grads = buffers.pop(node, None)
            if grads is None:
                grads = [None] * node.n_out
            if node.hooked:  # (every AccumulateGrad: its leaf's hooks are read there)
                # a captured node that does not run gets its tensors' hooks only
                grads = _run_pre_hooks(node, grads, needed is None or node in needed)
            if node in targets:
                for nr in range(node.n_out):
                    for k in capture.get((node, nr), ()):
                        results[k] = grads[nr]
            if type(node) is AccumulateGrad:
                if accumulate and (capture is None or (node, 0) in capture):
                    g = grads[0]
                    # the last node's outputs and loop variables: references `_first_grad`
                    # counts
                    grads = grads_in = gd = old = None
                    if STATE.intercept:
                        _observed_apply(node, _accumulate_leaf, node, g, create_graph)
                    else:
                        _accumulate_leaf(node, g, create_graph)
                continue
            if needed is not None and node not in needed:
                continue
            edges = node.next_edges
            # an output that received no gradient passes None (torch's undefined gradient):
            # each multi-output rule skips its terms, materialising zeros only where its
            # formula needs them (a custom Function's ctx does, unless
            # set_materialize_grads(False))
            if node.n_out == 1:
                has_grad = grads[0] is not None
            else:
                has_grad = any(g is not None for g in grads)
            if not has_grad:
                grads_in = ()
                if node.hooked and node.post_hooks:  # torch calls them with Nones
                    grads_in = (None,) * len(edges)
                    for h in node.post_hooks:
                        r = h(grads_in, tuple(grads))
                        if r is not None:
                            grads_in = r
            else:
                try:
                    grads_in = node.apply(grads) if not STATE.intercept else \
                        _observed_apply(node, node.apply, grads)
                except Exception as exc:
                    if node.trace is not None:
                        exc.add_note("Traceback of forward call that caused the error:\n" +
                                     "".join(node.trace))
                    raise
                if node.hooked and node.post_hooks:
                    for h in node.post_hooks:
                        r = h(tuple(grads_in), tuple(grads))
                        if r is not None:
                            grads_in = r
                if SHARED.anomaly and _CHECK_NAN[0]:
                    _check_nan(node, grads_in)
            if not retain_graph:
                if type(node).release is _node_release:  # Node.release inline
                    if node.versions or node.saved_out is not None:
                        node.saved = node.saved_out = node.versions = None
                else:
                    node.release()
            meta = node.in_meta
            n_in = len(grads_in)
            for i, e in enumerate(edges):
                if e is None or i >= n_in:
                    continue
                g = grads_in[i]
                if g is None:
                    continue
                m, nr = e
                mi = meta[i] if meta else None
                if mi is not None:
                    gd = g._data
                    dt = gd.dtype
                    # (``is`` first: NumPy's dtypes are singletons, so equal ones rarely
                    # need the slower rich comparison)
                    if gd.shape != mi[0] or (dt is not mi[1] and dt != mi[1]):
                        g = _fit(g, mi)
                buf = buffers.get(m)
                if buf is None:
                    if m.n_out == 1:
                        buffers[m] = [g]
                    else:
                        buf = buffers[m] = [None] * m.n_out
                        buf[nr] = g
                else:
                    old = buf[nr]
                    buf[nr] = g if old is None else _sum_grads(owned, m, nr, old, g)
        callbacks = _TASK.callbacks
        while callbacks:  # a callback may queue another
            callbacks.pop(0)()
    finally:
        STATE.grad_enabled = prev_grad
        _TASK.keep_graph = prev_keep
        _TASK.callbacks = prev_callbacks
    if inputs is not None and accumulate:
        # backward(inputs=[...]) also fills .grad of non-leaf inputs, as torch does
        for t, g in zip(inputs, results):
            if t.grad_fn is not None and g is not None:
                with _GRAD_LOCK:
                    t._grad = g if t._grad is None else t._grad + g
    if inputs is not None and not accumulate:
        for k, r in enumerate(results):
            if r is None and not allow_unused:
                raise RuntimeError("One of the differentiated Tensors appears to not have been "
                                   "used in the graph. Set allow_unused=True if this is the "
                                   "desired behavior.")
        return results
    return None


_by_seq = operator.attrgetter("seq")


def _execution_order(root_edges):
    """Every node reachable from the roots, in the order backward runs them: a node once
    every edge into it has delivered, of the ready nodes the newest first (torch's
    engine's order).  Every edge of a recorded graph leads to an older node (an op's
    inputs exist before it is recorded), so that order is the nodes by sequence number,
    newest first: one walk and a sort, no dependency counts kept while running.  A graph
    with an edge to a node no older than its consumer is ordered by counting
    (`_ordered_by_dependencies`)."""
    seen = set()
    stack = []
    for n, _ in root_edges:
        if n not in seen:
            seen.add(n)
            stack.append(n)
    while stack:
        n = stack.pop()
        s = n.seq
        for e in n.next_edges:
            if e is not None:
                m = e[0]
                if m.seq >= s:
                    return _ordered_by_dependencies(root_edges)
                if m not in seen:
                    seen.add(m)
                    stack.append(m)
    return sorted(seen, key=_by_seq, reverse=True)


def _ordered_by_dependencies(root_edges):
    """`_execution_order` for any graph: a node runs once every edge into it from a
    reachable node has delivered; of the ready ones the newest first."""
    deps = {}
    stack = []
    for n, _ in root_edges:
        if n not in deps:
            deps[n] = 0
            stack.append(n)
    while stack:
        for e in stack.pop().next_edges:
            if e is not None:
                m = e[0]
                c = deps.get(m)
                if c is None:
                    deps[m] = 1
                    stack.append(m)
                else:
                    deps[m] = c + 1
    ready = []
    for n, _ in root_edges:
        if deps[n] == 0:
            deps[n] = -1  # queued
            heapq.heappush(ready, (-n.seq, id(n), n))
    order = []
    while ready:
        n = heapq.heappop(ready)[2]
        order.append(n)
        for e in n.next_edges:
            if e is not None:
                m = e[0]
                deps[m] -= 1
                if deps[m] == 0:
                    heapq.heappush(ready, (-m.seq, id(m), m))
    return order


def _needed(order, targets):
    """The nodes that must run for ``autograd.grad(..., inputs)``: those with a path to a
    target below them.  A target itself is captured, not run (its saved tensors stay for
    later backward passes, as in torch).  ``order`` runs consumers first, so read backwards
    each node's inputs have their verdict before it."""
    needed = set()
    for n in reversed(order):
        for e in n.next_edges:
            if e is not None and (e[0] in targets or e[0] in needed):
                needed.add(n)
                break
    return needed


def _sum_grads(owned, m, nr, old, g):
    """``old + g`` for slot ``(m, nr)``; in place into ``old`` when the engine made ``old``
    itself (a sum no one else has seen) and no mode observes the ops."""
    if owned is None or STATE.intercept:
        return old + g  # create_graph: the sum is recorded; a mode must see it
    key = (m, nr)
    od, gd = old._data, g._data
    if key in owned and type(od) is _ndarray and type(gd) is _ndarray and \
            od.shape == gd.shape and od.dtype == gd.dtype:
        _np.add(od, gd, out=od)
        return old
    s = old + g
    owned.add(key)
    return s


def _run_pre_hooks(node, grads, runs=True):
    # as torch: a hook on an output that received no gradient (another output of a split,
    # an input a Function's backward gave None) is called with None, and may not replace it
    th = node.tensor_hooks
    if th:
        for nr, hooks in th.items():
            for h in list(hooks):
                grads[nr] = _hooked(h, grads[nr])
    if node.retained:
        for nr, ref in node.retained.items():
            t = ref()
            if t is not None and grads[nr] is not None:
                with _GRAD_LOCK:
                    _retain_into_grad(t, grads[nr])
    if node.pre_hooks and runs:
        for h in node.pre_hooks:
            r = h(tuple(grads))
            if r is not None:
                grads = list(r)
    if isinstance(node, AccumulateGrad):
        t = node._variable()
        if t is not None and t._hooks:
            for h in list(t._hooks):
                grads[0] = _hooked(h, grads[0])
    return grads


def _hooked(h, g):
    """What tensor hook ``h`` makes of gradient ``g`` (None: the output received none)."""
    r = h(g)
    if r is None:
        return g
    if g is None:
        raise RuntimeError("can't replace a None gradient with a non-None value")
    return r


# Serialises every write of a ``.grad`` made by the engine: backward passes running in
# several threads on graphs that share leaves must each add their gradient (torch
# locks per leaf).  One process-wide lock suffices: the critical section is one add,
# and an uncontended acquire costs well under a microsecond per leaf and pass.
_GRAD_LOCK = threading.Lock()


def _retain_into_grad(t, g):
    if t._grad is None:
        t._grad = g.detach() if not STATE.grad_enabled else g
        if g.is_sparse:
            t._grad = t._grad.clone()  # a sparse tensor's _data is a placeholder
        elif t._grad is g or _shares_memory(t._grad._data, g._data):
            t._grad = wrap(g._data.copy())
    else:
        t._grad = t._grad + g


def _shares_memory(a, b):
    xp = namespace_of(a)
    f = getattr(xp, "shares_memory", None)
    # a backend that cannot tell: assume shared, so that .grad owns a copy
    return True if f is None else f(a, b)


def _accumulate_leaf(node, g, create_graph):
    t = node._variable()
    if t is None:
        return
    if g is None:  # nothing to add; torch still calls the post-accumulate hooks
        if t._post_acc_hooks:
            for h in list(t._post_acc_hooks):
                h(t)
        return
    # a sparse gradient (Embedding(sparse=True)) is made for its leaf's shape and dtype
    if g._data.shape != t._data.shape and not g.is_sparse:
        g = g.sum_to_size(t._data.shape)
    want = t.dtype if "_grad_dtype" not in t.__dict__ else leaf_grad_dtype(t)
    if want is not None and g.dtype != want and not g.is_sparse:
        if g.is_complex() and not want.is_complex:
            g = g.real
        g = wrap(g._data.astype(want.np)) if not create_graph else g.to(want)
    with _GRAD_LOCK:
        _add_into_grad(t, g, create_graph)
    if t._post_acc_hooks:  # outside the lock: a hook may itself run backward
        for h in list(t._post_acc_hooks):
            h(t)


# References to a gradient that only the engine holds, seen from `_first_grad`: the node's
# gradient list, the arguments of `_accumulate_leaf`, `_add_into_grad`, `_first_grad` and
# getrefcount; to its array: the tensor, `_first_grad`'s local and getrefcount's argument
_ENGINE_REFS = 5
_ARRAY_REFS = 3
# Those counts hold for CPython 3.10-3.13 with the GIL (3.10 and a PEP 523 frame-evaluation hook
# only add references: the copy is taken).  3.14's borrowed local loads and the free-threaded
# build's deferred counts can report fewer, so that an outside holder would pass unseen: there
# the first gradient is always copied.
_STEALS = (_sys.implementation.name == "cpython" and _sys.version_info[:2] < (3, 14)
           and getattr(_sys, "_is_gil_enabled", lambda: True)())


def _first_grad(t, g):
    """The first ``.grad`` of leaf ``t`` from dense gradient ``g``, with torch's layout
    contract: the leaf's own strides when it is dense (a channels_last parameter gets a
    channels_last ``.grad``), else row-major.  Like torch's AccumulateGrad, ``g``'s buffer
    is taken without a copy when nothing but the engine refers to it: a fresh array of its
    own (no base, no other tensor or view on it) with the wanted strides."""
    d, leaf = g._data, t._data
    if type(d) is not _np.ndarray or type(leaf) is not _np.ndarray:
        return wrap(d.copy())  # another backend: own a copy
    dense = leaf.flags.c_contiguous or leaf.flags.f_contiguous or leaf.strides == tuple(
        contiguous_strides_permuted(leaf.shape, leaf.strides, leaf.itemsize))
    if (_STEALS and d.base is None and d.flags.writeable and
            (d.strides == leaf.strides if dense else d.flags.c_contiguous)
            and _sys.getrefcount(d) == _ARRAY_REFS and _sys.getrefcount(g) <= _ENGINE_REFS):
        return wrap(d)
    # empty_like keeps a dense leaf's layout (order K)
    out = _np.empty_like(leaf, dtype=d.dtype) if dense else _np.empty(d.shape, d.dtype)
    _np.copyto(out, d)
    return wrap(out)


def _add_into_grad(t, g, create_graph):
    if t._grad is None:
        if create_graph:
            t._grad = g
        elif g.is_sparse:
            # torch keeps a sparse gradient sparse (its _data is only a placeholder)
            t._grad = g.detach().clone()
        else:
            t._grad = _first_grad(t, g)
    elif create_graph or g.is_sparse or t._grad.is_sparse or t._grad._requires_grad:
        # sparse + sparse stays sparse (torch sums sparse gradients across backward calls);
        # a dense term makes the sum dense
        t._grad = t._grad + g
    else:
        gd = t._grad._data
        namespace_of(gd).add(gd, g._data, out=gd, casting="unsafe")
        _version_of(t._grad)[0] += 1


def _check_nan(node, grads_in):
    for i, g in enumerate(grads_in):
        if isinstance(g, Tensor) and bool(namespace_of(g._data).isnan(g._data).any()):
            msg = f"Function '{node.name()}' returned nan values in its {i}th output."
            raise RuntimeError(msg)


def _observed_apply(node, fn, *args):
    """``fn(*args)`` (evaluating backward node ``node``), timed by a mode that observes
    backward nodes: the profiler defines ``__ember_node__``."""
    for m in reversed(STATE.modes):
        observe = getattr(m, "__ember_node__", None)
        if observe is not None:
            return observe(node, fn, args)
    return fn(*args)
