"""Running a pending trace and turning its lazy tensors into ordinary ones.

The graph must produce every value still referenced from Python: each live lazy tensor
that is not a view, the root of each live lazy view, and the new value of each real tensor
written in place.  Views are not graph outputs: after the graph runs they are made again
from their root by the same view ops, eagerly, so they alias it exactly as in eager mode
(and carry the view's autograd history).  Written real tensors get their new value copied
into their own memory, so every other view of that memory sees it, and their version
counter is bumped as an in-place op would.
"""
import numpy as np

from .._core.state import STATE
from .._core.tensor import Tensor, _version_of
from .step_backward import mark_consumed
from .trace import DETACHED

__all__ = ["run_trace"]


def run_trace(trace, session):
    trace.closed = True
    live = trace.live()
    for t, lz in live:
        if lz.view is not None:
            trace._refresh_view(t, lz)
    live = trace.live()
    direct, views = [], []
    needed = {}
    for t, lz in live:
        if lz.view is not None:
            views.append((t, lz))
            root = lz.view[0]
            rlz = root.__dict__.get("_lazy")
            if rlz is not None and rlz.trace is trace:
                needed.setdefault(rlz.index, None)
        elif id(t) not in trace.mutated:
            direct.append((t, lz))
            needed.setdefault(lz.index, None)
        else:
            needed.setdefault(lz.index, None)
    out_values = list(needed)
    # real tensors written in place read their old values as graph inputs: plain again
    mutated = list(trace.mutated.values())
    mutated_refs = {}
    for t in mutated:
        lz = t.__dict__.pop("_lazy")
        mutated_refs[id(t)] = lz
        t.__class__ = lz.original
    results = {}
    info = FlushInfo()
    if (out_values or trace.draws) and trace.ops:
        results = _execute(trace, out_values, session, info)
    pos = {j: n for n, j in enumerate(info.outputs)}
    # assign: plain lazies and written reals first, then views (their roots are ready)
    settled = info.settled
    consumed = trace.consumed
    for t, lz in direct:
        settled[id(t)] = ("out", pos.get(lz.index))
        _settle(t, lz, results[lz.index])
        if lz.index in consumed and t.__dict__.get("_requires_grad"):
            mark_consumed(t)
            info.consumed.add(pos.get(lz.index))
    for t in mutated:
        lz = mutated_refs[id(t)]
        info.writes.append((t, pos.get(lz.index)))
        _write_back(t, results[lz.index])
    for t, lz in views:
        root, chain, _ = lz.view
        settled[id(t)] = ("view", root, chain, bool(t.__dict__.get("_requires_grad")))
        _derive_view(t, lz)
    return info
    trace.holders.clear()
    trace.roots.clear()
    trace.mutated.clear()


class FlushInfo:
    """What one flush did, for the replay fast path (`ember._dynamo.replay`)."""
    __slots__ = ("entry", "inputs", "extra_inputs", "outputs", "writes", "settled", "consumed")

    def __init__(self):
        self.entry = None
        self.inputs = []        # the graph's tensor inputs, in order
        self.extra_inputs = []  # its size and scalar inputs' values
        self.outputs = []       # value index of each graph output
        self.writes = []        # (tensor written in place, output position)
        self.settled = {}       # id(tensor) -> ("out", position) | ("view", root, chain, grad)
        self.consumed = set()   # output positions whose recorded backward spent their history


def _execute(trace, out_values, session, info):
    from .cache import RunEagerly
    from .graph_key import _Unhashable
    cache = session.cache
    try:
        entry, spec = cache.lookup(trace, out_values, session)
    except (_Unhashable, RunEagerly):
        info.outputs = list(out_values)
        return _run_ops(trace, out_values)
    lv = trace.session.leaf_values
    info.entry = entry
    info.inputs = [trace.inputs[k] for k in spec.inputs]
    info.extra_inputs = [lv[lf] for _, lf in spec.size_inputs] + \
        [trace.scalars[p] for p in spec.scalar_inputs]
    info.outputs = list(spec.outputs)
    inputs = info.inputs + info.extra_inputs
    return dict(zip(spec.outputs, run_entry(entry, inputs)))


def run_entry(entry, inputs):
    """Run compiled graph ``entry`` on ``inputs`` (without autograd unless it needs it);
    its outputs, none sharing memory with another or with an input."""
    prev = STATE.grad_enabled
    try:
        if not entry.needs_grad:
            STATE.grad_enabled = False
        outs = entry.run(*inputs)
    finally:
        STATE.grad_enabled = prev
    if len(outs) == 1:  # the common case: one output that owns its memory
        d = outs[0]._data
        if getattr(d, "base", None) is None:
            for t in inputs:
                if type(t) is not int and type(t) is not float and \
                        isinstance(t, Tensor) and t.__dict__.get("_data") is d:
                    break
            else:
                return outs
    return _unaliased(outs, inputs)


def _unaliased(outs, inputs):
    """Outputs as eager makes them: distinct memory, none of it an input's.  A backend may
    return one buffer for equal values (CSE) or an input for an identity: copy those."""
    seen = set()
    for t in inputs:
        if isinstance(t, Tensor):
            d = t.__dict__.get("_data")
            seen.add(id(d))
            if getattr(d, "base", None) is not None:
                seen.add(id(d.base))
    res = []
    for r in outs:
        d = r._data
        base = getattr(d, "base", None)
        if id(d) in seen or (base is not None and id(base) in seen):
            r = _copy_result(r)
        else:
            seen.add(id(d))
            if base is not None:
                seen.add(id(base))
        res.append(r)
    return res


def _copy_result(r):
    from .._core.tensor import wrap
    c = wrap(np.array(r._data, copy=True))
    if r._requires_grad:
        c.__dict__["grad_fn"] = r.grad_fn
        c.__dict__["_output_nr"] = r._output_nr
        c._requires_grad = True
    return c


def _run_ops(trace, out_values):
    """Run the trace op by op, uncached (a graph whose params cannot be keyed)."""
    env = {}
    prev = STATE.grad_enabled
    try:
        for rec in trace.ops:
            args = []
            for r in rec.args:
                k = r[0]
                args.append(env[r[1]] if k == "v" else trace.inputs[r[1]] if k == "i"
                            else trace.scalars[r[1]] if k == "s" else r[1])
            STATE.grad_enabled = rec.grad
            out = rec.op(*args, **rec.params)
            if rec.n_out == 1 and rec.op.n_out == 1:
                env[rec.out] = out
            else:
                for j, o in enumerate(out):
                    env[rec.out + j] = o
    finally:
        STATE.grad_enabled = prev
    return {j: env[j] for j in out_values}


def _settle(t, lz, r):
    """Lazy ``t`` becomes an ordinary tensor holding result ``r``."""
    d = t.__dict__
    del d["_lazy"]
    t.__class__ = lz.original
    a = r._data
    # a lazy result promised C-contiguity (its views were recorded on that promise)
    d["_data"] = a if a.flags.c_contiguous else np.ascontiguousarray(a)
    if r._requires_grad:
        d["grad_fn"] = r.grad_fn
        d["_output_nr"] = r._output_nr
        d["_requires_grad"] = True
    # else: history set on the lazy tensor itself (an autograd.Function's outputs) stays


def _write_back(t, r):
    """Real ``t`` was written in place: its memory receives ``r``'s value."""
    arr = t.__dict__["_data"]
    np.copyto(arr, r._data, casting="unsafe")
    v = _version_of(t)
    v[0] += 1
    if r._requires_grad and STATE.grad_enabled or r.__dict__.get("grad_fn") is not None:
        t.__dict__["grad_fn"] = r.grad_fn
        t.__dict__["_output_nr"] = r._output_nr
        t._requires_grad = True


def _derive_view(t, lz):
    """Make view ``t`` again from its (now real) root, eagerly."""
    root, chain, _ = lz.view
    d = t.__dict__
    del d["_lazy"]
    t.__class__ = lz.original
    if chain == DETACHED:  # an alias (detach): the root's memory and version counter
        d["_data"] = root._data
        d["_vc"] = _version_of(root)
        return
    own = d.get("grad_fn")  # history an autograd.Function gave this very tensor
    own_nr, own_rg = d.get("_output_nr"), d.get("_requires_grad")
    prev = STATE.grad_enabled
    STATE.grad_enabled = bool(d.get("_requires_grad")) and own is None
    try:
        v = root
        for op, params in chain:
            v = op(v, **params)
    finally:
        STATE.grad_enabled = prev
    for k, x in v.__dict__.items():
        d[k] = x
    if own is not None:
        d["grad_fn"], d["_output_nr"], d["_requires_grad"] = own, own_nr, own_rg
    elif not v._requires_grad:
        d.pop("_requires_grad", None)
