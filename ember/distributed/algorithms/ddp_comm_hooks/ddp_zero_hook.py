"""DDP communication hooks that run a ZeroRedundancyOptimizer's step inside backward.

``hook_with_zero_step(hook, ddp, zero)`` wraps a gradient hook (e.g. ``allreduce_hook``):
each bucket is reduced by ``hook`` as usual; the bucket's owner (rank ``index %
world_size``) steps the bucket's parameters with the reduced gradients, and broadcasts them
to the other ranks.  ``zero`` must be made with ``overlap_with_ddp=True``; its ``step()`` is
then not called in the training loop.

Collectives are matched by the order in which ranks issue them, so every rank issues the
steps' broadcasts at the same points: `hook_with_zero_step` after the last bucket's
all-reduce was launched (the optimizer computation overlaps the outstanding all-reduces),
`hook_with_zero_step_interleaved` one bucket behind (when bucket i is launched, bucket
i - 1 is stepped and broadcast, overlapping the rest of backward).  The two give the same
parameters.

As in torch, the first iterations only learn DDP's buckets: the first backward (two with
``static_graph``) corresponds to torch's bucket rebuild, the next records each bucket's
parameters, and the steps start with the one after.  Those warm-up iterations update
nothing.
"""
import numpy as np

from ...._core.tensor import wrap

__all__ = ["hook_with_zero_step", "hook_with_zero_step_interleaved"]


def _dist():
    from .... import distributed as dist
    return dist


def _zero_consts():
    from ...optim import zero_redundancy_optimizer as z
    return z


def _warmup_iterations(ddp):
    # torch rebuilds DDP's buckets after the first backward (the second with static_graph)
    return 2 if getattr(ddp, "static_graph", False) else 1


def _setup(ddp, zero, bucket):
    """Tracks the warm-up; returns True once steps run in this iteration."""
    z = _zero_consts()
    info = zero._overlap_info
    if bucket.index() == 0:
        info.iterations += 1
        if info.status == z._COLLECTING and info.params_per_bucket:
            zero._init_zero_for_overlap()
    if info.status == z._INITIALIZED:
        return True
    if info.iterations > _warmup_iterations(ddp):
        info.status = z._COLLECTING
        info.params_per_bucket.append(list(bucket.parameters()))
    return False


def _reduced_grads(fut, bucket):
    """The per-parameter views of a bucket's reduced gradients (the hook's result)."""
    result = fut.wait()
    if isinstance(result, (list, tuple)):
        result = result[0]
    data = result._data
    return [wrap(data[o:o + int(np.prod(s))].reshape(s))
            for o, s in zip(bucket._offsets, bucket._shapes)]


def _step_and_broadcast(zero, bucket, fut):
    """The owner steps ``bucket``'s parameters; everyone starts the broadcast of them."""
    dist = _dist()
    info = zero._overlap_info
    index = bucket.index()
    if index >= len(info.owner):
        raise RuntimeError(f"ZeRO overlap: DDP bucket {index} was not seen during the warm-up "
                           f"iterations ({len(info.owner)} buckets known)")
    owner = info.owner[index]
    params = bucket.parameters()
    if owner == zero.rank:
        zero._local_step_on(params, _reduced_grads(fut, bucket))
        flat = wrap(np.concatenate([p._data.ravel() for p in params]))
    else:
        flat = wrap(np.empty(sum(p.numel() for p in params), dtype=params[0].dtype.np))
    if zero.world_size > 1:
        work = dist.broadcast(flat, src=zero._global_src(owner), group=zero.process_group,
                              async_op=True)
        info.broadcasts.append((work, flat, params, owner))


def _finish_broadcasts(zero):
    info = zero._overlap_info
    for work, flat, params, owner in info.broadcasts:
        work.wait()
        if owner != zero.rank:
            off = 0
            for p in params:
                n = p.numel()
                p._data[...] = flat._data[off:off + n].reshape(p.shape)
                off += n
    info.broadcasts = []
    info.pending = []


def _check(ddp, zero):
    if not getattr(zero, "_overlap_with_ddp", False):
        raise ValueError("ZeroRedundancyOptimizer must be constructed with "
                         "`overlap_with_ddp=True` to use this hook properly")
    if zero.process_group is not ddp.process_group and \
            _dist().get_process_group_ranks(zero.process_group) != \
            _dist().get_process_group_ranks(ddp.process_group):
        raise ValueError("hook_with_zero_step: the ZeroRedundancyOptimizer and the "
                         "DistributedDataParallel module must use the same process group")


def hook_with_zero_step(hook, ddp, zero, shard_buckets=False):
    """Modifies ``hook`` to run ``zero``'s step after the last gradient bucket's reduction
    is launched, overlapping the optimizer computation with the outstanding all-reduces.

    Args:
        hook: the gradient hook to wrap, ``hook(state, bucket) -> Future``.
        ddp: the DistributedDataParallel module the hook is registered on.
        zero: a ZeroRedundancyOptimizer made with ``overlap_with_ddp=True`` over
            ``ddp``'s parameters.
        shard_buckets: torch splits buckets across ranks when True; ember always gives a
            bucket wholly to one rank (the results are the same).

    Example::
        >>> zero = ZeroRedundancyOptimizer(ddp.parameters(), ember.optim.Adam,
        ...                                overlap_with_ddp=True, lr=1e-3)
        >>> ddp.register_comm_hook(None, hook_with_zero_step(allreduce_hook, ddp, zero))
        >>> for x in data:
        ...     ddp(x).sum().backward()   # no zero.step()
    """
    _check(ddp, zero)

    def hook_with_zero_fn(state, bucket):
        fut = hook(state, bucket)
        if not _setup(ddp, zero, bucket):
            return fut
        info = zero._overlap_info
        info.pending.append((bucket, fut))
        if bucket.index() == len(info.owner) - 1:
            for b, f in info.pending:
                _step_and_broadcast(zero, b, f)
            _finish_broadcasts(zero)
        return fut

    return hook_with_zero_fn


def hook_with_zero_step_interleaved(hook, ddp, zero, shard_buckets=False):
    """Modifies ``hook`` to step each bucket's parameters during backward: when bucket i's
    reduction is launched, bucket i - 1 (reduced meanwhile) is stepped and broadcast, so the
    optimizer overlaps the rest of the backward computation.  Arguments as for
    `hook_with_zero_step`."""
    _check(ddp, zero)

    def hook_with_zero_interleaved_fn(state, bucket):
        fut = hook(state, bucket)
        if not _setup(ddp, zero, bucket):
            return fut
        info = zero._overlap_info
        if info.pending:
            _step_and_broadcast(zero, *info.pending.pop())
        info.pending.append((bucket, fut))
        if bucket.index() == len(info.owner) - 1:
            _step_and_broadcast(zero, *info.pending.pop())
            _finish_broadcasts(zero)
        return fut

    return hook_with_zero_interleaved_fn
