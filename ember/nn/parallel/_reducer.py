"""The gradient reducer behind DistributedDataParallel: buckets, autograd hooks, overlap.

Parameters are packed into buckets in reverse registration order (the order in which
backward usually produces their gradients), the first bucket small so communication
starts early.  A post-accumulate-grad hook on every parameter copies its gradient into
its bucket's flat buffer; once a bucket is full its communication hook (all-reduce and
average by default) is launched asynchronously while backward goes on computing the
earlier layers.  Buckets are launched strictly in index order on every rank, because
MPI matches collectives by the order they are issued.  When the last bucket has been
launched, the reducer waits for all of them and writes the averaged gradients back.
"""
import time

import numpy as np

from ..._core.tensor import Tensor, wrap
from . import _registry

__all__ = ["GradBucket", "Reducer", "DEFAULT_FIRST_BUCKET_BYTES"]

DEFAULT_FIRST_BUCKET_BYTES = 1024 * 1024  # torch's dist._DEFAULT_FIRST_BUCKET_BYTES

_PRIOR_REDUCTION_MSG = (
    "Expected to have finished reduction in the prior iteration before starting a new one. "
    "This error indicates that your module has parameters that were not used in producing "
    "loss. You can enable unused parameter detection by passing the keyword argument "
    "`find_unused_parameters=True` to `ember.nn.parallel.DistributedDataParallel`, and by "
    "making sure all `forward` function outputs participate in calculating loss. Parameters "
    "that did not receive gradient in the last iteration: {names}")


class GradBucket:
    """One bucket of gradients handed to a DDP communication hook.

    ``buffer()`` is the flat 1-D tensor of the bucket's gradients, ``gradients()`` its
    per-parameter views, ``parameters()`` the matching parameters."""

    def __init__(self, index, buffer, offsets, shapes, params, is_last):
        self._index = index
        self._buffer = buffer
        self._offsets = offsets
        self._shapes = shapes
        self._params = params
        self._is_last = is_last

    def index(self):
        """The index of this bucket; bucket 0 holds the last parameters of the model."""
        return self._index

    def buffer(self):
        """The flattened 1-D tensor of this bucket's gradients."""
        return self._buffer

    def gradients(self):
        """The gradients of this bucket's parameters, each a view into `buffer`."""
        data = self._buffer._data
        return [wrap(data[o:o + int(np.prod(s))].reshape(s))
                for o, s in zip(self._offsets, self._shapes)]

    def parameters(self):
        """The model parameters whose gradients this bucket holds."""
        return list(self._params)

    def is_last(self):
        """Whether this is the last bucket to be all-reduced in an iteration."""
        return self._is_last

    def set_buffer(self, buffer):
        """Makes ``buffer`` (same number of elements, any dtype) this bucket's flat tensor.

        Compression wrappers use it to hand a hook a low-precision copy; the reducer casts
        the hook's result back into its own gradient buffer."""
        if buffer.numel() != self._buffer.numel():
            raise ValueError(f"set_buffer: expected a tensor of {self._buffer.numel()} elements, "
                             f"got shape {tuple(buffer.shape)}")
        self._buffer = buffer

    def __repr__(self):
        return (f"GradBucket(index={self._index}, numel={self._buffer.numel()}, "
                f"num_params={len(self._params)})")


class _Bucket:
    __slots__ = ("index", "params", "param_ids", "offsets", "shapes", "sizes", "buffer",
                 "pending", "future", "views")

    def __init__(self, index, params, dtype):
        self.index = index
        self.params = params
        self.shapes = [tuple(p.shape) for p in params]
        self.sizes = [int(np.prod(s)) for s in self.shapes]
        self.offsets = list(np.cumsum([0] + self.sizes[:-1]).astype(int))
        self.buffer = wrap(np.zeros(sum(self.sizes), dtype=dtype))
        self.pending = len(params)
        self.future = None
        self.views = [wrap(self.buffer._data[o:o + n].reshape(s))
                      for o, n, s in zip(self.offsets, self.sizes, self.shapes)]


def compute_bucket_assignment(params, bucket_bytes_cap, first_bucket_bytes_cap):
    """Indices of ``params`` grouped into buckets: reverse order, one dtype per bucket,
    the first bucket capped at ``first_bucket_bytes_cap`` and the others at
    ``bucket_bytes_cap``."""
    buckets, open_ = [], {}
    for i in reversed(range(len(params))):
        p = params[i]
        key = p.dtype.np
        cur = open_.get(key)
        if cur is None:
            cur = open_[key] = [[], 0]
        cur[0].append(i)
        cur[1] += p._data.nbytes
        cap = first_bucket_bytes_cap if not buckets else bucket_bytes_cap
        if cur[1] >= cap:
            buckets.append(cur[0])
            del open_[key]
    buckets.extend(c[0] for c in open_.values() if c[0])
    return buckets


def _collect_tensors(obj, out):
    if isinstance(obj, Tensor):
        out.append(obj)
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            _collect_tensors(o, out)
    elif isinstance(obj, dict):
        for o in obj.values():
            _collect_tensors(o, out)
    elif hasattr(obj, "__dataclass_fields__"):
        for f in obj.__dataclass_fields__:
            _collect_tensors(getattr(obj, f), out)
    return out


def _reachable_leaves(outputs):
    """ids of the leaf tensors reachable backwards from ``outputs``' autograd graph."""
    seen, leaves = set(), set()
    stack = []
    for t in _collect_tensors(outputs, []):
        if t.grad_fn is not None:
            stack.append(t.grad_fn)
        elif t.requires_grad:
            leaves.add(id(t))
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        var = getattr(node, "variable", None)
        if var is not None:
            v = var() if callable(var) else var
            if v is not None:
                leaves.add(id(v))
            continue
        for nxt, _ in node.next_functions:
            if nxt is not None:
                stack.append(nxt)
    return leaves


class Reducer:
    """Buckets the gradients of ``params`` and reduces them across ``process_group``."""

    def __init__(self, params, names, process_group, bucket_bytes_cap, find_unused_parameters,
                 gradient_as_bucket_view, static_graph,
                 first_bucket_bytes_cap=DEFAULT_FIRST_BUCKET_BYTES, bucket_dtype=None,
                 mixed_precision=None):
        self.params = params
        # DDP mixed precision: buckets in the reduce dtype, parameters swapped back to full
        # precision (with full-precision gradients) once reduced
        self.mp = mixed_precision
        self.names = names
        self.process_group = process_group
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.comm_hook = None
        self.comm_state = None
        self._static_unused = None
        self._static_used = None
        assignment = compute_bucket_assignment(params, bucket_bytes_cap, first_bucket_bytes_cap)
        self.buckets = [_Bucket(b, [params[i] for i in idx],
                                bucket_dtype or params[idx[0]].dtype.np)
                        for b, idx in enumerate(assignment)]
        self.pindex = {id(p): i for i, p in enumerate(params)}
        self.locate = {}
        for b in self.buckets:
            for j, p in enumerate(b.params):
                self.locate[id(p)] = (b, j)
        self.bucket_indices = assignment
        self._handles = [p.register_post_accumulate_grad_hook(self._autograd_hook)
                         for p in params]
        self.expect_hooks = False
        self.started = False
        self.num_iterations = 0
        self.last_wait_s = 0.0
        self.grad_scale = None
        self._reset()

    # ---- per-iteration state ----------------------------------------------------------
    def _reset(self):
        for b in self.buckets:
            b.pending = len(b.params)
            b.future = None
        self.ready = set()
        self.next_bucket = 0
        self.unused = ()
        self.marked_unused = False
        self.started = False
        self.used = np.zeros(len(self.params), dtype=np.int32)

    def check_finalized(self):
        """Raises torch's error when the previous backward left buckets unreduced."""
        if self.started:
            names = [self.names[i] for i, p in enumerate(self.params) if id(p) not in self.ready]
            self.expect_hooks = False
            self._reset()
            raise RuntimeError(_PRIOR_REDUCTION_MSG.format(names=", ".join(names)))

    def prepare_for_backward(self, outputs):
        self.check_finalized()
        self._reset()
        self.expect_hooks = True
        self.num_iterations += 1
        if self.find_unused_parameters or (self.static_graph and self.num_iterations == 1):
            reach = _reachable_leaves(outputs)
            self.unused = [p for p in self.params if id(p) not in reach]
            if self.static_graph:
                self._static_unused = self.unused
        elif self.static_graph and self._static_unused is not None:
            self.unused = self._static_unused

    def disable(self):
        self.expect_hooks = False

    # ---- hooks ----------------------------------------------------------------------
    def _autograd_hook(self, param):
        if not self.expect_hooks:
            return
        self.started = True
        if not self.marked_unused:
            self.marked_unused = True
            for p in self.unused:
                self._mark_ready(p, used=False)
        if id(param) in self.ready:
            raise RuntimeError(
                f"Expected to mark a variable ready only once. Parameter "
                f"{self.names[self.pindex[id(param)]]} has been marked as ready twice: it is "
                "used in several reentrant backward passes or shared between modules in a way "
                "DistributedDataParallel does not support; try static_graph=True")
        self._mark_ready(param, used=True)
        for b in self.buckets[:self.next_bucket]:
            progress = getattr(b.future, "_progress", None)
            if progress is not None and progress():
                b.future._progress = None

    def _mark_ready(self, param, used):
        b, j = self.locate[id(param)]
        view = b.views[j]
        g = param._grad
        if not used or g is None:
            view._data[...] = 0
        elif g is not view:
            np.copyto(view._data, g._data, casting="unsafe")
        if used:
            self.used[self.pindex[id(param)]] = 1
        self.ready.add(id(param))
        b.pending -= 1
        if b.pending == 0:
            self._launch_ready()

    def _launch_ready(self):
        while self.next_bucket < len(self.buckets) and self.buckets[self.next_bucket].pending == 0:
            b = self.buckets[self.next_bucket]
            self.next_bucket += 1
            gb = GradBucket(b.index, b.buffer, b.offsets, b.shapes, b.params,
                            b.index == len(self.buckets) - 1)
            if self.comm_hook is None:
                hooks = _registry.default_hooks()
                _sum_then_average, allreduce_hook = hooks._sum_then_average, hooks.allreduce_hook
                if self.grad_scale is not None:  # join: average over the ranks still training
                    b.buffer._data *= self.grad_scale
                if self.mp is not None:
                    # torch's mixed-precision hook: sum in the reduce dtype, then divide
                    b.future = _sum_then_average(self.process_group, b.buffer)
                else:
                    b.future = allreduce_hook(self.process_group, gb)
            else:
                b.future = self.comm_hook(self.comm_state, gb)
                if not hasattr(b.future, "wait"):
                    raise RuntimeError("Communication hook: return annotation should be "
                                       "ember.futures.Future; the hook returned "
                                       f"{type(b.future).__name__}")
        if self.next_bucket == len(self.buckets):
            self._finalize()

    def _finalize(self):
        self.expect_hooks = False
        globally_used = None
        if self.find_unused_parameters or (self.static_graph and self._static_used is None):
            dist = _registry.dist()
            used = wrap(self.used.copy())
            dist.all_reduce(used, group=self.process_group)
            globally_used = used._data
            if self.static_graph:
                self._static_used = globally_used
        elif self.static_graph:
            globally_used = self._static_used
        t0 = time.perf_counter()
        for b in self.buckets:
            result = b.future.wait()
            if isinstance(result, (list, tuple)):
                result = result[0]
            if result is not b.buffer:
                if tuple(result.shape) != tuple(b.buffer.shape):
                    raise RuntimeError(
                        f"Communication hook: the Future of bucket {b.index} holds a tensor of "
                        f"shape {tuple(result.shape)}; expected the bucket's shape "
                        f"{tuple(b.buffer.shape)}")
                np.copyto(b.buffer._data, result._data, casting="unsafe")
            for j, p in enumerate(b.params):
                if globally_used is not None and not globally_used[self.pindex[id(p)]]:
                    continue  # unused on every rank: its grad stays as it was, as in torch
                view = b.views[j]
                if self.mp is not None:
                    # reduced values pass through the compute dtype, as in torch's bucket
                    g = view._data.astype(p.dtype.np)
                    full = self.mp.to_full(p)
                    p._grad = wrap(g if full is None else g.astype(full))
                elif self.gradient_as_bucket_view:
                    if p._grad is not view:
                        p.grad = view
                elif p._grad is None:
                    p.grad = wrap(view._data.copy())
                else:
                    np.copyto(p._grad._data, view._data)
        if self.mp is not None:
            self.mp.finish()
        # communication left exposed at the end of backward (not overlapped with compute)
        self.last_wait_s = time.perf_counter() - t0
        self._reset()

    def shadow_iteration(self):
        """On a rank that joined: issue one backward pass's collectives, in the order the
        training ranks issue them (every bucket launched, the used-parameter map, then the
        waits), with zero gradients; this rank's own gradients are left alone."""
        futures = []
        for b in self.buckets:
            zero = wrap(np.zeros_like(b.buffer._data))
            gb = GradBucket(b.index, zero, b.offsets, b.shapes, b.params,
                            b.index == len(self.buckets) - 1)
            if self.comm_hook is None:
                allreduce_hook = _registry.default_hooks().allreduce_hook
                futures.append(allreduce_hook(self.process_group, gb))
            else:
                futures.append(self.comm_hook(self.comm_state, gb))
        if self.find_unused_parameters:
            dist = _registry.dist()
            dist.all_reduce(wrap(np.zeros(len(self.params), dtype=np.int32)),
                            group=self.process_group)
        for f in futures:
            f.wait()

    def remove_hooks(self):
        for h in self._handles:
            h.remove()
        self._handles = []
