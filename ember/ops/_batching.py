"""Batching (vmap) rules: how an operator runs on tensors carrying a batch dimension.

A rule has the signature ``rule(op, args, bdims, params, batch_size) -> (out, out_bdims)``.
It runs on *physical* tensors (``args[i]`` carries its batch in dim ``bdims[i]``, or none)
and may only call ember operators, so nested vmap levels and autograd compose.  An op's
rule is its ``batch`` field, set where the op is declared: the category helpers fill it
with the category rules here -- elementwise ops align batch dims in front and broadcast,
dimension-taking ops move the batch to the front and shift their ``dim`` parameters --
and rules shared by several ops live here too.  Ops without a rule run in a loop over the
batch, warning once (an op marks that with ``unsupported={"batch": reason}``).  The vmap
mode itself (batched tensors, levels) lives in ``ember.func``.
"""
import threading
import warnings

from .._core.op import REGISTRY, Category
from .._core.tensor import Tensor

__all__ = ["BATCH_RULES", "add_batch_rule", "rule_for", "current_mode", "running"]

BATCH_RULES = {}
_WARNED = set()


class _RunningLevels(threading.local):
    # per thread, like the mode stack: the vmap levels whose batching rules are running
    def __init__(self):
        self.stack = []


running = _RunningLevels()


def current_mode():
    """The vmap level whose batching rule is running (rules read its randomness)."""
    return running.stack[-1]


def _op(name):
    return REGISTRY[name]


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


def _unbatched_empties(out, batch_size):
    """Placeholder outputs (shape (0,) whatever the batch, e.g. qr's Q in mode 'r') are the
    same for every example: unbatched."""
    if not isinstance(out, (tuple, list)):
        return out, 0
    return out, [0 if isinstance(o, Tensor) and o.dim() and o.shape[0] == batch_size and
                 not (o.dim() == 1 and o.numel() == 0) else None for o in out]


def _leading_rule(op, args, bdims, params, batch_size):
    """Kernels batched over leading dims: the vmap batch in front of every tensor."""
    phys = [_batched_front(a, b, batch_size) if isinstance(a, Tensor) else a
            for a, b in zip(args, bdims)]
    return _unbatched_empties(op(*phys, **params), batch_size)


def _leading_padded_rule(op, args, bdims, params, batch_size):
    """Like `_leading_rule`, with lower-rank operands padded so leading dims broadcast."""
    phys = [_batched_front(a, b, batch_size) if isinstance(a, Tensor) else a
            for a, b in zip(args, bdims)]
    return _outs_bdims(op(*_front_padded(phys, [0 if isinstance(a, Tensor) else None
                                                for a in phys]), **params))


# ---- category rules -----------------------------------------------------------------------

def _elementwise_rule(op, args, bdims, params, batch_size):
    if op.category is Category.BINARY and len(args) >= 2:
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


_FULL_SLICE = (None, None, None)  # slice(None, None, None) in an index-view key


def _index_view_rule(op, args, bdims, params, batch_size):
    x = _move_to_front(args[0], bdims[0])
    return op(x, **dict(params, key=(_FULL_SLICE,) + tuple(params["key"]))), 0


def _fallback_rule(op, args, bdims, params, batch_size):
    key = op.name
    if key not in _WARNED:
        _WARNED.add(key)
        reason = getattr(op, "unsupported", {}).get("batch")
        why = f" ({reason})" if reason else ""
        warnings.warn(f"There is a performance drop because we have not yet implemented the "
                      f"batching rule for ember.ops.{key}{why}. vmap runs it in a Python loop "
                      f"over the batch.", UserWarning, stacklevel=4)
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


def rule_for(op):
    if op.batch is not None:
        return op.batch
    return BATCH_RULES.get(op.name, _fallback_rule)


from . import _batching_index  # noqa: E402,F401  (register rules)
