"""``ember.distributed.algorithms.ddp_comm_hooks``: gradient communication hooks for
DistributedDataParallel (``register_comm_hook``): plain all-reduce, fp16/bf16 compression
and PowerSGD low-rank compression."""
from . import default_hooks, powerSGD_hook  # noqa: F401
