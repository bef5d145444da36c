"""The generic join context manager for training with uneven inputs (``torch.distributed.
algorithms.join``).

Ranks that run out of inputs early "join": inside the `Join` context they keep shadowing
the collective communications the other ranks still issue (DDP's gradient all-reduces,
for instance) until every rank has joined, so nobody hangs.  Every iteration, each rank
that is still training all-reduces a 1 (`Join.notify_join_context`); the joined ranks
all-reduce a 0 and, while the sum is non-zero, run their joinables' main hooks.
"""
from abc import ABC, abstractmethod

import numpy as np

from ..._core.tensor import wrap

__all__ = ["JoinHook", "Joinable", "Join"]


def _dist():
    from ... import distributed as dist
    return dist


class JoinHook:
    """The two entry points a `Joinable` gives the join context manager:
    ``main_hook`` runs once per iteration that some rank still trains in, and
    ``post_hook(is_last_joiner)`` once all ranks have joined."""

    def main_hook(self):
        pass

    def post_hook(self, is_last_joiner):
        pass


class Joinable(ABC):
    """A class that takes part in the join context manager (DDP, ZeroRedundancyOptimizer)."""

    def __init__(self):
        super().__init__()
        self._join_config = _JoinConfig.construct_disabled_join_config()

    @abstractmethod
    def join_hook(self, **kwargs):
        """A `JoinHook` for this joinable; ``kwargs`` are those given to `Join`."""

    @property
    @abstractmethod
    def join_device(self):
        """The device the join context's collectives run on."""

    @property
    @abstractmethod
    def join_process_group(self):
        """The process group of the join context's collectives."""


class _JoinConfig:
    __slots__ = ("enable", "throw_on_early_termination", "is_first_joinable")

    def __init__(self, enable, throw_on_early_termination, is_first_joinable):
        self.enable = enable
        self.throw_on_early_termination = throw_on_early_termination
        self.is_first_joinable = is_first_joinable

    @staticmethod
    def construct_disabled_join_config():
        return _JoinConfig(False, False, False)


_EARLY_TERMINATION = ("Detected at least one rank that exhausted inputs. Throwing across all "
                      "ranks.")


class Join:
    r"""Context manager that lets the given `Joinable`\ s train with uneven inputs.

    Args:
        joinables: the joinables taking part (e.g. ``[ddp_model]``); their hooks run in
            this order.
        enable: whether uneven-input detection is on (False makes the context a no-op).
        throw_on_early_termination: raise on every rank, as soon as one rank runs out of
            inputs, instead of shadowing its collectives.
        **kwargs: handed to every joinable's ``join_hook``.

    Example::
        >>> with Join([ddp_model]):
        ...     for x in my_uneven_shard:
        ...         ddp_model(x).sum().backward()
    """

    def __init__(self, joinables, enable=True, throw_on_early_termination=False, **kwargs):
        if len(joinables) == 0:
            raise ValueError("The join context manager requires at least one joinable")
        self._joinables = list(joinables)
        self._join_hooks = [j.join_hook(**kwargs) for j in self._joinables]
        self._enable = enable
        self._throw_on_early_termination = throw_on_early_termination
        self._set_joinable_configs()
        first = self._joinables[0]
        self._process_group = first.join_process_group
        dist = _dist()
        self._world_size = dist.get_world_size(self._process_group)
        self._rank = dist.get_rank(self._process_group)

    def _set_joinable_configs(self):
        for i, j in enumerate(self._joinables):
            j._join_config = _JoinConfig(self._enable, self._throw_on_early_termination, i == 0)

    def __enter__(self):
        return self

    def __exit__(self, typ, value, tb):
        if not self._enable or typ is not None:
            return False
        dist = _dist()
        rounds = 0
        while True:
            count = wrap(np.zeros(1, dtype=np.int64))
            dist.all_reduce(count, group=self._process_group)
            if int(count._data[0]) == 0:
                break
            if self._throw_on_early_termination:
                raise RuntimeError(_EARLY_TERMINATION)
            for hook in self._join_hooks:
                hook.main_hook()
            rounds += 1
        # the last joiner shadowed nothing: it is the rank (highest among ties) with 0 rounds
        key = wrap(np.array([(0 if rounds == 0 else -1) * (self._world_size + 1) + self._rank],
                            dtype=np.int64))
        dist.all_reduce(key, op=dist.ReduceOp.MAX, group=self._process_group)
        last = int(key._data[0])
        for hook in self._join_hooks:
            hook.post_hook(last == self._rank)
        for j in self._joinables:
            j._join_config = _JoinConfig.construct_disabled_join_config()
        return False

    @staticmethod
    def notify_join_context(joinable):
        """Called by a joinable every iteration before its collectives: tells the joined
        ranks that this rank still trains.  Returns the Work of that all-reduce (for the
        first joinable of the context), else None."""
        config = getattr(joinable, "_join_config", None)
        if config is None or not config.enable or not config.is_first_joinable:
            return None
        dist = _dist()
        ones = wrap(np.ones(1, dtype=np.int64))
        dist.all_reduce(ones, group=joinable.join_process_group)
        if config.throw_on_early_termination:
            world = dist.get_world_size(joinable.join_process_group)
            if int(ones._data[0]) < world:
                raise RuntimeError(_EARLY_TERMINATION)
        joinable._join_nonjoined = int(ones._data[0])
        return None
