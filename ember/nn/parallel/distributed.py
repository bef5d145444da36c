"""DistributedDataParallel: data parallelism across processes of an ember.distributed group."""
import contextlib
import dataclasses

import numpy as np

from ..._core.tensor import Tensor, wrap
from ..modules.module import Module
from . import _registry
from ._reducer import DEFAULT_FIRST_BUCKET_BYTES, Reducer

__all__ = ["DistributedDataParallel"]


@dataclasses.dataclass
class _MixedPrecision:
    """DDP-native mixed precision (torch's experimental ``_MixedPrecision``).

    Attributes:
        param_dtype: the dtype of the parameters (and floating inputs) during forward and
            backward, hence of the computation and of the local gradients.  Outside forward
            and backward the parameters are in full precision: the optimizer updates the
            full-precision values with full-precision gradients.
        reduce_dtype: the dtype the gradients are all-reduced in (default ``param_dtype``,
            or the parameters' own dtype).
        buffer_dtype: the dtype floating buffers are cast to, once, at construction.
    """

    param_dtype: object = None
    reduce_dtype: object = None
    buffer_dtype: object = None


def _np_dtype(dtype):
    return None if dtype is None else dtype.np


def _cast_inputs(obj, dtype):
    """``obj`` with its floating tensors (in lists, tuples, dicts) cast to ``dtype``."""
    if isinstance(obj, Tensor):
        return obj.to(dtype) if obj.is_floating_point() else obj
    if isinstance(obj, (list, tuple)) and not hasattr(obj, "_fields"):
        return type(obj)(_cast_inputs(o, dtype) for o in obj)
    if isinstance(obj, dict):
        return {k: _cast_inputs(v, dtype) for k, v in obj.items()}
    return obj


class _MixedPrecisionParams:
    """Swaps the parameters between their full-precision arrays and low-precision copies.

    `to_low` (before forward) keeps each parameter's full-precision array and computes
    with a ``param_dtype`` copy; `to_full` (when the gradients are reduced, or after a
    forward without grad) puts the full-precision arrays back.  The swap replaces the
    parameter's array, not the parameter, so optimizers and the autograd graph keep
    referring to the same tensors."""

    def __init__(self, params, param_dtype):
        self.params = params
        self.low = _np_dtype(param_dtype)
        self.full = {}          # id(param) -> its full-precision array while low
        self.active = False

    def to_low(self):
        if self.active or self.low is None:
            return
        for p in self.params:
            if p.dtype.np.kind not in "fV" or p.dtype.np == self.low:
                continue
            self.full[id(p)] = p._data
            p._data = p._data.astype(self.low)
            if p._grad is not None:
                # accumulated (full-precision) gradients join the low-precision backward
                p._grad = wrap(p._grad._data.astype(self.low))
        self.active = True

    def to_full(self, p):
        """Restores ``p``'s full-precision array; returns its dtype (None if not swapped)."""
        full = self.full.pop(id(p), None)
        if full is None:
            return None
        p._data = full
        return full.dtype

    def finish(self):
        for p in self.params:
            dt = self.to_full(p)
            if dt is not None and p._grad is not None and p._grad.dtype.np != dt:
                p._grad = wrap(p._grad._data.astype(dt))
        self.active = False

_DEFAULT_BUCKET_CAP_MB = 25


def _dist():
    # nn sits below distributed, which registers itself in _registry when imported
    return _registry.dist()


def _broadcast_coalesced(tensors, process_group, src=None):
    """Broadcasts ``tensors`` from global rank ``src`` (default: the group's first rank,
    as torch's DDP) in one collective per dtype and writes the received values into them in
    place."""
    dist = _dist()
    by_dtype = {}
    for t in tensors:
        by_dtype.setdefault(t.dtype.np, []).append(t)
    for dtype in sorted(by_dtype, key=str):
        group = by_dtype[dtype]
        flat = wrap(np.concatenate([t._data.ravel() for t in group]) if group
                    else np.zeros(0, dtype))
        if src is None:
            dist.broadcast(flat, group=process_group, group_src=0)
        else:
            dist.broadcast(flat, src=src, group=process_group)
        off = 0
        for t in group:
            n = t.numel()
            t._data[...] = flat._data[off:off + n].reshape(t.shape)
            off += n


class DistributedDataParallel(Module):
    """Implements distributed data parallelism based on ``ember.distributed`` at module level.

    The module is replicated on every process of ``process_group``; each replica gets a
    different slice of the input batch.  At construction the parameters and buffers of
    rank 0 are broadcast to all ranks.  During backward, the gradients are averaged across
    ranks in buckets of about ``bucket_cap_mb`` megabytes, each bucket's all-reduce
    starting asynchronously as soon as all its gradients are ready, so that communication
    overlaps with the rest of the backward pass.  After ``backward()`` every rank holds
    the same averaged gradients, so the optimizers keep the replicas identical.

    Args:
        module: the module to be parallelized.
        device_ids: CUDA devices; must be None (or empty) for CPU modules.
        output_device: device for the output; must be None for CPU modules.
        dim: the batch dimension (kept for compatibility).
        broadcast_buffers: whether to broadcast the module's buffers from rank 0 at the
            start of every forward (default True).
        init_sync: whether to broadcast parameters and buffers at construction.
        process_group: the process group used for all-reduce (default: the world group).
        bucket_cap_mb: maximum bucket size in MiB (default 25).
        find_unused_parameters: traverse the autograd graph of the forward outputs to mark
            parameters that receive no gradient as ready, so that reduction can finish.
        gradient_as_bucket_view: make each ``param.grad`` a view into its bucket's flat
            buffer, which saves a copy and the memory of one gradient set.
        static_graph: the set of used parameters is the same every iteration; unused
            parameters are found once, in the first iteration.
    """

    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=None,
                 init_sync=True, process_group=None, bucket_cap_mb=None,
                 find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False,
                 delay_all_reduce_named_params=None, param_to_hook_all_reduce=None,
                 mixed_precision=None, device_mesh=None, skip_all_reduce_unused_params=False,
                 bucket_cap_mb_list=None, batched_grad_copy=False, forward_sync_buffers=None):
        super().__init__()
        dist = _dist()
        if not dist.is_initialized():
            raise RuntimeError("Default process group has not been initialized, please make "
                               "sure to call init_process_group.")
        devices = {p.device.type for p in module.parameters()}
        if device_ids or output_device is not None:
            ids = [str(d) for d in (device_ids or [])]
            if devices == {"cpu"} and any(i != "cpu" for i in ids + ([str(output_device)]
                                                                       if output_device is not
                                                                       None else [])):
                raise ValueError(
                    "DistributedDataParallel device_ids and output_device arguments only work "
                    "with single-device/multiple-device GPU modules or CPU modules, but got "
                    f"device_ids {device_ids}, output_device {output_device}, and module "
                    f"parameters {sorted(devices)}.")
        if process_group is not None and device_mesh is not None:
            raise RuntimeError("Cannot specify both process_group and device_mesh arguments.")
        self.device_mesh = device_mesh
        if device_mesh is not None:
            if device_mesh.ndim != 1:
                raise RuntimeError(f"Only 1D device mesh is supported, but got {device_mesh}.")
            process_group = device_mesh.get_group(mesh_dim=0)
        if mixed_precision is not None and not isinstance(mixed_precision, _MixedPrecision):
            raise TypeError(f"mixed_precision must be a _MixedPrecision, got "
                            f"{type(mixed_precision).__name__}")
        ignore = set(getattr(module, "_ddp_params_and_buffers_to_ignore", ()))
        named = []
        seen = set()
        for name, p in module.named_parameters():
            if p.requires_grad and id(p) not in seen and name not in ignore:
                seen.add(id(p))
                named.append((name, p))
        if not named:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't "
                               "have any parameter that requires a gradient.")
        self.module = module
        self.device_ids = None
        self.output_device = None
        self.dim = dim
        self.process_group = process_group if process_group is not None else dist.group.WORLD
        self.broadcast_buffers = True if broadcast_buffers is None else bool(broadcast_buffers)
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        cap_mb = _DEFAULT_BUCKET_CAP_MB if bucket_cap_mb is None else bucket_cap_mb
        self.bucket_bytes_cap = int(cap_mb * 1024 * 1024)
        self.parameters_to_ignore = ignore
        self.modules_buffers = [b for n, b in module.named_buffers()
                                if b is not None and n not in self.parameters_to_ignore]
        self.mixed_precision = mixed_precision
        self._mp = None
        bucket_dtype = None
        if mixed_precision is not None:
            if mixed_precision.buffer_dtype is not None:
                low = _np_dtype(mixed_precision.buffer_dtype)
                for b in self.modules_buffers:
                    if b.dtype.np.kind in "fV":
                        b._data = b._data.astype(low)
            mp_params = [p for n, p in module.named_parameters() if n not in ignore]
            self._mp = _MixedPrecisionParams(mp_params, mixed_precision.param_dtype)
            bucket_dtype = _np_dtype(mixed_precision.reduce_dtype or mixed_precision.param_dtype)
        if init_sync and dist.get_world_size(self.process_group) > 1:
            _broadcast_coalesced([p for _, p in named] + self.modules_buffers,
                                 self.process_group)
        first_cap = (self.bucket_bytes_cap if bucket_cap_mb is not None and
                     self.bucket_bytes_cap < DEFAULT_FIRST_BUCKET_BYTES
                     else DEFAULT_FIRST_BUCKET_BYTES)
        self._join_config = _DisabledJoin()
        self._join_divide_by_initial_world_size = True
        self._join_world = dist.get_world_size(self.process_group)
        self._join_nonjoined = self._join_world
        self.reducer = Reducer([p for _, p in named], [n for n, _ in named], self.process_group,
                               self.bucket_bytes_cap, find_unused_parameters,
                               gradient_as_bucket_view and self._mp is None, static_graph,
                               first_cap, bucket_dtype=bucket_dtype, mixed_precision=self._mp)

    # ---- training loop entry points -----------------------------------------------------
    def will_sync_module_buffers(self):
        return (self.require_forward_param_sync and self.broadcast_buffers
                and len(self.modules_buffers) > 0)

    def _sync_buffers(self):
        if _dist().get_world_size(self.process_group) > 1:
            _broadcast_coalesced(self.modules_buffers, self.process_group)

    def forward(self, *inputs, **kwargs):
        from ...autograd import is_grad_enabled
        sync = is_grad_enabled() and self.require_backward_grad_sync
        if sync:
            if self._join_config.enable:
                Join = _registry.join().Join
                Join.notify_join_context(self)
                self.reducer.grad_scale = (None if self._join_divide_by_initial_world_size
                                           else self._join_world / self._join_nonjoined)
            else:
                self.reducer.grad_scale = None
            self.reducer.check_finalized()
        if self.will_sync_module_buffers():
            self._sync_buffers()
        mp = self._mp
        if mp is not None and mp.low is not None:
            mp.to_low()
            inputs = _cast_inputs(inputs, self.mixed_precision.param_dtype)
            kwargs = _cast_inputs(kwargs, self.mixed_precision.param_dtype)
        output = self.module(*inputs, **kwargs)
        if mp is not None and not is_grad_enabled():
            mp.finish()  # no backward will come to restore the full-precision parameters
        if sync:
            self.require_forward_param_sync = True
            self.reducer.prepare_for_backward(
                output if (self.find_unused_parameters or self.static_graph) else ())
        else:
            self.require_forward_param_sync = False
            self.reducer.disable()
        return output

    @contextlib.contextmanager
    def no_sync(self):
        """A context manager that disables gradient synchronization across processes.

        Within it gradients accumulate locally on each rank; the first forward-backward
        pass after leaving the context synchronizes the accumulated gradients."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    # ---- uneven inputs: the join context ----------------------------------------------
    def join(self, divide_by_initial_world_size=True, enable=True,
             throw_on_early_termination=False):
        """A context manager for training with uneven inputs across ranks.

        A rank that runs out of inputs keeps shadowing the other ranks' gradient
        all-reduces (with zero gradients) until all ranks are done, then the model of the
        last rank to finish is broadcast to all.  With ``divide_by_initial_world_size``
        the gradients are divided by the initial world size (joined ranks count as zeros),
        otherwise by the number of ranks still training.  ``throw_on_early_termination``
        raises on every rank as soon as one runs out of inputs.

        Example::
            >>> with ddp.join():
            ...     for x in uneven_inputs:
            ...         ddp(x).sum().backward()
        """
        Join = _registry.join().Join
        return Join([self], enable, throw_on_early_termination,
                    divide_by_initial_world_size=divide_by_initial_world_size)

    def join_hook(self, **kwargs):
        """The DDP `JoinHook`: shadows one iteration's all-reduces, then syncs the model."""
        divide = kwargs.get("divide_by_initial_world_size", True)
        self._join_divide_by_initial_world_size = divide
        return _DDPJoinHook(self)

    @property
    def join_device(self):
        from ..._core.device import device
        return device("cpu")

    @property
    def join_process_group(self):
        return self.process_group

    def register_comm_hook(self, state, hook):
        """Registers ``hook(state, bucket) -> Future[Tensor]`` to reduce each gradient bucket.

        The hook receives a `GradBucket`; the Future it returns must hold a tensor of the
        bucket buffer's shape, which becomes the bucket's reduced gradients (the built-in
        all-reduce averages; a hook must do its own averaging).  It may be registered
        once, before training starts."""
        if not callable(hook):
            raise TypeError(f"Communication hook must be callable, got {type(hook).__name__}")
        if self.reducer.comm_hook is not None:
            raise RuntimeError("register_comm_hook or register_builtin_comm_hook can only be "
                               "called once.")
        self.reducer.comm_hook = hook
        self.reducer.comm_state = state

    def _get_ddp_logging_data(self):
        return {"world_size": _dist().get_world_size(self.process_group),
                "bucket_cap_bytes": self.bucket_bytes_cap,
                "num_buckets": len(self.reducer.buckets),
                "find_unused_parameters": int(self.find_unused_parameters),
                "gradient_as_bucket_view": int(self.gradient_as_bucket_view),
                "static_graph": int(self.static_graph),
                "comm_hook": getattr(self.reducer.comm_hook, "__qualname__", "")}

    @staticmethod
    def _set_params_and_buffers_to_ignore_for_model(module, params_and_buffers_to_ignore):
        """Names of parameters and buffers DDP should neither broadcast nor reduce."""
        module._ddp_params_and_buffers_to_ignore = list(params_and_buffers_to_ignore)


class _DisabledJoin:
    enable = False
    throw_on_early_termination = False
    is_first_joinable = False


class _DDPJoinHook:
    """What a joined rank does while others still train: the same collectives, on zeros."""

    def __init__(self, ddp):
        self.ddp = ddp

    def main_hook(self):
        ddp = self.ddp
        if ddp.will_sync_module_buffers():
            ddp._sync_buffers()
        ddp.reducer.shadow_iteration()

    def post_hook(self, is_last_joiner):
        ddp = self.ddp
        dist = _dist()
        key = wrap(np.array([dist.get_rank() if is_last_joiner else -1], dtype=np.int64))
        dist.all_reduce(key, op=dist.ReduceOp.MAX, group=ddp.process_group)
        if ddp._join_world > 1:
            _broadcast_coalesced(list(ddp.reducer.params) + ddp.modules_buffers,
                                 ddp.process_group, src=int(key._data[0]))
