"""vmap's engine: batched tensors and the batching rules of operators.

A `BatchedTensor` is what a function under ``vmap`` sees: a tensor with the
*logical* (per-example) shape that wraps a *physical* tensor carrying the batch
in dimension ``bdim``.  While a vmap level is active its `VmapMode` sits on the
dispatcher's mode stack; every operator call reaches it, is unwrapped, run by a
batching rule on the physical tensors (so nested levels compose: the rule's own
operator calls reach the outer levels), and rewrapped.

Rules come from categories -- elementwise ops align batch dims in front and
broadcast; dimension-taking ops move the batch to the front and shift their
``dim`` parameters; views prepend the batch to their shape parameters -- plus a
few specific ones (matmul).  Operators without a rule run in a loop over the
batch and warn once, naming the operator.

Autograd under vmap is recorded on the logical tensors (see
``dispatch._apply_mode``), so ``vmap(grad(f))`` runs every backward op through
vmap too and yields per-example gradients.
"""
import threading
import warnings

import numpy as np

from .._core.dispatch import DispatchMode
from .._core.op import REGISTRY, InplaceOp
from .._core.state import STATE
from .._core.tensor import Tensor

__all__ = ["BatchedTensor", "VmapMode", "BATCH_RULES", "add_batch_rule", "is_batched",
           "current_level"]

BATCH_RULES = {}
_WARNED = set()


class _VmapStacks(threading.local):
    # per thread, like the mode stack the VmapModes sit on (ember._core.state)
    def __init__(self):
        self.levels = []   # active VmapModes, outermost first
        self.running = []  # the VmapModes whose batching rules are running, innermost last


_STACKS = _VmapStacks()


def _op(name):
    return REGISTRY[name]


class BatchedTensor(Tensor):
    """A per-example view of a batched physical tensor inside ``vmap``."""

    def __repr__(self):
        return f"BatchedTensor(lvl={self._level}, bdim={self._bdim}, value=\n" \
               f"{self._value!r}\n)"

    # Tensor methods that read storage directly must act on the physical value
    def detach(self):
        return make_batched(self._value.detach(), self._bdim, self._level)

    @property
    def data(self):
        return make_batched(self._value.data, self._bdim, self._level)

    def tolist(self):
        raise RuntimeError("vmap: It looks like you're calling .tolist() on a Tensor. We don't "
                           "support vmap over calling .tolist() on a Tensor.")

    def numpy(self, *, force=False):
        raise RuntimeError("vmap: It looks like you're calling .numpy() on a Tensor. We don't "
                           "support vmap over calling .numpy() on a Tensor.")

    def data_ptr(self):
        raise RuntimeError("vmap: data_ptr is not supported on BatchedTensors")


def make_batched(value, bdim, level):
    t = object.__new__(BatchedTensor)
    t._value = value
    t._bdim = bdim
    t._level = level
    shape = value._data.shape[:bdim] + value._data.shape[bdim + 1:]
    # a zero-stride stand-in with the logical shape and dtype: Tensor's metadata
    # properties (shape, dtype, dim, numel, ...) then describe the logical tensor
    t._data = np.broadcast_to(np.zeros((), dtype=value._data.dtype), shape)
    return t


def is_batched(t, level=None):
    return isinstance(t, BatchedTensor) and (level is None or t._level == level)


def current_level():
    levels = _STACKS.levels
    return levels[-1].level if levels else 0


def current_mode():
    """The vmap level whose batching rule is running (rules read its randomness)."""
    return _STACKS.running[-1]


def add_batch_rule(*names):
    """Register ``rule(op, args, bdims, params, batch_size) -> (out, out_bdims)``."""
    def deco(fn):
        for n in names:
            BATCH_RULES[n] = fn
        return fn
    return deco


# ---- helpers on physical tensors ----------------------------------------------------------

def _move_to_front(t, bdim):
    if bdim is None or bdim == 0:
        return t
    return t.movedim(bdim, 0)


def _logical_ndim(t, bdim):
    return t.dim() - (bdim is not None)


def _front_padded(args, bdims, pad_to=None):
    """Batch dims to the front; batched args padded with 1s to the max logical rank so
    broadcasting against unbatched args aligns logical dims."""
    nds = [_logical_ndim(a, b) for a, b in zip(args, bdims) if isinstance(a, Tensor)]
    top = max(nds) if pad_to is None else pad_to
    out = []
    for a, b in zip(args, bdims):
        if isinstance(a, Tensor) and b is not None:
            a = _move_to_front(a, b)
            lnd = a.dim() - 1
            if lnd < top:
                a = a.reshape((a.shape[0],) + (1,) * (top - lnd) + tuple(a.shape[1:]))
        out.append(a)
    return out


def _batched_front(t, bdim, batch_size):
    """``t`` with the batch in front, materialising it for unbatched tensors."""
    if bdim is None:
        return t.unsqueeze(0).expand(batch_size, *t.shape)
    return _move_to_front(t, bdim)


def _outs_bdims(out, bdim=0):
    if isinstance(out, (tuple, list)):
        return out, [bdim if isinstance(o, Tensor) else None for o in out]
    return out, bdim


# ---- category rules -----------------------------------------------------------------------

def _elementwise_rule(op, args, bdims, params, batch_size):
    if op.category == "binary" and len(args) >= 2:
        args = _weak_zero_dim_cast(args, bdims)
    return op(*_front_padded(args, bdims), **params), 0


def _weak_zero_dim_cast(args, bdims):
    """A logical 0-dim operand is physically dimensioned once batched, which would make it
    win type promotion; cast it to the logical result dtype first."""
    tens = [(a, b) for a, b in zip(args, bdims) if isinstance(a, Tensor)]
    lnds = [_logical_ndim(a, b) for a, b in tens]
    if len(tens) < 2 or 0 not in lnds or max(lnds) == 0 or len({a.dtype for a, _ in tens}) < 2:
        return args
    from .._core import dtype as _dt
    target = _dt.result_type_of([(a.dtype, n) for (a, _), n in zip(tens, lnds)],
                                [a for a in args if not isinstance(a, Tensor) and a is not None])
    return [a.to(target) if isinstance(a, Tensor) and b is not None and
            _logical_ndim(a, b) == 0 and a.dtype != target else a for a, b in zip(args, bdims)]


_DIM_PARAMS = ("dim", "dims", "dim0", "dim1", "dim2", "axis")


def _shift(d):
    # a leading batch dim moves non-negative dims by one; negative ones count from the end
    return d + 1 if d >= 0 else d


def _shift_dims(params):
    new = dict(params)
    for k in _DIM_PARAMS:
        if k in new and new[k] is not None:
            v = new[k]
            new[k] = type(v)(_shift(d) for d in v) if isinstance(v, (tuple, list)) else _shift(v)
    return new


def _dims_rule(op, args, bdims, params, batch_size):
    """Ops over explicit dims of their tensor inputs: batch in front of every tensor
    input (materialised where missing), dim parameters shifted by one."""
    lnd = [_logical_ndim(a, b) for a, b in zip(args, bdims) if isinstance(a, Tensor)]
    if lnd and max(lnd) == 0 and any(params.get(k) not in (None, ()) for k in _DIM_PARAMS):
        return _scalar_as_vector(op, args, bdims, params, batch_size)
    if 0 in lnd and set(params) & set(_DIM_PARAMS) == {"dims"}:
        params = dict(params, dims=())  # reducing "dim 0" of a scalar reduces nothing
    if params.get("dims") is None and op.name in _ALL_BY_DEFAULT:
        params = dict(params, dims=tuple(range(max(lnd))))  # None: every dimension
    phys = [_batched_front(a, b, batch_size) if isinstance(a, Tensor) else a
            for a, b in zip(args, bdims)]
    return _outs_bdims(op(*phys, **_shift_dims(params)))


_ALL_BY_DEFAULT = {"max", "min", "amax", "amin", "any", "all", "count_nonzero", "sum", "mean",
                   "prod", "norm", "logsumexp", "var", "std", "nuclear_norm"}


def _scalar_as_vector(op, args, bdims, params, batch_size):
    """Ops over a dim of 0-dim tensors treat them as one-element vectors (dim 0 or -1):
    run them on (B, 1) and drop the extra dimension from the results."""
    phys = [_batched_front(a, b, batch_size).unsqueeze(1) if isinstance(a, Tensor) else a
            for a, b in zip(args, bdims)]
    new = dict(params)
    for k in _DIM_PARAMS:
        v = new.get(k)
        if v is not None:
            new[k] = type(v)(1 for _ in v) if isinstance(v, (tuple, list)) else 1
    out = op(*phys, **new)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    outs = [o.squeeze(1) if isinstance(o, Tensor) and o.dim() >= 2 and o.shape[1] == 1 else o
            for o in outs]
    return _outs_bdims(type(out)(outs) if isinstance(out, (tuple, list)) else outs[0])


def _view_shape_rule(op, args, bdims, params, batch_size):
    x = _move_to_front(args[0], bdims[0])
    shape = (x.shape[0],) + tuple(params["shape"])
    if op.name == "view" and not x.is_contiguous():
        return x.reshape(shape), 0
    return op(x, **dict(params, shape=shape)), 0


def _permute_rule(op, args, bdims, params, batch_size):
    x = _move_to_front(args[0], bdims[0])
    return op(x, dims=(0,) + tuple(d + 1 for d in params["dims"])), 0


def _expand_rule(op, args, bdims, params, batch_size):
    x = _move_to_front(args[0], bdims[0])
    target = tuple(params["shape"])
    lnd = x.dim() - 1
    if lnd < len(target):
        x = x.reshape((x.shape[0],) + (1,) * (len(target) - lnd) + tuple(x.shape[1:]))
    return op(x, shape=(x.shape[0],) + target), 0


_FULL_SLICE = (None, None, None)  # slice(None, None, None) in an index-view key


def _index_view_rule(op, args, bdims, params, batch_size):
    x = _move_to_front(args[0], bdims[0])
    return op(x, **dict(params, key=(_FULL_SLICE,) + tuple(params["key"]))), 0


def _index_view_backward_rule(op, args, bdims, params, batch_size):
    g = _move_to_front(args[0], bdims[0])
    return op(g, shape=(g.shape[0],) + tuple(params["shape"]),
              key=(_FULL_SLICE,) + tuple(params["key"])), 0


def _linear_rule(op, args, bdims, params, batch_size):
    x, w = args[0], args[1]
    b = args[2] if len(args) > 2 else None
    bx, bw = bdims[0], bdims[1]
    bb = bdims[2] if len(bdims) > 2 else None
    if bw is None and bb is None:
        return op(_move_to_front(x, bx), *args[1:], **params), 0
    # per-example weights: a batched matmul
    xb = _batched_front(x, bx, batch_size)
    lead = tuple(xb.shape[1:-1])
    out = xb.reshape(batch_size, -1, xb.shape[-1]).matmul(
        _batched_front(w, bw, batch_size).transpose(-1, -2))
    if b is not None:
        out = out + _batched_front(b, bb, batch_size).unsqueeze(1)
    return out.reshape((batch_size,) + lead + (out.shape[-1],)), 0


def _nll_like_rule(op, args, bdims, params, batch_size):
    """cross_entropy / nll_loss per example: fold the vmap batch into the loss's own batch
    dimension, compute unreduced losses, then reduce each example separately."""
    if len(args) > 2 and bdims[2] is not None:
        return _fallback_rule(op, args, bdims, params, batch_size)
    x = _batched_front(args[0], bdims[0], batch_size)
    t = _batched_front(args[1], bdims[1], batch_size)
    lnd = x.dim() - 1
    if lnd == 1:  # one example of shape (C,): the vmap batch is the loss batch
        xf, tf = x, t
    else:
        xf = x.reshape((-1,) + tuple(x.shape[2:]))
        tf = t.reshape((-1,) + tuple(t.shape[2:]))
    red = params["reduction"]
    per = op(xf, tf, *args[2:], **dict(params, reduction="none"))
    per = per.reshape((batch_size,) + tuple(t.shape[1:]))
    if red == "none":
        return per, 0
    dims = tuple(range(1, per.dim()))
    total = per.sum(dims) if dims else per
    if red == "sum":
        return total, 0
    valid = (t != params["ignore_index"])
    if len(args) > 2 and args[2] is not None:
        w = args[2][t.clamp(min=0)] * valid
    else:
        w = valid.to(per.dtype)
    denom = w.sum(dims) if dims else w
    return total / denom, 0


def _nll_grad_rule(op, args, bdims, params, batch_size):
    """The fused cross-entropy backward per example (see `_nll_like_rule`)."""
    if len(args) > 3 and bdims[3] is not None:
        return _fallback_rule(op, args, bdims, params, batch_size)
    g = _batched_front(args[0], bdims[0], batch_size)
    x = _batched_front(args[1], bdims[1], batch_size)
    t = _batched_front(args[2], bdims[2], batch_size)
    red = params["reduction"]
    elem_shape = tuple(t.shape)  # (B, N, d...) or (B,) for single examples
    if red != "none":
        if red == "mean":
            valid = (t != params["ignore_index"])
            w = args[3][t.clamp(min=0)] * valid if len(args) > 3 and args[3] is not None \
                else valid.to(x.dtype)
            dims = tuple(range(1, w.dim()))
            g = g / (w.sum(dims) if dims else w)
        g = g.reshape((batch_size,) + (1,) * (len(elem_shape) - 1)).expand(*elem_shape)
    single = x.dim() == 2 and t.dim() == 1
    xf = x if single else x.reshape((-1,) + tuple(x.shape[2:]))
    tf = t if single else t.reshape((-1,) + tuple(t.shape[2:]))
    gf = g if single else g.reshape((-1,) + tuple(g.shape[2:]))
    r = op(gf, xf, tf, *args[3:], **dict(params, reduction="none"))
    return r.reshape(tuple(x.shape)), 0


def _matmul_rule(op, args, bdims, params, batch_size):
    a, b = args
    ba, bb = bdims
    la, lb = _logical_ndim(a, ba), _logical_ndim(b, bb)
    a = _move_to_front(a, ba)
    b = _move_to_front(b, bb)
    if la == 1 and lb == 1:
        if ba is not None and bb is not None:
            return (a * b).sum(-1), 0
        return (op(a, b) if ba is not None else op(b, a)), 0
    if lb == 1 and bb is not None:
        # a batch of vectors on the right: make them matrices, multiply, drop the column
        if ba is None:
            r = op(a, b.unsqueeze(-1).unsqueeze(1) if la > 2 else b.unsqueeze(-1))
            return r.squeeze(-1), 0 if la <= 2 else 0
        a = a if la >= 2 else a.unsqueeze(1)
        pad = (1,) * (la - 2) if la > 2 else ()
        bm = b.reshape((b.shape[0],) + pad + (b.shape[1], 1))
        return op(a, bm).squeeze(-1), 0
    if la == 1 and ba is not None:
        am = a.unsqueeze(1) if lb <= 2 else a.reshape((a.shape[0],) + (1,) * (lb - 2) +
                                                        (1, a.shape[1]))
        return op(am, b).squeeze(-2), 0
    if ba is not None and bb is not None:
        top = max(la, lb)
        a = a.reshape((a.shape[0],) + (1,) * (top - la) + tuple(a.shape[1:]))
        b = b.reshape((b.shape[0],) + (1,) * (top - lb) + tuple(b.shape[1:]))
        return op(a, b), 0
    if ba is not None:
        if lb > la:
            a = a.reshape((a.shape[0],) + (1,) * (lb - la) + tuple(a.shape[1:]))
        return op(a, b), 0
    # only b batched, a a matrix (or higher)
    if la > lb:
        b = b.reshape((b.shape[0],) + (1,) * (la - lb) + tuple(b.shape[1:]))
    return op(a, b), 0


def _fallback_rule(op, args, bdims, params, batch_size):
    key = op.name
    if key not in _WARNED:
        _WARNED.add(key)
        warnings.warn(f"There is a performance drop because we have not yet implemented the "
                      f"batching rule for ember.ops.{key}. vmap runs it in a Python loop over "
                      f"the batch.", UserWarning, stacklevel=4)
    results = []
    for i in range(batch_size):
        sl = [a.select(b, i) if isinstance(a, Tensor) and b is not None else a
              for a, b in zip(args, bdims)]
        results.append(op(*sl, **params))
    stack = _op("stack")
    if isinstance(results[0], (tuple, list)):
        outs = [_stack_list([r[k] for r in results], stack) for k in range(len(results[0]))]
        return outs if isinstance(results[0], list) else tuple(outs), [0] * len(outs)
    return _stack_list(results, stack), 0


def _stack_list(items, stack):
    return stack(*items, dim=0)


def _rule_for(op):
    rule = BATCH_RULES.get(op.name)
    if rule is not None:
        return rule
    if op.batch is not None:
        return op.batch
    # the category, not the shape rule's identity, says an op is elementwise
    if op.category in ("unary", "binary", "activation"):
        return _elementwise_rule
    if op.category in ("reduction", "sorting"):
        return _dims_rule
    return _fallback_rule


# ---- the mode -----------------------------------------------------------------------------

class VmapMode(DispatchMode):
    """One vmap level on the dispatcher's mode stack."""

    def __init__(self, level, batch_size, randomness="error"):
        self.level = level
        self.batch_size = batch_size
        self.randomness = randomness

    def __enter__(self):
        _STACKS.levels.append(self)
        return super().__enter__()

    def __exit__(self, *exc):
        _STACKS.levels.remove(self)
        return super().__exit__(*exc)

    def _unwrap(self, args):
        phys, bdims, any_b = [], [], False
        for a in args:
            if isinstance(a, BatchedTensor) and a._level == self.level:
                phys.append(a._value)
                bdims.append(a._bdim)
                any_b = True
            else:
                phys.append(a)
                bdims.append(None)
        return phys, bdims, any_b

    def _wrap(self, out, out_bdims):
        if isinstance(out, (tuple, list)):
            r = [make_batched(o, b, self.level) if isinstance(o, Tensor) and b is not None
                 else o for o, b in zip(out, out_bdims)]
            return tuple(r) if isinstance(out, tuple) else r
        if isinstance(out, Tensor) and out_bdims is not None:
            return make_batched(out, out_bdims, self.level)
        return out

    def __ember_dispatch__(self, op, args, kwargs):
        base = op.base if isinstance(op, InplaceOp) else op
        if base.category == "random":
            return self._random(op, base, args, kwargs)
        phys, bdims, any_b = self._unwrap(args)
        if not any_b:
            return op(*args, **kwargs)
        if isinstance(op, InplaceOp):
            return self._inplace(op, args, phys, bdims, kwargs)
        _STACKS.running.append(self)
        try:
            out, out_bdims = _rule_for(op)(op, phys, bdims, kwargs, self.batch_size)
        finally:
            _STACKS.running.pop()
        out = self._wrap(out, out_bdims)
        if op.view and isinstance(out, BatchedTensor) and isinstance(args[0], Tensor):
            _mark_logical_view(out, args[0], op, kwargs)
        return out

    def _inplace(self, op, args, phys, bdims, kwargs):
        if STATE.grad_enabled and op.base.differentiable and any(
                isinstance(a, Tensor) and a._requires_grad for a in args):
            return self._inplace_tracked(op, args, bdims, kwargs)
        if bdims[0] is None:
            names = [i for i, b in enumerate(bdims) if b is not None]
            raise RuntimeError(f"vmap: {op.name}(self, *extra_args) is not possible because "
                               f"there exists a Tensor `other` in extra_args (argument "
                               f"{names[0]}) that has more elements than `self`. This happened "
                               f"due to `other` being vmapped over but `self` not being vmapped "
                               f"over in a vmap. Please try to use out-of-place operators instead "
                               f"of {op.name}.")
        target = _move_to_front(phys[0], bdims[0])  # a view: writes reach the batched storage
        rule = _rule_for(op.base)
        if rule is _elementwise_rule:
            rest = _front_padded(phys[1:], bdims[1:], pad_to=target.dim() - 1) \
                if len(phys) > 1 else []
            op(target, *rest, **kwargs)
            return args[0]
        # other ops: the out-of-place rule, then a copy into the batched storage
        out, ob = rule(op.base, phys, bdims, kwargs, self.batch_size)
        target.copy_(_move_to_front(out[0] if isinstance(out, (tuple, list)) else out,
                                    ob[0] if isinstance(ob, list) else ob))
        return args[0]

    def _inplace_tracked(self, op, args, bdims, kwargs):
        """In-place under autograd: the out-of-place result is recorded on the logical
        tensors, written into the batched storage, and the target's history rebased onto it
        (what ``apply_inplace`` does outside modes)."""
        from .._core import dispatch
        target = args[0]
        dispatch._check_inplace_allowed(target)
        src = target
        si = op.base.save_inputs
        if si is True or (si and 0 in si):
            src = self.__ember_dispatch__(_op("clone"), (target,), {})
            dispatch._record_logical(_op("clone"), (target,), {}, src)
        full = (src,) + tuple(args[1:])
        out = self.__ember_dispatch__(op.base, full, kwargs)
        dispatch._record_logical(op.base, full, kwargs, out)
        with _NoGrad():
            self.__ember_dispatch__(_op("copy").inplace, (target, out), {})
        dispatch._rebase_history(target, out)
        return target

    def _random(self, op, base, args, kwargs):
        if self.randomness == "error":
            raise RuntimeError("vmap: called random operation while in randomness error mode. "
                               "Please either use the 'same' or 'different' randomness flags on "
                               "vmap or perform the randomness operation out of vmap")
        phys, bdims, any_b = self._unwrap(args)
        if self.randomness == "same":
            if any_b and not isinstance(op, InplaceOp):
                raise RuntimeError("vmap: Vmap does not currently support same randomness "
                                   "with a batched tensor input. Please file an issue")
            if isinstance(op, InplaceOp) and any_b:
                t = phys[0]
                one = t.select(bdims[0], 0)
                op(one, *phys[1:], **kwargs)
                t.copy_(one.unsqueeze(bdims[0]).expand_as(t))
                return args[0]
            return op(*args, **kwargs)
        # 'different': draw one sample per batch element
        if isinstance(op, InplaceOp):
            if bdims[0] is None:
                raise RuntimeError("vmap: Cannot ask for different inplace randomness on an "
                                   "unbatched tensor. This will appear like same randomness. ")
            op(phys[0], *phys[1:], **kwargs)
            return args[0]
        if "shape" in kwargs and not any_b:
            out = op(*args, **dict(kwargs, shape=(self.batch_size,) + tuple(kwargs["shape"])))
            return make_batched(out, 0, self.level)
        if not any_b:
            phys = [a.unsqueeze(0).expand(self.batch_size, *a.shape) if isinstance(a, Tensor)
                    else a for a in phys]
            bdims = [0 if isinstance(a, Tensor) else None for a in phys]
        phys = _front_padded(phys, bdims)
        tensors = [a for a in phys if isinstance(a, Tensor)]
        if len(tensors) > 1:
            shp = np.broadcast_shapes(*[tuple(t.shape) for t in tensors])
            phys = [a.expand(*shp) if isinstance(a, Tensor) else a for a in phys]
        return make_batched(op(*phys, **kwargs), 0, self.level)


def _mark_logical_view(out, src, op, params):
    """Views of logical tensors are views for autograd too (in-place writes into them
    rebase their base's history), although their stand-in arrays share no memory."""
    from .._core.tensor import _version_of
    root = src._base if src._base is not None else src
    out._base = root
    out._version = _version_of(root)
    out._view_chain = (src._view_chain or ()) + ((op, params),)
    out._view_base_fn = root.grad_fn


class _NoGrad:
    def __enter__(self):
        self.prev = STATE.grad_enabled
        STATE.grad_enabled = False

    def __exit__(self, *exc):
        STATE.grad_enabled = self.prev


# ---- rules for specific operators ---------------------------------------------------------

BATCH_RULES.update({
    "view": _view_shape_rule, "_reshape_copy": _view_shape_rule, "permute": _permute_rule,
    "expand": _expand_rule, "matmul": _matmul_rule, "linear": _linear_rule,
    "cross_entropy_loss": _nll_like_rule, "nll_loss": _nll_like_rule,
    "_cross_entropy_backward": _nll_grad_rule,
    "select": _index_view_rule,
    "slice": _index_view_rule, "_index_view": _index_view_rule,
    "_index_view_backward": _index_view_backward_rule,
    "softmax": _dims_rule, "log_softmax": _dims_rule, "cat": _dims_rule, "stack": _dims_rule,
    "gather": _dims_rule, "scatter": _dims_rule, "scatter_add": _dims_rule,
    "scatter_reduce": _dims_rule, "take_along_dim": _dims_rule, "flip": _dims_rule,
    "cumsum": _dims_rule, "cumprod": _dims_rule, "logcumsumexp": _dims_rule,
    "cummax": _dims_rule, "cummin": _dims_rule, "sum": _dims_rule, "mean": _dims_rule,
    "_gather_along": _dims_rule, "_scatter_along": _dims_rule,
    "clone": _elementwise_rule, "_to_copy": _elementwise_rule, "conj": _elementwise_rule,
    "real": _elementwise_rule, "imag": _elementwise_rule, "where": _elementwise_rule,
    "clamp": _elementwise_rule, "lerp": _elementwise_rule, "addcmul": _elementwise_rule,
    "addcdiv": _elementwise_rule, "copy": _elementwise_rule, "_view_scatter": _fallback_rule,
})


from . import batching_rules_index, batching_rules_linalg  # noqa: E402,F401  (register rules)
