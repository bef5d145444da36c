"""``ember.distributed.optim``: optimizers for distributed training.

`ZeroRedundancyOptimizer` shards optimizer state across the ranks of a process group."""
from .zero_redundancy_optimizer import ZeroRedundancyOptimizer
from ._distributed_optimizer import DistributedOptimizer

__all__ = ["ZeroRedundancyOptimizer", "DistributedOptimizer"]
