"""vmap's mode: batched tensors and the dispatch mode of one vmap level.

A `BatchedTensor` is what a function under ``vmap`` sees: a tensor with the
*logical* (per-example) shape that wraps a *physical* tensor carrying the batch
in dimension ``bdim``.  While a vmap level is active its `VmapMode` sits on the
dispatcher's mode stack; every operator call reaches it, is unwrapped, run by the
operator's batching rule on the physical tensors (``ember.ops._batching``; nested
levels compose because the rule's own operator calls reach the outer levels), and
rewrapped.

Autograd under vmap is recorded on the logical tensors (see
``dispatch._apply_mode``), so ``vmap(grad(f))`` runs every backward op through
vmap too and yields per-example gradients.
"""
import threading

import numpy as np

from .._core.array_meta import ArrayMeta
from .._core.dispatch import DispatchMode
from .._core.op import REGISTRY, Category, InplaceOp
from .._core.state import STATE
from .._core.tensor import Tensor
from ..ops._batching import (_elementwise_rule, _front_padded, _move_to_front, rule_for,
                             running)

__all__ = ["BatchedTensor", "VmapMode", "make_batched", "is_batched", "current_level"]


class _VmapStacks(threading.local):
    # per thread, like the mode stack the VmapModes sit on (ember._core.state)
    def __init__(self):
        self.levels = []   # active VmapModes, outermost first


_STACKS = _VmapStacks()


class BatchedTensor(Tensor):
    """A per-example view of a batched physical tensor inside ``vmap``."""

    def __repr__(self):
        return f"BatchedTensor(lvl={self._level}, bdim={self._bdim}, value=\n" \
               f"{self._value!r}\n)"

    @property
    def device(self):
        return self._value.device

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
    shape = value.shape
    # metadata only, no array: Tensor's properties (shape, dtype, dim, numel, ...) then
    # describe the logical tensor, and its sizes need not be concrete numbers
    t._data = _LogicalMeta(tuple(shape[:bdim]) + tuple(shape[bdim + 1:]), value.dtype.np)
    return t


class _LogicalMeta(ArrayMeta):
    """The shape and dtype of a logical (per-example) tensor, in the attribute names of an
    array so that Tensor's metadata properties read it; it holds no data, so anything that
    tries to compute on a BatchedTensor's storage instead of going through an operator
    fails loudly."""
    __slots__ = ()
    logical = True   # tells code below func that a tensor's values are not readable here

    @property
    def strides(self):
        # a logical tensor has no memory layout of its own (its physical value has one)
        return (0,) * self.ndim

    @property
    def flags(self):
        # contiguous: reshape picks the view operator, whose batching rule decides on
        # the physical layout whether it may view or must copy
        return _FLAGS


class _Flags:
    __slots__ = ()
    c_contiguous = True


_FLAGS = _Flags()


def is_batched(t, level=None):
    return isinstance(t, BatchedTensor) and (level is None or t._level == level)


def current_level():
    levels = _STACKS.levels
    return levels[-1].level if levels else 0


class VmapMode(DispatchMode):
    """One vmap level on the dispatcher's mode stack."""

    refuses_requires_grad = True   # Tensor.requires_grad_ raises inside vmap, as torch's

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
        if base.category is Category.RANDOM and base.batch is None:  # dropout has its rule
            return self._random(op, base, args, kwargs)
        phys, bdims, any_b = self._unwrap(args)
        if not any_b:
            return op(*args, **kwargs)
        if isinstance(op, InplaceOp):
            return self._inplace(op, args, phys, bdims, kwargs)
        running.stack.append(self)
        try:
            out, out_bdims = rule_for(op)(op, phys, bdims, kwargs, self.batch_size)
        finally:
            running.stack.pop()
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
        rule = rule_for(op.base)
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
            src = self.__ember_dispatch__(REGISTRY["clone"], (target,), {})
            dispatch._record_logical(REGISTRY["clone"], (target,), {}, src)
        full = (src,) + tuple(args[1:])
        out = self.__ember_dispatch__(op.base, full, kwargs)
        dispatch._record_logical(op.base, full, kwargs, out)
        with _NoGrad():
            self.__ember_dispatch__(REGISTRY["copy"].inplace, (target, out), {})
        with self:  # replaying a logical view chain on the new history needs this level
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
    out._vc = _version_of(root)
    out._view_chain = (src._view_chain or ()) + ((op, params),)
    out._view_base_fn = root.grad_fn


class _NoGrad:
    def __enter__(self):
        self.prev = STATE.grad_enabled
        STATE.grad_enabled = False

    def __exit__(self, *exc):
        STATE.grad_enabled = self.prev

