"""DistributedSampler: each of ``num_replicas`` ranks sees a disjoint shard of the data."""
import math
import sys

from .dataset import T_co
from .sampler import Sampler

__all__ = ["DistributedSampler"]


class DistributedSampler(Sampler[T_co]):
    """Restricts data loading to the shard of rank ``rank`` among ``num_replicas``; call
    ``set_epoch`` each epoch so shuffling differs between epochs but agrees across ranks."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0,
                 drop_last=False):
        if num_replicas is None or rank is None:
            try:
                # ember.distributed sits above the data utilities: it is looked up, not
                # imported (it is loaded whenever a process group can exist)
                dist = sys.modules[__name__.split(".", 1)[0] + ".distributed"]
                num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
                rank = dist.get_rank() if rank is None else rank
            except Exception:
                raise RuntimeError("Requires distributed package to be available, or pass "
                                   "num_replicas and rank explicitly") from None
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval "
                             f"[0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        if drop_last and n % num_replicas:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            # a private generator seeded from seed + epoch, as torch does: every rank
            # draws the same permutation, and it is torch's
            from ..._core.random import Generator
            from ...ops.random import randperm
            g = Generator()
            g.manual_seed(self.seed + self.epoch)
            indices = randperm(n, generator=g).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            pad = self.total_size - len(indices)
            if pad <= len(indices):
                indices += indices[:pad]
            else:
                indices += (indices * math.ceil(pad / len(indices)))[:pad]
        else:
            indices = indices[: self.total_size]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        self.epoch = epoch
