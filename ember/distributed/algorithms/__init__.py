"""``ember.distributed.algorithms``: the join context for uneven inputs and the DDP
communication hooks (``ddp_comm_hooks``)."""
from .join import Join, JoinHook, Joinable  # noqa: F401

__all__ = ["Join", "Joinable", "JoinHook"]
