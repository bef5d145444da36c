"""ZeroRedundancyOptimizer: optimizer state sharded across the ranks (ZeRO stage 1).

Every rank keeps all parameters, but each parameter's optimizer state (Adam's two
moments, for instance) lives on one rank only: the parameters are partitioned greedily
by size, each rank's local optimizer steps its own partition, and the updated
parameters are then broadcast from their owners.  Per-rank state memory is about
1/world_size of the unsharded optimizer's.

The consolidated `state_dict` is in the plain optimizer format (state keyed by the
global parameter index), so it loads into a ZeroRedundancyOptimizer at any world size,
or into the unsharded optimizer itself.
"""
import copy

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
        overlap_with_ddp: not supported by ember (the step runs after backward).
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
        if overlap_with_ddp:
            raise NotImplementedError("ZeroRedundancyOptimizer(overlap_with_ddp=True) is not "
                                      "supported by ember; step the optimizer after backward")
        self._zero_ready = False
        super().__init__(params, defaults)
        dist = _dist()
        self.process_group = process_group if process_group is not None else dist.group.WORLD
        self.world_size = dist.get_world_size(self.process_group)
        self.rank = dist.get_rank(self.process_group)
        self.global_rank = dist.get_rank()
        self._optim_constructor = optimizer_class
        self._optim_defaults = defaults
        self.parameters_as_bucket_view = parameters_as_bucket_view
        self.overlap_with_ddp = overlap_with_ddp
        self._all_state_dicts = None
        self._partition_parameters_cache = []
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
                    by_dtype.setdefault(p._data.dtype, []).append(p)
            for dtype in sorted(by_dtype, key=str):
                ps = by_dtype[dtype]
                flat = wrap(np.concatenate([p._data.ravel() for p in ps]))
                if self.parameters_as_bucket_view:
                    off = 0
                    for p in ps:
                        n = p._data.size
                        p._data = flat._data[off:off + n].reshape(p._data.shape)
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
                    n = p._data.size
                    if not (view and np.shares_memory(p._data, flat._data)):
                        flat._data[off:off + n] = p._data.ravel()
                    off += n
            dist.broadcast(flat, src=self._global_src(r), group=self.process_group)
            if r != self.rank:
                off = 0
                for p in ps:
                    n = p._data.size
                    if not (view and np.shares_memory(p._data, flat._data)):
                        p._data[...] = flat._data[off:off + n].reshape(p._data.shape)
                    off += n

    @staticmethod
    def _sync_param_groups(src_param_groups, dst_param_groups):
        """Copies the hyperparameters (all but ``params``) of ``src`` groups into ``dst``."""
        for src, dst in zip(src_param_groups, dst_param_groups):
            for k, v in src.items():
                if k not in ("params", "param_names"):
                    dst[k] = v

    # ---- optimizer API ------------------------------------------------------------------
    def step(self, closure=None, **kwargs):
        """Performs a single optimizer step on this rank's partition and syncs all
        parameters; returns the closure's loss, if any."""
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
