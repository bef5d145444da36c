"""``ember.distributed.algorithms.ddp_comm_hooks``: gradient communication hooks for
DistributedDataParallel (``register_comm_hook``): plain all-reduce, fp16/bf16 compression,
PowerSGD low-rank compression, and the ZeRO hooks that run a ZeroRedundancyOptimizer's step
inside backward (``ddp_zero_hook``)."""
from . import ddp_zero_hook, default_hooks, powerSGD_hook  # noqa: F401
