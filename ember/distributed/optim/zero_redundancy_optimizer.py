"""ZeroRedundancyOptimizer: optimizer state sharded across the ranks (ZeRO stage 1).

Every rank keeps all parameters, but each parameter's optimizer state (Adam's two
moments, for instance) lives on one rank only: the parameters are partitioned greedily
by size, each rank's local optimizer steps its own partition, and the updated
parameters are then broadcast from their owners.  Per-rank state memory is about
1/world_size of the unsharded optimizer's.

The consolidated `state_dict` is in the plain optimizer format (state keyed by the
global parameter index), so it loads into a ZeroRedundancyOptimizer at any world size,
or into the unsharded optimizer itself.

With ``overlap_with_ddp=True`` the partition follows DDP's gradient buckets instead (bucket
i belongs to rank ``i % world_size``), and the step runs inside DDP's backward: the ZeRO
communication hooks (``ddp_zero_hook``) step each bucket's parameters on their owner once
the bucket's all-reduce is done and broadcast them from there.  As in torch, the first two
iterations (three with ``static_graph``) only learn DDP's buckets and update nothing.
"""
import copy
import logging

import numpy as np

from ..._core.tensor import Tensor, wrap
from ...optim.optimizer import Optimizer

__all__ = ["ZeroRedundancyOptimizer"]


def _dist():
    from ... import distributed as dist
    return dist


class ZeroRedundancyOptimizer(Optimizer):
    r"""Wraps an arbitrary optimizer class and shards its states across ranks in the group.

    Args:
        params: an iterable of Tensors or dicts (parameter groups), as for any optimizer;
            they are replicated on every rank.
        optimizer_class: the class of the local optimizer (e.g. ``ember.optim.Adam``).
        process_group: the group to shard over (default: the world group).
        parameters_as_bucket_view: keep each rank's parameters of one dtype in one
            contiguous buffer (the parameters are views into it), so the post-step broadcast
            needs no packing copies.
        overlap_with_ddp: run the step inside DDP's backward, bucket by bucket, through a
            communication hook made by ``ddp_zero_hook.hook_with_zero_step`` (or
            ``hook_with_zero_step_interleaved``); `step` is then a no-op, and the first two
            iterations (three with DDP's ``static_graph``) update nothing while the DDP
            buckets are learnt.  ``parameters_as_bucket_view`` is ignored.
        **defaults: the keyword arguments of ``optimizer_class`` (``lr``, ...).

    Example::
        >>> ddp = DistributedDataParallel(model)
        >>> opt = ZeroRedundancyOptimizer(ddp.parameters(), optimizer_class=ember.optim.Adam,
        ...                               lr=0.01)
        >>> ddp(inputs).sum().backward()
        >>> opt.step()
    """

    def __init__(self, params, optimizer_class, process_group=None,
                 parameters_as_bucket_view=False, overlap_with_ddp=False, **defaults):
        self._zero_ready = False
        super().__init__(params, defaults)
        dist = _dist()
        self.process_group = process_group if process_group is not None else dist.group.WORLD
        self.world_size = dist.get_world_size(self.process_group)
        self.rank = dist.get_rank(self.process_group)
        self.global_rank = dist.get_rank()
        self._optim_constructor = optimizer_class
        self._optim_defaults = defaults
        self.parameters_as_bucket_view = parameters_as_bucket_view and not overlap_with_ddp
        self.overlap_with_ddp = self._overlap_with_ddp = overlap_with_ddp
        self._all_state_dicts = None
        self._partition_parameters_cache = []
        if overlap_with_ddp:
            if len(self.param_groups) != 1:
                raise ValueError("ZeroRedundancyOptimizer(overlap_with_ddp=True) supports a "
                                 "single parameter group")
            # the local optimizer waits for DDP's buckets (`_init_zero_for_overlap`)
            self._overlap_info = _OverlapInfo()
            self.optim = None
            self._zero_ready = True
            return
        self._build_buckets()
        self.optim = optimizer_class(self._partition_parameters()[self.rank], **defaults)
        self._sync_param_groups(self.optim.param_groups, self.param_groups)
        self._zero_ready = True

    # ---- partitioning -----------------------------------------------------------------
    def _partition_parameters(self):
        """Per rank, the list of its parameter groups (the same groups as
        ``param_groups``, each holding that rank's share of the parameters)."""
        if not self._partition_parameters_cache:
            sizes = [0] * self.world_size
            per_rank = [[] for _ in range(self.world_size)]
            for group in self.param_groups:
                mine = [[] for _ in range(self.world_size)]
                for p in sorted(group["params"], key=lambda t: t.numel(), reverse=True):
                    r = int(np.argmin(sizes))
                    mine[r].append(p)
                    sizes[r] += p.numel()
                for r in range(self.world_size):
                    g = {k: v for k, v in group.items() if k not in ("params", "param_names")}
                    owned = {id(p) for p in mine[r]}
                    # keep the group's own order, so local state follows the global order
                    g["params"] = [p for p in group["params"] if id(p) in owned]
                    per_rank[r].append(g)
            self._partition_parameters_cache = per_rank
        return self._partition_parameters_cache

    def _owner(self):
        own = {}
        for r, groups in enumerate(self._partition_parameters()):
            for g in groups:
                for p in g["params"]:
                    own[id(p)] = r
        return own

    def _all_params(self):
        return [p for g in self.param_groups for p in g["params"]]

    def _build_buckets(self):
        """Per owner rank and dtype: the flat tensor broadcast after each step (with
        ``parameters_as_bucket_view`` the parameters become views into it)."""
        self._partition_parameters_cache = []
        self._buckets = []
        for r, groups in enumerate(self._partition_parameters()):
            by_dtype = {}
            for g in groups:
                for p in g["params"]:
                    by_dtype.setdefault(p.dtype.np, []).append(p)
            for dtype in sorted(by_dtype, key=str):
                ps = by_dtype[dtype]
                flat = wrap(np.concatenate([p._data.ravel() for p in ps]))
                if self.parameters_as_bucket_view:
                    off = 0
                    for p in ps:
                        n = p.numel()
                        p._data = flat._data[off:off + n].reshape(p.shape)
                        off += n
                self._buckets.append((r, ps, flat))

    def _global_src(self, rank):
        dist = _dist()
        if self.process_group is dist.group.WORLD or self.process_group is None:
            return rank
        return dist.get_global_rank(self.process_group, rank)

    def _sync_params(self):
        """Broadcasts every partition's parameters from the rank that stepped them."""
        if self.world_size == 1:
            return
        dist = _dist()
        for r, ps, flat in self._buckets:
            view = self.parameters_as_bucket_view
            if r == self.rank:
                off = 0
                for p in ps:
                    n = p.numel()
                    if not (view and np.shares_memory(p._data, flat._data)):
                        flat._data[off:off + n] = p._data.ravel()
                    off += n
            dist.broadcast(flat, src=self._global_src(r), group=self.process_group)
            if r != self.rank:
                off = 0
                for p in ps:
                    n = p.numel()
                    if not (view and np.shares_memory(p._data, flat._data)):
                        p._data[...] = flat._data[off:off + n].reshape(p.shape)
                    off += n

    @staticmethod
    def _sync_param_groups(src_param_groups, dst_param_groups):
        """Copies the hyperparameters (all but ``params``) of ``src`` groups into ``dst``."""
        for src, dst in zip(src_param_groups, dst_param_groups):
            for k, v in src.items():
                if k not in ("params", "param_names"):
                    dst[k] = v

    # ---- overlap with DDP ----------------------------------------------------------------
    def _init_zero_for_overlap(self):
        """Partitions by the DDP buckets seen (bucket i to rank i % world_size) and builds
        the local optimizer over this rank's buckets."""
        info = self._overlap_info
        info.owner = [b % self.world_size for b in range(len(info.params_per_bucket))]
        group = self.param_groups[0]
        known = {id(p) for p in group["params"]}
        per_rank = []
        for r in range(self.world_size):
            g = {k: v for k, v in group.items() if k not in ("params", "param_names")}
            g["params"] = [p for b, ps in enumerate(info.params_per_bucket)
                           if info.owner[b] == r for p in ps if id(p) in known]
            per_rank.append([g])
        self._partition_parameters_cache = per_rank
        mine = per_rank[self.rank][0]["params"]
        self.optim = (self._optim_constructor(mine, **self._optim_defaults) if mine
                      else _NoParams(per_rank[self.rank]))
        self._sync_param_groups(self.optim.param_groups, self.param_groups)
        info.status = _INITIALIZED

    def _check_overlap_initialized(self):
        if self._overlap_with_ddp and self._overlap_info.status != _INITIALIZED:
            raise RuntimeError("This method should not be called until this "
                               "ZeroRedundancyOptimizer instance has been fully initialized "
                               "(with overlap_with_ddp=True: after DDP's warm-up iterations)")

    def _local_step_on(self, params, grads):
        """Steps the local optimizer on ``params`` alone, with ``grads`` (the reduced
        gradients of one DDP bucket); the other local parameters are left alone."""
        self._sync_param_groups(self.param_groups, self.optim.param_groups)
        local = [p for g in self.optim.param_groups for p in g["params"]]
        saved = [p._grad for p in local]
        for p in local:
            p._grad = None
        for p, g in zip(params, grads):
            p._grad = g
        try:
            self.optim.step()
        finally:
            for p, g in zip(local, saved):
                p._grad = g
        self._sync_param_groups(self.optim.param_groups, self.param_groups)

    # ---- optimizer API ------------------------------------------------------------------
    def step(self, closure=None, **kwargs):
        """Performs a single optimizer step on this rank's partition and syncs all
        parameters; returns the closure's loss, if any.  With ``overlap_with_ddp`` the
        step runs in DDP's communication hook: this returns None and changes nothing."""
        if self._overlap_with_ddp:
            _LOG.warning("`step()` should not be included in the training loop when "
                         "`overlap_with_ddp=True`")
            return None
        self._sync_param_groups(self.param_groups, self.optim.param_groups)
        if closure is not None:
            loss = self.optim.step(closure=closure, **kwargs)
        else:
            loss = self.optim.step(**kwargs)
        self._sync_params()
        self._sync_param_groups(self.optim.param_groups, self.param_groups)
        return loss

    def add_param_group(self, param_group):
        """Adds a parameter group; its parameters are partitioned among the ranks like the
        others (earlier groups keep their partition)."""
        if getattr(self, "_overlap_with_ddp", False) and getattr(self, "_zero_ready", False):
            raise RuntimeError("ZeroRedundancyOptimizer with `overlap_with_ddp=True` only "
                               "supports a single parameter group")
        super().add_param_group(param_group)
        if getattr(self, "_zero_ready", False):
            self._build_buckets()
            mine = self._partition_parameters()[self.rank]
            if len(mine) == len(self.optim.param_groups) + 1:
                self.optim.add_param_group(mine[-1])
            self._sync_param_groups(self.optim.param_groups, self.param_groups)

    def _local_state_by_global_index(self):
        index = {id(p): i for i, p in enumerate(self._all_params())}
        return {index[id(p)]: st for p, st in self.optim.state.items()
                if isinstance(p, Tensor) and st}

    def consolidate_state_dict(self, to=0):
        """Gathers every rank's optimizer state onto rank ``to`` (a rank of the group), so
        that `state_dict` can be called there.  Must be called on all ranks."""
        self._check_overlap_initialized()
        dist = _dist()
        local = self._local_state_by_global_index()
        if self.world_size == 1:
            self._all_state_dicts = [local]
            return
        gathered = [None] * self.world_size if self.rank == to else None
        dist.gather_object(local, gathered, dst=self._global_src(to), group=self.process_group)
        self._all_state_dicts = gathered if self.rank == to else None

    def state_dict(self):
        """The full optimizer state, in the plain optimizer format (state keyed by global
        parameter index).  Only valid on the rank given to `consolidate_state_dict`."""
        if self._all_state_dicts is None:
            raise RuntimeError("Optimizer state has not been consolidated on this rank. Please "
                               "call `consolidate_state_dict(to)` on all ranks beforehand if "
                               "you meant to save the global state.")
        state = {}
        for part in self._all_state_dicts:
            state.update(part)
        groups, start = [], 0
        for g in self.param_groups:
            packed = {k: v for k, v in g.items() if k != "params"}
            packed["params"] = list(range(start, start + len(g["params"])))
            start += len(g["params"])
            groups.append(packed)
        self._all_state_dicts = None
        return {"state": dict(sorted(state.items())), "param_groups": groups}

    def load_state_dict(self, state_dict):
        """Loads a state dict from `state_dict` (saved at any world size) or from the plain
        optimizer; each rank keeps the state of its own partition only."""
        self._check_overlap_initialized()
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        for g, s in zip(self.param_groups, saved_groups):
            if len(g["params"]) != len(s["params"]):
                raise ValueError("loaded state dict contains a parameter group that doesn't "
                                 "match the size of optimizer's group")
        params = self._all_params()
        saved_ids = [i for s in saved_groups for i in s["params"]]
        owner = self._owner()
        self.optim.state.clear()
        for sid, p in zip(saved_ids, params):
            if owner[id(p)] != self.rank or sid not in state_dict["state"]:
                continue
            self.optim.state[p] = {
                k: (Optimizer._cast_state_value(p, v, k).clone() if isinstance(v, Tensor)
                    else copy.deepcopy(v))
                for k, v in state_dict["state"][sid].items()}
        for g, s in zip(self.param_groups, saved_groups):
            for k, v in s.items():
                if k not in ("params", "param_names"):
                    g[k] = copy.deepcopy(v)
        self._sync_param_groups(self.param_groups, self.optim.param_groups)

    def __repr__(self):
        return (f"ZeroRedundancyOptimizer(rank={self.rank}, world_size={self.world_size}, "
                f"optimizer={self.optim!r})")


_LOG = logging.getLogger(__name__)
_UNINITIALIZED, _COLLECTING, _INITIALIZED = 0, 1, 2


class _OverlapInfo:
    """What the ZeRO DDP hooks learn and keep: the parameters of each DDP bucket, its owner
    rank, and per iteration the buckets seen, their futures and pending broadcasts."""

    def __init__(self):
        self.status = _UNINITIALIZED
        self.iterations = 0          # backward passes seen by the hook (bucket 0 launches)
        self.params_per_bucket = []
        self.owner = []
        self.pending = []            # (bucket, future) launched, not yet stepped
        self.broadcasts = []         # (work, flat, params) of this iteration


class _NoParams:
    """The local optimizer of a rank that owns no bucket (more ranks than buckets)."""

    def __init__(self, param_groups):
        self.param_groups = param_groups
        self.state = {}

    def step(self, closure=None):
        return None

    def __repr__(self):
        return "NoParams()"
